import AuthOrchestrator
import Foundation
import Kernel
import PasskeyCore
import SessionCore
import Storage
import Synchronization
import TestSupport
import Testing

/// Runs `count` attempts on threads started together; returns each one's error, nil for a win.
private func racing(_ count: Int, _ attempt: @escaping @Sendable (Int) throws -> Void) -> [(any Error)?] {
    final class Outcomes: Sendable {
        let list = Mutex<[(any Error)?]>([])
    }
    let outcomes = Outcomes()
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread {
            defer { group.leave() }
            do {
                try attempt(index)
                outcomes.list.withLock { $0.append(nil) }
            } catch {
                outcomes.list.withLock { $0.append(error) }
            }
        }.start()
    }
    group.wait()
    return outcomes.list.withLock { $0 }
}

/// The code an error carries, "win" for none.
private func code(_ outcome: (any Error)?) -> String {
    guard let outcome else { return "win" }
    return (outcome as? any CodedError)?.codeName ?? "\(outcome)"
}

/// A replayed assertion carries the counter its first use stored, so it looks like a counter
/// regression; it must be refused as a used challenge, and only a regression on a fresh challenge
/// may be reported (and audited) as a possible clone.
@Suite("PasskeyService: a replayed assertion is a used challenge, not a clone")
struct ReplayedAssertionTests {
    /// The audit trail of `userID`, oldest first: action and, for failures, the code.
    private func trail(_ f: ServiceFixture, _ userID: String) throws -> [(
        action: String, details: [String: String]
    )] {
        try f.store.auditEvents(userID: userID, beforeID: nil, limit: 100).reversed().map {
            ($0.action.rawValue, $0.details)
        }
    }

    /// An assertion with `signCount` over a fresh challenge, and that challenge.
    private func answered(_ f: ServiceFixture, _ credential: SoftwareCredential, signCount: UInt32) throws
        -> (issued: IssuedChallenge, assertion: SoftwareAssertion)
    {
        let issued = try f.service.startLogin(username: nil)
        var counted = SoftwareAuthenticator.Behaviour()
        counted.signCount = signCount
        let assertion = f.authenticator.authenticate(
            credential, challenge: try f.decode(issued).challenge, origin: f.origin, behaviour: counted)
        return (issued, assertion)
    }

    private func finish(
        _ service: PasskeyService, _ issued: IssuedChallenge, _ assertion: SoftwareAssertion
    ) throws -> CompletedLogin {
        try SuspendingCaller.run {
            try await service.finishLogin(
                challengeID: issued.challengeID, response: assertion.json(), clientKind: .native,
                replacingSessionID: nil, context: ClientContext())
        }
    }

    @Test(
        "a counting assertion sent again is passkey.challenge_invalid, audited so, under either counter policy",
        arguments: RelyingParty.CounterPolicy.allCases)
    func replayAfterUse(policy: RelyingParty.CounterPolicy) throws {
        let f = try ServiceFixture(counterPolicy: policy)
        let (registered, credential) = try f.signUp("ada")
        let (issued, assertion) = try answered(f, credential, signCount: 1)
        let first = try finish(f.service, issued, assertion)
        #expect(!first.counterRegressed)
        // The stored counter is now the assertion's own: judged first, it would look like a clone.
        #expect(throws: AuthError(.challengeInvalid, "")) { try finish(f.service, issued, assertion) }
        let events = try trail(f, registered.user.id)
        #expect(events.map(\.action) == ["passkey.registered", "passkey.login", "passkey.login_failed"])
        #expect(events.last?.details["code"] == "passkey.challenge_invalid")
        #expect(events.allSatisfy { $0.details["counterRegressed"] == nil })
        #expect(try f.store.passkey(credentialID: credential.id)?.signCount == 1)
    }

    @Test(
        "of eight finalizes racing with one fresh counting assertion on two instances, one wins and seven are challenge_invalid; no clone is audited",
        arguments: RelyingParty.CounterPolicy.allCases)
    func raceAudit(policy: RelyingParty.CounterPolicy) throws {
        let f = try ServiceFixture(counterPolicy: policy)
        let (registered, credential) = try f.signUp("ada")
        let key = try PasskeyService.sharedChallengeKey(settings: f.store, random: SystemRandom())
        let instances = [0, 1].map { seed in
            PasskeyService(
                accounts: f.store, challenges: f.store, audit: f.store, logins: f.store,
                identities: f.store, sessions: f.sessions, policy: f.service.policy, clock: f.clock,
                random: SeededRandom(seed: "instance-\(seed)"), challengeKey: key)
        }
        let issued = try instances[0].startLogin(username: nil)
        var counted = SoftwareAuthenticator.Behaviour()
        counted.signCount = 7
        let assertion = f.authenticator.authenticate(
            credential, challenge: try f.decode(issued).challenge, origin: f.origin, behaviour: counted)
        let outcomes = racing(8) { index in
            _ = try finish(instances[index % 2], issued, assertion)
        }
        #expect(
            outcomes.map(code).sorted() == Array(repeating: "passkey.challenge_invalid", count: 7) + ["win"])
        let events = try trail(f, registered.user.id).dropFirst()
        #expect(events.filter { $0.action == "passkey.login" }.count == 1)
        #expect(
            events.filter { $0.action == "passkey.login_failed" }.map { $0.details["code"] ?? "" }
                == Array(repeating: "passkey.challenge_invalid", count: 7))
        #expect(events.allSatisfy { $0.details["counterRegressed"] == nil })
        #expect(!events.contains { $0.details["code"] == "ceremony.counter_regression" })
        #expect(try f.store.passkey(credentialID: credential.id)?.signCount == 7)
    }

    @Test(
        "a counter that went backwards on a fresh challenge is still refused and audited as a possible clone")
    func genuineRegressionRejected() throws {
        let f = try ServiceFixture(counterPolicy: .reject)
        let (registered, credential) = try f.signUp("ada")
        let (tenIssued, ten) = try answered(f, credential, signCount: 10)
        _ = try finish(f.service, tenIssued, ten)
        let (issued, five) = try answered(f, credential, signCount: 5)
        #expect(throws: PasskeyError(.ceremonyCounterRegression, "")) { try finish(f.service, issued, five) }
        let failure = try #require(try trail(f, registered.user.id).last)
        #expect(failure.action == "passkey.login_failed")
        #expect(failure.details["code"] == "ceremony.counter_regression")
        #expect(try f.store.passkey(credentialID: credential.id)?.signCount == 10)
        // The refusal used the challenge up: the same regressed assertion again is a replay.
        #expect(throws: AuthError(.challengeInvalid, "")) { try finish(f.service, issued, five) }
        #expect(try trail(f, registered.user.id).last?.details["code"] == "passkey.challenge_invalid")
    }

    @Test("under the flag policy a backwards counter on a fresh challenge signs in and is audited as flagged")
    func genuineRegressionFlagged() throws {
        let f = try ServiceFixture(counterPolicy: .flag)
        let (registered, credential) = try f.signUp("ada")
        let (tenIssued, ten) = try answered(f, credential, signCount: 10)
        _ = try finish(f.service, tenIssued, ten)
        let (issued, five) = try answered(f, credential, signCount: 5)
        let login = try finish(f.service, issued, five)
        #expect(login.counterRegressed)
        let event = try #require(try trail(f, registered.user.id).last)
        #expect(event.action == "passkey.login")
        #expect(event.details["counterRegressed"] == "true")
    }
}
