import AuthOrchestrator
import CryptoCore
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

/// An admin API client for one test server, with a write token.
struct AdminClient {
    let server: TestServer
    /// The client that reaches `server`, in process or over its socket.
    let http: any HTTPTestTransport
    let token: String

    init(_ server: TestServer, token: String? = nil) {
        self.server = server
        http = server.makeClient()
        self.token = token ?? server.adminToken
    }

    func send(_ method: String, _ path: String, json: String? = nil) throws -> TestResponse {
        var headers = [("Authorization", "Bearer \(token)")]
        if json != nil { headers.append(("Content-Type", "application/json")) }
        return try http.send(
            method: method, url: server.adminURL + path, headers: headers, body: json.map { Array($0.utf8) })
    }

    func object(_ method: String, _ path: String, json: String? = nil, status: Int = 200) throws -> [String:
        Any]
    {
        let response = try send(method, path, json: json)
        #expect(response.status == status, "\(method) \(path): \(response.text)")
        return try response.jsonObject()
    }
}

/// Passkey sign-up and login over the public listener with the software authenticator.
struct PasskeyUser {
    let server: TestServer
    /// The client that reaches `server`: suites on sockets (the CLI's) use this too.
    let http: any HTTPTestTransport
    let authenticator = SoftwareAuthenticator()
    let origin = "http://localhost:8080"

    init(server: TestServer) {
        self.server = server
        http = server.makeClient()
    }

    func post(_ path: String, _ body: String) throws -> TestResponse {
        try http.sendJSON(url: server.publicURL + path, json: body)
    }

