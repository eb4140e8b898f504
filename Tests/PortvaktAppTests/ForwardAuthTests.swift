import CryptoCore
import Foundation
import HTTPEngine
import Kernel
import PortvaktAPI
import PortvaktApp
import SessionCore
import Storage
import TestSupport
import Testing

/// `GET /v1/auth/check` through the public pipeline in process: the answer a proxy acts on.
/// ForwardAuthNginxTests runs the same route behind a real nginx.
@Suite("Forward auth: GET /v1/auth/check", .serialized)
struct ForwardAuthTests {
    let client = InProcessHTTPClient()

    /// A user with `username` (nil for none) stored directly.
    static func user(_ server: TestServer, username: String?) throws -> User {
        let user = User(
            id: try SystemRandom().token(byteCount: 16), username: username, displayName: "Åsa",
            createdAt: server.clock.now())
        try server.server.store.insertUser(user)
        return user
    }

    @Test("a bearer session answers 204 with the four headers, no-store and no body; HEAD too")
    func bearer() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let user = try Self.user(server, username: "åsa.öberg@exempel")
        let issued = try server.signIn(user)
        for method in [HTTPMethod.GET, .HEAD] {
            let response = try client.send(
                method: method.rawValue, url: "\(server.publicURL)/v1/auth/check",
                headers: [("Authorization", "Bearer \(issued.token)")])
            #expect(response.status == 204)
            #expect(response.headers["portvakt-user-id"] == user.id)
            #expect(response.headers["portvakt-session-id"] == issued.session.id)
            // UTF-8, every byte outside RFC 3986's unreserved set as %XX.
            #expect(response.headers["portvakt-username"] == "%C3%A5sa.%C3%B6berg%40exempel")
            #expect(response.headers["portvakt-auth-method"] == "passkey")
            #expect(response.headers["cache-control"] == "no-store")
            #expect(response.body.isEmpty)
        }
    }

    @Test("an account without a username gets no Portvakt-Username; enrollment sessions say passkey")
    func noUsername() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let user = try Self.user(server, username: nil)
        let issued = try server.server.sessions.issue(
            userID: user.id, clientKind: .native, authMethod: .enrollment)
        let response = try client.send(
            url: "\(server.publicURL)/v1/auth/check", headers: [("Authorization", "Bearer \(issued.token)")])
        #expect(response.status == 204)
        #expect(response.headers["portvakt-user-id"] == user.id)
        #expect(response.headers["portvakt-username"] == nil)
        #expect(response.headers["portvakt-auth-method"] == "passkey")
    }

    @Test("the app's own Authorization scheme does not hide the cookie; a pvs_ bearer wins over it")
    func cookieBesideAppBearer() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let web = try server.signIn(try server.makeUser(username: "webbie"), as: .web)
        let native = try server.signIn(try server.makeUser(username: "native"))
        let cookie = ("Cookie", "\(server.server.configuration.sessionCookieName)=\(web.token)")
        let appBearer = try client.send(
            url: "\(server.publicURL)/v1/auth/check",
            headers: [cookie, ("Authorization", "Bearer app-jwt.x.y")])
        #expect(appBearer.status == 204)
        #expect(appBearer.headers["portvakt-session-id"] == web.session.id)
        let ours = try client.send(
            url: "\(server.publicURL)/v1/auth/check",
            headers: [cookie, ("Authorization", "Bearer \(native.token)")])
        #expect(ours.headers["portvakt-session-id"] == native.session.id)
    }

    @Test(
        "every refusal is a 401 problem with no-store: none, garbage, revoked, disabled, cross-site cookie change"
    )
    func refusals() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let url = "\(server.publicURL)/v1/auth/check"
        func expectRefused(_ headers: [(String, String)], _ code: String, _ comment: Comment) throws {
            let response = try client.send(url: url, headers: headers)
            #expect(response.status == 401, comment)
            #expect(try response.problemCode() == code, comment)
            #expect(response.headers["cache-control"] == "no-store", comment)
            #expect(response.headers["portvakt-user-id"] == nil, comment)
        }
        try expectRefused([], "session.missing", "no token")
        try expectRefused([("Authorization", "Bearer pvs_garbage")], "session.missing", "garbage")
        let revoked = try server.signIn(try server.makeUser(username: "revoked"))
        try server.server.store.endSession(
            revoked.session.id, ofUser: revoked.session.userID, at: server.clock.now())
        try expectRefused([("Authorization", "Bearer \(revoked.token)")], "session.revoked", "revoked")
        // A disabled account whose session is still live (disabling through the admin API also
        // revokes it): the account rule refuses, as 401 here, not 403.
        let disabledUser = try server.makeUser(username: "disabled")
        let disabled = try server.signIn(disabledUser)
        var stored = disabledUser
        stored.disabledAt = server.clock.now()
        try server.server.store.updateUser(stored)
        try expectRefused([("Authorization", "Bearer \(disabled.token)")], "account.disabled", "disabled")

        let web = try server.signIn(try server.makeUser(username: "browser"), as: .web)
        let cookie = ("Cookie", "\(server.server.configuration.sessionCookieName)=\(web.token)")
        try expectRefused(
            [cookie, ("X-Forwarded-Method", "POST"), ("Origin", "https://evil.example")],
            "request.cross_site_refused", "cross-site cookie POST")
        try expectRefused(
            [cookie, ("X-Forwarded-Method", "DELETE")], "request.cross_site_refused",
            "cookie DELETE without origin")
        // The same cookie on a safe method, or a change from the public origin, passes.
        for headers in [
            [cookie, ("X-Forwarded-Method", "GET"), ("Origin", "https://evil.example")],
            [cookie, ("X-Forwarded-Method", "POST"), ("Origin", server.server.configuration.publicOrigin)],
        ] {
            #expect(try client.send(url: url, headers: headers).status == 204)
        }
    }

    @Test("a database that fails is a 5xx, never a 401 or a 204: a proxy fails closed with its own error")
    func storageDown() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let issued = try server.signIn(try server.makeUser(username: "outage"))
        server.server.engine.close()
        let response = try client.send(
            url: "\(server.publicURL)/v1/auth/check", headers: [("Authorization", "Bearer \(issued.token)")])
        #expect(response.status >= 500, "a failed store is not a refusal")
        #expect(response.headers["portvakt-user-id"] == nil)
    }

    @Test("the route counts against rateLimits.backend, per client address")
    func rateClass() throws {
        let server = try TestServer.inProcess(configuration: [
            "rateLimits": ["backend": ["burst": 2, "perSecond": 0.001]]
        ])
        defer { server.stop() }
        let statuses = try (0..<3).map { _ in
            try client.send(.GET, "\(server.publicURL)/v1/auth/check").status
        }
        #expect(statuses == [401, 401, 429])
        // Other public routes keep their own bucket.
        #expect(try client.send(.GET, "\(server.publicURL)/v1/me").status == 401)
    }
}

