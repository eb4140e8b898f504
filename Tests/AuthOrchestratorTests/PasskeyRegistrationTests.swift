import AuthOrchestrator
import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import SessionCore
import Storage
import TestSupport
import Testing

/// The choice between the three registrations (a new account, an enrollment token, an added
/// passkey), which used to be made in the API's handler.
@Suite("PasskeyRegistration: which registration a request is")
struct PasskeyRegistrationTests {
    private func registration(_ f: ServiceFixture, passkeyAfterBankID: Bool = true) -> (
        PasskeyRegistration, EnrollmentService
    ) {
        let enrollment = EnrollmentService(
            store: f.store, passkeys: f.service, sessions: f.sessions, clock: f.clock,
            random: SeededRandom(seed: "registration"))
        return (
            PasskeyRegistration(
                passkeys: f.service, enrollment: enrollment, passkeyAfterBankID: passkeyAfterBankID),
            enrollment
        )
    }

    @Test("without passkeyAfterBankID a session BankID opened cannot add a passkey; other sessions can")
    func bankIDSessionRefused() throws {
        let f = try ServiceFixture()
        let (strict, _) = registration(f, passkeyAfterBankID: false)
        let (ada, _) = try f.signUp("ada")
        let bankID = try f.sessions.issue(userID: ada.user.id, clientKind: .web, authMethod: .bankid)
        #expect(throws: AuthError(.idSwitchingRefused, "")) {
            try strict.start(
                RegistrationRequest(),
                by: Registrant(signedIn: SignedIn(session: bankID.session, user: ada.user)))
        }
        let passkey = try #require(ada.session?.session)
        _ = try strict.start(
            RegistrationRequest(), by: Registrant(signedIn: SignedIn(session: passkey, user: ada.user)))
        // Where it is allowed, the BankID session may.
        let (lenient, _) = registration(f)
        _ = try lenient.start(
            RegistrationRequest(), by: Registrant(signedIn: SignedIn(session: bankID.session, user: ada.user))
        )
    }

    /// Answers `issued` with a new credential for the handle in its options.
    private func answer(_ issued: IssuedChallenge, _ f: ServiceFixture) throws -> [UInt8] {
        let (challenge, handle) = try f.decode(issued)
        let credential = f.authenticator.makeCredential(
            algorithm: .es256, rpID: "example.com", userHandle: try #require(handle))
        return f.authenticator.register(credential, challenge: challenge, origin: f.origin).json()
    }

    @Test("a username is a sign-up: a new account and its first session")
    func signUp() throws {
        let f = try ServiceFixture()
        let (registration, _) = registration(f)
        let issued = try registration.start(RegistrationRequest(username: "ada"), by: Registrant())
        let completed = try registration.finish(
            challengeID: issued.challengeID, response: try answer(issued, f), name: nil, clientKind: .native,
            by: Registrant(), context: ClientContext())
        #expect(completed.user.username == "ada" && completed.session != nil && completed.recovery == nil)
    }

    @Test("neither username nor token needs a session: none is session.missing, a failed one says why")
    func addedPasskeyNeedsSession() throws {
        let f = try ServiceFixture()
        let (registration, _) = registration(f)
        #expect(throws: SessionError(.missing, "")) {
            try registration.start(RegistrationRequest(), by: Registrant())
        }
        #expect(throws: SessionError(.expired, "")) {
            try registration.start(
                RegistrationRequest(), by: Registrant(sessionFailure: SessionError(.expired, "expired")))
        }
    }

    @Test(
        "an added passkey's challenge finished after the session failed reports the session, not the challenge"
    )
    func finishWithFailedSession() throws {
        let f = try ServiceFixture()
        let (registration, _) = registration(f)
        let (ada, _) = try f.signUp("ada")
        let session = try #require(ada.session?.session)
        let signedIn = SignedIn(session: session, user: ada.user)
        let issued = try registration.start(RegistrationRequest(), by: Registrant(signedIn: signedIn))
        let response = try answer(issued, f)
        #expect(throws: SessionError(.revoked, "")) {
            try registration.finish(
                challengeID: issued.challengeID, response: response, name: nil, clientKind: .web,
                by: Registrant(sessionFailure: SessionError(.revoked, "revoked")), context: ClientContext())
        }
    }

    @Test("an enrollment token is the token's account, with or without a session")
    func enrollmentToken() throws {
        let f = try ServiceFixture()
        let (registration, enrollment) = registration(f)
        let (ada, _) = try f.signUp("ada")
        let token = try enrollment.issue(
            userID: ada.user.id, lifetime: nil, purpose: "admin", actor: .cli, context: ClientContext()
        ).token
        let issued = try registration.start(RegistrationRequest(enrollmentToken: token), by: Registrant())
        let completed = try registration.finish(
            challengeID: issued.challengeID, response: try answer(issued, f), name: "Laptop",
            clientKind: .web,
            by: Registrant(), context: ClientContext())
        #expect(completed.user.id == ada.user.id && completed.passkey.name == "Laptop")
        #expect(completed.session?.session.authMethod == .enrollment)
        #expect(try f.store.passkeyCount(userID: ada.user.id) == 2)
    }
}
