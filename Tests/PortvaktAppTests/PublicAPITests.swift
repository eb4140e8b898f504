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

/// The public API through the whole HTTP pipeline in process (no socket), with SQLite on a real
/// file and a fixed clock.
@Suite("Public API", .serialized)
struct PublicAPITests {
    let client = InProcessHTTPClient()

    @Test("liveness and readiness answer 200 with JSON")
    func health() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let alive = try client.send(.GET, "\(server.publicURL)/health/alive")
        #expect(alive.status == 200)
        #expect(alive.headers["content-type"]?.hasPrefix("application/json") == true)
        #expect(try alive.jsonObject()["status"] as? String == "alive")
        let ready = try client.send(.GET, "\(server.publicURL)/health/ready")
        #expect(ready.status == 200)
        #expect(try ready.jsonObject()["status"] as? String == "ready")
    }

    @Test("readiness answers 503 once the database is gone")
    func notReady() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        server.server.engine.close()
        let ready = try client.send(.GET, "\(server.publicURL)/health/ready")
        #expect(ready.status == 503)
        #expect(try ready.problemCode() == "health.not_ready")
    }

    @Test("the OpenAPI document lists every public route")
    func openAPI() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let document = try client.send(.GET, "\(server.publicURL)/openapi.json").jsonObject()
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: Any])
        for path in [
            "/health/alive", "/health/ready", "/v1/me", "/v1/logout", "/v1/me/sessions",
            "/v1/me/sessions/{id}", "/openapi.json",
        ] {
            #expect(paths[path] != nil, "missing \(path)")
        }
    }

    @Test("GET /v1/me without a session is a 401 problem")
    func meWithoutSession() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let response = try client.send(.GET, "\(server.publicURL)/v1/me")
        #expect(response.status == 401)
        #expect(response.headers["content-type"] == "application/problem+json")
        #expect(try response.problemCode() == "session.missing")
        let garbage = try client.send(
            .GET, "\(server.publicURL)/v1/me", headers: ["Authorization": "Bearer pvs_nonsense"])
        #expect(garbage.status == 401)
    }

    @Test("a bearer token and a session cookie both open GET /v1/me")
    func me() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let user = try server.makeUser(username: "ada", displayName: "Ada Lovelace")
        let native = try server.signIn(user, as: .native)
        let response = try client.send(
            .GET, "\(server.publicURL)/v1/me", headers: ["Authorization": "Bearer \(native.token)"])
        #expect(response.status == 200)
        let body = try response.jsonObject()
        let userObject = try #require(body["user"] as? [String: Any])
        #expect(userObject["id"] as? String == user.id)
        #expect(userObject["displayName"] as? String == "Ada Lovelace")
        #expect(response.headers["cache-control"] == "no-store")
        #expect(!response.text.contains(native.token))

        let web = try server.signIn(user, as: .web)
        let viaCookie = try client.send(
            .GET, "\(server.publicURL)/v1/me", headers: ["Cookie": "portvakt_session=\(web.token)"])
        #expect(viaCookie.status == 200)
    }

    @Test(
        "a token older than sessions.rotationIntervalSeconds is exchanged: bearer in a header, web in the cookie; the old one ends after the grace"
    )
    func rotation() throws {
        let server = try TestServer.inProcess(configuration: ["sessions": ["rotationIntervalSeconds": 600]])
        defer { server.stop() }
        let user = try server.makeUser(username: "ada")
        let me = "\(server.publicURL)/v1/me"

        let native = try server.signIn(user, as: .native)
        #expect(
            try client.send(.GET, me, headers: ["Authorization": "Bearer \(native.token)"])
                .headers["portvakt-session-token"] == nil)
        server.clock.advance(by: 600)
        let rotated = try client.send(.GET, me, headers: ["Authorization": "Bearer \(native.token)"])
        #expect(rotated.status == 200)
        let newToken = try #require(rotated.headers["portvakt-session-token"])
        #expect(newToken.hasPrefix("pvs_") && newToken != native.token)
        #expect(
            rotated.headers["portvakt-session-expires-at"] == UTCTimestamp.string(native.session.expiresAt))
        // The body describes the session the client now holds.
        let current = try #require(try rotated.jsonObject()["session"] as? [String: Any])
        #expect(current["id"] as? String != native.session.id)
        let again = try client.send(.GET, me, headers: ["Authorization": "Bearer \(newToken)"])
        #expect(again.status == 200 && again.headers["portvakt-session-token"] == nil)
        // Within the grace the old token still works (requests in flight); after it, not.
        server.clock.advance(by: 59)
        #expect(try client.send(.GET, me, headers: ["Authorization": "Bearer \(native.token)"]).status == 200)
        server.clock.advance(by: 1)
        let late = try client.send(.GET, me, headers: ["Authorization": "Bearer \(native.token)"])
        #expect(late.status == 401)
        #expect(try late.problemCode() == "session.expired")
        #expect(try client.send(.GET, me, headers: ["Authorization": "Bearer \(newToken)"]).status == 200)

        let web = try server.signIn(user, as: .web)
        server.clock.advance(by: 600)
        let viaCookie = try client.send(.GET, me, headers: ["Cookie": "portvakt_session=\(web.token)"])
        #expect(viaCookie.status == 200)
        let cookie = try #require(viaCookie.headers["set-cookie"])
        #expect(cookie.hasPrefix("portvakt_session=pvs_") && !cookie.contains(web.token))
        #expect(cookie.contains("HttpOnly") && viaCookie.headers["portvakt-session-token"] == nil)
        let newCookie = String(cookie.prefix { $0 != ";" })
        #expect(try client.send(.GET, me, headers: ["Cookie": newCookie]).status == 200)
        server.clock.advance(by: 60)
        #expect(try client.send(.GET, me, headers: ["Cookie": "portvakt_session=\(web.token)"]).status == 401)
        #expect(try client.send(.GET, me, headers: ["Cookie": newCookie]).status == 200)
    }

    @Test("a session past its absolute lifetime is refused as expired (fixed clock)")
    func expiry() throws {
        let server = try TestServer.inProcess(configuration: [
            "sessions": ["absoluteLifetimeSeconds": 3600, "idleTimeoutSeconds": 3600]
        ])
        defer { server.stop() }
        let user = try server.makeUser(username: "ada")
        let issued = try server.signIn(user)
        let headers = ["Authorization": "Bearer \(issued.token)"]
        server.clock.advance(by: 3599)
        #expect(try client.send(.GET, "\(server.publicURL)/v1/me", headers: headers).status == 200)
        server.clock.advance(by: 1)
        let expired = try client.send(.GET, "\(server.publicURL)/v1/me", headers: headers)
        #expect(expired.status == 401)
        #expect(try expired.problemCode() == "session.expired")
    }

    @Test("an idle session expires, an active one does not (fixed clock)")
    func idle() throws {
        let server = try TestServer.inProcess(configuration: ["sessions": ["idleTimeoutSeconds": 600]])
        defer { server.stop() }
        let user = try server.makeUser(username: "ada")
        let active = try server.signIn(user)
        let idle = try server.signIn(user)
        for _ in 0..<3 {
            server.clock.advance(by: 300)
            let response = try client.send(
                .GET, "\(server.publicURL)/v1/me", headers: ["Authorization": "Bearer \(active.token)"])
            #expect(response.status == 200)
        }
        let response = try client.send(
            .GET, "\(server.publicURL)/v1/me", headers: ["Authorization": "Bearer \(idle.token)"])
        #expect(try response.problemCode() == "session.idle_expired")
    }

    @Test("after logout the token is revoked and refused")
    func logout() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let user = try server.makeUser(username: "ada")
        let issued = try server.signIn(user)
        let headers = ["Authorization": "Bearer \(issued.token)"]
        #expect(try client.send(.POST, "\(server.publicURL)/v1/logout", headers: headers).status == 204)
        let after = try client.send(.GET, "\(server.publicURL)/v1/me", headers: headers)
        #expect(after.status == 401)
        #expect(try after.problemCode() == "session.revoked")
        let events = try server.server.store.auditEvents(userID: user.id, beforeID: nil, limit: 10)
        #expect(events.map(\.action.rawValue) == ["session.logout"])
        #expect(events.first?.requestID?.isEmpty == false)
    }

    @Test("a cookie logout from a foreign origin is refused; from the app's origin it clears the cookie")
    func cookieLogout() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let user = try server.makeUser(username: "ada")
        let issued = try server.signIn(user, as: .web)
        let cookie = "portvakt_session=\(issued.token)"
        let foreign = try client.send(
            .POST, "\(server.publicURL)/v1/logout",
            headers: ["Cookie": cookie, "Origin": "https://evil.example"])
        #expect(foreign.status == 403)
        #expect(try foreign.problemCode() == "request.cross_site_refused")
        let noOrigin = try client.send(.POST, "\(server.publicURL)/v1/logout", headers: ["Cookie": cookie])
        #expect(noOrigin.status == 403)
        let own = try client.send(
            .POST, "\(server.publicURL)/v1/logout",
            headers: ["Cookie": cookie, "Origin": "http://localhost:8080"])
        #expect(own.status == 204)
        let setCookie = try #require(own.headers["set-cookie"])
        #expect(setCookie.contains("portvakt_session=;") && setCookie.contains("Max-Age=0"))
        #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Lax"))
    }

    @Test("the sessions list shows the user's live sessions and marks the current one")
    func sessionsList() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let ada = try server.makeUser(username: "ada")
        let bob = try server.makeUser(username: "bob")
        let first = try server.signIn(ada)
        server.clock.advance(by: 5)
        let second = try server.signIn(ada, as: .web)
        _ = try server.signIn(bob)
        let response = try client.send(
            .GET, "\(server.publicURL)/v1/me/sessions", headers: ["Authorization": "Bearer \(first.token)"])
        let sessions = try #require(try response.jsonObject()["sessions"] as? [[String: Any]])
        #expect(sessions.map { $0["id"] as? String } == [second.session.id, first.session.id])
        #expect(sessions.map { $0["current"] as? Bool } == [false, true])
        #expect(!response.text.contains("token"))
    }

    @Test("a user ends another of their sessions, but gets 404 for someone else's")
    func revokeSession() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let ada = try server.makeUser(username: "ada")
        let bob = try server.makeUser(username: "bob")
        let mine = try server.signIn(ada)
        let myOther = try server.signIn(ada)
        let bobs = try server.signIn(bob)
        let headers = ["Authorization": "Bearer \(mine.token)"]
        let theirs = try client.send(
            .DELETE, "\(server.publicURL)/v1/me/sessions/\(bobs.session.id)", headers: headers)
        #expect(theirs.status == 404)
        #expect(try theirs.problemCode() == "session.not_found")
        let ok = try client.send(
            .DELETE, "\(server.publicURL)/v1/me/sessions/\(myOther.session.id)", headers: headers)
        #expect(ok.status == 204)
        let revoked = try client.send(
            .GET, "\(server.publicURL)/v1/me", headers: ["Authorization": "Bearer \(myOther.token)"])
        #expect(try revoked.problemCode() == "session.revoked")
        #expect(
            try client.send(
                .GET, "\(server.publicURL)/v1/me", headers: ["Authorization": "Bearer \(bobs.token)"]
            )
            .status == 200)
    }

    @Test("a disabled account's session is refused with account.disabled")
    func disabledUser() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        var user = try server.makeUser(username: "ada")
        let issued = try server.signIn(user)
        user.disabledAt = server.clock.now()
        try server.server.store.updateUser(user)
        let response = try client.send(
            .GET, "\(server.publicURL)/v1/me", headers: ["Authorization": "Bearer \(issued.token)"])
        #expect(response.status == 403)
        #expect(try response.problemCode() == "account.disabled")
    }

    @Test("the admin listener requires its token and never shows secrets")
    func admin() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        #expect(server.adminToken.hasPrefix("pva_"))
        let anonymous = try client.send(.GET, "\(server.adminURL)/admin/v1/config")
        #expect(anonymous.status == 401)
        #expect(try anonymous.problemCode() == "admin.unauthorized")
        let wrong = try client.send(
            .GET, "\(server.adminURL)/admin/v1/config", headers: ["Authorization": "Bearer pva_wrong"])
        #expect(wrong.status == 401)
        let config = try client.send(
            .GET, "\(server.adminURL)/admin/v1/config",
            headers: ["Authorization": "Bearer \(server.adminToken)"])
        #expect(config.status == 200)
        #expect(try config.jsonObject()["publicURL"] as? String == "http://localhost:8080")
        #expect(!config.text.contains(server.adminToken))
        // The public listener does not serve admin routes.
        #expect(try client.send(.GET, "\(server.publicURL)/admin/v1/config").status == 404)
    }
}