/// The route as the public API document describes it.
@Suite("Forward auth in the OpenAPI document")
struct ForwardAuthDocumentTests {
    @Test("the 204 names the four headers (the username optional) and the 401 lists every refusal's code")
    func documented() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let document = try InProcessHTTPClient().send(url: "\(server.publicURL)/openapi.json").jsonObject()
        let paths = try #require(document["paths"] as? [String: Any])
        let check = try #require((paths["/v1/auth/check"] as? [String: Any])?["get"] as? [String: Any])
        #expect(check["x-rate-class"] as? String == "backend")
        let responses = try #require(check["responses"] as? [String: Any])
        let headers = try #require(
            (responses["204"] as? [String: Any])?["headers"] as? [String: [String: Any]])
        #expect(
            Set(headers.keys) == [
                "Portvakt-User-Id", "Portvakt-Session-Id", "Portvakt-Username", "Portvakt-Auth-Method",
            ])
        #expect(headers["Portvakt-Username"]?["required"] as? Bool == false)
        #expect(headers["Portvakt-User-Id"]?["required"] as? Bool == true)
        let refusal = try #require(responses["401"] as? [String: Any])
        let text = String(describing: refusal)
        for code in [
            "session.missing", "session.unknown", "session.revoked", "session.expired",
            "session.idle_expired",
            "account.disabled", "request.cross_site_refused",
        ] {
            #expect(text.contains(code), "401 lacks \(code)")
        }
        #expect(responses["403"] == nil, "every refusal is a 401 on this route")
    }
}
