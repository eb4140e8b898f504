import AuthOrchestrator
import BankIDCore
import CryptoCore
import Foundation
import HTTPEngine
import Kernel
import PortvaktApp
import SessionCore
import Storage
import TestSupport
import Testing

/// `POST /admin/v1/sessions/introspect` over real HTTP (a server on loopback ports), on every
/// engine: which sessions are active, what an active one says, that nothing about an inactive
/// one leaks, when it counts as use, and which admin tokens may call it.
@Suite("Session introspection", .serialized)
struct IntrospectionTests {
    let client = HTTPTestClient()

    /// Generous admin limits: the route tests below send many requests in a burst.
    static var limits: [String: Any] { ["admin": ["burst": 10_000, "perSecond": 10_000]] }

    /// Introspects `token` with the admin token `adminToken`.
    func introspect(_ server: TestServer, _ token: String, with adminToken: String) throws -> TestResponse {
        let body = try JSONSerialization.data(withJSONObject: ["token": token])
        return try client.send(
            method: "POST", url: "\(server.adminURL)/admin/v1/sessions/introspect",
            headers: [("Authorization", "Bearer \(adminToken)"), ("Content-Type", "application/json")],
            body: [UInt8](body))
    }

    /// The exact inactive answer: `{"active":false}`, nothing else.
    func expectInactive(_ response: TestResponse, _ label: String) throws {
        #expect(response.status == 200, "\(label)")
        #expect(response.headers["content-type"] == "application/json", "\(label)")
        let object = try response.jsonObject()
        #expect(object.count == 1 && object["active"] as? Bool == false, "\(label): \(response.text)")
    }

    static func seconds(_ date: Date) -> Int { Int(date.timeIntervalSince1970.rounded(.down)) }

    @Test(
        "a live session is active with every claim; introspection never rotates it",
        arguments: TestEngine.tested)
    func activeClaims(engine: TestEngine) throws {
        // Rotation is due after a minute: introspection must still hand out no new token.
        let server = try TestServer(
            engine: engine,
            configuration: ["sessions": ["rotationIntervalSeconds": 60], "rateLimits": Self.limits])
        defer { server.stop() }
        let user = try server.makeUser(username: "ada")
        let issued = try server.server.sessions.issue(
            userID: user.id, clientKind: .native, authMethod: .bankid)
        let session = issued.session
        // A BankID signature made in the session steps it up for ten minutes.
        let now = server.clock.now()
        let flow = BankIDFlow(
            idHash: Digest.sha256("order-sign"), orderRef: "ref-sign", intent: .sign, sameDevice: false,
            bindingHash: Digest.sha256("binding"), userID: user.id, sessionID: session.id, createdAt: now)
        try server.server.store.insertBankIDFlow(flow)
        #expect(
            try server.server.store.commitBankIDCompletion(
                BankIDCompletionRecord(
                    flowIDHash: flow.idHash, outcome: "bankid.signed", at: now,
                    stepUp: SessionStepUp(
                        sessionID: session.id, signedAt: now, validUntil: now.addingTimeInterval(600),
                        userVisibleText: "Pay 10 kr"))))
        server.clock.advance(by: 120)

