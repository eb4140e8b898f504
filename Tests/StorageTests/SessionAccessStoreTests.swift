import CryptoCore
import Foundation
import Kernel
import SessionCore
import Storage
import TestSupport
import Testing

/// SessionAccessStore (a session read with its account), identical on SQLite and PostgreSQL.
@Suite("Session access store")
struct SessionAccessStoreTests {
    @Test(
        "a session reads back with its owner in one lookup, every field of both",
        arguments: StoreKind.tested)
    func withOwner(kind: StoreKind) throws {
        let fixture = try kind.make()
        let ada = makeUser("u1", username: "ada", createdAt: at(0.5))
        try fixture.store.insertUser(ada)
        try fixture.store.insertUser(makeUser("u2", username: "bob"))
        let full = makeSession("s1", userID: "u1", createdAt: at(0.5), expiresAt: at(3600.25))
        try fixture.store.insertSession(full)
        // Without the optional columns.
        let bobs = Session(
            id: "s2", userID: "u2", tokenHash: Digest.sha256("t2"), clientKind: .native,
            authMethod: .bankid, createdAt: at(1), lastSeenAt: at(2), expiresAt: at(3))
        try fixture.store.insertSession(bobs)
        let found = try #require(try fixture.store.sessionWithOwner(tokenHash: full.tokenHash))
        #expect(found.session == full)
        #expect(found.owner == ada)
        let other = try #require(try fixture.store.sessionWithOwner(tokenHash: bobs.tokenHash))
        #expect(other.session == bobs)
        #expect(other.owner.username == "bob")
        #expect(try fixture.store.sessionWithOwner(tokenHash: Digest.sha256("unknown")) == nil)
    }

    @Test(
        "a revoked session and a disabled owner are returned as stored: judging them is the caller's",
        arguments: StoreKind.tested)
    func revokedAndDisabled(kind: StoreKind) throws {
        let fixture = try kind.make()
        var ada = makeUser("u1", username: "ada")
        try fixture.store.insertUser(ada)
        let revoked = makeSession("s1", userID: "u1", revokedAt: at(5))
        try fixture.store.insertSession(revoked)
        ada.disabledAt = at(7.5)
        try fixture.store.updateUser(ada)
        let found = try #require(try fixture.store.sessionWithOwner(tokenHash: revoked.tokenHash))
        #expect(found.session.revokedAt == at(5))
        #expect(found.owner.disabledAt == at(7.5))
        #expect(found.owner == ada)
    }

    @Test(
        "a deleted user's sessions go with them: none is found without its owner",
        arguments: StoreKind.tested)
    func deletedOwner(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        let session = makeSession("s1", userID: "u1")
        try fixture.store.insertSession(session)
        #expect(try fixture.store.deleteUser(id: "u1"))
        #expect(try fixture.store.sessionWithOwner(tokenHash: session.tokenHash) == nil)
        // And none can be stored for a user that does not exist.
        #expect(throws: StorageError(.constraint, "")) {
            try fixture.store.insertSession(makeSession("s2", userID: "u1"))
        }
    }
}
