import AuthOrchestrator
import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import SessionCore
import Storage
import TestSupport
import Testing

/// Automatic passkey upgrades (`mediation: "conditional"` on create): the one registration whose
/// response may lack user presence (WebAuthn L3 §7.1 step 14), recorded on its challenge.
@Suite("Conditional registration: UP may be clear only where the challenge says so")
struct ConditionalRegistrationTests {
    private func registration(_ f: ServiceFixture) -> PasskeyRegistration {
        let enrollment = EnrollmentService(
            store: f.store, passkeys: f.service, sessions: f.sessions, clock: f.clock,
            random: SeededRandom(seed: "conditional"))
        return PasskeyRegistration(passkeys: f.service, enrollment: enrollment, passkeyAfterBankID: true)
    }

    /// What an authenticator does for a conditional create: no user presence, UV as it can.
    private static let notPresent: SoftwareAuthenticator.Behaviour = {
        var behaviour = SoftwareAuthenticator.Behaviour()
        behaviour.userPresent = false
        return behaviour
    }()

    /// Answers `issued` with a new credential, made with `behaviour`.
    private func answer(
        _ issued: IssuedChallenge, _ f: ServiceFixture, behaviour: SoftwareAuthenticator.Behaviour
    ) throws -> (SoftwareCredential, [UInt8]) {
        let (challenge, handle) = try f.decode(issued)
        let credential = f.authenticator.makeCredential(
            algorithm: .es256, rpID: "example.com", userHandle: try #require(handle))
        return (
            credential,
            f.authenticator.register(credential, challenge: challenge, origin: f.origin, behaviour: behaviour)
                .json()
        )
    }

    /// The signed-in registrant of `registered`'s first session.
    private func signedIn(_ registered: CompletedRegistration) throws -> Registrant {
        Registrant(
            signedIn: SignedIn(session: try #require(registered.session).session, user: registered.user))
    }

    @Test(
        "a conditional registration of the signed-in user accepts UP clear, hints client-device and is audited"
    )
    func conditionalAcceptsNoPresence() throws {
        let f = try ServiceFixture()
        let registration = registration(f)
        let (ada, _) = try f.signUp("ada")
        let registrant = try signedIn(ada)
        let issued = try registration.start(RegistrationRequest(conditional: true), by: registrant)
        let options = try #require(
            try JSONSerialization.jsonObject(with: Data(issued.optionsJSON)) as? [String: Any])
        #expect(options["hints"] as? [String] == ["client-device"])
        let (credential, response) = try answer(issued, f, behaviour: Self.notPresent)
        let completed = try registration.finish(
            challengeID: issued.challengeID, response: response, name: nil, clientKind: .web, by: registrant,
            context: ClientContext())
        #expect(completed.passkey.credentialID == credential.id)
        #expect(completed.signals?.allAcceptedCredentials?.allAcceptedCredentialIDs.count == 2)
        let event = try #require(try f.store.auditEvents(userID: ada.user.id, beforeID: nil, limit: 1).first)
        #expect(event.action == .passkeyRegistered && event.details["conditional"] == "true")
        // Logging in with it still needs user presence.
        #expect(throws: PasskeyError(.ceremonyUserNotPresent, "")) {
            _ = try f.login(credential, behaviour: Self.notPresent)
        }
        #expect(try f.login(credential).user.id == ada.user.id)
    }

    @Test("a conditional registration still enforces the user verification policy")
    func conditionalKeepsVerification() throws {
        let f = try ServiceFixture()
        let registration = registration(f)
        let (ada, _) = try f.signUp("ada")
        let registrant = try signedIn(ada)
        let issued = try registration.start(RegistrationRequest(conditional: true), by: registrant)
        var neither = Self.notPresent
        neither.flags.remove(.userVerified)
        let (_, response) = try answer(issued, f, behaviour: neither)
        // The fixture's relying party has the default policy, userVerification "required".
        #expect(throws: PasskeyError(.ceremonyUserNotVerified, "")) {
            _ = try registration.finish(
                challengeID: issued.challengeID, response: response, name: nil, clientKind: .web,
                by: registrant, context: ClientContext())
        }
    }

