import AuthOrchestrator
import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import SessionCore
import Storage
import Synchronization
import TestSupport
import Testing

/// How many of `count` attempts, started on threads at the same moment, finish without throwing
/// (the finalize races: exactly one may win).
func succeeding(_ count: Int, _ attempt: @escaping @Sendable (Int) throws -> Void) -> Int {
    let wins = Atomic(0)
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread {
            defer { group.leave() }
            if (try? attempt(index)) != nil { wins.add(1, ordering: .relaxed) }
        }.start()
    }
    group.wait()
    return wins.load(ordering: .relaxed)
}

/// A PasskeyService over a real store, a fixed clock and a software authenticator.
final class ServiceFixture: @unchecked Sendable {
    let clock = FixedClock()
    /// The one database behind every store the services use; it lives as long as the fixture.
    let storage: TestStore
    var store: SQLStore { storage.store }
    let service: PasskeyService
    let sessions: SessionService
    let authenticator = SoftwareAuthenticator()
    let origin = "https://login.example.com"

    init(
        challengeLifetime: TimeInterval = 300, enabled: Bool = true, signup: Bool = true,
        bankIDLogin: Bool = false, counterPolicy: RelyingParty.CounterPolicy = .reject
    ) throws {
        storage = try TestStore(.sqlite, clock: clock)
        let store = storage.store
        let random = SeededRandom(seed: "auth-orchestrator")
        sessions = SessionService(repository: store, policy: SessionPolicy(), clock: clock, random: random)
        var relyingParty = RelyingParty(id: "example.com", name: "Example", allowedOrigins: [origin])
        relyingParty.counterPolicy = counterPolicy
        service = PasskeyService(
            accounts: store, challenges: store, audit: store, logins: store, identities: store,
            sessions: sessions,
            policy: PasskeyPolicy(
                relyingParty: relyingParty, challengeLifetime: challengeLifetime, enabled: enabled,
                signupEnabled: signup, bankIDLogin: bankIDLogin),
            clock: clock, random: random)
    }

    /// The challenge bytes and (for registration) the user handle in issued options.
    func decode(_ issued: IssuedChallenge) throws -> (challenge: [UInt8], userHandle: [UInt8]?) {
        let options = try #require(
            JSONSerialization.jsonObject(with: Data(issued.optionsJSON)) as? [String: Any])
        let challenge = try #require((options["challenge"] as? String).flatMap(Base64URL.decode))
        let handle = ((options["user"] as? [String: Any])?["id"] as? String).flatMap(Base64URL.decode)
        return (challenge, handle)
    }

    /// Signs up `username` with a new ES256 passkey.
    func signUp(_ username: String) throws -> (CompletedRegistration, SoftwareCredential) {
        let issued = try service.startRegistration(.newAccount(username: username, displayName: nil))
        let (challenge, handle) = try decode(issued)
        let credential = authenticator.makeCredential(
            algorithm: .es256, rpID: "example.com", userHandle: try #require(handle))
        let completed = try service.finishRegistration(
            challengeID: issued.challengeID,
            response: authenticator.register(credential, challenge: challenge, origin: origin).json(),
            name: nil, signedInUser: nil, clientKind: .native, context: ClientContext())
        return (completed, credential)
    }

    /// Starts a login and answers it with `credential`.
    func login(
        _ credential: SoftwareCredential, username: String? = nil, replacing: String? = nil,
        behaviour: SoftwareAuthenticator.Behaviour = .init()
    ) throws -> CompletedLogin {
        let issued = try service.startLogin(username: username)
        return try finish(issued, credential, replacing: replacing, behaviour: behaviour)
    }

    func finish(
        _ issued: IssuedChallenge, _ credential: SoftwareCredential, replacing: String? = nil,
        behaviour: SoftwareAuthenticator.Behaviour = .init()
    ) throws -> CompletedLogin {
        let assertion = authenticator.authenticate(
            credential, challenge: try decode(issued).challenge, origin: origin, behaviour: behaviour)
        let service = service
        return try SuspendingCaller.run {
            try await service.finishLogin(
                challengeID: issued.challengeID, response: assertion.json(), clientKind: .native,
                replacingSessionID: replacing,
                context: ClientContext(requestID: "r-1", ipAddress: "192.0.2.9"))
        }
    }

    /// A sign-up's account, just signed in: recent enough for the acts that cannot be undone.
    func recentlyAuthenticated(_ signedUp: CompletedRegistration) throws -> RecentlyAuthenticated {
        let session = try #require(signedUp.session).session
        return try RecentAuthentication(
            policy: ReauthenticationPolicy(), passkeys: store, identities: store, clock: clock
        ).require(SignedIn(session: session, user: signedUp.user))
    }

    /// The audit actions recorded for `userID` (or for nobody), oldest first.
    func actions(userID: String?) throws -> [String] {
        try store.auditEvents(userID: userID, beforeID: nil, limit: 100).reversed().map(\.action.rawValue)
    }
}

