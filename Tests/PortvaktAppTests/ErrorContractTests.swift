import AuthOrchestrator
import Foundation
import HTTPEngine
import Kernel
import PasskeyCore
import PortvaktAPI
import PortvaktApp
import SessionCore
import Storage
import TestSupport
import Testing

/// The error contract as written (the code tables of Docs/api.md and Docs/admin-api.md, parsed
/// here) against the server as built: every documented code is one the server can produce, many
/// are provoked over HTTP, and every code the error enums answer over HTTP is documented.
@Suite("Error contract: Docs/api.md against the server", .serialized)
struct ErrorContractTests {
    static let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Docs")

    /// The backticked codes in the `code` column of every Markdown table in `file` that has one.
    static func documentedCodes(_ file: String) throws -> Set<String> {
        let lines = try String(contentsOf: docs.appendingPathComponent(file), encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        func cells(_ line: String) -> [String] {
            line.trimmingCharacters(in: .whitespaces).dropFirst().dropLast().split(
                separator: "|", omittingEmptySubsequences: false
            ).map { $0.trimmingCharacters(in: .whitespaces) }
        }
        var codes: Set<String> = []
        var index = 0
        while index + 1 < lines.count {
            let isTable =
                lines[index].hasPrefix("|") && lines[index + 1].hasPrefix("|")
                && lines[index + 1].allSatisfy { "|-: ".contains($0) }
            guard isTable, let column = cells(lines[index]).firstIndex(of: "code") else {
                index += 1
                continue
            }
            index += 2
            while index < lines.count, lines[index].hasPrefix("|") {
                let row = cells(lines[index])
                if column < row.count {
                    // Every `…` in the cell: "`a`, `b`" and "`a` / `b`" list several codes.
                    let parts = row[column].split(separator: "`", omittingEmptySubsequences: false)
                    for (position, part) in parts.enumerated() where position % 2 == 1 {
                        codes.insert(String(part))
                    }
                }
                index += 1
            }
        }
        return codes
    }

    /// Whether `code` is in `documented`, exactly or under a wildcard row such as `ceremony.*`.
    static func isDocumented(_ code: String, in documented: Set<String>) -> Bool {
        documented.contains(code)
            || documented.contains { $0.hasSuffix(".*") && code.hasPrefix($0.dropLast()) }
    }

    /// AuthError codes only the command line answers (`portvakt admin token`), never a route.
    static let commandLineOnly: Set<AuthError.Code> = [
        .invalidTokenName, .tokenNameTaken, .tokenNotFound, .invalidExpiry,
    ]

    /// What each error type's codes become on the wire, through the same mapping the server uses
    /// (`HTTPResponseError.problem`; a dependency failure is its code when temporary, else
    /// `internal`, as the engine answers it), and the BankID result codes a poll can carry.
    static func answeredCodes() -> Set<String> {
        var codes: Set<String> = []
        for code in AuthError.Code.allCases where !commandLineOnly.contains(code) {
            codes.insert(AuthError(code, "contract").problem.code)
        }
        for code in SessionError.Code.allCases { codes.insert(SessionError(code, "contract").problem.code) }
        for code in PasskeyError.Code.allCases { codes.insert(PasskeyError(code, "contract").problem.code) }
        for code in StorageError.Code.allCases {
            let error = StorageError(code, "contract")
            codes.insert(error.isTemporary ? error.failureCode : "internal")
        }
        // `failed` is kept on the flow only: a failed order's poll says `status: failed` instead.
        for outcome in BankIDOutcome.allCases where outcome != .failed { codes.insert(outcome.rawValue) }
        for error in [
            HTTPError.malformedJSON(), .bodyTooLarge(limit: 1), .unsupportedMediaType(), .notFound(),
            .methodNotAllowed(allowed: [.GET]), .methodNotImplemented(), .rateLimited(retryAfterSeconds: 1),
            .internal(),
        ] {
            codes.insert(error.problem.code)
        }
        return codes
    }

    /// Codes the HTTP layers write as literals (`code: "server.stopping"`), outside the enums.
    static func literalCodes() throws -> Set<String> {
        let modules = docs.deletingLastPathComponent().appendingPathComponent("Modules")
        var codes: Set<String> = []
        for folder in ["HTTPEngine", "PortvaktAPI"] {
            let root = modules.appendingPathComponent(folder)
            let files = FileManager.default.enumerator(atPath: root.path)?.compactMap { $0 as? String } ?? []
            for file in files where file.hasSuffix(".swift") {
                let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
                for piece in text.components(separatedBy: "code: \"").dropFirst() {
                    if let end = piece.firstIndex(of: "\"") { codes.insert(String(piece[..<end])) }
                }
            }
        }
        return codes
    }

    @Test("the tables parse: both error tables and the BankID result table are read")
    func tablesParse() throws {
        let api = try Self.documentedCodes("api.md")
        // One row of each table, so a parser that reads nothing fails here, not silently below.
        for code in ["request.malformed_json", "ceremony.*", "bankid.signed_in", "storage.busy"] {
            #expect(api.contains(code), "\(code)")
        }
        #expect(try Self.documentedCodes("admin-api.md").contains("admin.invalid_cursor"))
    }

    @Test("every code Docs/api.md documents is one the server can produce")
    func documentedAreProduced() throws {
        let producible = Self.answeredCodes().union(try Self.literalCodes())
        for code in try Self.documentedCodes("api.md") {
            if code.hasSuffix(".*") {
                // A wildcard row names a family of WebAuthn step codes answered as 400.
                let family = PasskeyError.Code.allCases.map(\.rawValue).filter {
                    $0.hasPrefix(code.dropLast())
                }
                #expect(!family.isEmpty, "\(code) names no PasskeyError code")
                #expect(family.allSatisfy(producible.contains), "\(code) has codes answered as internal")
            } else {
                #expect(producible.contains(code), "Docs/api.md documents \(code), which nothing produces")
            }
        }
    }

    @Test("every code the server answers over HTTP is documented (Docs/api.md, admin codes in admin-api.md)")
    func producedAreDocumented() throws {
        let documented = try Self.documentedCodes("api.md").union(Self.documentedCodes("admin-api.md"))
        for code in Self.answeredCodes().union(try Self.literalCodes()) {
            #expect(Self.isDocumented(code, in: documented), "\(code) is answered but not documented")
        }
        // The command-line codes are the only ones left out, and they are not in an HTTP table.
        for code in Self.commandLineOnly {
            #expect(!Self.isDocumented(code.rawValue, in: documented), "\(code.rawValue)")
        }
    }

    @Test("documented codes provoked over HTTP, public and admin listeners, answer as documented")
    func provoked() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let client = InProcessHTTPClient()
        let base = server.publicURL
        let adminURL = server.adminURL
        let ada = try server.makeUser(username: "ada")
        let token = try server.signIn(ada).token
        let bearer = [("Authorization", "Bearer \(token)")]
        let webToken = try server.signIn(ada, as: .web).token
        let admin = [("Authorization", "Bearer \(server.adminToken)")]
        let json = [("Content-Type", "application/json")]
        typealias Probe = (
            code: String, status: Int, method: String, url: String, headers: [(String, String)],
            body: String?
        )
        var probes: [Probe] = [
            (
                "request.malformed_json", 400, "POST", base + "/v1/passkeys/login/initialize", json,
                #"{"a":1,"a":2}"#
            ),
            (
                "request.unsupported_media_type", 415, "POST", base + "/v1/passkeys/login/initialize",
                [("Content-Type", "text/plain")], "x"
            ),
            (
                "request.body_too_large", 413, "POST", base + "/v1/passkeys/login/initialize", json,
                "{\"a\":\"" + String(repeating: "a", count: 128 << 10) + "\"}"
            ),
            ("route.not_found", 404, "GET", base + "/v1/nowhere", [], nil),
            ("route.method_not_allowed", 405, "DELETE", base + "/v1/methods", [], nil),
            ("request.method_not_implemented", 501, "BREW", base + "/v1/nowhere", [], nil),
            ("session.missing", 401, "GET", base + "/v1/me", [], nil),
            (
                "session.unknown", 401, "GET", base + "/v1/me",
                [("Authorization", "Bearer pvs_" + String(repeating: "A", count: 43))], nil
            ),
            ("session.not_found", 404, "DELETE", base + "/v1/me/sessions/nope", bearer, nil),
            (
                "request.cross_site_refused", 403, "POST", base + "/v1/logout",
                [("Cookie", "portvakt_session=\(webToken)"), ("Origin", "https://evil.example")],
                nil
            ),
            (
                "passkey.not_found", 404, "PATCH", base + "/v1/me/passkeys/AAAA", bearer + json,
                #"{"name":"x"}"#
            ),
            (
                "user.invalid_username", 400, "POST", base + "/v1/passkeys/registration/initialize", json,
                #"{"username":"a b"}"#
            ),
            (
                "enrollment.invalid", 400, "POST", base + "/v1/passkeys/registration/initialize", json,
                #"{"enrollmentToken":"pve_nope"}"#
            ),
            ("bankid.sign_in_required", 401, "POST", base + "/v1/bankid/orders", json, #"{"intent":"link"}"#),
            (
                "bankid.invalid_request", 400, "POST", base + "/v1/bankid/orders", json,
                #"{"intent":"login","userVisibleData":"x"}"#
            ),
            ("bankid.order_not_found", 404, "GET", base + "/v1/bankid/orders/nope", [], nil),
            ("admin.unauthorized", 401, "GET", adminURL + "/admin/v1/users", [], nil),
            ("admin.invalid_parameter", 400, "GET", adminURL + "/admin/v1/users?limit=0", admin, nil),
            ("admin.invalid_cursor", 400, "GET", adminURL + "/admin/v1/users?cursor=zzz", admin, nil),
            ("admin.user_not_found", 404, "GET", adminURL + "/admin/v1/users/nope", admin, nil),
            (
                "user.username_taken", 409, "POST", adminURL + "/admin/v1/users", admin + json,
                #"{"username":"ada"}"#
            ),
            (
                "enrollment.invalid_lifetime", 400, "POST",
                adminURL + "/admin/v1/users/\(ada.id)/enrollment-links",
                admin + json, #"{"expiresInSeconds":1}"#
            ),
        ]
        // A revoked session: signed out, then used again.
        let revoked = try server.signIn(ada).token
        #expect(
            try client.send(.POST, base + "/v1/logout", headers: ["Authorization": "Bearer \(revoked)"])
                .status == 204)
        probes.append(
            ("session.revoked", 401, "GET", base + "/v1/me", [("Authorization", "Bearer \(revoked)")], nil))

        let documented = try Self.documentedCodes("api.md").union(Self.documentedCodes("admin-api.md"))
        for probe in probes {
            #expect(
                Self.isDocumented(probe.code, in: documented), "\(probe.code) is provoked but not documented")
            let response = try client.send(
                method: probe.method, url: probe.url, headers: probe.headers,
                body: probe.body.map { Array($0.utf8) })
            #expect(response.status == probe.status, "\(probe.code): \(probe.method) \(probe.url)")
            #expect(try response.problemCode() == probe.code, "\(probe.method) \(probe.url)")
        }

