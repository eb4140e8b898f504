import Foundation
import Kernel
import SessionCore
import Storage
import TestSupport
import Testing

/// UserStore behaviour, identical on SQLite and PostgreSQL.
@Suite("User store")
struct UserStoreTests {
    @Test("an inserted user reads back by id and by username", arguments: StoreKind.tested)
    func insertAndRead(kind: StoreKind) throws {
        let fixture = try kind.make()
        let user = User(
            id: "u1", username: "alice", displayName: "Alice Ålund", createdAt: at(1.234),
            disabledAt: at(99))
        try fixture.store.insertUser(user)
        #expect(try fixture.store.user(id: "u1") == user)
        #expect(try fixture.store.user(username: "alice") == user)
        #expect(try fixture.store.user(id: "nobody") == nil)
        #expect(try fixture.store.user(username: "Alice") == nil, "usernames compare exactly")
    }

    @Test("a duplicate username is a conflict", arguments: StoreKind.tested)
    func duplicateUsername(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1", username: "alice"))
        #expect(throws: StorageError(.conflict, "")) {
            try fixture.store.insertUser(makeUser("u2", username: "alice"))
        }
        #expect(try fixture.store.userCount() == 1)
    }

    @Test("a duplicate user id is a conflict", arguments: StoreKind.tested)
    func duplicateID(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1", username: "alice"))
        #expect(throws: StorageError(.conflict, "")) {
            try fixture.store.insertUser(makeUser("u1", username: "bob"))
        }
        #expect(try fixture.store.user(username: "bob") == nil)
    }

    @Test("any number of users may have no username", arguments: StoreKind.tested)
    func nilUsernames(kind: StoreKind) throws {
        let fixture = try kind.make()
        for id in ["a", "b", "c"] { try fixture.store.insertUser(makeUser(id, username: nil)) }
        #expect(try fixture.store.userCount() == 3)
    }

    @Test(
        "an update changes username, display name and disabled time, never the creation time or the user handle",
        arguments: StoreKind.tested)
    func update(kind: StoreKind) throws {
        let fixture = try kind.make()
        let original = makeUser("u1", username: "alice", createdAt: at(0))
        try fixture.store.insertUser(original)
        var changed = User(
            id: "u1", username: "alicia", displayName: "Alicia", createdAt: at(500),
            disabledAt: at(7), userHandle: [UInt8](repeating: 7, count: User.handleByteCount))
        #expect(changed.userHandle != original.userHandle)
        try fixture.store.updateUser(changed)
        changed.createdAt = at(0)
        changed.userHandle = original.userHandle
        #expect(try fixture.store.user(id: "u1") == changed)
        #expect(try fixture.store.user(username: "alice") == nil, "the old username is released")
        #expect(try fixture.store.user(username: "alicia")?.id == "u1")
        // The released name can be taken by someone else.
        try fixture.store.insertUser(makeUser("u2", username: "alice"))
    }

    @Test("updating a missing user is not found", arguments: StoreKind.tested)
    func updateMissing(kind: StoreKind) throws {
        let fixture = try kind.make()
        #expect(throws: StorageError(.notFound, "")) {
            try fixture.store.updateUser(makeUser("ghost", username: "ghost"))
        }
        #expect(try fixture.store.userCount() == 0)
    }

    @Test(
        "renaming to another user's username is a conflict and changes nothing",
        arguments: StoreKind.tested)
    func updateConflict(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1", username: "alice"))
        try fixture.store.insertUser(makeUser("u2", username: "bob"))
        var bob = try #require(try fixture.store.user(id: "u2"))
        bob.username = "alice"
        #expect(throws: StorageError(.conflict, "")) { try fixture.store.updateUser(bob) }
        #expect(try fixture.store.user(id: "u2")?.username == "bob")
        #expect(try fixture.store.user(username: "alice")?.id == "u1")
    }

    @Test(
        "deleting a user cascades to their sessions and no one else's",
        arguments: StoreKind.tested)
    func deleteCascades(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1", username: "alice"))
        try fixture.store.insertUser(makeUser("u2"))
        try fixture.store.insertSession(makeSession("s1", userID: "u1"))
        try fixture.store.insertSession(makeSession("s2", userID: "u1"))
        try fixture.store.insertSession(makeSession("s3", userID: "u2"))

        #expect(try fixture.store.deleteUser(id: "u1"))
        #expect(try fixture.store.user(id: "u1") == nil)
        #expect(try fixture.store.user(username: "alice") == nil)
        #expect(try fixture.store.session(id: "s1") == nil)
        #expect(
            try fixture.store.session(tokenHash: makeSession("s2", userID: "u1").tokenHash) == nil)
        #expect(try fixture.store.session(id: "s3") != nil)
        #expect(try fixture.store.deleteUser(id: "u1") == false, "a second delete finds nothing")
        // The token hash is free again once its session is gone.
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertSession(makeSession("s1", userID: "u1"))
    }

    @Test("users page by id in byte order with keyset pagination", arguments: StoreKind.tested)
    func pagination(kind: StoreKind) throws {
        let fixture = try kind.make()
        // Inserted out of order, with non-ASCII ids where Unicode and byte order could differ.
        let ids = ["m", "b", "Z", "é", "a", "ä", "zz", "0", "Å"]
        for id in ids { try fixture.store.insertUser(makeUser(id)) }
        let expected = ids.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }

        var seen: [String] = []
        var cursor: String?
        while true {
            let page = try fixture.store.users(afterID: cursor, limit: 4)
            #expect(page.count <= 4)
            seen += page.map(\.id)
            guard let last = page.last, page.count == 4 else { break }
            cursor = last.id
        }
        #expect(seen == expected)
        #expect(try fixture.store.users(afterID: expected.last, limit: 10).isEmpty)
        #expect(expected.last == "é", "non-ASCII sorts after ASCII, as bytes do")
        #expect(try fixture.store.userCount() == ids.count)
    }

    @Test("a non-positive limit returns an empty page", arguments: StoreKind.tested)
    func nonPositiveLimit(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        #expect(try fixture.store.users(afterID: nil, limit: 0).isEmpty)
        #expect(try fixture.store.users(afterID: nil, limit: -1).isEmpty)
        #expect(try fixture.store.auditEvents(userID: nil, beforeID: nil, limit: 0).isEmpty)
    }

    @Test(
        "times are kept to the millisecond, the same way in both stores",
        arguments: StoreKind.tested)
    func millisecondPrecision(kind: StoreKind) throws {
        let fixture = try kind.make()
        // 0.1234567 s after a whole second: stored as 123 ms.
        let precise = Date(timeIntervalSince1970: 1_790_000_000.1234567)
        try fixture.store.insertUser(makeUser("u1", createdAt: precise))
        let stored = try #require(try fixture.store.user(id: "u1")).createdAt
        #expect(stored == Date(timeIntervalSince1970: 1_790_000_000.123))
        #expect(abs(stored.timeIntervalSince(precise)) < 0.001)
    }

    @Test("an empty display name is stored as empty, not as NULL", arguments: StoreKind.tested)
    func emptyText(kind: StoreKind) throws {
        let fixture = try kind.make()
        let user = User(id: "u1", username: "", displayName: "", createdAt: epoch)
        try fixture.store.insertUser(user)
        #expect(try fixture.store.user(id: "u1") == user)
        #expect(try fixture.store.user(username: "")?.id == "u1")
    }
}