    /// Signs up `username` natively; returns the credential, the user id and the session token.
    func signUp(_ username: String) throws -> (credential: SoftwareCredential, userID: String, token: String)
    {
        let (credential, response) = try register(
            #"{"username":"\#(username)"}"#, extra: #","client":"native""#)
        let object = try response.jsonObject()
        let user = try #require(object["user"] as? [String: Any])
        let session = try #require(object["session"] as? [String: Any])
        return (credential, try #require(user["id"] as? String), try #require(session["token"] as? String))
    }

    /// Adds a passkey to the signed-in account of `token`; returns the new credential.
    func addPasskey(token: String) throws -> SoftwareCredential {
        try register("{}", headers: [("Authorization", "Bearer \(token)")]).credential
    }

    /// One registration ceremony: initialize with `body`, a new ES256 credential, finalize with
    /// `extra` members; expects 201.
    func register(_ body: String, extra: String = "", headers: [(String, String)] = []) throws -> (
        credential: SoftwareCredential, response: TestResponse
    ) {
        let started = try http.sendJSON(
            url: server.publicURL + "/v1/passkeys/registration/initialize", json: body, headers: headers
        ).jsonObject()
        let options = try #require(started["publicKey"] as? [String: Any])
        let handleText = try #require((options["user"] as? [String: Any])?["id"] as? String)
        let handle = try #require(Base64URL.decode(handleText))
        let challengeText = try #require(options["challenge"] as? String)
        let challenge = try #require(Base64URL.decode(challengeText))
        let credential = authenticator.makeCredential(
            algorithm: .es256, rpID: "localhost", userHandle: handle)
        let registration = String(
            decoding: authenticator.register(credential, challenge: challenge, origin: origin).json(),
            as: UTF8.self)
        let challengeID = try #require(started["challengeId"] as? String)
        let response = try http.sendJSON(
            url: server.publicURL + "/v1/passkeys/registration/finalize",
            json: #"{"challengeId":"\#(challengeID)","credential":\#(registration)\#(extra)}"#,
            headers: headers)
        #expect(response.status == 201, "\(response.text)")
        return (credential, response)
    }

    /// A complete discoverable login; returns the finalize response.
    func login(_ credential: SoftwareCredential) throws -> TestResponse {
        try loginWith(authenticator, credential)
    }

    /// A discoverable login (one naming `username`, when given) with a credential held by
    /// another `authenticator`.
    func loginWith(
        _ authenticator: SoftwareAuthenticator, _ credential: SoftwareCredential, username: String? = nil
    ) throws -> TestResponse {
        let started = try post(
            "/v1/passkeys/login/initialize", username.map { #"{"username":"\#($0)"}"# } ?? "{}"
        ).jsonObject()
        let options = try #require(started["publicKey"] as? [String: Any])
        let challengeText = try #require(options["challenge"] as? String)
        let challenge = try #require(Base64URL.decode(challengeText))
        let challengeID = try #require(started["challengeId"] as? String)
        let assertion = String(
            decoding: authenticator.authenticate(credential, challenge: challenge, origin: origin).json(),
            as: UTF8.self)
        return try post(
            "/v1/passkeys/login/finalize",
            #"{"challengeId":"\#(challengeID)","credential":\#(assertion),"client":"native"}"#)
    }

    func me(_ token: String) throws -> TestResponse {
        try http.send(.GET, server.publicURL + "/v1/me", headers: ["Authorization": "Bearer \(token)"])
    }
}

@Suite("Admin API: users, passkeys, sessions, audit", .serialized)
struct AdminAccountsAPITests {
    @Test(
        "POST /admin/v1/users creates a user without a passkey, with sign-up's name rules",
        arguments: TestEngine.tested)
    func createUser(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let admin = AdminClient(server)
        let created = try admin.object(
            "POST", "/admin/v1/users", json: #"{"username":" Ada.Lovelace ","displayName":"Ada Lovelace"}"#,
            status: 201)
        #expect(created["username"] as? String == "ada.lovelace")
        #expect(created["displayName"] as? String == "Ada Lovelace")
        #expect(created["disabled"] as? Bool == false)
        let id = try #require(created["id"] as? String)
        #expect(try server.server.store.passkeys(userID: id).isEmpty)
        let taken = try admin.send("POST", "/admin/v1/users", json: #"{"username":"ADA.LOVELACE"}"#)
        try expectProblem(taken, 409, "user.username_taken")
        let bad = try admin.send("POST", "/admin/v1/users", json: #"{"username":"a b"}"#)
        try expectProblem(bad, 400, "user.invalid_username")
        let empty = try admin.send("POST", "/admin/v1/users", json: "{}")
        try expectProblem(empty, 400, "admin.invalid_parameter")
        let displayOnly = try admin.object(
            "POST", "/admin/v1/users", json: #"{"displayName":"Grace"}"#, status: 201)
        #expect(displayOnly["username"] == nil)
    }

    @Test("GET /admin/v1/users searches by id, username or display name", arguments: TestEngine.tested)
    func search(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let admin = AdminClient(server)
        let ada = try server.makeUser(username: "ada", displayName: "Ada Lovelace")
        _ = try server.makeUser(username: "grace", displayName: "Grace Hopper")
        _ = try server.makeUser(username: "under_score", displayName: "Percent 100%")
        func ids(_ query: String) throws -> [String] {
            let list = try admin.object("GET", "/admin/v1/users?search=\(query)")
            return try #require(list["users"] as? [[String: Any]]).compactMap { $0["username"] as? String }
        }
        #expect(try ids("ada") == ["ada"])
        #expect(try ids("LOVELACE") == ["ada"])
        #expect(try ids("hopper") == ["grace"])
        #expect(try ids(ada.id) == ["ada"])
        #expect(try ids("r_s") == ["under_score"])
        #expect(try ids("_") == ["under_score"], "LIKE wildcards in the search are literal")
        #expect(try ids("%25") == ["under_score"])
        #expect(try ids("nobody").isEmpty)
        // A control character (NUL included, which PostgreSQL text cannot hold) is a malformed
        // search on either engine, never a store failure.
        for query in ["a%00b", "a%0Ab", "%7F"] {
            let refused = try admin.send("GET", "/admin/v1/users?search=\(query)")
            #expect(refused.status == 400, "\(query): \(refused.text)")
            #expect(try refused.problemCode() == "admin.invalid_parameter")
        }
    }

    @Test(
        "pagination across 3000 users: every user once, in id order, with a stable opaque cursor",
        arguments: TestEngine.tested)
    func pagination(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let admin = AdminClient(server)
        var expected: [String] = []
        for index in 0..<3000 {
            let user = try server.makeUser(username: "user\(index)")
            expected.append(user.id)
        }
        expected.sort { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        var seen: [String] = []
        var cursor: String?
        var pages = 0
        repeat {
            let path = "/admin/v1/users?limit=137" + (cursor.map { "&cursor=\($0)" } ?? "")
            let page = try admin.object("GET", path)
            let users = try #require(page["users"] as? [[String: Any]])
            seen += users.compactMap { $0["id"] as? String }
            cursor = page["nextCursor"] as? String
            pages += 1
            // A user created mid-listing with a smaller id than the cursor is not seen, and
            // nothing already seen comes again.
            if pages == 3 {
                _ = try server.server.store.insertUser(
                    User(id: "0000", username: nil, displayName: "x", createdAt: server.clock.now()))
            }
        } while cursor != nil && pages < 100
        #expect(seen == expected)
        #expect(pages == 22)
        let maxPage = try admin.object("GET", "/admin/v1/users?limit=500")
        #expect((maxPage["users"] as? [Any])?.count == 500)
        let defaultPage = try admin.object("GET", "/admin/v1/users")
        #expect((defaultPage["users"] as? [Any])?.count == 50)
        for bad in ["limit=0", "limit=501", "limit=ten"] {
            let response = try admin.send("GET", "/admin/v1/users?\(bad)")
            try expectProblem(response, 400, "admin.invalid_parameter")
        }
        for bad in ["nope", Base64URL.encode(Array("a:1".utf8))] {
            let response = try admin.send("GET", "/admin/v1/users?cursor=\(bad)")
            try expectProblem(response, 400, "admin.invalid_cursor")
        }
    }

    @Test(
        "disabling revokes the user's sessions at once and passkey logins get account.disabled; enabling lets them in",
        arguments: TestEngine.tested
    )
    func disableEndToEnd(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let admin = AdminClient(server)
        let person = PasskeyUser(server: server)
        let (credential, userID, token) = try person.signUp("dora")
        #expect(try person.me(token).status == 200)
        let second = try person.login(credential)
        #expect(second.status == 200)

        let disabled = try admin.object("PATCH", "/admin/v1/users/\(userID)", json: #"{"disabled":true}"#)
        #expect(disabled["disabled"] as? Bool == true && disabled["disabledAt"] is String)
        #expect(try server.server.store.sessions(userID: userID, liveAt: server.clock.now()).isEmpty)
        let refused = try person.me(token)
        try expectProblem(refused, 401, "session.revoked")
        let login = try person.login(credential)
        try expectProblem(login, 403, "account.disabled")

        let enabled = try admin.object("PATCH", "/admin/v1/users/\(userID)", json: #"{"disabled":false}"#)
        #expect(enabled["disabled"] as? Bool == false && enabled["disabledAt"] == nil)
        #expect(try person.login(credential).status == 200)
        let events = try server.server.store.auditEvents(userID: userID, beforeID: nil, limit: 20).map(
            \.action.rawValue)
        #expect(events.contains("admin.user.disabled") && events.contains("admin.user.enabled"))
    }

    @Test(
        "PATCH renames with sign-up's normalisation and uniqueness; unknown users are 404",
        arguments: TestEngine.tested)
    func rename(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let admin = AdminClient(server)
        let user = try server.makeUser(username: "old")
        _ = try server.makeUser(username: "taken")
        let renamed = try admin.object(
            "PATCH", "/admin/v1/users/\(user.id)", json: #"{"username":" NEW ","displayName":" New Name "}"#)
        #expect(renamed["username"] as? String == "new" && renamed["displayName"] as? String == "New Name")
        #expect(try server.server.store.user(id: user.id)?.username == "new")
        let clash = try admin.send("PATCH", "/admin/v1/users/\(user.id)", json: #"{"username":"Taken"}"#)
        try expectProblem(clash, 409, "user.username_taken")
        let badName = try admin.send("PATCH", "/admin/v1/users/\(user.id)", json: #"{"displayName":""}"#)
        try expectProblem(badName, 400, "user.invalid_display_name")
        let missing = try admin.send("PATCH", "/admin/v1/users/nobody", json: #"{"disabled":true}"#)
        try expectProblem(missing, 404, "admin.user_not_found")
        let notJSON = try admin.send("PATCH", "/admin/v1/users/\(user.id)", json: "[")
        #expect(notJSON.status == 400)
    }

    @Test(
        "GET a user shows passkeys, live sessions and recent audit events; DELETE removes passkeys and sessions",
        arguments: TestEngine.tested
    )
    func detailAndDelete(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let admin = AdminClient(server)
        let person = PasskeyUser(server: server)
        let (credential, userID, token) = try person.signUp("erin")
        let detail = try admin.object("GET", "/admin/v1/users/\(userID)")
        #expect((detail["user"] as? [String: Any])?["username"] as? String == "erin")
        #expect(
            (detail["passkeys"] as? [[String: Any]])?.first?["id"] as? String
                == Base64URL.encode(credential.id))
        #expect((detail["sessions"] as? [Any])?.count == 1)
        let events = try #require(detail["recentEvents"] as? [[String: Any]])
        #expect(events.first?["type"] as? String == "passkey.registered")
        #expect(!detail.description.contains(token))

        let deleted = try admin.send("DELETE", "/admin/v1/users/\(userID)")
        #expect(deleted.status == 204)
        #expect(try server.server.store.passkey(credentialID: credential.id) == nil)
        #expect(
            try server.server.store.session(
                id: ((detail["sessions"] as? [[String: Any]])?.first?["id"] as? String) ?? "") == nil)
        #expect(try person.me(token).status == 401)
        let gone = try admin.send("GET", "/admin/v1/users/\(userID)")
        try expectProblem(gone, 404, "admin.user_not_found")
        #expect(try admin.send("DELETE", "/admin/v1/users/\(userID)").status == 404)
    }

    @Test(
        "passkeys: list, get and delete (the last one too), 404 for another user's",
        arguments: TestEngine.tested)
    func passkeys(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let admin = AdminClient(server)
        let person = PasskeyUser(server: server)
        let (credential, userID, _) = try person.signUp("fay")
        let (otherCredential, otherID, _) = try person.signUp("gus")
        let pid = Base64URL.encode(credential.id)
        let list = try admin.object("GET", "/admin/v1/users/\(userID)/passkeys")
        #expect((list["passkeys"] as? [[String: Any]])?.map { $0["id"] as? String } == [pid])
        let one = try admin.object("GET", "/admin/v1/users/\(userID)/passkeys/\(pid)")
        #expect(one["id"] as? String == pid && one["publicKey"] == nil)
        let foreign = try admin.send("GET", "/admin/v1/users/\(otherID)/passkeys/\(pid)")
        try expectProblem(foreign, 404, "admin.passkey_not_found")
        #expect(try admin.send("DELETE", "/admin/v1/users/\(otherID)/passkeys/\(pid)").status == 404)
        #expect(try admin.send("DELETE", "/admin/v1/users/\(userID)/passkeys/\(pid)").status == 204)
        #expect(try server.server.store.passkey(credentialID: credential.id) == nil)
        #expect(try server.server.store.passkey(credentialID: otherCredential.id) != nil)
        #expect(try person.login(credential).status == 400, "a removed passkey cannot sign in")
        #expect(try admin.send("GET", "/admin/v1/users/nobody/passkeys").status == 404)
    }

    @Test("sessions: list, end one (404 for another user's), end all", arguments: TestEngine.tested)
    func sessions(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let admin = AdminClient(server)
        let user = try server.makeUser(username: "hal")
        let other = try server.makeUser(username: "ivy")
        let first = try server.signIn(user)
        let second = try server.signIn(user)
        let third = try server.signIn(user)
        let foreign = try server.signIn(other)
        let list = try admin.object("GET", "/admin/v1/users/\(user.id)/sessions")
        let listed = try #require(list["sessions"] as? [[String: Any]])
        #expect(
            Set(listed.compactMap { $0["id"] as? String }) == [
                first.session.id, second.session.id, third.session.id,
            ])
        #expect(!list.description.contains(first.token))
        let wrongOwner = try admin.send("DELETE", "/admin/v1/users/\(user.id)/sessions/\(foreign.session.id)")
        try expectProblem(wrongOwner, 404, "admin.session_not_found")
        #expect(
            try admin.send("DELETE", "/admin/v1/users/\(user.id)/sessions/\(first.session.id)").status == 204)
        #expect(
            try admin.send("DELETE", "/admin/v1/users/\(user.id)/sessions/\(first.session.id)").status == 404)
        let all = try admin.object("DELETE", "/admin/v1/users/\(user.id)/sessions")
        #expect(all["revoked"] as? Int == 2)
        #expect(try server.server.store.sessions(userID: user.id, liveAt: server.clock.now()).isEmpty)
        #expect(try server.server.store.sessions(userID: other.id, liveAt: server.clock.now()).count == 1)
    }

    @Test(
        "every admin change is an audit event naming the token; GET /admin/v1/audit filters by user, type and time, a page at a time",
        arguments: TestEngine.tested
    )
    func audit(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let ops = try server.server.adminTokens.create(
            name: "ops", scope: .write, lifetime: nil, actor: .cli)
        let reader = try server.server.adminTokens.create(
            name: "auditor", scope: .read, lifetime: nil, actor: .cli)
        let admin = AdminClient(server, token: ops.token)
        let user = try server.makeUser(username: "jo")
        _ = try server.signIn(user)
        let start = server.clock.now()
        server.clock.advance(by: 10)
        _ = try admin.object("PATCH", "/admin/v1/users/\(user.id)", json: #"{"disabled":true}"#)
        server.clock.advance(by: 10)
        _ = try admin.object("PATCH", "/admin/v1/users/\(user.id)", json: #"{"displayName":"Jo B"}"#)
        _ = try admin.object("DELETE", "/admin/v1/users/\(user.id)/sessions")
        let created = try admin.object("POST", "/admin/v1/users", json: #"{"username":"kim"}"#, status: 201)

        let auditor = AdminClient(server, token: reader.token)
        let mine = try auditor.object("GET", "/admin/v1/audit?user=\(user.id)")
        let events = try #require(mine["events"] as? [[String: Any]])
        #expect(
            events.compactMap { $0["type"] as? String } == [
                "admin.sessions.revoked", "admin.user.renamed", "admin.user.disabled",
            ])
        #expect(events.allSatisfy { $0["actor"] as? String == "admin:ops" })
        #expect(events.allSatisfy { ($0["details"] as? [String: String])?["adminTokenId"] == ops.record.id })
        #expect(events.allSatisfy { $0["requestId"] is String && $0["ipAddress"] is String })

        let byType = try auditor.object("GET", "/admin/v1/audit?type=admin.user.created")
        #expect(
            (byType["events"] as? [[String: Any]])?.map { $0["userId"] as? String } == [
                created["id"] as? String
            ])
        let early = Timestamp(start + 15)
        let late = try auditor.object("GET", "/admin/v1/audit?user=\(user.id)&from=\(early)")
        #expect((late["events"] as? [Any])?.count == 2)
        let before = try auditor.object("GET", "/admin/v1/audit?user=\(user.id)&to=\(early)")
        #expect(
            (before["events"] as? [[String: Any]])?.map { $0["type"] as? String } == ["admin.user.disabled"])

        var seen: [Int] = []
        var cursor: String?
        repeat {
            let page = try auditor.object(
                "GET", "/admin/v1/audit?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""))
            seen += try #require(page["events"] as? [[String: Any]]).compactMap { $0["id"] as? Int }
            cursor = page["nextCursor"] as? String
        } while cursor != nil
        #expect(seen == seen.sorted(by: >) && Set(seen).count == seen.count)
        #expect(
            seen.count == (try server.server.store.auditEvents(userID: nil, beforeID: nil, limit: 1000).count)
        )
        let badTime = try auditor.send("GET", "/admin/v1/audit?from=yesterday")
        try expectProblem(badTime, 400, "admin.invalid_parameter")
    }
}

/// Checks a problem response's status and stable code.
func expectProblem(
    _ response: TestResponse, _ status: Int, _ code: String, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
    #expect(try response.problemCode() == code, sourceLocation: sourceLocation)
}

/// An RFC 3339 UTC time for a query string.
private func Timestamp(_ date: Date) -> String {
    date.formatted(.iso8601)
}
