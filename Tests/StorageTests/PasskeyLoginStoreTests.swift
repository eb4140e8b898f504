import Foundation
import Kernel
import SessionCore
import Storage
import Synchronization
import TestSupport
import Testing

/// PasskeyLoginStore: a verified login's writes commit together or not at all, identical for
/// SQLite and PostgreSQL.
@Suite("Passkey login store")
struct PasskeyLoginStoreTests {
    /// A user with one passkey, a live session to be replaced and one login challenge.
    private func prepared(_ kind: StoreKind) throws -> TestStore {
        let fixture = try kind.make()
        try fixture.store.createUser(
            makeUser("u1"), firstPasskey: makePasskey([1, 2, 3], userID: "u1", signCount: 5))
        try fixture.store.insertSession(makeSession("old", userID: "u1"))
        try fixture.store.insertChallenge(makeChallenge("c1"))
        return fixture
    }

    private func record(
        challenge: String = "c1", credential: [UInt8] = [1, 2, 3], session: String = "new",
        replacing: String? = "old", at time: Date = at(10)
    ) -> PasskeyLoginRecord {
        PasskeyLoginRecord(
            challengeID: challenge, credentialID: credential, signCount: 9, backupState: false,
            session: makeSession(session, userID: "u1", createdAt: time), replacedSessionID: replacing,
            event: AuditEvent(at: time, action: .passkeyLogin, actor: .user("u1"), userID: "u1"), at: time)
    }

    @Test(
        "a challenge can be read without using it up, only for its purpose and before expiry",
        arguments: StoreKind.tested)
    func peek(kind: StoreKind) throws {
        let fixture = try prepared(kind)
        #expect(try fixture.store.challenge(id: "c1", purpose: .login, at: at(1)) == makeChallenge("c1"))
        #expect(
            try fixture.store.challenge(id: "c1", purpose: .login, at: at(1)) != nil, "reading twice is fine")
        #expect(try fixture.store.challenge(id: "c1", purpose: .registration, at: at(1)) == nil)
        #expect(try fixture.store.challenge(id: "c1", purpose: .login, at: at(300)) == nil, "expired")
        #expect(try fixture.store.challenge(id: "nope", purpose: .login, at: at(1)) == nil)
        #expect(try fixture.store.challengeCount() == 1)
    }

    @Test(
        "a committed login consumes the challenge, updates the passkey, swaps the session and audits",
        arguments: StoreKind.tested)
    func commits(kind: StoreKind) async throws {
        let fixture = try prepared(kind)
        try fixture.store.insertPasskey(makePasskey([0, 7], userID: "u1", createdAt: at(2)))
        try fixture.store.createUser(makeUser("u2"), firstPasskey: makePasskey([4], userID: "u2"))
        #expect(
            try await fixture.store.commitPasskeyLogin(record()) == [[1, 2, 3], [0, 7]],
            "every passkey of the user's and only theirs, oldest first, for the Signal API's list")
        #expect(try fixture.store.challengeCount() == 0)
        let passkey = try #require(try fixture.store.passkey(credentialID: [1, 2, 3]))
        #expect(passkey.signCount == 9)
        #expect(passkey.backupState == false)
        #expect(passkey.lastUsedAt == at(10))
        #expect(try fixture.store.session(id: "new") != nil)
        #expect(try fixture.store.session(id: "old")?.revokedAt == at(10))
        let events = try fixture.store.auditEvents(userID: "u1", beforeID: nil, limit: 10)
        #expect(events.map(\.action.rawValue) == ["passkey.login"])
    }

    @Test("a used, expired or other-purpose challenge commits nothing", arguments: StoreKind.tested)
    func refusesStaleChallenges(kind: StoreKind) async throws {
        let fixture = try prepared(kind)
        #expect(try await fixture.store.commitPasskeyLogin(record()) != nil)
        #expect(try await fixture.store.commitPasskeyLogin(record(session: "again")) == nil, "used")
        try fixture.store.insertChallenge(makeChallenge("late"))
        #expect(
            try await fixture.store.commitPasskeyLogin(
                record(challenge: "late", session: "late", at: at(300)))
                == nil)
        try fixture.store.insertChallenge(makeChallenge("signup", purpose: .registration))
        #expect(
            try await fixture.store.commitPasskeyLogin(record(challenge: "signup", session: "other")) == nil)
        #expect(try fixture.store.challengeCount() == 0, "a refused challenge is used up too")
        for id in ["again", "late", "other"] { #expect(try fixture.store.session(id: id) == nil) }
        #expect(try fixture.store.auditEvents(userID: "u1", beforeID: nil, limit: 10).count == 1)
        #expect(try fixture.store.passkey(credentialID: [1, 2, 3])?.lastUsedAt == at(10))
    }

    @Test(
        "a failing write leaves everything as it was, the challenge included", arguments: StoreKind.tested)
    func rollsBack(kind: StoreKind) async throws {
        let fixture = try prepared(kind)
        await #expect(throws: StorageError(.notFound, "")) {
            try await fixture.store.commitPasskeyLogin(record(credential: [9, 9]))
        }
        // The session id collides with the live one: refused after the passkey update.
        await #expect(throws: StorageError.self) {
            try await fixture.store.commitPasskeyLogin(record(session: "old", replacing: nil))
        }
        #expect(try fixture.store.challengeCount() == 1)
        #expect(try fixture.store.passkey(credentialID: [1, 2, 3])?.signCount == 5)
        #expect(try fixture.store.session(id: "old")?.revokedAt == nil)
        #expect(try fixture.store.auditEvents(userID: "u1", beforeID: nil, limit: 10).isEmpty)
        #expect(try await fixture.store.commitPasskeyLogin(record()) != nil, "the challenge is still good")
    }

    @Test("of eight racing commits for one challenge exactly one wins", arguments: StoreKind.tested)
    func race(kind: StoreKind) throws {
        let fixture = try prepared(kind)
        let store = fixture.store
        let winners = Atomic(0)
        let failures = Atomic(0)
        onThreads(8) { index in
            do {
                // As HTTP workers commit: suspended, committed and resumed by SQLite's writer thread.
                let record = self.record(session: "s\(index)", replacing: nil)
                if try SuspendingCaller.run({ try await store.commitPasskeyLogin(record) }) != nil {
                    winners.add(1, ordering: .relaxed)
                }
            } catch {
                failures.add(1, ordering: .relaxed)
            }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
        #expect(winners.load(ordering: .relaxed) == 1)
        #expect(try store.sessions(userID: "u1", liveAt: at(11)).count == 2, "the old one and the winner")
    }
}