    @Test("every other registration refuses UP clear: an added passkey, a sign-up, an enrollment token")
    func othersRequirePresence() throws {
        let f = try ServiceFixture()
        let registration = registration(f)
        let (ada, _) = try f.signUp("ada")
        let registrant = try signedIn(ada)
        let added = try registration.start(RegistrationRequest(), by: registrant)
        let options = try #require(
            try JSONSerialization.jsonObject(with: Data(added.optionsJSON)) as? [String: Any])
        #expect(options["hints"] as? [String] == [])
        let (_, addedResponse) = try answer(added, f, behaviour: Self.notPresent)
        #expect(throws: PasskeyError(.ceremonyUserNotPresent, "")) {
            _ = try registration.finish(
                challengeID: added.challengeID, response: addedResponse, name: nil, clientKind: .web,
                by: registrant, context: ClientContext())
        }
        let signUp = try registration.start(RegistrationRequest(username: "bob"), by: Registrant())
        let (_, signUpResponse) = try answer(signUp, f, behaviour: Self.notPresent)
        #expect(throws: PasskeyError(.ceremonyUserNotPresent, "")) {
            _ = try registration.finish(
                challengeID: signUp.challengeID, response: signUpResponse, name: nil, clientKind: .web,
                by: Registrant(), context: ClientContext())
        }
        let token = try EnrollmentService(
            store: f.store, passkeys: f.service, sessions: f.sessions, clock: f.clock,
            random: SeededRandom(seed: "token")
        ).issue(userID: ada.user.id, lifetime: nil, purpose: "admin", actor: .cli, context: ClientContext())
            .token
        let enrolled = try registration.start(RegistrationRequest(enrollmentToken: token), by: Registrant())
        let (_, enrolledResponse) = try answer(enrolled, f, behaviour: Self.notPresent)
        #expect(throws: PasskeyError(.ceremonyUserNotPresent, "")) {
            _ = try registration.finish(
                challengeID: enrolled.challengeID, response: enrolledResponse, name: nil, clientKind: .web,
                by: Registrant(), context: ClientContext())
        }
        #expect(try f.store.passkeyCount(userID: ada.user.id) == 1)
    }

    @Test("conditional is refused for a new account and for an enrollment token, before any challenge exists")
    func conditionalOnlyForTheSignedInAccount() throws {
        let f = try ServiceFixture()
        let registration = registration(f)
        let (ada, _) = try f.signUp("ada")
        let token = try EnrollmentService(
            store: f.store, passkeys: f.service, sessions: f.sessions, clock: f.clock,
            random: SeededRandom(seed: "token")
        ).issue(userID: ada.user.id, lifetime: nil, purpose: "admin", actor: .cli, context: ClientContext())
            .token
        let before = try f.store.challengeCount()
        #expect(throws: AuthError(.conditionalNotAllowed, "")) {
            try registration.start(RegistrationRequest(username: "bob", conditional: true), by: Registrant())
        }
        #expect(throws: AuthError(.conditionalNotAllowed, "")) {
            try registration.start(
                RegistrationRequest(enrollmentToken: token, conditional: true), by: Registrant())
        }
        // Even with a session beside them: the request is still a sign-up or a token's.
        #expect(throws: AuthError(.conditionalNotAllowed, "")) {
            try registration.start(
                RegistrationRequest(enrollmentToken: token, conditional: true), by: try signedIn(ada))
        }
        #expect(try f.store.challengeCount() == before)
        // Without a session it is what any added passkey is: not signed in.
        #expect(throws: SessionError(.missing, "")) {
            try registration.start(RegistrationRequest(conditional: true), by: Registrant())
        }
    }
}
