import CryptoCore
import Foundation
import HTTPEngine
import Kernel
import PasskeyCore
import PortvaktApp
import Storage
import TestSupport
import Testing

/// The WebAuthn Signal API data the public answers carry (`signals`), over HTTP with the
/// software authenticator: what a client passes to `PublicKeyCredential.signal*` unchanged.
@Suite("Signal API data in the public answers", .serialized)
struct SignalAPITests {
    private func signals(_ response: TestResponse) throws -> [String: Any] {
        try #require(try response.jsonObject()["signals"] as? [String: Any], "\(response.text)")
    }

    private func accepted(_ signals: [String: Any]) -> [String]? {
        (signals["allAcceptedCredentials"] as? [String: Any])?["allAcceptedCredentialIds"] as? [String]
    }

    private func bearer(_ token: String) -> [String: String] { ["Authorization": "Bearer \(token)"] }

    /// The user handle the account's creation options carried (the signals' `userId`).
    private func userHandle(_ server: TestServer, username: String) throws -> String {
        let user = try #require(try server.server.store.user(username: username))
        return Base64URL.encode(user.userHandle)
    }

    @Test(
        "sign-up, an added passkey, a login and the list carry the account's credential ids, handle and names",
        arguments: TestEngine.tested)
    func acceptedCredentials(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let person = PasskeyUser(server: server)
        let (first, _, token) = try person.signUp("ada")
        let handle = try userHandle(server, username: "ada")
        let firstID = Base64URL.encode(first.id)
        let second = try person.addPasskey(token: token)
        let secondID = Base64URL.encode(second.id)

        // The list's order (oldest first, ties by id bytes) is the signals' order.
        let listed = try person.http.send(.GET, server.publicURL + "/v1/me/passkeys", headers: bearer(token))
        let ids = try #require(try listed.jsonObject()["passkeys"] as? [[String: Any]]).compactMap {
            $0["id"] as? String
        }
        #expect(Set(ids) == [firstID, secondID])

        let login = try person.login(second)
        #expect(login.status == 200, "\(login.text)")
        let signedIn = try signals(login)
        let all = try #require(signedIn["allAcceptedCredentials"] as? [String: Any])
        #expect(all["rpId"] as? String == "localhost")
        // The WebAuthn user handle, never the account id.
        #expect(all["userId"] as? String == handle)
        #expect(all["allAcceptedCredentialIds"] as? [String] == ids)
        let details = try #require(signedIn["currentUserDetails"] as? [String: Any])
        #expect(details["rpId"] as? String == "localhost" && details["userId"] as? String == handle)
        #expect(details["name"] as? String == "ada" && details["displayName"] as? String == "ada")
        #expect(signedIn["unknownCredential"] == nil)

        #expect(accepted(try signals(listed)) == ids)
        #expect((try signals(listed)["currentUserDetails"] as? [String: Any])?["name"] as? String == "ada")
    }

    @Test(
        "the registration answer lists the new passkey with the others; a sign-up's lists just the first",
        arguments: TestEngine.tested)
    func registrationAnswers(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let person = PasskeyUser(server: server)
        let (first, response) = try person.register(#"{"username":"bob"}"#, extra: #","client":"native""#)
        #expect(accepted(try signals(response)) == [Base64URL.encode(first.id)])
        let token = try #require(
            (try response.jsonObject()["session"] as? [String: Any])?["token"] as? String)
        let (second, added) = try person.register("{}", headers: [("Authorization", "Bearer \(token)")])
        #expect(
            Set(accepted(try signals(added)) ?? [])
                == Set([first.id, second.id].map { Base64URL.encode($0) }))
        #expect((try signals(added)["currentUserDetails"] as? [String: Any])?["name"] as? String == "bob")
    }

    @Test(
        "removing a passkey answers 200 with the ids left; logging in with it is refused with unknownCredential",
        arguments: TestEngine.tested)
    func removedByItsUser(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let person = PasskeyUser(server: server)
        let (first, _, token) = try person.signUp("cyd")
        let second = try person.addPasskey(token: token)
        let firstID = Base64URL.encode(first.id)
        let removed = try person.http.send(
            .DELETE, server.publicURL + "/v1/me/passkeys/\(firstID)", headers: bearer(token))
        #expect(removed.status == 200, "\(removed.text)")
        #expect(accepted(try signals(removed)) == [Base64URL.encode(second.id)])
        let all = try #require(try signals(removed)["allAcceptedCredentials"] as? [String: Any])
        #expect(all["userId"] as? String == (try userHandle(server, username: "cyd")))

        let refused = try person.login(first)
        #expect(refused.status == 400)
        #expect(try refused.problemCode() == "passkey.login_failed")
        let unknown = try #require(try signals(refused)["unknownCredential"] as? [String: Any])
        #expect(unknown.count == 2)
        #expect(unknown["rpId"] as? String == "localhost" && unknown["credentialId"] as? String == firstID)
        #expect(
            try signals(refused).count == 1, "an unknown credential's refusal says nothing of any account")
    }

    @Test(
        "a passkey an administrator removed, and one never registered, get the same refusal as one its user removed",
        arguments: TestEngine.tested)
    func unknownIsUnknown(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let person = PasskeyUser(server: server)
        let (credential, userID, _) = try person.signUp("dee")
        let pid = Base64URL.encode(credential.id)
        #expect(
            try AdminClient(server).send("DELETE", "/admin/v1/users/\(userID)/passkeys/\(pid)").status == 204)
        let stranger = person.authenticator.makeCredential(
            algorithm: .es256, rpID: "localhost", userHandle: Array(repeating: 7, count: 32))
        var bodies: [[String: Any]] = []
        for (refusedCredential, id) in [(credential, pid), (stranger, Base64URL.encode(stranger.id))] {
            let refused = try person.login(refusedCredential)
            #expect(refused.status == 400)
            var body = try refused.jsonObject()
            let unknown = try #require(
                (body["signals"] as? [String: Any])?["unknownCredential"] as? [String: Any])
            #expect(unknown["credentialId"] as? String == id)
            body["signals"] = nil
            bodies.append(body)
        }
        // Apart from the credential id, the two refusals are the same document.
        #expect(NSDictionary(dictionary: bodies[0]) == NSDictionary(dictionary: bodies[1]))
    }

    @Test(
        "a known credential refused (a named login of another account, a disabled account) carries no signal",
        arguments: TestEngine.tested)
    func knownCredentialsAreNotUnknown(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let person = PasskeyUser(server: server)
        let (eve, _, _) = try person.signUp("eve")
        let (fredCredential, fredID, _) = try person.signUp("fred")
        // eve's passkey offered to a login that named fred: the passkey exists, so the password
        // manager must keep it.
        let named = try person.loginWith(person.authenticator, eve, username: "fred")
        #expect(try named.problemCode() == "passkey.login_failed")
        #expect(try named.jsonObject()["signals"] == nil)

        _ = try AdminClient(server).object("PATCH", "/admin/v1/users/\(fredID)", json: #"{"disabled":true}"#)
        let disabled = try person.login(fredCredential)
        #expect(try disabled.problemCode() == "account.disabled")
        #expect(try disabled.jsonObject()["signals"] == nil)
    }
}
