import CryptoCore
import Foundation
import HTTPEngine
import Kernel
import PortvaktApp
import SessionCore
import TestSupport
import Testing

@testable import Storage

/// Every change the app's servers hear of is written to the outbox by the request that made it,
/// with the data Docs/webhooks.md lists: driven over the public and admin APIs, read back from
/// the outbox the dispatcher delivers from.
@Suite("Webhook events: every change writes its event", .serialized)
struct WebhookEventSourceTests {
    /// A server with one endpoint that wants every type. Its receiver does not listen, so the
    /// events stay in the outbox for the test to read.
    static func server(engine: TestEngine, events: [String] = ["*"], configuration: [String: Any] = [:])
        throws
        -> TestServer
    {
        var json = configuration
        json["webhooks"] = [
            "endpoints": [
                [
                    "name": "app", "url": "http://127.0.0.1:9/portvakt-events", "events": events,
                    "secretVariable": "PORTVAKT_WEBHOOK_APP",
                ]
            ]
        ]
        return try TestServer.inProcess(
            engine: engine, configuration: json,
            environment: [
                "PORTVAKT_WEBHOOK_APP": "whsec_" + Data(repeating: 7, count: 32).base64EncodedString()
            ])
    }

    /// The outbox as the test has seen it so far.
    final class Outbox {
        let server: TestServer
        private var seen: Set<String> = []

        init(_ server: TestServer) { self.server = server }

