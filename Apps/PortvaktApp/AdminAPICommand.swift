import FoundationEssentials
import Kernel

/// `portvakt admin users|passkeys|sessions|enrollment-link`: a command line over the admin HTTP
/// API. The address and token come from `--url`/`--token` or `PORTVAKT_ADMIN_URL` /
/// `PORTVAKT_ADMIN_TOKEN`; output is a readable table, or the API's JSON with `--json`.
enum AdminAPICommand {
    /// The admin listener's default address.
    static let defaultURL = "http://127.0.0.1:8081"
    static let common: Set<String> = ["--url", "--token"]

    static func users(_ arguments: ArraySlice<String>, environment: [String: String]) throws -> Int32 {
        var rest = arguments
        switch rest.popFirst() {
        case "list":
            let options = try Options.parse(
                rest, command: "admin users list", flags: common.union(["--search", "--limit", "--cursor"]),
                switches: ["--json"])
            var query: [URLQueryItem] = []
            for (flag, name) in [("--search", "search"), ("--limit", "limit"), ("--cursor", "cursor")] {
                if let value = options[flag] { query.append(URLQueryItem(name: name, value: value)) }
            }
            let client = try Client(options, environment)
            let body = try client.call("GET", "/admin/v1/users", query: query)
            if options.isSet("--json") { return printJSON(body) }
            let object = try jsonObject(body)
            let users = object["users"] as? [[String: Any]] ?? []
            print(
                TextTable.render(
                    header: ["ID", "USERNAME", "DISPLAY NAME", "CREATED", "STATE"],
                    rows: users.map { user in
                        [
                            string(user["id"]), string(user["username"], or: "-"),
                            string(user["displayName"]),
                            string(user["createdAt"]),
                            user["disabled"] as? Bool == true ? "disabled" : "active",
                        ]
                    }))
            if let next = object["nextCursor"] as? String { print("more: --cursor \(next)") }
            return 0
        case "show":
            let (options, id) = try single(rest, "admin users show", "a user ID")
            let body = try Client(options, environment).call("GET", "/admin/v1/users/\(escape(id))")
            if options.isSet("--json") { return printJSON(body) }
            let object = try jsonObject(body)
            let user = object["user"] as? [String: Any] ?? [:]
            for (label, key) in [
                ("ID", "id"), ("Username", "username"), ("Display name", "displayName"),
                ("Created", "createdAt"),
                ("Disabled", "disabledAt"),
            ] {
                print(
                    "\(label + ":")".paddedWithSpaces(toLength: 14)
                        + string(user[key], or: "-"))
            }
            print("\nPasskeys")
            print(
                TextTable.render(
                    header: ["ID", "NAME", "PROVIDER", "CREATED", "LAST USED"],
                    rows: (object["passkeys"] as? [[String: Any]] ?? []).map { passkey in
                        [
                            string(passkey["id"]), string(passkey["name"]),
                            string(passkey["provider"], or: "-"),
                            string(passkey["createdAt"]), string(passkey["lastUsedAt"], or: "never"),
                        ]
                    }))
            print("\nSessions")
            print(
                TextTable.render(
                    header: ["ID", "CLIENT", "METHOD", "CREATED", "LAST SEEN", "IP"],
                    rows: (object["sessions"] as? [[String: Any]] ?? []).map { session in
                        [
                            string(session["id"]), string(session["clientKind"]),
                            string(session["authMethod"]),
                            string(session["createdAt"]), string(session["lastSeenAt"]),
                            string(session["ipAddress"], or: "-"),
                        ]
                    }))
            print("\nRecent events")
            print(
                TextTable.render(
                    header: ["AT", "TYPE", "ACTOR"],
                    rows: (object["recentEvents"] as? [[String: Any]] ?? []).map { event in
                        [string(event["at"]), string(event["type"]), string(event["actor"])]
                    }))
            return 0
        case "disable", "enable":
            let disable = arguments.first == "disable"
            let (options, id) = try single(rest, "admin users \(disable ? "disable" : "enable")", "a user ID")
            let body = try Client(options, environment).call(
                "PATCH", "/admin/v1/users/\(escape(id))", json: #"{"disabled":\#(disable)}"#)
            if options.isSet("--json") { return printJSON(body) }
            print(disable ? "disabled user \(id); their sessions are ended" : "enabled user \(id)")
            return 0
        case "delete":
            let options = try Options.parse(
                rest, command: "admin users delete", flags: common, switches: ["--json", "--yes"],
                positional: 1)
            guard let id = options.positional.first else {
                throw UsageError("admin users delete needs a user ID")
            }
            guard options.isSet("--yes") else {
                throw UsageError(
                    "admin users delete removes the user with every passkey and session; add '--yes' to confirm"
                )
            }
            _ = try Client(options, environment).call("DELETE", "/admin/v1/users/\(escape(id))")
            if options.isSet("--json") { return printJSON(Array(#"{"deleted":true}"#.utf8)) }
            print("deleted user \(id)")
            return 0
        case let other?:
            throw UsageError(
                "unknown admin users command '\(other)' (expected list, show, disable, enable or delete)")
        case nil:
            throw UsageError("admin users needs a command: list, show, disable, enable or delete")
        }
    }

    static func passkeys(_ arguments: ArraySlice<String>, environment: [String: String]) throws -> Int32 {
        var rest = arguments
        switch rest.popFirst() {
        case "revoke":
            let options = try Options.parse(
                rest, command: "admin passkeys revoke", flags: common, switches: ["--json"], positional: 2)
            guard options.positional.count == 2 else {
                throw UsageError("admin passkeys revoke needs a USER-ID and a PASSKEY-ID")
            }
            let (user, passkey) = (options.positional[0], options.positional[1])
            _ = try Client(options, environment).call(
                "DELETE", "/admin/v1/users/\(escape(user))/passkeys/\(escape(passkey))")
            if options.isSet("--json") { return printJSON(Array(#"{"revoked":1}"#.utf8)) }
            print("revoked passkey \(passkey) of user \(user)")
            return 0
        case let other?:
            throw UsageError("unknown admin passkeys command '\(other)' (expected revoke)")
        case nil:
            throw UsageError("admin passkeys needs a command: revoke")
        }
    }

    static func sessions(_ arguments: ArraySlice<String>, environment: [String: String]) throws -> Int32 {
        var rest = arguments
        switch rest.popFirst() {
        case "revoke":
            let options = try Options.parse(
                rest, command: "admin sessions revoke", flags: common, switches: ["--json", "--all"],
                positional: 2)
            guard let user = options.positional.first else {
                throw UsageError("admin sessions revoke needs a USER-ID, then a SESSION-ID or '--all'")
            }
            let client = try Client(options, environment)
            if options.isSet("--all") {
                guard options.positional.count == 1 else {
                    throw UsageError("give either a SESSION-ID or '--all', not both")
                }
                let body = try client.call("DELETE", "/admin/v1/users/\(escape(user))/sessions")
                if options.isSet("--json") { return printJSON(body) }
                print("ended \(try jsonObject(body)["revoked"] as? Int ?? 0) session(s) of user \(user)")
                return 0
            }
            guard options.positional.count == 2 else {
                throw UsageError("admin sessions revoke needs a SESSION-ID after the USER-ID, or '--all'")
            }
            let session = options.positional[1]
            _ = try client.call("DELETE", "/admin/v1/users/\(escape(user))/sessions/\(escape(session))")
            if options.isSet("--json") { return printJSON(Array(#"{"revoked":1}"#.utf8)) }
            print("ended session \(session) of user \(user)")
            return 0
        case let other?:
            throw UsageError("unknown admin sessions command '\(other)' (expected revoke)")
        case nil:
            throw UsageError("admin sessions needs a command: revoke")
        }
    }

    static func enrollmentLink(_ arguments: ArraySlice<String>, environment: [String: String]) throws -> Int32
    {
        let options = try Options.parse(
            arguments, command: "admin enrollment-link", flags: common.union(["--expires-in"]),
            switches: ["--json"],
            positional: 1)
        guard let user = options.positional.first else {
            throw UsageError("admin enrollment-link needs a user ID")
        }
        var json = "{}"
        if let text = options["--expires-in"] {
            guard let seconds = AdminTokenCommand.parseDuration(text) else {
                throw UsageError(
                    "option '--expires-in' must be a duration such as 90m, 12h or 2d, got '\(text)'")
            }
            json = #"{"expiresInSeconds":\#(Int(seconds))}"#
        }
        let body = try Client(options, environment).call(
            "POST", "/admin/v1/users/\(escape(user))/enrollment-links", json: json)
        if options.isSet("--json") { return printJSON(body) }
        let object = try jsonObject(body)
        // The link carries the one-time token: shown once, here, for the operator to pass on.
        print("Enrollment link for user \(user) (one use, expires \(string(object["expiresAt"]))):")
        print("  \(string(object["url"]))")
        return 0
    }

    // MARK: Helpers

    /// Options with `--url`, `--token`, `--json` and exactly one positional argument.
    private static func single(_ arguments: ArraySlice<String>, _ command: String, _ what: String)
        throws(UsageError)
        -> (Options, String)
    {
        let options = try Options.parse(
            arguments, command: command, flags: common, switches: ["--json"], positional: 1)
        guard let value = options.positional.first else { throw UsageError("\(command) needs \(what)") }
        return (options, value)
    }

    static func escape(_ segment: String) -> String {
        // Foundation's .urlPathAllowed without "/": unreserved, sub-delims, ":" and "@".
        let allowed = Set(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@".utf8)
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in segment.utf8 {
            if allowed.contains(byte) {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func string(_ value: Any?, or fallback: String = "") -> String {
        (value as? String) ?? (value as? Int).map(String.init) ?? fallback
    }

    static func jsonObject(_ body: [UInt8]) throws -> [String: Any] {
        guard let object = (try? JSONText.parse(body)) as? [String: Any] else {
            throw AdminAPIError("the admin API answered with something that is not a JSON object")
        }
        return object
    }

    static func printJSON(_ body: [UInt8]) -> Int32 {
        StandardIO.writeOutput(body + Array("\n".utf8))
        return 0
    }

    /// One admin API endpoint and token.
    struct Client {
        let base: String
        let token: String

        init(_ options: Options, _ environment: [String: String]) throws(UsageError) {
            let url = options["--url"] ?? environment["PORTVAKT_ADMIN_URL"] ?? AdminAPICommand.defaultURL
            guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""),
                parsed.host != nil
            else {
                throw UsageError(
                    "option '--url' (or PORTVAKT_ADMIN_URL) must be an http(s) URL such as \(defaultURL)")
            }
            guard let token = options["--token"] ?? environment["PORTVAKT_ADMIN_TOKEN"], !token.isEmpty else {
                throw UsageError("an admin token is required: set PORTVAKT_ADMIN_TOKEN or pass '--token'")
            }
            base = url.hasSuffix("/") ? String(url.dropLast()) : url
            self.token = token
        }

        /// Sends one request; the body of a 2xx answer, or `AdminAPIError` naming the problem.
        func call(_ method: String, _ path: String, query: [URLQueryItem] = [], json: String? = nil) throws
            -> [UInt8]
        {
            var components = URLComponents(string: base + path)
            if !query.isEmpty { components?.queryItems = query }
            guard let url = components?.url else {
                throw AdminAPIError("cannot build a URL from '\(base)\(path)'")
            }
            var headers = [("Authorization", "Bearer \(token)")]
            if json != nil { headers.append(("Content-Type", "application/json")) }
            let response: AdminHTTPClient.Response
            switch AdminHTTPClient.send(
                method, url: url.absoluteString, headers: headers, body: json.map { Array($0.utf8) },
                timeout: 30)
            {
            case .success(let answer): response = answer
            case .failure(let failure):
                throw AdminAPIError(
                    "cannot reach the admin API at \(base) (check '--url' or PORTVAKT_ADMIN_URL): \(failure.message)"
                )
            }
            let body = response.body
            let statusCode = response.status
            guard (200..<300).contains(statusCode) else {
                let problem = (try? JSONText.parse(body)) as? [String: Any]
                let code = problem?["code"] as? String ?? "http.\(statusCode)"
                let detail = problem?["detail"] as? String ?? problem?["title"] as? String ?? ""
                var message = "\(code) (HTTP \(statusCode))" + (detail.isEmpty ? "" : ": \(detail)")
                if statusCode == 401 { message += " (check '--token' or PORTVAKT_ADMIN_TOKEN)" }
                throw AdminAPIError(message)
            }
            return body
        }
    }
}

/// The admin API refused or could not be reached; the message names the code and, where it
/// helps, the flag to check. Never the token.
struct AdminAPIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