@Suite("PasskeyService: sign-up, sign-in and passkey management over real stores")
struct PasskeyServiceTests {
    @Test("sign-up opens a session; sign-in by username and discoverable records the use and audits")
    func signUpAndSignIn() throws {
        let f = try ServiceFixture()
        let (registered, credential) = try f.signUp("Ada")
        #expect(registered.user.username == "ada", "usernames are normalised")
        let signUpSession = try #require(registered.session)
        #expect(try f.sessions.authenticate(token: signUpSession.token).userID == registered.user.id)

        f.clock.advance(by: 10)
        let named = try f.login(credential, username: "ADA")
        let discoverable = try f.login(credential)
        #expect(named.user.id == registered.user.id && discoverable.user.id == registered.user.id)
        #expect(try f.sessions.authenticate(token: discoverable.session.token).authMethod == .passkey)
        let stored = try #require(try f.store.passkey(credentialID: credential.id))
        #expect(stored.lastUsedAt == f.clock.now())
        #expect(stored.signCount == discoverable.passkey.signCount)
        #expect(
            try f.actions(userID: registered.user.id) == [
                "passkey.registered", "passkey.login", "passkey.login",
            ])
        let event = try #require(
            try f.store.auditEvents(userID: registered.user.id, beforeID: nil, limit: 1).first)
        #expect(event.details["sessionId"] == discoverable.session.session.id)
        #expect(event.requestID == "r-1" && event.ipAddress == "192.0.2.9")
        #expect(try f.store.challengeCount() == 0, "every challenge was used up")
    }

    @Test("signing in ends the session the request came with")
    func replacesSession() throws {
        let f = try ServiceFixture()
        let (registered, credential) = try f.signUp("ada")
        let old = try #require(registered.session)
        let fresh = try f.login(credential, replacing: old.session.id)
        #expect(throws: SessionError.self) { try f.sessions.authenticate(token: old.token) }
        #expect(try f.sessions.authenticate(token: fresh.session.token).id == fresh.session.session.id)
    }

    @Test("a refused response uses the challenge up: the right response afterwards is refused too")
    func refusalBurnsChallenge() throws {
        let f = try ServiceFixture()
        let (_, credential) = try f.signUp("ada")
        let issued = try f.service.startLogin(username: nil)
        var forged = SoftwareAuthenticator.Behaviour()
        forged.signWith = f.authenticator.makeCredential(
            algorithm: .es256, rpID: "example.com", userHandle: [1])
        #expect(throws: PasskeyError.self) { try f.finish(issued, credential, behaviour: forged) }
        #expect(throws: AuthError(.challengeInvalid, "")) { try f.finish(issued, credential) }
        #expect(try f.store.challengeCount() == 0)
    }

    @Test("an expired challenge is refused and removed; the failure is audited with its code")
    func expiredChallenge() throws {
        let f = try ServiceFixture(challengeLifetime: 60)
        let (registered, credential) = try f.signUp("ada")
        let issued = try f.service.startLogin(username: nil)
        f.clock.advance(by: 60)
        #expect(throws: AuthError(.challengeInvalid, "")) { try f.finish(issued, credential) }
        #expect(try f.store.challengeCount() == 0)
        let failure = try #require(try f.store.auditEvents(userID: nil, beforeID: nil, limit: 1).first)
        #expect(failure.action.rawValue == "passkey.login_failed")
        #expect(failure.details["code"] == "passkey.challenge_invalid")
        #expect(try f.actions(userID: registered.user.id) == ["passkey.registered"])
    }

    @Test("a registration challenge is no login challenge")
    func otherPurpose() throws {
        let f = try ServiceFixture()
        let (_, credential) = try f.signUp("ada")
        let registration = try f.service.startRegistration(.newAccount(username: "bob", displayName: nil))
        #expect(throws: AuthError(.challengeInvalid, "")) { try f.finish(registration, credential) }
    }

    @Test(
        "a login naming one account refuses another's passkey, and an unknown name refuses all, with one code"
    )
    func namedLogin() throws {
        let f = try ServiceFixture()
        _ = try f.signUp("ada")
        let (bob, bobsKey) = try f.signUp("bob")
        #expect(throws: AuthError(.loginFailed, "")) { try f.login(bobsKey, username: "ada") }
        let unknown = try f.service.startLogin(username: "nobody")
        #expect(
            !String(decoding: unknown.optionsJSON, as: UTF8.self).contains("\"id\""), "no credentials listed")
        #expect(throws: AuthError(.loginFailed, "")) { try f.finish(unknown, bobsKey) }
        // The failure is audited against the passkey's owner, never with the typed name.
        let events = try f.store.auditEvents(userID: bob.user.id, beforeID: nil, limit: 10)
        #expect(events.filter { $0.action.rawValue == "passkey.login_failed" }.count == 2)
        #expect(events.allSatisfy { !$0.details.values.contains("nobody") })
    }

    @Test("an unknown credential fails with the same code as a foreign one")
    func unknownCredential() throws {
        let f = try ServiceFixture()
        _ = try f.signUp("ada")
        let stranger = f.authenticator.makeCredential(algorithm: .es256, rpID: "example.com", userHandle: [7])
        #expect(throws: AuthError(.loginFailed, "")) { try f.login(stranger) }
    }

    @Test("a disabled account cannot sign in and gets no session")
    func disabledAccount() throws {
        let f = try ServiceFixture()
        let (registered, credential) = try f.signUp("ada")
        var user = registered.user
        user.disabledAt = f.clock.now()
        try f.store.updateUser(user)
        #expect(throws: AuthError(.accountDisabled, "")) { try f.login(credential) }
        #expect(try f.store.sessions(userID: user.id, liveAt: f.clock.now()).count == 1, "only the sign-up's")
    }

    @Test("a counter that goes backwards is refused under the reject policy")
    func counterRegression() throws {
        let f = try ServiceFixture()
        let (_, credential) = try f.signUp("ada")
        var ten = SoftwareAuthenticator.Behaviour()
        ten.signCount = 10
        var five = SoftwareAuthenticator.Behaviour()
        five.signCount = 5
        _ = try f.login(credential, behaviour: ten)
        #expect(throws: PasskeyError.self) { try f.login(credential, behaviour: five) }
        #expect(try f.store.passkey(credentialID: credential.id)?.signCount == 10)
    }

    @Test("of eight finalize calls racing with one response exactly one opens a session")
    func finalizeRace() throws {
        let f = try ServiceFixture()
        let (registered, credential) = try f.signUp("ada")
        let issued = try f.service.startLogin(username: nil)
        let assertion = f.authenticator.authenticate(
            credential, challenge: try f.decode(issued).challenge, origin: f.origin)
        let wins = succeeding(8) { _ in
            _ = try SuspendingCaller.run {
                try await f.service.finishLogin(
                    challengeID: issued.challengeID, response: assertion.json(), clientKind: .native,
                    replacingSessionID: nil, context: ClientContext())
            }
        }
        #expect(wins == 1)
        #expect(try f.store.sessions(userID: registered.user.id, liveAt: f.clock.now()).count == 2)
    }

    @Test("switches: passkeys off refuses everything, sign-up off refuses new accounts only")
    func switches() throws {
        let off = try ServiceFixture(enabled: false)
        #expect(throws: AuthError(.passkeyDisabled, "")) { try off.service.startLogin(username: nil) }
        #expect(throws: AuthError(.passkeyDisabled, "")) {
            try off.service.startRegistration(.newAccount(username: "ada", displayName: nil))
        }
        let noSignup = try ServiceFixture(signup: false)
        #expect(throws: AuthError(.signupDisabled, "")) {
            try noSignup.service.startRegistration(.newAccount(username: "ada", displayName: nil))
        }
        _ = try noSignup.service.startLogin(username: nil)
    }

    @Test("adding, renaming and removing passkeys; never the last one; never someone else's")
    func managePasskeys() throws {
        let f = try ServiceFixture()
        let (ada, first) = try f.signUp("ada")
        let (bob, _) = try f.signUp("bob")
        let context = ClientContext()
        #expect(throws: AuthError(.lastPasskey, "")) {
            try f.service.deletePasskey(
                f.recentlyAuthenticated(ada), credentialID: Base64URL.encode(first.id), context: context)
        }
        // A second passkey, through an add-passkey challenge bound to Ada.
        let issued = try f.service.startRegistration(.signedIn(ada.user))
        let (challenge, handle) = try f.decode(issued)
        #expect(handle == ada.user.userHandle)
        let second = f.authenticator.makeCredential(
            algorithm: .es256, rpID: "example.com", userHandle: ada.user.userHandle)
        let response = f.authenticator.register(second, challenge: challenge, origin: f.origin).json()
        // Bob cannot use Ada's challenge.
        #expect(throws: AuthError(.challengeInvalid, "")) {
            try f.service.finishRegistration(
                challengeID: issued.challengeID, response: response, name: nil, signedInUser: bob.user,
                clientKind: .web, context: context)
        }
        // Later than the first, so the list's order (oldest first) is defined.
        f.clock.advance(by: 1)
        let again = try f.service.startRegistration(.signedIn(ada.user))
        let added = try f.service.finishRegistration(
            challengeID: again.challengeID,
            response: f.authenticator.register(
                second, challenge: try f.decode(again).challenge, origin: f.origin
            )
            .json(),
            name: "Laptop", signedInUser: ada.user, clientKind: .web, context: context)
        #expect(added.session == nil, "adding a passkey opens no session")
        #expect(try f.service.listPasskeys(userID: ada.user.id).map(\.name) == ["Passkey", "Laptop"])

        let id = Base64URL.encode(second.id)
        #expect(
            try f.service.renamePasskey(
                userID: ada.user.id, credentialID: id, name: " Work ", context: context
            ).name == "Work")
        #expect(throws: AuthError(.passkeyNotFound, "")) {
            try f.service.renamePasskey(userID: bob.user.id, credentialID: id, name: "Mine", context: context)
        }
        #expect(throws: AuthError(.passkeyNotFound, "")) {
            try f.service.deletePasskey(f.recentlyAuthenticated(bob), credentialID: id, context: context)
        }
        try f.service.deletePasskey(f.recentlyAuthenticated(ada), credentialID: id, context: context)
        #expect(try f.service.listPasskeys(userID: ada.user.id).count == 1)
        #expect(
            try f.actions(userID: ada.user.id).suffix(3) == [
                "passkey.registered", "passkey.renamed", "passkey.deleted",
            ])
    }

    // Login challenges are sealed, not stored, since schema 7: what the purge finds of them is
    // their recorded use. Stored (registration) challenges are purged as before.
    @Test("the hourly purge removes expired challenges only: stored ones and used sealed login ones")
    func purge() throws {
        let f = try ServiceFixture(challengeLifetime: 60)
        let (_, credential) = try f.signUp("ada")
        _ = try f.service.startRegistration(.newAccount(username: "bob", displayName: nil))
        _ = try f.login(credential)
        f.clock.advance(by: 30)
        _ = try f.service.startRegistration(.newAccount(username: "cyd", displayName: nil))
        _ = try f.login(credential)
        f.clock.advance(by: 30)
        #expect(try f.service.purgeExpiredChallenges() == 2, "one stored, one used")
        #expect(try f.store.challengeCount() == 1)
        #expect(try f.service.purgeExpiredChallenges() == 0)
    }
}
