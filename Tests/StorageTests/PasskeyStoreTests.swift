import Foundation
import Kernel
import Storage
import Synchronization
import TestSupport
import Testing

/// PasskeyStore, AccountStore and user handles, identical on SQLite and PostgreSQL.
@Suite("Passkey store")
struct PasskeyStoreTests {
    @Test("a passkey reads back by credential id with every field", arguments: StoreKind.tested)
    func roundTrip(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        var full = makePasskey([1, 2, 3], userID: "u1", createdAt: at(1.25))
        full.signCount = .max
        full.lastUsedAt = at(9.75)
        full.attestationTrusted = true
        let bare = StoredPasskey(
            credentialID: Array(repeating: 0xFF, count: 1023), userID: "u1", publicKey: [0],
            algorithm: -257, signCount: 0, aaguid: "00000000-0000-0000-0000-000000000000",
            providerName: nil, transports: [], backupEligible: false, backupState: false,
            attestationFormat: "packed", attestationType: "Basic", attestationTrusted: false,
            name: "", createdAt: at(2), lastUsedAt: nil)
        try fixture.store.insertPasskey(full)
        try fixture.store.insertPasskey(bare)
        #expect(try fixture.store.passkey(credentialID: [1, 2, 3]) == full)
        #expect(try fixture.store.passkey(credentialID: bare.credentialID) == bare)
        #expect(try fixture.store.passkey(credentialID: [1, 2]) == nil)
    }

    @Test(
        "a passkey reads back with its owner in one lookup, every field of both",
        arguments: StoreKind.tested)
    func withOwner(kind: StoreKind) throws {
        let fixture = try kind.make()
        var ada = makeUser("u1", username: "ada", createdAt: at(0.5))
        ada.disabledAt = at(3)
        try fixture.store.insertUser(ada)
        try fixture.store.insertUser(makeUser("u2", username: "bob"))
        var full = makePasskey([1, 2, 3], userID: "u1", createdAt: at(1.25))
        full.signCount = .max
        full.lastUsedAt = at(9.75)
        full.providerName = "iCloud Keychain"
        full.transports = ["hybrid", "internal"]
        try fixture.store.insertPasskey(full)
        try fixture.store.insertPasskey(makePasskey([4], userID: "u2"))
        let found = try #require(try fixture.store.passkeyWithOwner(credentialID: [1, 2, 3]))
        #expect(found.passkey == full)
        #expect(found.owner == ada)
        #expect(try fixture.store.passkeyWithOwner(credentialID: [4])?.owner.username == "bob")
        #expect(try fixture.store.passkeyWithOwner(credentialID: [1, 2]) == nil)
    }

    @Test(
        "credential ids come in the passkeys' order (oldest first, ties by id bytes), only the user's",
        arguments: StoreKind.tested)
    func credentialIDs(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1", username: "ada"))
        try fixture.store.insertUser(makeUser("u2", username: "bob"))
        let made: [([UInt8], TimeInterval)] = [([9, 9], 2), ([5], 1), ([7, 1], 2), ([0xff], 0.5), ([7], 2)]
        for (id, created) in made {
            try fixture.store.insertPasskey(makePasskey(id, userID: "u1", createdAt: at(created)))
        }
        try fixture.store.insertPasskey(makePasskey([6], userID: "u2"))
        let ids = try fixture.store.credentialIDs(userID: "u1")
        #expect(ids == [[0xff], [5], [7], [7, 1], [9, 9]])
        #expect(ids == (try fixture.store.passkeys(userID: "u1")).map(\.credentialID))
        #expect(try fixture.store.credentialIDs(userID: "u2") == [[6]])
        #expect(try fixture.store.credentialIDs(userID: "nobody") == [])
    }

