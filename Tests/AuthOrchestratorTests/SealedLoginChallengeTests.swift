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

/// Sealed login challenges: issuing writes nothing, and the id alone must still be single use,
/// short-lived, bound to the named account, unforgeable and good on any instance sharing the key.
@Suite("PasskeyService: sealed login challenges")
struct SealedLoginChallengeTests {
    /// Another service over the fixture's store and clock, as a second instance would be.
    private func instance(of f: ServiceFixture, key: [UInt8]?) -> PasskeyService {
        PasskeyService(
            accounts: f.store, challenges: f.store, audit: f.store, logins: f.store,
            identities: f.store, sessions: f.sessions,
            policy: f.service.policy, clock: f.clock, random: SeededRandom(seed: "other-instance"),
            challengeKey: key)
    }

    /// `id` with one character of its base64url changed.
    private func altered(_ id: String, at offset: Int) -> String {
        var characters = Array(id)
        let index = offset < 0 ? characters.count + offset : offset
        characters[index] = characters[index] == "A" ? "B" : "A"
        return String(characters)
    }

    @Test("issuing a login challenge stores nothing; answering it records its use")
    func issuingWritesNothing() throws {
        let f = try ServiceFixture(challengeLifetime: 60)
        let (_, credential) = try f.signUp("ada")
        let issued = try f.service.startLogin(username: nil)
        #expect(try f.store.challengeCount() == 0)
        #expect(issued.expiresAt == f.clock.now() + 60)
        _ = try f.finish(issued, credential)
        #expect(throws: AuthError(.challengeInvalid, "")) { try f.finish(issued, credential) }
        f.clock.advance(by: 60)
        #expect(try f.service.purgeExpiredChallenges() == 1, "the use is kept until the expiry")
        // Once purged, the seal's own expiry still refuses the replay.
        #expect(throws: AuthError(.challengeInvalid, "")) { try f.finish(issued, credential) }
    }