        /// The events written since the last call: each body parsed, in the order written.
        func new() throws -> [[String: Any]] {
            let rows = try server.server.store.engine.read { connection in
                try connection.query(
                    "SELECT id, payload FROM webhook_events ORDER BY created_at, occurred_at, id"
                ) { (try $0.string(0), try $0.string(1)) }
            }
            var fresh: [[String: Any]] = []
            for (id, payload) in rows where seen.insert(id).inserted {
                let body = try #require(
                    try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])
                fresh.append(body)
            }
            return fresh
        }

        /// The types and data of the new events, sorted, for order-free checks.
        func newSummary() throws -> [String] { try summaryOf(new()) }

        /// Each event as "type {data with sorted keys}", sorted.
        func summaryOf(_ events: [[String: Any]]) throws -> [String] {
            try events.map { body in
                let data = try JSONSerialization.data(
                    withJSONObject: body["data"] as Any, options: [.sortedKeys])
                return "\(body["type"] as? String ?? "?") \(String(decoding: data, as: UTF8.self))"
            }.sorted()
        }
    }

    static func data(_ pairs: KeyValuePairs<String, Any>) -> String {
        let object = Dictionary(uniqueKeysWithValues: pairs.map { ($0.key, $0.value) })
        let json = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return String(decoding: json, as: UTF8.self)
    }

    @Test(
        "sign-up, passkeys, sessions and the admin's acts each write their events, with ids only",
        arguments: TestEngine.tested)
    func accountLifecycle(engine: TestEngine) throws {
        let server = try Self.server(engine: engine)
        defer { server.stop() }
        let outbox = Outbox(server)
        let admin = AdminClient(server)
        let person = PasskeyUser(server: server)

        // A passkey sign-up: the account and its first passkey.
        let (credential, adaID, adaToken) = try person.signUp("ada")
        let credentialID = Base64URL.encode(credential.id)
        let events = try outbox.new()
        #expect(Set(events.compactMap { $0["type"] as? String }) == ["user.created", "passkey.added"])
        #expect(events.allSatisfy { ($0["timestamp"] as? String)?.hasSuffix("Z") == true && $0.count == 3 })
        #expect(
            try outbox.summaryOf(events) == [
                "passkey.added "
                    + Self.data(["userId": adaID, "credentialId": credentialID, "via": "signup"]),
                "user.created " + Self.data(["userId": adaID, "method": "passkey"]),
            ])

        // A second session, then a login on the client that holds the first: the login ends it.
        let second = try person.login(credential)
        #expect(second.status == 200)
        let secondToken = try #require(
            (try second.jsonObject()["session"] as? [String: Any])?["token"] as? String)
        let secondID = try server.server.sessions.authenticate(token: secondToken).id
        #expect(try outbox.new().isEmpty, "a login that replaces nothing tells nobody")
        let replacing = try person.http.sendJSON(
            url: server.publicURL + "/v1/passkeys/login/initialize", json: "{}")
        let options = try replacing.jsonObject()
        let challengeID = try #require(options["challengeId"] as? String)
        let challengeText = try #require((options["publicKey"] as? [String: Any])?["challenge"] as? String)
        let challenge = try #require(Base64URL.decode(challengeText))
        let assertion = String(
            decoding: person.authenticator.authenticate(
                credential, challenge: challenge, origin: person.origin
            ).json(),
            as: UTF8.self)
        let replaced = try person.http.sendJSON(
            url: server.publicURL + "/v1/passkeys/login/finalize",
            json: #"{"challengeId":"\#(challengeID)","credential":\#(assertion),"client":"native"}"#,
            headers: [("Authorization", "Bearer \(secondToken)")])
        #expect(replaced.status == 200, "\(replaced.text)")
        let thirdToken = try #require(
            (try replaced.jsonObject()["session"] as? [String: Any])?["token"] as? String)
        #expect(
            try outbox.newSummary() == [
                "session.revoked "
                    + Self.data(["userId": adaID, "sessionId": secondID, "reason": "replaced"])
            ])

        // The user ends one of their sessions, then logs out of another.
        let thirdID = try server.server.sessions.authenticate(token: thirdToken).id
        let adaSessionID = try server.server.sessions.authenticate(token: adaToken).id
        let ended = try person.http.send(
            .DELETE, server.publicURL + "/v1/me/sessions/\(thirdID)",
            headers: ["Authorization": "Bearer \(adaToken)"])
        #expect(ended.status == 204, "\(ended.text)")
        let logout = try person.http.send(
            .POST, server.publicURL + "/v1/logout", headers: ["Authorization": "Bearer \(adaToken)"])
        #expect(logout.status == 204, "\(logout.text)")
        #expect(
            try outbox.newSummary() == [
                "session.revoked "
                    + Self.data(["userId": adaID, "sessionId": adaSessionID, "reason": "logout"]),
                "session.revoked " + Self.data(["userId": adaID, "sessionId": thirdID, "reason": "user"]),
            ])

        // An administrator's acts.
        let bob = try admin.object("POST", "/admin/v1/users", json: #"{"username":"bob"}"#, status: 201)
        let bobID = try #require(bob["id"] as? String)
        #expect(
            try outbox.newSummary() == ["user.created " + Self.data(["userId": bobID, "method": "admin"])])
        let bobSession = try server.signIn(try #require(try server.server.store.user(id: bobID)))
        _ = try admin.object("PATCH", "/admin/v1/users/\(bobID)", json: #"{"disabled":true}"#)
        #expect(
            try outbox.newSummary() == [
                "session.revoked "
                    + Self.data([
                        "userId": bobID, "sessionId": bobSession.session.id, "reason": "user_disabled",
                    ]),
                "user.disabled " + Self.data(["userId": bobID, "sessionsRevoked": 1]),
            ])
        _ = try admin.object("PATCH", "/admin/v1/users/\(bobID)", json: #"{"disabled":false}"#)
        _ = try admin.object("PATCH", "/admin/v1/users/\(bobID)", json: #"{"displayName":"Robert"}"#)
        #expect(
            try outbox.newSummary() == ["user.enabled " + Self.data(["userId": bobID])],
            "a rename tells nobody")
        let bobAgain = try server.signIn(try #require(try server.server.store.user(id: bobID)))
        let revokedAll = try admin.send("DELETE", "/admin/v1/users/\(bobID)/sessions")
        #expect(revokedAll.status == 200 || revokedAll.status == 204, "\(revokedAll.text)")
        #expect(
            try outbox.newSummary() == [
                "session.revoked "
                    + Self.data(["userId": bobID, "sessionId": bobAgain.session.id, "reason": "admin"])
            ])
        let removed = try admin.send("DELETE", "/admin/v1/users/\(adaID)/passkeys/\(credentialID)")
        #expect(removed.status == 204, "\(removed.text)")
        #expect(
            try outbox.newSummary() == [
                "passkey.removed "
                    + Self.data(["userId": adaID, "credentialId": credentialID, "by": "admin"])
            ])
        #expect(try admin.send("DELETE", "/admin/v1/users/\(bobID)").status == 204)
        #expect(try outbox.newSummary() == ["user.deleted " + Self.data(["userId": bobID])])

        // A refused change writes nothing: a taken username, a passkey that is gone.
        #expect(try admin.send("POST", "/admin/v1/users", json: #"{"username":"ada"}"#).status == 409)
        #expect(try admin.send("DELETE", "/admin/v1/users/\(adaID)/passkeys/\(credentialID)").status == 404)
        #expect(try outbox.new().isEmpty)
    }

    @Test(
        "an enrollment link's passkey, and a user removing their own passkey",
        arguments: TestEngine.tested)
    func enrollmentAndRemoval(engine: TestEngine) throws {
        let server = try Self.server(engine: engine)
        defer { server.stop() }
        let outbox = Outbox(server)
        let admin = AdminClient(server)
        let created = try admin.object(
            "POST", "/admin/v1/users", json: #"{"username":"newbie"}"#, status: 201)
        let userID = try #require(created["id"] as? String)
        let link = try admin.object(
            "POST", "/admin/v1/users/\(userID)/enrollment-links", json: "{}", status: 201)
        _ = try outbox.new()

        let enrollment = Enrollment(server: server)
        let started = try enrollment.start(try #require(link["token"] as? String))
        let finished = try enrollment.finish(
            id: try #require(started.id), challenge: started.challenge, handle: started.handle)
        #expect(finished.response.status == 201, "\(finished.response.text)")
        let first = Base64URL.encode(finished.credential.id)
        #expect(
            try outbox.newSummary() == [
                "passkey.added " + Self.data(["userId": userID, "credentialId": first, "via": "enrollment"])
            ])

        // A second passkey, added by the signed-in user; then the first removed by the user.
        let token = try #require(
            (try finished.response.jsonObject()["session"] as? [String: Any])?["token"] as? String)
        let person = PasskeyUser(server: server)
        let added = try person.addPasskey(token: token)
        #expect(
            try outbox.newSummary() == [
                "passkey.added "
                    + Self.data([
                        "userId": userID, "credentialId": Base64URL.encode(added.id), "via": "added",
                    ])
            ])
        let removed = try person.http.send(
            .DELETE, server.publicURL + "/v1/me/passkeys/\(first)",
            headers: ["Authorization": "Bearer \(token)"])
        #expect(removed.status == 200, "\(removed.text)")
        #expect(
            try outbox.newSummary() == [
                "passkey.removed " + Self.data(["userId": userID, "credentialId": first, "by": "user"])
            ])
    }

    @Test(
        "BankID: sign-up, link and recovery write their events, never a personal number or a name",
        arguments: TestEngine.tested)
    func bankID(engine: TestEngine) async throws {
        let server = try Self.server(
            engine: engine, configuration: ["recovery": ["revokeOldPasskeys": true]])
        defer { server.stop() }
        let outbox = Outbox(server)

        var stranger = BankIDClient(server)
        let signedUp = try await stranger.run("signup", as: "199001012385")
        let newID = try #require((result(signedUp)["user"] as? [String: Any])?["id"] as? String)
        #expect(
            try outbox.newSummary() == [
                "bankid.linked " + Self.data(["userId": newID]),
                "user.created " + Self.data(["userId": newID, "method": "bankid"]),
            ])

        let recovered = try await BankIDAPITests().recoverAccount(server)
        let events = try outbox.new()
        let userID = recovered.userID
        let oldID = Base64URL.encode(recovered.old.id)
        let newCredential = Base64URL.encode(recovered.new.id)
        let lost = try #require(
            try server.server.store.session(tokenHash: SessionService.lookupHash(token: recovered.oldToken)))
        #expect(lost.revokedAt != nil)
        let revoked = events.filter { $0["type"] as? String == "session.revoked" }
        #expect(revoked.count >= 1)
        #expect(
            try outbox.summaryOf(events.filter { $0["type"] as? String != "session.revoked" })
                == [
                    "bankid.linked " + Self.data(["userId": userID]),
                    "passkey.added " + Self.data(["userId": userID, "credentialId": oldID, "via": "signup"]),
                    "passkey.added "
                        + Self.data(["userId": userID, "credentialId": newCredential, "via": "recovery"]),
                    "passkey.removed "
                        + Self.data(["userId": userID, "credentialId": oldID, "by": "recovery"]),
                    "recovery.completed "
                        + Self.data([
                            "userId": userID, "credentialId": newCredential, "sessionsRevoked": revoked.count,
                            "passkeysRevoked": 1,
                        ]),
                    "user.created " + Self.data(["userId": userID, "method": "passkey"]),
                ].sorted())
        #expect(
            try outbox.summaryOf(revoked).contains(
                "session.revoked "
                    + Self.data(["userId": userID, "sessionId": lost.id, "reason": "recovery"])))
        #expect(
            revoked.allSatisfy { ($0["data"] as? [String: Any])?["reason"] as? String == "recovery" })

        // Ids only: no personal number, name, token or digest in any body.
        let bodies = try server.server.store.engine.read { connection in
            try connection.query("SELECT payload FROM webhook_events") { try $0.string(0) }
        }
        for body in bodies {
            for secret in ["199001012385", "198112289874", "Tolvan", "Anna", "pvs_", "pve_"] {
                #expect(!body.contains(secret), "\(body)")
            }
        }
    }

    @Test(
        "an endpoint that wants some types gets only those; no endpoint, no rows",
        arguments: TestEngine.tested)
    func routing(engine: TestEngine) throws {
        let narrow = try Self.server(engine: engine, events: ["user.deleted"])
        defer { narrow.stop() }
        let outbox = Outbox(narrow)
        let (_, userID, _) = try PasskeyUser(server: narrow).signUp("ada")
        #expect(try outbox.new().isEmpty)
        #expect(try AdminClient(narrow).send("DELETE", "/admin/v1/users/\(userID)").status == 204)
        #expect(try outbox.newSummary() == ["user.deleted " + Self.data(["userId": userID])])

        let plain = try TestServer.inProcess(engine: engine)
        defer { plain.stop() }
        let (_, plainID, _) = try PasskeyUser(server: plain).signUp("ada")
        #expect(try AdminClient(plain).send("DELETE", "/admin/v1/users/\(plainID)").status == 204)
        #expect(try Outbox(plain).new().isEmpty)
    }
}
