import AuthOrchestrator
import BankIDCore
import CryptoCore
import Foundation
import HTTPEngine
import Kernel
import PasskeyCore
import PortvaktApp
import SessionCore
import TestSupport
import Testing

@testable import Storage

/// The user's own account over real HTTP (a listening server, libcurl) with the software
/// authenticator: the recent sign-in the acts that cannot be undone need, re-authentication,
/// renaming, the export and the deletion (Docs/api.md, "Your own account").
@Suite("Own account: re-authentication, rename, export, delete", .serialized)
struct OwnAccountTests {
    private func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }

    /// A JSON value's text with sorted keys: what two values compare by, whatever their types.
    private func canonical(_ value: Any?) -> String {
        guard let value, let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys])
        else { return "none" }
        return String(decoding: data, as: UTF8.self)
    }

    private func send(
        _ c: PasskeyClient, _ method: String, _ path: String, token: String, json: String? = nil
    ) throws -> TestResponse {
        if let json {
            return try c.http.sendJSON(
                method: method, url: c.server.publicURL + path, json: json, headers: bearer(token))
        }
        return try c.http.send(
            method: method, url: c.server.publicURL + path, headers: bearer(token), body: nil)
    }

    /// A passkey re-authentication of the session behind `token` with `credential`; the answer.
    private func reauthenticate(
        _ c: PasskeyClient, token: String, with credential: SoftwareCredential
    ) throws -> TestResponse {
        let started = try send(c, "POST", "/v1/me/reauthenticate/initialize", token: token)
        #expect(started.status == 200, "\(started.text)")
        let object = try started.jsonObject()
        let assertion = c.authenticator.authenticate(
            credential, challenge: try challengeBytes(object), origin: c.origin)
        let body = String(decoding: assertion.json(), as: UTF8.self)
        return try send(
            c, "POST", "/v1/me/reauthenticate/finalize", token: token,
            json:
                #"{"challengeId":"\#(try #require(object["challengeId"] as? String))","credential":\#(body)}"#
        )
    }

    /// Adds a second passkey to the account behind `token`.
    private func addPasskey(_ c: PasskeyClient, token: String) throws -> SoftwareCredential {
        let started = try c.startRegistration("{}", headers: bearer(token))
        let credential = c.authenticator.makeCredential(
            algorithm: .es256, rpID: "localhost", userHandle: started.userHandle)
        let added = try c.finalizeRegistration(
            started.id, c.authenticator.register(credential, challenge: started.challenge, origin: c.origin),
            headers: bearer(token))
        #expect(added.status == 201, "\(added.text)")
        return credential
    }

    /// The challenge bytes of an options answer.
    private func challengeBytes(_ answer: [String: Any]) throws -> [UInt8] {
        let text = try #require((answer["publicKey"] as? [String: Any])?["challenge"] as? String)
        return try #require(Base64URL.decode(text))
    }

    private func expectReauthenticationRequired(_ response: TestResponse, methods: [String]) throws {
        #expect(response.status == 403, "\(response.text)")
        let problem = try response.jsonObject()
        #expect(problem["code"] as? String == "reauthentication_required")
        #expect(problem["methods"] as? [String] == methods)
    }

    @Test(
        "removing a passkey, ending the other sessions and deleting the account need a recent proof; a passkey re-authentication gives one, never a session",
        arguments: TestEngine.tested)
    func protectedActs(engine: TestEngine) throws {
        let server = try TestServer(.live, engine: engine)
        defer { server.stop() }
        let c = PasskeyClient(server)
        let (credential, token) = try c.signUp("ada")
        let second = try addPasskey(c, token: token)
        let other =
            try #require(
                try c.login(credential).jsonObject()["session"] as? [String: Any])["token"] as? String
        let userID = try #require(try c.me(token).jsonObject()["user"] as? [String: Any])["id"] as? String

        // Within the window the sign-in itself is the proof: just under it passes…
        server.clock.advance(by: 299)
        let ended = try send(c, "DELETE", "/v1/me/sessions", token: token)
        #expect(try ended.status == 200 && ended.jsonObject()["revoked"] as? Int == 1, "\(ended.text)")
        #expect(try c.me(try #require(other)).status == 401, "the other session ended")
        // …and at it every protected act is refused, saying how to re-authenticate.
        server.clock.advance(by: 1)
        let passkeyPath = "/v1/me/passkeys/\(Base64URL.encode(second.id))"
        try expectReauthenticationRequired(
            try send(c, "DELETE", passkeyPath, token: token), methods: ["passkey"])
        try expectReauthenticationRequired(
            try send(c, "DELETE", "/v1/me/sessions", token: token), methods: ["passkey"])
        try expectReauthenticationRequired(
            try send(c, "DELETE", "/v1/me", token: token), methods: ["passkey"])
        #expect(try server.server.store.passkeyCount(userID: try #require(userID)) == 2)

        // The options list the user's own passkeys; the answer opens no session.
        let sessionsBefore = try server.server.store.allSessions(userID: try #require(userID)).count
        let proved = try reauthenticate(c, token: token, with: credential)
        #expect(proved.status == 200, "\(proved.text)")
        let proof = try proved.jsonObject()
        #expect(proof["authenticatedAt"] as? String == UTCTimestamp.string(server.clock.now()))
        #expect(
            proof["validUntil"] as? String == UTCTimestamp.string(server.clock.now().addingTimeInterval(300)))
        #expect(proved.headers["set-cookie"] == nil && proof["session"] == nil)
        #expect(try server.server.store.allSessions(userID: try #require(userID)).count == sessionsBefore)

        #expect(
            try send(c, "DELETE", passkeyPath, token: token).status == 200,
            "the passkeys left, for the Signal API")
        #expect(try server.server.store.passkeyCount(userID: try #require(userID)) == 1)
        let events = try server.server.store.allAuditEvents(userID: try #require(userID)).map(
            \.action.rawValue)
        #expect(
            events.contains("passkey.reauthenticated") && events.contains("session.others_revoked_by_user"))

        // The proof runs out as the sign-in's did (the injected clock): refused again, then allowed.
        server.clock.advance(by: 300)
        try expectReauthenticationRequired(
            try send(c, "DELETE", "/v1/me", token: token), methods: ["passkey"])
        #expect(try reauthenticate(c, token: token, with: credential).status == 200)
        let deleted = try send(c, "DELETE", "/v1/me", token: token)
        #expect(deleted.status == 204, "\(deleted.text)")
        #expect(try c.me(token).status == 401)
        // The deleted user's passkey no longer signs in.
        let login = try c.login(credential)
        #expect(try login.status == 400 && login.problemCode() == "passkey.login_failed", "\(login.text)")
    }

    @Test(
        "a re-authentication accepts only the signed-in user's passkey, once, and its challenge never opens a session",
        arguments: TestEngine.tested)
    func reauthenticationRefusals(engine: TestEngine) throws {
        let server = try TestServer(.live, engine: engine)
        defer { server.stop() }
        let c = PasskeyClient(server)
        let (ada, adaToken) = try c.signUp("ada")
        let (bob, bobToken) = try c.signUp("bob")
        server.clock.advance(by: 400)

        // Bob's passkey answering Ada's challenge in Ada's session.
        let byBob = try reauthenticate(c, token: adaToken, with: bob)
        #expect(try byBob.status == 400 && byBob.problemCode() == "reauthentication_failed", "\(byBob.text)")
        try expectReauthenticationRequired(
            try send(c, "DELETE", "/v1/me", token: adaToken), methods: ["passkey"])

        // Ada's challenge presented in Bob's session is not his; a replay is refused.
        let started = try send(c, "POST", "/v1/me/reauthenticate/initialize", token: adaToken).jsonObject()
        let challengeID = try #require(started["challengeId"] as? String)
        let challenge = try challengeBytes(started)
        let allowed = try #require(
            (started["publicKey"] as? [String: Any])?["allowCredentials"] as? [[String: Any]])
        #expect(allowed.compactMap { $0["id"] as? String } == [Base64URL.encode(ada.id)])
        let assertion = String(
            decoding: c.authenticator.authenticate(ada, challenge: challenge, origin: c.origin).json(),
            as: UTF8.self)
        let body = #"{"challengeId":"\#(challengeID)","credential":\#(assertion)}"#
        let inBobs = try send(c, "POST", "/v1/me/reauthenticate/finalize", token: bobToken, json: body)
        #expect(try inBobs.status == 400 && inBobs.problemCode() == "passkey.challenge_invalid")
        // That attempt spent the challenge (one attempt each), so Ada's own answer to it is refused too.
        let spent = try send(c, "POST", "/v1/me/reauthenticate/finalize", token: adaToken, json: body)
        #expect(try spent.status == 400 && spent.problemCode() == "passkey.challenge_invalid")

        // A re-authentication challenge cannot finish a login.
        let again = try send(c, "POST", "/v1/me/reauthenticate/initialize", token: adaToken).jsonObject()
        let againChallenge = try challengeBytes(again)
        let asLogin = try c.finalizeLogin(
            try #require(again["challengeId"] as? String),
            c.authenticator.authenticate(ada, challenge: againChallenge, origin: c.origin))
        #expect(try asLogin.status == 400 && asLogin.problemCode() == "passkey.challenge_invalid")

        // The one that succeeds is not accepted twice.
        let fresh = try send(c, "POST", "/v1/me/reauthenticate/initialize", token: adaToken).jsonObject()
        let freshChallenge = try challengeBytes(fresh)
        let answer = String(
            decoding: c.authenticator.authenticate(ada, challenge: freshChallenge, origin: c.origin).json(),
            as: UTF8.self)
        let freshBody =
            #"{"challengeId":"\#(try #require(fresh["challengeId"] as? String))","credential":\#(answer)}"#
        #expect(
            try send(c, "POST", "/v1/me/reauthenticate/finalize", token: adaToken, json: freshBody).status
                == 200)
        let replay = try send(c, "POST", "/v1/me/reauthenticate/finalize", token: adaToken, json: freshBody)
        #expect(try replay.status == 400 && replay.problemCode() == "passkey.challenge_invalid")
        let me = try #require(try c.me(adaToken).jsonObject()["user"] as? [String: Any])
        let failures = try server.server.store.allAuditEvents(userID: try #require(me["id"] as? String))
            .filter { $0.action == .passkeyReauthenticationFailed }
        #expect(failures.count >= 2)
    }

    @Test(
        "a BankID signature by the account's own identity, through the simulator, proves presence",
        arguments: TestEngine.tested)
    func bankIDSignProves(engine: TestEngine) async throws {
        let server = try TestServer(.live, engine: engine)
        defer { server.stop() }
        let ada = try server.makeUser(username: "ada")
        let token = try server.signIn(ada).token
        var client = BankIDClient(server, token: token)
        #expect(result(try await client.run("link"))["code"] as? String == "bankid.linked")
        server.clock.advance(by: 301)
        let url = server.publicURL + "/v1/me"
        let refused = try await request("DELETE", url, headers: bearer(token))
        // No passkey: BankID is the one way offered.
        try expectReauthenticationRequired(refused, methods: ["bankid"])
        // Someone else's signature proves nothing.
        let other = try await client.run("sign", as: "199001012385", text: "Delete my account")
        #expect(result(other)["code"] as? String == "bankid.identity_mismatch")
        try expectReauthenticationRequired(
            try await request("DELETE", url, headers: bearer(token)), methods: ["bankid"])
        let signed = try await client.run("sign", text: "Delete my account")
        #expect(result(signed)["code"] as? String == "bankid.signed", "\(signed)")
        let deleted = try await request("DELETE", url, headers: bearer(token))
        #expect(deleted.status == 204, "\(deleted.text)")
        #expect(try server.server.store.user(id: ada.id) == nil)
    }

    @Test(
        "DELETE /v1/me/bankid unlinks with a recent proof, never the last way in",
        arguments: TestEngine.tested)
    func unlinkBankID(engine: TestEngine) async throws {
        let server = try TestServer(.live, engine: engine)
        defer { server.stop() }
        let c = PasskeyClient(server)
        let (credential, token) = try c.signUp("ada")
        var client = BankIDClient(server, token: token)
        #expect(result(try await client.run("link"))["code"] as? String == "bankid.linked")
        let url = server.publicURL + "/v1/me/bankid"
        server.clock.advance(by: 301)
        try expectReauthenticationRequired(
            try await request("DELETE", url, headers: bearer(token)), methods: ["passkey", "bankid"])
        #expect(try reauthenticate(c, token: token, with: credential).status == 200)
        let unlinked = try await request("DELETE", url, headers: bearer(token))
        #expect(unlinked.status == 204, "\(unlinked.text)")
        let me = try #require(try c.me(token).jsonObject()["bankId"] as? [String: Any])
        #expect(me["linked"] as? Bool == false)
        let again = try await request("DELETE", url, headers: bearer(token))
        #expect(try again.status == 404 && again.problemCode() == "bankid.not_linked")

        // BankID is Bob's only way in: it stays.
        let bob = try server.makeUser(username: "bob")
        let bobToken = try server.signIn(bob).token
        var bobClient = BankIDClient(server, token: bobToken)
        #expect(
            result(try await bobClient.run("link", as: "199001012385"))["code"] as? String == "bankid.linked")
        let refused = try await request("DELETE", url, headers: bearer(bobToken))
        #expect(try refused.status == 409 && refused.problemCode() == "bankid.last_way_in", "\(refused.text)")
        #expect(try server.server.store.linkedIdentity(userID: bob.id) != nil)
    }

    @Test(
        "PATCH /v1/me: a taken username, an invalid one, and a valid change, normalised and audited",
        arguments: TestEngine.tested)
    func rename(engine: TestEngine) throws {
        let server = try TestServer(.live, engine: engine)
        defer { server.stop() }
        let c = PasskeyClient(server)
        _ = try c.signUp("bob")
        let (_, token) = try c.signUp("ada")
        let taken = try send(c, "PATCH", "/v1/me", token: token, json: #"{"username":" BOB "}"#)
        #expect(try taken.status == 409 && taken.problemCode() == "user.username_taken", "\(taken.text)")
        let invalid = try send(c, "PATCH", "/v1/me", token: token, json: #"{"username":"a b"}"#)
        #expect(try invalid.status == 400 && invalid.problemCode() == "user.invalid_username")
        let badName = try send(c, "PATCH", "/v1/me", token: token, json: #"{"displayName":"   "}"#)
        #expect(try badName.status == 400 && badName.problemCode() == "user.invalid_display_name")
        // A bad member changes nothing, the good one beside it included.
        let mixed = try send(
            c, "PATCH", "/v1/me", token: token, json: #"{"username":"x","displayName":"Ada L"}"#)
        #expect(mixed.status == 400)
        #expect(
            (try c.me(token).jsonObject()["user"] as? [String: Any])?["displayName"] as? String == "Test ada")

        let renamed = try send(
            c, "PATCH", "/v1/me", token: token,
            json: #"{"username":"  Ada.Lovelace ","displayName":" Ada Lovelace "}"#)
        #expect(renamed.status == 200, "\(renamed.text)")
        let user = try #require(try renamed.jsonObject()["user"] as? [String: Any])
        #expect(
            user["username"] as? String == "ada.lovelace" && user["displayName"] as? String == "Ada Lovelace")
        // What signalCurrentUserDetails takes: the WebAuthn user handle and the new names.
        let details = try #require(
            (try renamed.jsonObject()["signals"] as? [String: Any])?["currentUserDetails"] as? [String: Any])
        let handle = try #require(try server.server.store.user(id: user["id"] as? String ?? "")?.userHandle)
        #expect(
            details["rpId"] as? String == "localhost"
                && details["userId"] as? String == Base64URL.encode(handle))
        #expect(
            details["name"] as? String == "ada.lovelace"
                && details["displayName"] as? String == "Ada Lovelace")
        let me = try #require(try c.me(token).jsonObject()["user"] as? [String: Any])
        #expect(me["username"] as? String == "ada.lovelace")
        let meID = try #require(me["id"] as? String)
        let event = try #require(try server.server.store.allAuditEvents(userID: meID).last)
        #expect(event.action == .accountRenamed)
        #expect(event.details == ["username": "changed", "displayName": "changed"])
        // The new name signs in; nothing else about the account changed.
        #expect(
            try c.startLogin(#"{"username":"ada.lovelace"}"#).options["allowCredentials"] as? [Any] != nil)
    }

    /// Ada with a passkey, a BankID link and signature, an enrollment token and a second session:
    /// a row in nearly every table. Returns her id, her token and credential, and the secrets no
    /// answer may ever carry.
    private func furnishedAccount(_ server: TestServer, _ c: PasskeyClient) async throws -> (
        id: String, token: String, credential: SoftwareCredential, secrets: [String]
    ) {
        let (credential, token) = try c.signUp("ada")
        let me = try #require(try c.me(token).jsonObject()["user"] as? [String: Any])
        let id = try #require(me["id"] as? String)
        let second =
            try #require(
                try c.login(credential).jsonObject()["session"] as? [String: Any])["token"] as? String
        var client = BankIDClient(server, token: token)
        #expect(result(try await client.run("link"))["code"] as? String == "bankid.linked")
        #expect(result(try await client.run("sign", text: "I agree"))["code"] as? String == "bankid.signed")
        let enrollment = try server.server.enrollment.issue(
            userID: id, lifetime: nil, purpose: "admin", actor: .admin(tokenName: "ops"),
            context: ClientContext())
        var secrets = [token, try #require(second), enrollment.token, "198112289874", "19811228-9874"]
        func encodings(_ bytes: [UInt8]) -> [String] {
            [
                Hex.encode(bytes), Hex.encode(bytes).uppercased(), Base64URL.encode(bytes),
                Data(bytes).base64EncodedString(),
            ]
        }
        for session in try server.server.store.allSessions(userID: id) {
            secrets += encodings(session.tokenHash)
        }
        for stored in try server.server.store.enrollmentTokens(userID: id) {
            secrets += encodings(stored.tokenHash)
        }
        let identity = try #require(try server.server.store.linkedIdentity(userID: id))
        secrets += encodings(identity.digest.value)
        return (id, token, credential, secrets)
    }

    @Test(
        "GET /v1/me/export: everything held, field by field, as a download, rate limited, and no token, token hash or personal number",
        arguments: TestEngine.tested)
    func export(engine: TestEngine) async throws {
        let server = try TestServer(.live, engine: engine)
        defer { server.stop() }
        let c = PasskeyClient(server)
        let ada = try await furnishedAccount(server, c)
        let store = server.server.store
        let response = try await request(
            "GET", server.publicURL + "/v1/me/export", headers: bearer(ada.token))
        #expect(response.status == 200, "\(response.text)")
        let day = UTCTimestamp.string(server.clock.now()).prefix(10)
        #expect(
            response.headers["content-disposition"] == "attachment; filename=\"portvakt-account-\(day).json\""
        )
        #expect(response.headers["cache-control"] == "no-store")
        for secret in ada.secrets { #expect(!response.text.contains(secret), "the export holds a secret") }

        let document = try response.jsonObject()
        #expect(document["format"] as? String == "portvakt.account-export.v1")
        let user = try #require(try store.user(id: ada.id))
        #expect(
            canonical(document["user"])
                == canonical(
                    [
                        "id": user.id, "username": "ada", "displayName": "Test ada",
                        "createdAt": UTCTimestamp.string(user.createdAt),
                        "userHandle": Base64URL.encode(user.userHandle),
                        "reviewAccount": false,
                    ] as [String: Any]))
        let passkey = try #require(try store.passkeys(userID: ada.id).first)
        #expect(
            canonical(document["passkeys"])
                == canonical([
                    [
                        "id": Base64URL.encode(passkey.credentialID), "name": passkey.name,
                        "aaguid": passkey.aaguid,
                        "publicKey": Base64URL.encode(passkey.publicKey), "algorithm": passkey.algorithm,
                        "signCount": Int(passkey.signCount), "transports": passkey.transports,
                        "backupEligible": passkey.backupEligible, "backedUp": passkey.backupState,
                        "attestationFormat": "none", "attestationType": passkey.attestationType,
                        "attestationTrusted": false, "createdAt": UTCTimestamp.string(passkey.createdAt),
                        "lastUsedAt": UTCTimestamp.string(try #require(passkey.lastUsedAt)),
                    ].merging(passkey.providerName.map { ["provider": $0] } ?? [:]) { $1 } as [String: Any]
                ]))
        let sessions = try #require(document["sessions"] as? [[String: Any]])
        let stored = try store.allSessions(userID: ada.id)
        #expect(sessions.count == stored.count && stored.count == 2)
        for (view, session) in zip(sessions, stored) {
            var expected: [String: Any] = [
                "id": session.id, "clientKind": "native", "authMethod": "passkey",
                "createdAt": UTCTimestamp.string(session.createdAt),
                "lastSeenAt": UTCTimestamp.string(session.lastSeenAt),
                "expiresAt": UTCTimestamp.string(session.expiresAt),
                "authenticatedAt": UTCTimestamp.string(session.authenticatedAt),
            ]
            if let agent = session.userAgent { expected["userAgent"] = agent }
            if let ip = session.ipAddress { expected["ipAddress"] = ip }
            #expect(canonical(view) == canonical(expected))
        }
        let identity = try #require(try store.linkedIdentity(userID: ada.id))
        #expect(
            canonical(document["bankId"])
                == canonical([
                    "name": "Tolvan Tolvansson", "linkedAt": UTCTimestamp.string(identity.linkedAt),
                ]))
        let evidence = try #require(try store.bankIDSignatures(userID: ada.id).first)
        let signature = try #require((document["bankIdSignatures"] as? [[String: Any]])?.first)
        var expectedSignature: [String: Any] = [
            "id": evidence.id, "sessionId": evidence.sessionID,
            "signedAt": UTCTimestamp.string(evidence.signedAt),
            "userVisibleText": "I agree", "signatureKept": false,
        ]
        if let date = evidence.bankIDIssueDate { expectedSignature["bankIdIssueDate"] = date }
        if let mrtd = evidence.mrtd { expectedSignature["mrtd"] = mrtd }
        if let risk = evidence.risk { expectedSignature["risk"] = risk }
        #expect(canonical(signature) == canonical(expectedSignature))
        #expect((document["bankIdPhoneVerifications"] as? [Any])?.isEmpty == true)
        let token = try #require(try store.enrollmentTokens(userID: ada.id).first)
        #expect(
            canonical(document["enrollmentTokens"])
                == canonical([
                    [
                        "id": token.id, "purpose": "admin", "createdBy": "admin:ops",
                        "createdAt": UTCTimestamp.string(token.createdAt),
                        "expiresAt": UTCTimestamp.string(token.expiresAt),
                    ] as [String: Any]
                ]))
        let events = try #require(document["auditEvents"] as? [[String: Any]])
        let trail = try store.allAuditEvents(userID: ada.id)
        #expect(events.compactMap { ($0["id"] as? NSNumber)?.int64Value } == trail.compactMap(\.id))
        #expect(events.last?["action"] as? String == "account.exported")
        #expect(
            events.allSatisfy {
                $0["actor"] is String && $0["at"] is String && $0["details"] is [String: String]
            })

        // No member anywhere is named for a secret.
        func keys(_ value: Any) -> [String] {
            if let object = value as? [String: Any] { return object.keys + object.values.flatMap(keys) }
            if let array = value as? [Any] { return array.flatMap(keys) }
            return []
        }
        let forbidden: Set<String> = [
            "token", "tokenHash", "digest", "keyId", "signature", "ocspResponse", "personalNumber",
        ]
        #expect(Set(keys(document)).isDisjoint(with: forbidden))

        // Limited: the burst of three, then 429 for a while.
        for _ in 0..<2 {
            #expect(
                try await request("GET", server.publicURL + "/v1/me/export", headers: bearer(ada.token))
                    .status == 200)
        }
        let limited = try await request("GET", server.publicURL + "/v1/me/export", headers: bearer(ada.token))
        #expect(limited.status == 429, "\(limited.text)")
    }

    @Test(
        "DELETE /v1/me leaves no row of the user in any table but the audit events, which keep the user id; the cookie is cleared",
        arguments: TestEngine.tested)
    func deleteLeavesNothing(engine: TestEngine) async throws {
        let server = try TestServer(.live, engine: engine)
        defer { server.stop() }
        let c = PasskeyClient(server)
        let (_, bobToken) = try c.signUp("bob")
        let ada = try await furnishedAccount(server, c)
        let handle = try #require(try server.server.store.user(id: ada.id)).userHandle
        // Challenges of hers that nothing answered: an added passkey's and a re-authentication's.
        _ = try c.startRegistration("{}", headers: bearer(ada.token))
        #expect(try send(c, "POST", "/v1/me/reauthenticate/initialize", token: ada.token).status == 200)

        // A browser's session: the answer clears its cookie.
        let web = try server.signIn(try #require(try server.server.store.user(id: ada.id)), as: .web)
        let deleted = try c.http.send(
            method: "DELETE", url: server.publicURL + "/v1/me",
            headers: [
                ("Cookie", "\(server.server.configuration.sessionCookieName)=\(web.token)"),
                ("Origin", "http://localhost:8080"),
            ], body: nil)
        #expect(deleted.status == 204, "\(deleted.text)")
        #expect(deleted.headers["set-cookie"]?.contains("Max-Age=0") == true)

        var found: [String: Int] = [:]
        try server.server.store.engine.read { connection in
            for table in StorageCopy.tables {
                for (column, kind) in table.columns {
                    let count: Int64?
                    switch kind {
                    case .text, .json:
                        count = try connection.queryFirst(
                            "SELECT count(*) FROM \(table.name) WHERE CAST(\(column) AS TEXT) LIKE ?1",
                            ["%" + ada.id + "%"]
                        ) { try $0.int64(0) }
                    case .bytes:
                        count = try connection.queryFirst(
                            "SELECT count(*) FROM \(table.name) WHERE \(column) = ?1", [handle]
                        ) { try $0.int64(0) }
                    case .integer, .flag, .time:
                        count = 0
                    }
                    if let count, count > 0 { found[table.name + "." + column, default: 0] += Int(count) }
                }
            }
        }
        // The audit events name her by id (as subject and actor), and nothing else does.
        #expect(Set(found.keys) == ["audit_events.user_id", "audit_events.actor"], "\(found)")
        let kept = try server.server.store.allAuditEvents(userID: ada.id)
        #expect(kept.last?.action == .accountDeleted && kept.count == found["audit_events.user_id"])
        // Bob is untouched.
        #expect(try c.me(bobToken).status == 200)
        let login = try c.login(ada.credential)
        #expect(try login.status == 400 && login.problemCode() == "passkey.login_failed")
    }

    @Test(
        "webhooks: ending the other sessions is a session.revoked each, a rename nothing, the deletion user.deleted",
        arguments: TestEngine.tested)
    func webhookEvents(engine: TestEngine) throws {
        let server = try WebhookEventSourceTests.server(engine: engine)
        defer { server.stop() }
        let outbox = WebhookEventSourceTests.Outbox(server)
        let c = PasskeyClient(server)
        let (credential, token) = try c.signUp("ada")
        let other = try #require(try c.login(credential).jsonObject()["session"] as? [String: Any])
        let userID = try #require(try c.me(token).jsonObject()["user"] as? [String: Any])["id"] as? String
        _ = try outbox.new()

        #expect(try send(c, "DELETE", "/v1/me/sessions", token: token).status == 200)
        #expect(
            try outbox.newSummary() == [
                "session.revoked "
                    + WebhookEventSourceTests.data([
                        "userId": try #require(userID), "sessionId": try #require(other["id"] as? String),
                        "reason": "user",
                    ])
            ])
        #expect(try send(c, "PATCH", "/v1/me", token: token, json: #"{"displayName":"Ada"}"#).status == 200)
        #expect(try outbox.new().isEmpty, "names never go to webhooks")
        #expect(try send(c, "DELETE", "/v1/me", token: token).status == 204)
        #expect(
            try outbox.newSummary() == [
                "user.deleted " + WebhookEventSourceTests.data(["userId": try #require(userID)])
            ])
    }

    @Test("the app-store review account cannot be deleted this way")
    func reviewAccountStays() async throws {
        let code = "review-code-0123456789-abcdef"
        let server = try TestServer(
            .live, configuration: ["reviewAccount": ["enabled": true, "username": "App.Reviewer"]],
            environment: ["PORTVAKT_REVIEW_CODE": code])
        defer { server.stop() }
        let login = try await request(
            "POST", server.publicURL + "/v1/review/login",
            json: #"{"username":"app.reviewer","code":"\#(code)","client":"native"}"#)
        #expect(login.status == 200, "\(login.text)")
        let token = try #require((try login.jsonObject()["session"] as? [String: Any])?["token"] as? String)
        let refused = try await request("DELETE", server.publicURL + "/v1/me", headers: bearer(token))
        #expect(
            try refused.status == 403 && refused.problemCode() == "review.deletion_refused", "\(refused.text)"
        )
        #expect(try await request("GET", server.publicURL + "/v1/me", headers: bearer(token)).status == 200)
        // Its username is the configuration's: the reviewer login must keep finding it.
        let renamed = try await request(
            "PATCH", server.publicURL + "/v1/me", json: #"{"username":"someone"}"#, headers: bearer(token))
        #expect(try renamed.status == 403 && renamed.problemCode() == "review.sandboxed", "\(renamed.text)")
        let shown = try await request(
            "PATCH", server.publicURL + "/v1/me", json: #"{"displayName":"Reviewer"}"#, headers: bearer(token)
        )
        #expect(shown.status == 200, "\(shown.text)")
    }
}