    @Test("an altered id is refused wherever the change is, and the failure is audited")
    func alteredID() throws {
        let f = try ServiceFixture()
        let (registered, credential) = try f.signUp("ada")
        // The version byte, the expiry, the challenge and the MAC.
        for offset in [0, 3, 20, -5] {
            let issued = try f.service.startLogin(username: nil)
            let forged = altered(issued.challengeID, at: offset)
            let assertion = f.authenticator.authenticate(
                credential, challenge: try f.decode(issued).challenge, origin: f.origin)
            #expect(throws: AuthError(.challengeInvalid, "")) {
                try SuspendingCaller.run {
                    try await f.service.finishLogin(
                        challengeID: forged, response: assertion.json(), clientKind: .native,
                        replacingSessionID: nil, context: ClientContext())
                }
            }
        }
        for garbage in ["", "not-base64!", String(repeating: "A", count: 2000), "AAAA"] {
            let issued = try f.service.startLogin(username: nil)
            let assertion = f.authenticator.authenticate(
                credential, challenge: try f.decode(issued).challenge, origin: f.origin)
            #expect(throws: AuthError(.challengeInvalid, "")) {
                try SuspendingCaller.run {
                    try await f.service.finishLogin(
                        challengeID: garbage, response: assertion.json(), clientKind: .native,
                        replacingSessionID: nil, context: ClientContext())
                }
            }
        }
        let failures = try f.store.auditEvents(userID: nil, beforeID: nil, limit: 20)
            .filter { $0.action.rawValue == "passkey.login_failed" }
        #expect(failures.count == 8)
        #expect(failures.allSatisfy { $0.details["code"] == "passkey.challenge_invalid" })
        #expect(try f.actions(userID: registered.user.id) == ["passkey.registered"])
    }

    @Test("a login challenge id is no registration challenge")
    func otherPurpose() throws {
        let f = try ServiceFixture()
        let login = try f.service.startLogin(username: nil)
        let credential = f.authenticator.makeCredential(
            algorithm: .es256, rpID: "example.com", userHandle: [9])
        let response = f.authenticator.register(
            credential, challenge: try f.decode(login).challenge, origin: f.origin)
        #expect(throws: AuthError(.challengeInvalid, "")) {
            try f.service.finishRegistration(
                challengeID: login.challengeID, response: response.json(), name: nil, signedInUser: nil,
                clientKind: .native, context: ClientContext())
        }
    }

    @Test("an instance with the shared key finishes another's login; one with its own key refuses it")
    func sharedKey() throws {
        let f = try ServiceFixture()
        let (_, credential) = try f.signUp("ada")
        let settings = f.store
        let key = try PasskeyService.sharedChallengeKey(settings: settings, random: SeededRandom(seed: "k"))
        #expect(key.count == 32)
        #expect(
            try PasskeyService.sharedChallengeKey(settings: settings, random: SeededRandom(seed: "other"))
                == key,
            "the first key stored is everyone's")
        let first = instance(of: f, key: key)
        let second = instance(of: f, key: key)
        let stranger = instance(of: f, key: nil)

        let issued = try first.startLogin(username: "ada")
        let assertion = f.authenticator.authenticate(
            credential, challenge: try f.decode(issued).challenge, origin: f.origin)
        #expect(throws: AuthError(.challengeInvalid, "")) {
            try SuspendingCaller.run {
                try await stranger.finishLogin(
                    challengeID: issued.challengeID, response: assertion.json(), clientKind: .native,
                    replacingSessionID: nil, context: ClientContext())
            }
        }
        let login = try SuspendingCaller.run {
            try await second.finishLogin(
                challengeID: issued.challengeID, response: assertion.json(), clientKind: .native,
                replacingSessionID: nil, context: ClientContext())
        }
        #expect(login.user.username == "ada")
        #expect(throws: AuthError(.challengeInvalid, "")) {
            try SuspendingCaller.run {
                try await first.finishLogin(
                    challengeID: issued.challengeID, response: assertion.json(), clientKind: .native,
                    replacingSessionID: nil, context: ClientContext())
            }
        }
    }

    @Test("of eight finalize calls racing on two instances with one response exactly one wins")
    func raceAcrossInstances() throws {
        let f = try ServiceFixture()
        let (registered, credential) = try f.signUp("ada")
        let key = try PasskeyService.sharedChallengeKey(
            settings: f.store, random: SystemRandom())
        let instances = [instance(of: f, key: key), instance(of: f, key: key)]
        let issued = try instances[0].startLogin(username: nil)
        let assertion = f.authenticator.authenticate(
            credential, challenge: try f.decode(issued).challenge, origin: f.origin)
        let wins = succeeding(8) { index in
            _ = try SuspendingCaller.run {
                try await instances[index % 2].finishLogin(
                    challengeID: issued.challengeID, response: assertion.json(), clientKind: .native,
                    replacingSessionID: nil, context: ClientContext())
            }
        }
        #expect(wins == 1)
        #expect(try f.store.sessions(userID: registered.user.id, liveAt: f.clock.now()).count == 2)
    }

    @Test("the id is bound to the named username and reads the same whether or not the account exists")
    func namedBinding() throws {
        let f = try ServiceFixture()
        let (_, adasKey) = try f.signUp("ada")
        let known = try f.service.startLogin(username: "ada")
        let unknown = try f.service.startLogin(username: "zed")
        let discoverable = try f.service.startLogin(username: nil)
        #expect(known.challengeID.count == unknown.challengeID.count)
        #expect(discoverable.challengeID.count < known.challengeID.count)
        #expect(!known.challengeID.contains("ada"))
        _ = try f.finish(known, adasKey)
        #expect(throws: AuthError(.loginFailed, "")) { try f.finish(unknown, adasKey) }
        // The refusal used the challenge up, as any refused attempt does.
        let challenges: any ChallengeStore = f.store
        #expect(
            try !challenges.useSealedChallenge(
                try f.decode(unknown).challenge, expiresAt: unknown.expiresAt, at: f.clock.now()))
    }
}
