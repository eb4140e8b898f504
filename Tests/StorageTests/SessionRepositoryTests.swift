import CryptoCore
import Foundation
import Kernel
import SessionCore
import Storage
import TestSupport
import Testing

/// SessionRepository behaviour, identical on SQLite and PostgreSQL.
@Suite("Session repository")
struct SessionRepositoryTests {
    @Test(
        "a session reads back by token hash and by id with every field",
        arguments: StoreKind.tested)
    func insertAndRead(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        let full = makeSession("s1", userID: "u1", createdAt: at(0.5), expiresAt: at(3600.25))
        let bare = Session(
            id: "s2", userID: "u1", tokenHash: Digest.sha256("t2"), clientKind: .native,
            authMethod: .bankid, createdAt: at(1), lastSeenAt: at(2), expiresAt: at(3))
        try fixture.store.insertSession(full)
        try fixture.store.insertSession(bare)
        #expect(try fixture.store.session(tokenHash: full.tokenHash) == full)
        #expect(try fixture.store.session(id: "s1") == full)
        #expect(try fixture.store.session(id: "s2") == bare)
        #expect(try fixture.store.session(tokenHash: Digest.sha256("unknown")) == nil)
        #expect(try fixture.store.session(id: "unknown") == nil)
    }

    @Test("a session for a missing user is a constraint violation", arguments: StoreKind.tested)
    func missingUser(kind: StoreKind) throws {
        let fixture = try kind.make()
        #expect(throws: StorageError(.constraint, "")) {
            try fixture.store.insertSession(makeSession("s1", userID: "ghost"))
        }
        #expect(try fixture.store.session(id: "s1") == nil)
    }

    @Test("a duplicate session id or token hash is a conflict", arguments: StoreKind.tested)
    func duplicates(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertSession(makeSession("s1", userID: "u1", token: "same"))
        #expect(throws: StorageError(.conflict, "")) {
            try fixture.store.insertSession(makeSession("s2", userID: "u1", token: "same"))
        }
        #expect(throws: StorageError(.conflict, "")) {
            try fixture.store.insertSession(makeSession("s1", userID: "u1", token: "other"))
        }
        #expect(try fixture.store.session(id: "s2") == nil)
    }

    @Test("touching records activity and never moves it backwards", arguments: StoreKind.tested)
    func touch(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertSession(makeSession("s1", userID: "u1"))
        try fixture.store.touchSession(id: "s1", at: at(120))
        #expect(try fixture.store.session(id: "s1")?.lastSeenAt == at(120))
        try fixture.store.touchSession(id: "s1", at: at(60))
        #expect(try fixture.store.session(id: "s1")?.lastSeenAt == at(120))
        // Touching a session that is gone (purged meanwhile) is not an error.
        try fixture.store.touchSession(id: "gone", at: at(60))
    }

    @Test(
        "revoking by id ends a session once; again, another user's, or a missing id, it ends none",
        arguments: StoreKind.tested)
    func revoke(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertUser(makeUser("u2"))
        try fixture.store.insertSession(makeSession("s1", userID: "u1"))
        try fixture.store.insertSession(makeSession("s2", userID: "u2"))
        let revoke = { (id: String, user: String, time: TimeInterval) in
            try fixture.store.revokeSessions(ofUser: user, ids: [id], except: nil, at: at(time)) { _ in .none
            }
        }
        #expect(try revoke("s1", "u1", 10) == ["s1"])
        #expect(try revoke("s1", "u1", 20) == [])
        #expect(
            try fixture.store.session(id: "s1")?.revokedAt == at(10), "the first revocation stands")
        #expect(try revoke("missing", "u1", 10) == [])
        #expect(try revoke("s2", "u1", 10) == [], "another user's session is never touched")
        #expect(try fixture.store.session(id: "s2")?.revokedAt == nil)
    }

    @Test(
        "revoking all of a user's sessions spares the kept one, other users and ended ones",
        arguments: StoreKind.tested)
    func revokeAll(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertUser(makeUser("u2"))
        try fixture.store.insertSession(makeSession("keep", userID: "u1"))
        try fixture.store.insertSession(makeSession("a", userID: "u1"))
        try fixture.store.insertSession(makeSession("b", userID: "u1"))
        try fixture.store.insertSession(makeSession("expired", userID: "u1", expiresAt: at(50)))
        try fixture.store.insertSession(makeSession("revoked", userID: "u1", revokedAt: at(5)))
        try fixture.store.insertSession(makeSession("other", userID: "u2"))

        let ended = try fixture.store.revokeSessions(ofUser: "u1", ids: nil, except: "keep", at: at(100)) {
            _ in .none
        }
        #expect(Set(ended) == ["a", "b"])
        #expect(try fixture.store.session(id: "a")?.revokedAt == at(100))
        #expect(try fixture.store.session(id: "b")?.revokedAt == at(100))
        #expect(try fixture.store.session(id: "keep")?.revokedAt == nil)
        #expect(try fixture.store.session(id: "expired")?.revokedAt == nil)
        #expect(try fixture.store.session(id: "revoked")?.revokedAt == at(5))
        #expect(try fixture.store.session(id: "other")?.revokedAt == nil)
        #expect(
            try fixture.store.revokeSessions(ofUser: "u1", ids: nil, except: nil, at: at(200)) { _ in .none }
                == ["keep"])
        #expect(try fixture.store.session(id: "keep")?.revokedAt == at(200))
    }

    @Test(
        "live sessions leave out revoked and expired ones and come newest first",
        arguments: StoreKind.tested)
    func liveSessions(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertUser(makeUser("u2"))
        try fixture.store.insertSession(makeSession("old", userID: "u1", createdAt: at(1)))
        try fixture.store.insertSession(makeSession("new", userID: "u1", createdAt: at(3)))
        try fixture.store.insertSession(makeSession("mid", userID: "u1", createdAt: at(2)))
        // Ties on creation time fall back to the id, descending, so the order is total.
        try fixture.store.insertSession(makeSession("mid2", userID: "u1", createdAt: at(2)))
        try fixture.store.insertSession(
            makeSession("revoked", userID: "u1", createdAt: at(4), revokedAt: at(5)))
        // Ends exactly at `now`: over, as SessionPolicy judges it.
        try fixture.store.insertSession(
            makeSession("ending", userID: "u1", createdAt: at(4), expiresAt: at(100)))
        try fixture.store.insertSession(makeSession("theirs", userID: "u2", createdAt: at(4)))

        let live = try fixture.store.sessions(userID: "u1", liveAt: at(100))
        #expect(live.map(\.id) == ["new", "mid2", "mid", "old"])
        #expect(try fixture.store.sessions(userID: "nobody", liveAt: at(100)).isEmpty)
    }

    @Test(
        "rotation revokes the old session and stores the replacement", arguments: StoreKind.tested
    )
    func rotate(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertSession(makeSession("old", userID: "u1"))
        let replacement = makeSession("new", userID: "u1", createdAt: at(30))
        try fixture.store.rotateSession(oldID: "old", replacement: replacement, at: at(30))
        #expect(try fixture.store.session(id: "old")?.revokedAt == at(30))
        #expect(try fixture.store.session(tokenHash: replacement.tokenHash) == replacement)
        #expect(try fixture.store.sessions(userID: "u1", liveAt: at(31)).map(\.id) == ["new"])
    }

    @Test(
        "a rotation with a grace brings the old expiry forward and stores the replacement, once",
        arguments: StoreKind.tested)
    func rotateWithGrace(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertSession(makeSession("old", userID: "u1", expiresAt: at(3600)))
        let replacement = makeSession("new", userID: "u1", createdAt: at(30), expiresAt: at(3600))
        #expect(try fixture.store.rotateSession(oldID: "old", replacement: replacement, oldExpiresAt: at(90)))
        #expect(try fixture.store.session(id: "old")?.expiresAt == at(90))
        #expect(try fixture.store.session(id: "old")?.revokedAt == nil)
        #expect(try fixture.store.session(tokenHash: replacement.tokenHash) == replacement)
        // A second rotation (another request racing with the old token) changes nothing.
        let other = makeSession(
            "other", userID: "u1", createdAt: at(31), expiresAt: at(3600), token: "other-token")
        #expect(try !fixture.store.rotateSession(oldID: "old", replacement: other, oldExpiresAt: at(91)))
        #expect(try fixture.store.session(id: "other") == nil)
        #expect(try fixture.store.session(id: "old")?.expiresAt == at(90))
        // Nor does rotating a revoked or missing session.
        try fixture.store.endSession("new", ofUser: "u1", at: at(40))
        #expect(try !fixture.store.rotateSession(oldID: "new", replacement: other, oldExpiresAt: at(100)))
        #expect(try !fixture.store.rotateSession(oldID: "missing", replacement: other, oldExpiresAt: at(100)))
    }

    @Test("a rotation whose replacement is refused changes nothing", arguments: StoreKind.tested)
    func rotationIsAtomic(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertSession(makeSession("old", userID: "u1"))
        try fixture.store.insertSession(makeSession("taken", userID: "u1", token: "taken-token"))
        // The replacement reuses a token hash, so its insert fails after the revoke was written.
        let clash = makeSession("new", userID: "u1", token: "taken-token")
        #expect(throws: StorageError(.conflict, "")) {
            try fixture.store.rotateSession(oldID: "old", replacement: clash, at: at(30))
        }
        #expect(
            try fixture.store.session(id: "old")?.revokedAt == nil, "the revoke was rolled back")
        #expect(try fixture.store.session(id: "new") == nil)
        // A replacement for a user that does not exist fails the same way.
        #expect(throws: StorageError(.constraint, "")) {
            try fixture.store.rotateSession(
                oldID: "old", replacement: makeSession("new", userID: "ghost"), at: at(30))
        }
        #expect(try fixture.store.session(id: "old")?.revokedAt == nil)
    }

    @Test(
        "rotating a revoked session is a conflict and a missing one is not found",
        arguments: StoreKind.tested)
    func rotateRevokedOrMissing(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertSession(makeSession("old", userID: "u1", revokedAt: at(1)))
        // A second rotation of the same token must lose, or one token would fork into two sessions.
        #expect(throws: StorageError(.conflict, "")) {
            try fixture.store.rotateSession(
                oldID: "old", replacement: makeSession("n1", userID: "u1"), at: at(2))
        }
        #expect(throws: StorageError(.notFound, "")) {
            try fixture.store.rotateSession(
                oldID: "nope", replacement: makeSession("n2", userID: "u1"), at: at(2))
        }
        #expect(try fixture.store.session(id: "n1") == nil)
        #expect(try fixture.store.session(id: "n2") == nil)
    }

    @Test("a purge of more ended sessions than one chunk deletes them all", arguments: StoreKind.tested)
    func purgeInChunks(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        // One more than a purge transaction takes (1,000).
        let ended = 1_001
        for index in 0..<ended {
            try fixture.store.insertSession(makeSession("s\(index)", userID: "u1", expiresAt: at(10)))
        }
        try fixture.store.insertSession(makeSession("live", userID: "u1"))
        #expect(try fixture.store.purgeSessions(endedBefore: at(50)) == ended)
        #expect(try fixture.store.session(id: "live") != nil)
    }

    @Test(
        "purge deletes sessions that expired or were revoked before the cutoff",
        arguments: StoreKind.tested)
    func purge(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertSession(makeSession("expired", userID: "u1", expiresAt: at(10)))
        try fixture.store.insertSession(makeSession("revoked", userID: "u1", revokedAt: at(20)))
        try fixture.store.insertSession(
            makeSession("endsAtCutoff", userID: "u1", expiresAt: at(50)))
        try fixture.store.insertSession(
            makeSession("revokedLater", userID: "u1", revokedAt: at(60)))
        try fixture.store.insertSession(makeSession("live", userID: "u1"))

        #expect(try fixture.store.purgeSessions(endedBefore: at(50)) == 2)
        #expect(try fixture.store.session(id: "expired") == nil)
        #expect(try fixture.store.session(id: "revoked") == nil)
        #expect(try fixture.store.session(id: "endsAtCutoff") != nil, "the cutoff is exclusive")
        #expect(try fixture.store.session(id: "revokedLater") != nil)
        #expect(try fixture.store.session(id: "live") != nil)
        #expect(try fixture.store.purgeSessions(endedBefore: at(50)) == 0)
    }

    @Test(
        "SessionService issues, authenticates, rotates and revokes over the store",
        arguments: StoreKind.tested)
    func sessionService(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        let service = SessionService(
            repository: AnyRepository(base: fixture.store), policy: SessionPolicy(),
            clock: FixedClock(epoch))
        let issued = try service.issue(userID: "u1", clientKind: .native, authMethod: .passkey)
        #expect(try service.authenticate(token: issued.token).id == issued.session.id)
        let rotated = try service.rotate(token: issued.token)
        #expect(throws: SessionError(.revoked, "")) {
            try service.authenticate(token: issued.token)
        }
        #expect(try service.list(userID: "u1").map(\.id) == [rotated.session.id])
        try fixture.store.endSession(rotated.session.id, ofUser: "u1", at: epoch)
        #expect(try service.list(userID: "u1").isEmpty)
    }
}

/// SessionService is generic over a concrete repository; this forwards to an existential one.
struct AnyRepository: SessionRepository {
    let base: any SessionRepository
    func insertSession(_ session: Session) throws { try base.insertSession(session) }
    func session(tokenHash: [UInt8]) throws -> Session? { try base.session(tokenHash: tokenHash) }
    func session(id: String) throws -> Session? { try base.session(id: id) }
    func touchSession(id: String, at: Date) throws { try base.touchSession(id: id, at: at) }
    func sessions(userID: String, liveAt now: Date) throws -> [Session] {
        try base.sessions(userID: userID, liveAt: now)
    }
    func rotateSession(oldID: String, replacement: Session, at: Date) throws {
        try base.rotateSession(oldID: oldID, replacement: replacement, at: at)
    }
    func rotateSession(oldID: String, replacement: Session, oldExpiresAt: Date) throws -> Bool {
        try base.rotateSession(oldID: oldID, replacement: replacement, oldExpiresAt: oldExpiresAt)
    }
    func purgeSessions(endedBefore cutoff: Date) throws -> Int {
        try base.purgeSessions(endedBefore: cutoff)
    }
}