        let response = try introspect(server, issued.token, with: server.adminToken)
        #expect(response.status == 200)
        let claims = try response.jsonObject()
        #expect(claims["active"] as? Bool == true)
        #expect(claims["sub"] as? String == user.id)
        #expect(claims["sid"] as? String == session.id)
        #expect(claims["username"] as? String == "ada")
        #expect(claims["amr"] as? [String] == ["bankid"])
        #expect(claims["iat"] as? Int == Self.seconds(session.createdAt))
        #expect(claims["exp"] as? Int == Self.seconds(session.expiresAt))
        #expect(claims["steppedUpUntil"] as? Int == Self.seconds(now.addingTimeInterval(600)))
        #expect(
            Set(claims.keys) == ["active", "sub", "sid", "username", "amr", "iat", "exp", "steppedUpUntil"],
            "no token or other field: \(response.text)")
        #expect(!response.text.contains("pvs_"))
        // Not rotated: the session is the only one, and the presented token still opens it as is.
        #expect(
            try server.server.store.sessions(userID: user.id, liveAt: server.clock.now()).map(\.id) == [
                session.id
            ])
        let again = try introspect(server, issued.token, with: server.adminToken).jsonObject()
        #expect(again["sid"] as? String == session.id)

        // A passkey session with no step-up: `amr` passkey, no `steppedUpUntil`; an enrollment
        // registered a passkey, so it is a passkey too.
        for method in [AuthMethod.passkey, .enrollment] {
            let passkey = try server.server.sessions.issue(
                userID: user.id, clientKind: .web, authMethod: method)
            let claims = try introspect(server, passkey.token, with: server.adminToken).jsonObject()
            #expect(claims["amr"] as? [String] == ["passkey"], "\(method)")
            #expect(claims["steppedUpUntil"] == nil, "\(method)")
        }
        // Once the window closes the claim goes.
        server.clock.advance(by: 600)
        let later = try introspect(server, issued.token, with: server.adminToken).jsonObject()
        #expect(later["active"] as? Bool == true && later["steppedUpUntil"] == nil)
    }

    @Test(
        "revoked, expired, idle-expired, disabled, unknown, malformed and empty tokens are just inactive",
        arguments: TestEngine.tested)
    func inactive(engine: TestEngine) throws {
        let server = try TestServer(
            engine: engine,
            configuration: [
                "sessions": ["absoluteLifetimeSeconds": 3600, "idleTimeoutSeconds": 600],
                "rateLimits": Self.limits,
            ])
        defer { server.stop() }
        let admin = server.adminToken
        let user = try server.makeUser(username: "ada")

        // Logged out through the public API.
        let loggedOut = try server.signIn(user)
        let logout = try client.send(
            method: "POST", url: "\(server.publicURL)/v1/logout",
            headers: [("Authorization", "Bearer \(loggedOut.token)")])
        #expect(logout.status == 204)
        try expectInactive(introspect(server, loggedOut.token, with: admin), "logged out")

        // Idle: one session kept in use by its holder, one left alone for longer than the timeout.
        let used = try server.signIn(user)
        let idle = try server.signIn(user)
        for _ in 0..<3 {
            server.clock.advance(by: 300)
            let me = try client.send(
                url: "\(server.publicURL)/v1/me", headers: [("Authorization", "Bearer \(used.token)")])
            #expect(me.status == 200)
        }
        try expectInactive(introspect(server, idle.token, with: admin), "idle-expired")
        #expect(try introspect(server, used.token, with: admin).jsonObject()["active"] as? Bool == true)

        // Past the absolute lifetime, however much it was used.
        let ending = try server.signIn(user)
        for _ in 0..<6 {
            server.clock.advance(by: 540)
            #expect(
                try client.send(
                    url: "\(server.publicURL)/v1/me", headers: [("Authorization", "Bearer \(ending.token)")]
                ).status == 200)
        }
        server.clock.advance(by: 540)
        try expectInactive(introspect(server, ending.token, with: admin), "expired")

        // Disabled by an administrator (which also revokes the account's sessions) ...
        let bob = try server.makeUser(username: "bob")
        let bobs = try server.signIn(bob)
        #expect(try introspect(server, bobs.token, with: admin).jsonObject()["active"] as? Bool == true)
        let patch = try client.send(
            method: "PATCH", url: "\(server.adminURL)/admin/v1/users/\(bob.id)",
            headers: [("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json")],
            body: Array(#"{"disabled":true}"#.utf8))
        #expect(patch.status == 200)
        try expectInactive(introspect(server, bobs.token, with: admin), "disabled through the admin API")
        // ... and a disabled account whose session was not revoked: the account rule alone refuses.
        let eve = try server.makeUser(username: "eve")
        let eves = try server.signIn(eve)
        var disabled = eve
        disabled.disabledAt = server.clock.now()
        try server.server.store.updateUser(disabled)
        #expect(try server.server.store.session(id: eves.session.id)?.revokedAt == nil)
        try expectInactive(introspect(server, eves.token, with: admin), "disabled account, live session")

        // Tokens that open nothing.
        let unknown = SessionService.tokenPrefix + String(repeating: "A", count: 43)
        for (label, token) in [
            ("unknown", unknown), ("empty", ""), ("no prefix", String(repeating: "A", count: 47)),
            ("too short", "pvs_abc"), ("too long", unknown + "A"), ("an admin token", admin),
            ("huge", String(repeating: "x", count: 20_000)),
        ] {
            try expectInactive(introspect(server, token, with: admin), label)
        }
        // A body that is not `{"token": "…"}` is a bad request, not an inactive token.
        for body in [#"{}"#, #"{"token":7}"#, "token=pvs_x", ""] {
            let response = try client.send(
                method: "POST", url: "\(server.adminURL)/admin/v1/sessions/introspect",
                headers: [("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json")],
                body: Array(body.utf8))
            #expect(response.status == 400, "\(body)")
        }
    }

    @Test(
        "a database outage is 503 storage.unavailable, never an inactive answer",
        .enabled(if: TestPostgreSQL.isEnabled, "needs PostgreSQL: a cluster of its own is stopped"))
    func databaseOutage() throws {
        let cluster = try PostgreSQLTestCluster()
        // The environment's admin token is checked in memory, so the failing read is the session's.
        let adminToken = "pva_" + String(repeating: "e", count: 43)
        let server = try TestServer(
            configuration: [
                "storage": [
                    "engine": "postgresql",
                    "postgresql": [
                        "poolSize": 2, "statementTimeoutMilliseconds": 2000, "connectTimeoutSeconds": 2,
                    ],
                ]
            ],
            environment: ["PORTVAKT_DATABASE_URL": cluster.url, "PORTVAKT_ADMIN_TOKEN": adminToken])
        defer { server.stop() }
        let issued = try server.signIn(try server.makeUser(username: "ada"))
        #expect(
            try introspect(server, issued.token, with: adminToken).jsonObject()["active"] as? Bool == true)
        try cluster.pause()
        let response = try introspect(server, issued.token, with: adminToken)
        #expect(response.status == 503, "\(response.text)")
        #expect(try response.problemCode() == "storage.unavailable")
        #expect(response.headers["Retry-After"] != nil)
        try cluster.resume()
    }

    @Test(
        "introspection counts as use of the session only with introspection.touchesSession",
        arguments: TestEngine.tested)
    func touchesSession(engine: TestEngine) throws {
        for touches in [false, true] {
            let server = try TestServer(
                engine: engine,
                configuration: [
                    "sessions": ["idleTimeoutSeconds": 600], "introspection": ["touchesSession": touches],
                    "rateLimits": Self.limits,
                ])
            defer { server.stop() }
            let issued = try server.signIn(try server.makeUser(username: "ada"))
            let start = try #require(try server.server.store.session(id: issued.session.id)).lastSeenAt
            for _ in 0..<3 {
                server.clock.advance(by: 300)
                #expect(try introspect(server, issued.token, with: server.adminToken).status == 200)
            }
            let seen = try #require(try server.server.store.session(id: issued.session.id)).lastSeenAt
            let active = try introspect(server, issued.token, with: server.adminToken).jsonObject()["active"]
            if touches {
                #expect(seen > start, "touchesSession true records the use")
                #expect(active as? Bool == true, "and so keeps the session from idling out")
            } else {
                #expect(seen == start, "touchesSession false writes nothing")
                #expect(active as? Bool == false, "so the session idles out after 900 s unused")
            }
        }
    }

    @Test(
        "introspect, read and write tokens and PORTVAKT_ADMIN_TOKEN may introspect",
        arguments: TestEngine.tested)
    func everyScopeIntrospects(engine: TestEngine) throws {
        let server = try TestServer(engine: engine, configuration: ["rateLimits": Self.limits])
        defer { server.stop() }
        let issued = try server.signIn(try server.makeUser(username: "ada"))
        let tokens = server.server.adminTokens
        var presented = [("bootstrap", server.adminToken)]
        for scope in AdminScope.allCases {
            presented.append(
                (
                    scope.rawValue,
                    try tokens.create(name: "t-\(scope)", scope: scope, lifetime: nil, actor: .cli).token
                ))
        }
        for (label, token) in presented {
            let response = try introspect(server, issued.token, with: token)
            #expect(response.status == 200, "\(label)")
            #expect(try response.jsonObject()["active"] as? Bool == true, "\(label)")
        }
        let revoked = try tokens.create(name: "t-revoked", scope: .introspect, lifetime: nil, actor: .cli)
        try tokens.revoke("t-revoked", actor: .cli)
        for (label, token) in [
            ("revoked", revoked.token), ("unknown", "pva_" + String(repeating: "A", count: 43)),
        ] {
            let response = try introspect(server, issued.token, with: token)
            #expect(response.status == 401, "\(label)")
            #expect(try response.problemCode() == "admin.unauthorized", "\(label)")
        }

        let environmentToken = "pva_" + String(repeating: "e", count: 43)
        let fromEnvironment = try TestServer(
            engine: engine, environment: ["PORTVAKT_ADMIN_TOKEN": environmentToken])
        defer { fromEnvironment.stop() }
        let theirs = try fromEnvironment.signIn(try fromEnvironment.makeUser(username: "ada"))
        let response = try introspect(fromEnvironment, theirs.token, with: environmentToken)
        #expect(response.status == 200)
        #expect(try response.jsonObject()["active"] as? Bool == true)
    }

    @Test(
        "an introspect token is refused (403 admin.forbidden) on every other admin route",
        arguments: TestEngine.tested)
    func introspectTokenCanDoNothingElse(engine: TestEngine) throws {
        let server = try TestServer(engine: engine, configuration: ["rateLimits": Self.limits])
        defer { server.stop() }
        let token = try server.server.adminTokens.create(
            name: "app-server", scope: .introspect, lifetime: nil, actor: .cli
        ).token
        let others = server.server.adminRoutes.filter { $0.pattern != "/admin/v1/sessions/introspect" }
        #expect(others.count >= 15)
        #expect(server.server.adminRoutes.count == others.count + 1)
        for route in others {
            let name = "\(route.method.rawValue) \(route.pattern)"
            let response = try client.send(
                method: route.method.rawValue, url: server.adminURL + AdminAuthTests.path(route.pattern),
                headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                body: route.method == .GET ? nil : Array("{}".utf8))
            #expect(response.status == 403, "\(name)")
            #expect(try response.problemCode() == "admin.forbidden", "\(name)")
            #expect(!response.text.contains(token), "\(name)")
        }
        #expect(try server.server.adminTokens.list().first { $0.name == "app-server" }?.scope == .introspect)
    }
    @Test("introspection.touchesSession is false by default, checked strictly, and shown in effect")
    func configuration() throws {
        func parse(_ json: String) throws(ConfigurationError) -> PortvaktConfiguration {
            try PortvaktConfiguration.parse(json: Array(json.utf8), environment: [:])
        }
        func refused(_ json: String) -> [ConfigurationIssue] {
            do {
                _ = try parse(json)
                return []
            } catch { return error.issues }
        }
        #expect(try parse("{}").introspection.touchesSession == false)
        let on = try parse(#"{"introspection": {"touchesSession": true}}"#)
        #expect(on.introspection.touchesSession == true)
        for (configuration, expected) in [(on, true), (try parse("{}"), false)] {
            let shown = try JSONSerialization.jsonObject(with: Data(configuration.effectiveJSON().utf8))
            let section = (shown as? [String: Any])?["introspection"] as? [String: Any]
            #expect(section?.count == 1 && section?["touchesSession"] as? Bool == expected)
        }
        #expect(try parse(on.effectiveJSON()).introspection == on.introspection)
        #expect(
            refused(#"{"introspection": {"touchesSession": 1}}"#).map(\.path) == [
                "introspection.touchesSession"
            ])
        let unknown = refused(#"{"introspection": {"touchSession": true}}"#)
        #expect(unknown.map(\.path) == ["introspection.touchSession"] && unknown.first?.code == .unknownKey)
        #expect(refused(#"{"introspection": true}"#).map(\.path) == ["introspection"])
    }
}