        // Last: the database goes away and readiness says so.
        server.server.engine.close()
        let ready = try client.send(.GET, base + "/health/ready")
        #expect(ready.status == 503)
        #expect(try ready.problemCode() == "health.not_ready")
    }

    @Test("switched-off methods answer their documented codes")
    func switchedOff() throws {
        let client = InProcessHTTPClient()
        let noSignup = try TestServer.inProcess(configuration: [
            "methods": ["passkey": ["enabled": true, "signup": false], "bankid": ["link": false]]
        ])
        defer { noSignup.stop() }
        let token = try noSignup.signIn(try noSignup.makeUser(username: "ada")).token
        let signup = try client.sendJSON(
            url: noSignup.publicURL + "/v1/passkeys/registration/initialize", json: #"{"username":"bob"}"#)
        #expect(signup.status == 403)
        #expect(try signup.problemCode() == "passkey.signup_disabled")
        let link = try client.sendJSON(
            url: noSignup.publicURL + "/v1/bankid/orders", json: #"{"intent":"link"}"#,
            headers: [("Authorization", "Bearer \(token)")])
        #expect(link.status == 403)
        #expect(try link.problemCode() == "method_disabled")

        let noPasskeys = try TestServer.inProcess(configuration: [
            "methods": ["passkey": ["enabled": false], "bankid": ["recovery": false]]
        ])
        defer { noPasskeys.stop() }
        let login = try client.sendJSON(
            url: noPasskeys.publicURL + "/v1/passkeys/login/initialize", json: "{}")
        #expect(login.status == 403)
        #expect(try login.problemCode() == "passkey.disabled")
    }
}
