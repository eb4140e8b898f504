import Foundation
import Kernel
import SessionCore
import Storage
import Synchronization
import TestSupport
import Testing

/// The used set of sealed login challenges (schema 7), identical on SQLite and PostgreSQL:
/// a sealed challenge is used at most once, and never after its expiry.
@Suite("Sealed challenge uses")
struct SealedChallengeStoreTests {
    private let challenge = [UInt8](repeating: 7, count: 32)

    @Test(
        "a sealed challenge is used once, never after it expires, and purged at its expiry",
        arguments: StoreKind.tested)
    func useOnce(kind: StoreKind) throws {
        let fixture = try kind.make()
        let store = fixture.store
        #expect(try store.useSealedChallenge(challenge, expiresAt: at(300), at: at(1)))
        #expect(try !store.useSealedChallenge(challenge, expiresAt: at(300), at: at(2)), "used")
        let late = [UInt8](repeating: 8, count: 32)
        #expect(try !store.useSealedChallenge(late, expiresAt: at(300), at: at(300)), "expired")
        #expect(try store.useSealedChallenge(late, expiresAt: at(300), at: at(299.999)))
        #expect(try store.challengeCount() == 0, "uses are not stored challenges")
        #expect(try store.purgeChallenges(expiredBefore: at(299.999)) == 0)
        #expect(try store.purgeChallenges(expiredBefore: at(300)) == 2)
    }

    @Test(
        "a purge of more used challenges than one chunk removes every expired one and keeps the rest",
        arguments: StoreKind.tested)
    func purgeInChunks(kind: StoreKind) throws {
        let fixture = try kind.make()
        let store = fixture.store
        // Two and a half purge transactions' worth (1,000 each) expiring over 100 s, 25 at each
        // second (ties at a chunk's end), and some later ones.
        let expired = 2_500
        for index in 0..<expired {
            let bytes = withUnsafeBytes(of: UInt32(index).bigEndian) { [UInt8]($0) }
            let challenge = bytes + [UInt8](repeating: 1, count: 28)
            let expiresAt = at(Double(100 + index / 25))
            #expect(try store.useSealedChallenge(challenge, expiresAt: expiresAt, at: at(1)))
        }
        for index in 0..<10 {
            let challenge = [UInt8](repeating: UInt8(index), count: 32)
            #expect(try store.useSealedChallenge(challenge, expiresAt: at(1_000), at: at(1)))
        }
        #expect(try store.purgeChallenges(expiredBefore: at(500)) == expired)
        #expect(try store.purgeChallenges(expiredBefore: at(500)) == 0)
        #expect(try store.purgeChallenges(expiredBefore: at(1_000)) == 10)
    }

    @Test("8 threads using one sealed challenge: exactly one wins", arguments: StoreKind.tested)
    func race(kind: StoreKind) throws {
        let fixture = try kind.make()
        let store = fixture.store
        for round in 0..<25 {
            let challenge = [UInt8](repeating: UInt8(round), count: 32)
            let winners = Atomic(0)
            let failures = Atomic(0)
            onThreads(8) { _ in
                do {
                    if try store.useSealedChallenge(challenge, expiresAt: at(300), at: at(1)) {
                        winners.add(1, ordering: .relaxed)
                    }
                } catch {
                    failures.add(1, ordering: .relaxed)
                }
            }
            #expect(failures.load(ordering: .relaxed) == 0, "a loser gets false, not an error")
            #expect(winners.load(ordering: .relaxed) == 1, "round \(round)")
        }
    }

    /// A user with one passkey and a live session to be replaced.
    private func prepared(_ kind: StoreKind) throws -> TestStore {
        let fixture = try kind.make()
        try fixture.store.createUser(
            makeUser("u1"), firstPasskey: makePasskey([1, 2, 3], userID: "u1", signCount: 5))
        try fixture.store.insertSession(makeSession("old", userID: "u1"))
        return fixture
    }

    private func record(
        expiresAt: Date = at(300), credential: [UInt8] = [1, 2, 3], session: String = "new",
        at time: Date = at(10)
    ) -> PasskeyLoginRecord {
        PasskeyLoginRecord(
            challenge: .sealed(challenge: challenge, expiresAt: expiresAt), credentialID: credential,
            signCount: 9, backupState: false, session: makeSession(session, userID: "u1", createdAt: time),
            replacedSessionID: "old",
            event: AuditEvent(at: time, action: .passkeyLogin, actor: .user("u1"), userID: "u1"), at: time)
    }

    @Test(
        "a login answering a sealed challenge commits once; a replay or an expired one commits nothing",
        arguments: StoreKind.tested)
    func commit(kind: StoreKind) async throws {
        let fixture = try prepared(kind)
        let store = fixture.store
        #expect(
            try await store.commitPasskeyLogin(record(expiresAt: at(10), session: "late")) == nil, "expired")
        #expect(try await store.commitPasskeyLogin(record()) != nil)
        #expect(try await store.commitPasskeyLogin(record(session: "again")) == nil, "replayed")
        #expect(try !store.useSealedChallenge(challenge, expiresAt: at(300), at: at(11)), "marked used")
        for id in ["late", "again"] { #expect(try store.session(id: id) == nil) }
        #expect(try store.session(id: "new") != nil)
        #expect(try store.auditEvents(userID: "u1", beforeID: nil, limit: 10).count == 1)
    }

    @Test("a failing login write leaves the sealed challenge unused", arguments: StoreKind.tested)
    func rollsBack(kind: StoreKind) async throws {
        let fixture = try prepared(kind)
        await #expect(throws: StorageError(.notFound, "")) {
            try await fixture.store.commitPasskeyLogin(record(credential: [9, 9]))
        }
        await #expect(throws: StorageError.self) {
            try await fixture.store.commitPasskeyLogin(record(session: "old"))
        }
        #expect(try await fixture.store.commitPasskeyLogin(record()) != nil, "the challenge is still good")
    }

    @Test("of eight racing commits for one sealed challenge exactly one wins", arguments: StoreKind.tested)
    func commitRace(kind: StoreKind) throws {
        let fixture = try prepared(kind)
        let store = fixture.store
        let winners = Atomic(0)
        let failures = Atomic(0)
        onThreads(8) { index in
            do {
                // As HTTP workers commit: suspended, committed and resumed by SQLite's writer thread.
                let record = self.record(session: "s\(index)")
                if try SuspendingCaller.run({ try await store.commitPasskeyLogin(record) }) != nil {
                    winners.add(1, ordering: .relaxed)
                }
            } catch {
                failures.add(1, ordering: .relaxed)
            }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
        #expect(winners.load(ordering: .relaxed) == 1)
    }
}
