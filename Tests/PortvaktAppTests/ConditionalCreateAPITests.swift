import CryptoCore
import Foundation
import HTTPEngine
import Kernel
import PasskeyCore
import PortvaktApp
import Storage
import TestSupport
import Testing

/// `POST /v1/passkeys/registration/initialize` with `"mediation": "conditional"` (an automatic
/// passkey upgrade) over HTTP, answered by the software authenticator without user presence.
@Suite("Conditional create over HTTP", .serialized)
struct ConditionalCreateAPITests {
    private static let notPresent: SoftwareAuthenticator.Behaviour = {
        var behaviour = SoftwareAuthenticator.Behaviour()
        behaviour.userPresent = false
        return behaviour
    }()

    /// Initializes with `body`; finalizes with a new credential made with `behaviour`.
    private func register(
        _ person: PasskeyUser, _ body: String, token: String?, behaviour: SoftwareAuthenticator.Behaviour
    ) throws -> (options: [String: Any], finalized: TestResponse, credential: SoftwareCredential) {
        let headers = token.map { [("Authorization", "Bearer \($0)")] } ?? []
        let started = try person.http.sendJSON(
            url: person.server.publicURL + "/v1/passkeys/registration/initialize", json: body,
            headers: headers)
        #expect(started.status == 200, "\(started.text)")
        let object = try started.jsonObject()
        let options = try #require(object["publicKey"] as? [String: Any])
        let handle = try #require(
            ((options["user"] as? [String: Any])?["id"] as? String).flatMap { Base64URL.decode($0) })
        let challenge = try #require((options["challenge"] as? String).flatMap { Base64URL.decode($0) })
        let credential = person.authenticator.makeCredential(
            algorithm: .es256, rpID: "localhost", userHandle: handle)
        let registration = String(
            decoding: person.authenticator.register(
                credential, challenge: challenge, origin: person.origin, behaviour: behaviour
            ).json(), as: UTF8.self)
        let challengeID = try #require(object["challengeId"] as? String)
        let finalized = try person.http.sendJSON(
            url: person.server.publicURL + "/v1/passkeys/registration/finalize",
            json: #"{"challengeId":"\#(challengeID)","credential":\#(registration)}"#, headers: headers)
        return (options, finalized, credential)
    }

    @Test(
        "a signed-in user's conditional registration takes UP clear; a plain one and every login refuse it",
        arguments: TestEngine.tested)
    func upOnlyForConditional(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let person = PasskeyUser(server: server)
        let (first, _, token) = try person.signUp("ada")

        let upgrade = try register(
            person, #"{"mediation":"conditional"}"#, token: token, behaviour: Self.notPresent)
        #expect(upgrade.options["hints"] as? [String] == ["client-device"])
        #expect(upgrade.finalized.status == 201, "\(upgrade.finalized.text)")
        #expect(try server.server.store.passkey(credentialID: upgrade.credential.id) != nil)

        let plain = try register(person, "{}", token: token, behaviour: Self.notPresent)
        #expect(plain.options["hints"] as? [String] == [])
        #expect(plain.finalized.status == 400)
        #expect(try plain.finalized.problemCode() == "ceremony.user_not_present")

        // A login never takes UP clear, whichever passkey it is.
        for credential in [first, upgrade.credential] {
            let started = try person.post("/v1/passkeys/login/initialize", "{}").jsonObject()
            let challenge = try #require((started["publicKey"] as? [String: Any])?["challenge"] as? String)
            let assertion = String(
                decoding: person.authenticator.authenticate(
                    credential, challenge: try #require(Base64URL.decode(challenge)), origin: person.origin,
                    behaviour: Self.notPresent
                ).json(), as: UTF8.self)
            let refused = try person.post(
                "/v1/passkeys/login/finalize",
                #"{"challengeId":"\#(try #require(started["challengeId"] as? String))","credential":\#(assertion)}"#
            )
            #expect(try refused.problemCode() == "ceremony.user_not_present")
        }
    }

    @Test(
        "conditional is refused for a sign-up and an enrollment token (passkey.conditional_not_allowed); another mediation is malformed",
        arguments: TestEngine.tested)
    func refusals(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let person = PasskeyUser(server: server)
        let (_, userID, token) = try person.signUp("ada")
        let enrollment = try AdminClient(server).object(
            "POST", "/admin/v1/users/\(userID)/enrollment-links", json: "{}", status: 201)
        let enrollmentToken = try #require(enrollment["token"] as? String)
        for body in [
            #"{"username":"bob","mediation":"conditional"}"#,
            #"{"enrollmentToken":"\#(enrollmentToken)","mediation":"conditional"}"#,
        ] {
            let refused = try person.post("/v1/passkeys/registration/initialize", body)
            #expect(refused.status == 400, "\(body)")
            #expect(try refused.problemCode() == "passkey.conditional_not_allowed", "\(body)")
        }
        for mediation in ["silent", "required", "optional", "Conditional"] {
            let refused = try person.http.sendJSON(
                url: server.publicURL + "/v1/passkeys/registration/initialize",
                json: #"{"mediation":"\#(mediation)"}"#, headers: [("Authorization", "Bearer \(token)")])
            #expect(refused.status == 400, "\(mediation)")
        }
        // Without a session there is no account to add a passkey to.
        #expect(
            try person.post("/v1/passkeys/registration/initialize", #"{"mediation":"conditional"}"#).status
                == 401)
    }
}
