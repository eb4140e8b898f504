import Foundation
import Kernel
import Storage
import TestSupport
import Testing

/// The review account's listing, identical on SQLite (a real file) and PostgreSQL.
@Suite("Review account store")
struct ReviewAccountStoreTests {
    @Test(
        "ensureReviewAccount creates and lists the account once, refuses an unlisted owner of the username, and goes with its user",
        arguments: StoreKind.tested)
    func listing(kind: StoreKind) throws {
        let fixture = try kind.make()
        let store = fixture.store
        let created = try store.ensureReviewAccount(makeUser("r1", username: "reviewer"))
        #expect(created.id == "r1")
        #expect(try store.isReviewAccount(userID: "r1"))
        // Again (the next start): the same account, nothing new.
        #expect(try store.ensureReviewAccount(makeUser("r2", username: "reviewer")).id == "r1")
        #expect(try store.user(id: "r2") == nil)

        // A real account with the username: refused, and nothing is written.
        try store.insertUser(makeUser("u1", username: "ada"))
        #expect(throws: StorageError.self) { try store.ensureReviewAccount(makeUser("r3", username: "ada")) }
        #expect(try !store.isReviewAccount(userID: "u1"))
        #expect(try store.user(id: "r3") == nil)

        // Deleting the user deletes the listing with it.
        #expect(try store.deleteUser(id: "r1"))
        #expect(try !store.isReviewAccount(userID: "r1"))
    }
}