    @Test(
        "transports round-trip whatever they hold: none, plain tokens, commas, quotes, escapes, Unicode",
        arguments: StoreKind.tested)
    func transportsRoundTrip(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        let cases: [[String]] = [
            [], ["internal"], ["hybrid", "internal", "usb"], ["a,b"], ["quo\"te", "back\\slash"],
            ["line\nbreak", "tab\t"], ["ünïcødé", ""], ["\",\""],
        ]
        for (index, transports) in cases.enumerated() {
            var passkey = makePasskey([UInt8(index + 1)], userID: "u1")
            passkey.transports = transports
            try fixture.store.insertPasskey(passkey)
            #expect(try fixture.store.passkey(credentialID: [UInt8(index + 1)])?.transports == transports)
        }
    }

    @Test("a credential id registered to anyone is a conflict", arguments: StoreKind.tested)
    func duplicateCredential(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertUser(makeUser("u2"))
        try fixture.store.insertPasskey(makePasskey([1], userID: "u1", name: "first"))
        #expect(throws: StorageError(.conflict, "")) {
            try fixture.store.insertPasskey(makePasskey([1], userID: "u2", name: "second"))
        }
        #expect(try fixture.store.passkey(credentialID: [1])?.name == "first")
        #expect(try fixture.store.passkeyCount(userID: "u2") == 0)
    }

    @Test("a passkey for a missing user is a constraint failure", arguments: StoreKind.tested)
    func missingUser(kind: StoreKind) throws {
        let fixture = try kind.make()
        #expect(throws: StorageError(.constraint, "")) {
            try fixture.store.insertPasskey(makePasskey([1], userID: "ghost"))
        }
        #expect(try fixture.store.passkey(credentialID: [1]) == nil)
    }

    @Test("a user's passkeys list oldest first and count", arguments: StoreKind.tested)
    func listAndCount(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertUser(makeUser("u2"))
        try fixture.store.insertPasskey(makePasskey([3], userID: "u1", createdAt: at(30)))
        try fixture.store.insertPasskey(makePasskey([9], userID: "u1", createdAt: at(10)))
        try fixture.store.insertPasskey(makePasskey([2], userID: "u1", createdAt: at(10)))
        try fixture.store.insertPasskey(makePasskey([1], userID: "u2", createdAt: at(0)))
        #expect(
            try fixture.store.passkeys(userID: "u1").map(\.credentialID) == [[2], [9], [3]],
            "by creation time, ties by credential id bytes")
        #expect(try fixture.store.passkeyCount(userID: "u1") == 3)
        #expect(try fixture.store.passkeyCount(userID: "u2") == 1)
        #expect(try fixture.store.passkeys(userID: "nobody").isEmpty)
        #expect(try fixture.store.passkeyCount(userID: "nobody") == 0)
    }

    @Test("renaming works for the owner and is refused for anyone else", arguments: StoreKind.tested)
    func rename(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertUser(makeUser("u2"))
        try fixture.store.insertPasskey(makePasskey([1], userID: "u1", name: "Phone"))
        #expect(try fixture.store.renamePasskey(credentialID: [1], userID: "u2", name: "Mine") == false)
        #expect(try fixture.store.passkey(credentialID: [1])?.name == "Phone")
        #expect(try fixture.store.renamePasskey(credentialID: [1], userID: "u1", name: "Laptop"))
        #expect(try fixture.store.passkey(credentialID: [1])?.name == "Laptop")
        #expect(try fixture.store.renamePasskey(credentialID: [2], userID: "u1", name: "x") == false)
    }

    @Test(
        "deleting works for the owner, even the last one, and is refused for anyone else",
        arguments: StoreKind.tested)
    func delete(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertUser(makeUser("u2"))
        try fixture.store.insertPasskey(makePasskey([1], userID: "u1"))
        #expect(try fixture.store.deletePasskey(credentialID: [1], userID: "u2") == false)
        #expect(try fixture.store.passkey(credentialID: [1]) != nil)
        #expect(try fixture.store.deletePasskey(credentialID: [1], userID: "u1"))
        #expect(try fixture.store.passkey(credentialID: [1]) == nil)
        #expect(try fixture.store.deletePasskey(credentialID: [1], userID: "u1") == false)
    }

    @Test("the last-passkey guard keeps a user's only passkey", arguments: StoreKind.tested)
    func lastPasskeyGuard(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertUser(makeUser("u2"))
        try fixture.store.insertPasskey(makePasskey([1], userID: "u1"))
        try fixture.store.insertPasskey(makePasskey([2], userID: "u1"))
        try fixture.store.insertPasskey(makePasskey([3], userID: "u2"))
        try fixture.store.insertPasskey(makePasskey([4], userID: "u2"))
        #expect(
            try fixture.store.deletePasskeyUnlessLast(credentialID: [3], userID: "u1") == .notFound,
            "another user's passkey")
        #expect(try fixture.store.deletePasskeyUnlessLast(credentialID: [9], userID: "u1") == .notFound)
        #expect(try fixture.store.deletePasskeyUnlessLast(credentialID: [1], userID: "u1") == .deleted)
        #expect(
            try fixture.store.deletePasskeyUnlessLast(credentialID: [2], userID: "u1") == .lastPasskey)
        #expect(try fixture.store.passkeys(userID: "u1").map(\.credentialID) == [[2]])
        #expect(try fixture.store.passkeyCount(userID: "u2") == 2, "nobody else's changed")
    }

    @Test("two racing guarded deletions of a user's two passkeys leave one", arguments: StoreKind.tested)
    func lastPasskeyRace(kind: StoreKind) throws {
        let fixture = try kind.make()
        let store = fixture.store
        for round in 0..<10 {
            let user = "u\(round)"
            try store.insertUser(makeUser(user))
            try store.insertPasskey(makePasskey([UInt8(round), 1], userID: user))
            try store.insertPasskey(makePasskey([UInt8(round), 2], userID: user))
            let outcomes = Mutex<[PasskeyDeletion]>([])
            onThreads(2) { index in
                let outcome = try? store.deletePasskeyUnlessLast(
                    credentialID: [UInt8(round), UInt8(index + 1)], userID: user)
                outcomes.withLock { $0.append(outcome ?? .notFound) }
            }
            #expect(outcomes.withLock { $0.sorted { "\($0)" < "\($1)" } } == [.deleted, .lastPasskey])
            #expect(try store.passkeyCount(userID: user) == 1)
        }
    }

    @Test(
        "a recorded use moves counter, backup state and time, never backwards",
        arguments: StoreKind.tested)
    func recordUse(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertPasskey(makePasskey([1], userID: "u1", signCount: 5))
        try fixture.store.recordPasskeyUse(
            credentialID: [1], signCount: 6, backupState: false, at: at(100.5))
        var stored = try #require(try fixture.store.passkey(credentialID: [1]))
        #expect(stored.signCount == 6)
        #expect(stored.backupState == false)
        #expect(stored.lastUsedAt == at(100.5))
        try fixture.store.recordPasskeyUse(
            credentialID: [1], signCount: 2, backupState: true, at: at(50))
        stored = try #require(try fixture.store.passkey(credentialID: [1]))
        #expect(stored.signCount == 6, "a racing login's lower counter does not win")
        #expect(stored.lastUsedAt == at(100.5))
        #expect(stored.backupState == true)
        try fixture.store.recordPasskeyUse(
            credentialID: [1], signCount: .max, backupState: true, at: at(200))
        #expect(try fixture.store.passkey(credentialID: [1])?.signCount == .max)
        #expect(throws: StorageError(.notFound, "")) {
            try fixture.store.recordPasskeyUse(
                credentialID: [2], signCount: 1, backupState: false, at: at(1))
        }
    }

    @Test("deleting a user deletes their passkeys and no one else's", arguments: StoreKind.tested)
    func cascade(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertUser(makeUser("u2"))
        try fixture.store.insertPasskey(makePasskey([1], userID: "u1"))
        try fixture.store.insertPasskey(makePasskey([2], userID: "u1"))
        try fixture.store.insertPasskey(makePasskey([3], userID: "u2"))
        #expect(try fixture.store.deleteUser(id: "u1"))
        #expect(try fixture.store.passkey(credentialID: [1]) == nil)
        #expect(try fixture.store.passkeyCount(userID: "u1") == 0)
        #expect(try fixture.store.passkey(credentialID: [3]) != nil)
        // The credential id is free again once its owner is gone.
        try fixture.store.insertPasskey(makePasskey([1], userID: "u2"))
    }

    // MARK: Sign-up

    @Test("sign-up stores the user and the first passkey together", arguments: StoreKind.tested)
    func createUser(kind: StoreKind) throws {
        let fixture = try kind.make()
        let user = makeUser("u1", username: "alice")
        let passkey = makePasskey([1], userID: "u1")
        try fixture.store.createUser(user, firstPasskey: passkey)
        #expect(try fixture.store.user(id: "u1") == user)
        #expect(try fixture.store.passkeys(userID: "u1") == [passkey])
    }

    @Test(
        "a refused sign-up leaves no account and no passkey behind", arguments: StoreKind.tested)
    func createUserRollsBack(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.createUser(
            makeUser("u1", username: "alice"), firstPasskey: makePasskey([1], userID: "u1"))

        // The passkey is refused (credential id taken): the user must not stay.
        #expect(throws: StorageError(.conflict, "")) {
            try fixture.store.createUser(
                makeUser("u2", username: "bob"), firstPasskey: makePasskey([1], userID: "u2"))
        }
        #expect(try fixture.store.user(id: "u2") == nil)
        #expect(try fixture.store.user(username: "bob") == nil)

        // The user is refused (username taken): the passkey must not stay.
        #expect(throws: StorageError(.conflict, "")) {
            try fixture.store.createUser(
                makeUser("u3", username: "alice"), firstPasskey: makePasskey([3], userID: "u3"))
        }
        #expect(try fixture.store.passkey(credentialID: [3]) == nil)

        // A passkey for someone else is a caller's mistake.
        #expect(throws: StorageError(.invalidArgument, "")) {
            try fixture.store.createUser(
                makeUser("u4"), firstPasskey: makePasskey([4], userID: "u1"))
        }
        #expect(try fixture.store.user(id: "u4") == nil)
        #expect(try fixture.store.userCount() == 1)
        #expect(try fixture.store.passkeyCount(userID: "u1") == 1)
    }

    // MARK: User handles

    @Test("a user is found by their user handle", arguments: StoreKind.tested)
    func userByHandle(kind: StoreKind) throws {
        let fixture = try kind.make()
        let user = makeUser("u1", username: "alice")
        #expect(user.userHandle.count == 32, "a new user gets a 32-byte handle by default")
        try fixture.store.insertUser(user)
        try fixture.store.insertUser(makeUser("u2"))
        #expect(try fixture.store.user(handle: user.userHandle) == user)
        #expect(try fixture.store.user(handle: Array(repeating: 0, count: 32)) == nil)
        #expect(try fixture.store.deleteUser(id: "u1"))
        #expect(try fixture.store.user(handle: user.userHandle) == nil)
    }

    @Test("a user handle taken by another user is a conflict", arguments: StoreKind.tested)
    func duplicateHandle(kind: StoreKind) throws {
        let fixture = try kind.make()
        let handle: [UInt8] = Array(repeating: 42, count: 32)
        try fixture.store.insertUser(
            User(id: "u1", username: nil, displayName: "One", createdAt: epoch, userHandle: handle))
        #expect(throws: StorageError(.conflict, "")) {
            try fixture.store.insertUser(
                User(id: "u2", username: nil, displayName: "Two", createdAt: epoch, userHandle: handle))
        }
        #expect(try fixture.store.user(handle: handle)?.id == "u1")
    }

    @Test("an empty or over-long user handle is refused", arguments: StoreKind.tested)
    func invalidHandle(kind: StoreKind) throws {
        let fixture = try kind.make()
        for handle in [[], Array(repeating: UInt8(1), count: 65)] {
            #expect(throws: StorageError(.constraint, "")) {
                try fixture.store.insertUser(
                    User(id: "u1", username: nil, displayName: "", createdAt: epoch, userHandle: handle))
            }
        }
        #expect(try fixture.store.userCount() == 0)
    }
}
