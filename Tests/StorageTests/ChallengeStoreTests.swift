import Foundation
import Kernel
import Storage
import Synchronization
import TestSupport
import Testing

/// ChallengeStore behaviour, identical on SQLite and PostgreSQL.
@Suite("Challenge store")
struct ChallengeStoreTests {
    @Test("a challenge is consumed once, with every field", arguments: StoreKind.tested)
    func singleUse(kind: StoreKind) throws {
        let fixture = try kind.make()
        let signUp = StoredChallenge(
            id: "c1", challenge: Array(0..<32), purpose: .registration, userID: "u1",
            username: "alice", displayName: "Alice Ålund", userHandle: Array(repeating: 9, count: 32),
            createdAt: at(0.125), expiresAt: at(300.5))
        let login = makeChallenge("c2")
        try fixture.store.insertChallenge(signUp)
        try fixture.store.insertChallenge(login)
        #expect(try fixture.store.challengeCount() == 2)
        #expect(try fixture.store.consumeChallenge(id: "c1", purpose: .registration, at: at(1)) == signUp)
        #expect(
            try fixture.store.consumeChallenge(id: "c1", purpose: .registration, at: at(1)) == nil,
            "a consumed challenge is gone")
        #expect(try fixture.store.consumeChallenge(id: "c2", purpose: .login, at: at(1)) == login)
        #expect(try fixture.store.consumeChallenge(id: "none", purpose: .login, at: at(1)) == nil)
        #expect(try fixture.store.challengeCount() == 0)
    }

    @Test(
        "a conditional registration's mark is kept; a challenge without it reads as not conditional",
        arguments: StoreKind.tested)
    func conditional(kind: StoreKind) throws {
        let fixture = try kind.make()
        var upgrade = makeChallenge("c1", purpose: .registration)
        upgrade.conditional = true
        try fixture.store.insertChallenge(upgrade)
        try fixture.store.insertChallenge(makeChallenge("c2", purpose: .registration))
        #expect(try fixture.store.challenge(id: "c1", purpose: .registration, at: at(1))?.conditional == true)
        #expect(try fixture.store.consumeChallenge(id: "c1", purpose: .registration, at: at(1)) == upgrade)
        #expect(
            try fixture.store.consumeChallenge(id: "c2", purpose: .registration, at: at(1))?.conditional
                == false)
    }

    @Test("a duplicate challenge id is a conflict", arguments: StoreKind.tested)
    func duplicateID(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertChallenge(makeChallenge("c1", purpose: .login))
        #expect(throws: StorageError(.conflict, "")) {
            try fixture.store.insertChallenge(makeChallenge("c1", purpose: .registration))
        }
        #expect(try fixture.store.consumeChallenge(id: "c1", purpose: .login, at: epoch) != nil)
    }

    @Test(
        "an expired challenge is refused and deleted; one ending exactly now has expired",
        arguments: StoreKind.tested)
    func expired(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertChallenge(makeChallenge("c1", expiresAt: at(300)))
        try fixture.store.insertChallenge(makeChallenge("c2", expiresAt: at(300)))
        #expect(try fixture.store.consumeChallenge(id: "c1", purpose: .login, at: at(300)) == nil)
        #expect(try fixture.store.challengeCount() == 1, "the expired one was deleted")
        #expect(try fixture.store.consumeChallenge(id: "c2", purpose: .login, at: at(299.999)) != nil)
    }

    @Test(
        "a challenge for the other purpose is refused and deleted, not left for a second try",
        arguments: StoreKind.tested)
    func wrongPurpose(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertChallenge(makeChallenge("c1", purpose: .registration))
        #expect(try fixture.store.consumeChallenge(id: "c1", purpose: .login, at: at(1)) == nil)
        #expect(
            try fixture.store.consumeChallenge(id: "c1", purpose: .registration, at: at(1)) == nil,
            "one attempt per challenge")
        #expect(try fixture.store.challengeCount() == 0)
    }

    @Test(
        "purging deletes what has expired at the cutoff and nothing else",
        arguments: StoreKind.tested)
    func purge(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertChallenge(makeChallenge("past", expiresAt: at(10)))
        try fixture.store.insertChallenge(makeChallenge("now", expiresAt: at(20)))
        try fixture.store.insertChallenge(makeChallenge("later", expiresAt: at(20.001)))
        #expect(try fixture.store.purgeChallenges(expiredBefore: at(20)) == 2)
        #expect(try fixture.store.challengeCount() == 1)
        #expect(try fixture.store.purgeChallenges(expiredBefore: at(20)) == 0)
        #expect(try fixture.store.consumeChallenge(id: "later", purpose: .login, at: at(20)) != nil)
    }

    @Test("8 threads consuming one challenge: exactly one wins", arguments: StoreKind.tested)
    func race(kind: StoreKind) throws {
        let fixture = try kind.make()
        let store = fixture.store
        for round in 0..<25 {
            let id = "c\(round)"
            try store.insertChallenge(makeChallenge(id))
            let winners = Atomic(0)
            let failures = Atomic(0)
            onThreads(8) { _ in
                do {
                    if try store.consumeChallenge(id: id, purpose: .login, at: at(1)) != nil {
                        winners.add(1, ordering: .relaxed)
                    }
                } catch {
                    failures.add(1, ordering: .relaxed)
                }
            }
            #expect(failures.load(ordering: .relaxed) == 0, "a loser gets nil, not an error")
            #expect(winners.load(ordering: .relaxed) == 1, "round \(round)")
        }
        #expect(try store.challengeCount() == 0)
    }
}
