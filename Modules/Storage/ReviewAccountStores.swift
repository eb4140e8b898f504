import FoundationEssentials
public import Kernel
import Synchronization

/// The sandboxed account an app-store reviewer signs in to. Only accounts this store lists can be
/// reached by the reviewer login: a username in the configuration alone never is enough, so a
/// configuration naming a real person's username cannot open their account.
public protocol ReviewAccountStore: Sendable {
    /// The review account with `candidate`'s username: the existing one when that username is a
    /// review account, else `candidate` created and listed as one, in one transaction.
    /// - Throws: `StorageError(.conflict)` when an account that is not a review account has the
    ///   username; nothing is written then.
    func ensureReviewAccount(_ candidate: User) throws -> User
    /// Whether `userID` is a review account.
    func isReviewAccount(userID: String) throws -> Bool
}

extension SQLStore: ReviewAccountStore {
    public func ensureReviewAccount(_ candidate: User) throws -> User {
        guard let username = candidate.username else {
            throw StorageError(.invalidArgument, "a review account needs a username")
        }
        return try engine.write { connection in
            if let existing = try connection.queryFirst(
                "SELECT \(StoreSQL.userColumns) FROM users WHERE username = ?1", [username], Self.user)
            {
                let listed = try connection.queryFirst(
                    "SELECT 1 FROM review_accounts WHERE user_id = ?1", [existing.id]
                ) { _ in true }
                guard listed == true else {
                    throw StorageError(
                        .conflict, "the username belongs to an account that is not the review account")
                }
                return existing
            }
            try Self.insert(candidate, on: connection)
            try connection.execute(
                "INSERT INTO review_accounts (user_id, created_at) VALUES (?1, ?2)",
                [candidate.id, candidate.createdAt])
            return candidate
        }
    }

    public func isReviewAccount(userID: String) throws -> Bool {
        try engine.read { connection in
            try connection.queryFirst("SELECT 1 FROM review_accounts WHERE user_id = ?1", [userID]) { _ in
                true
            }
                ?? false
        }
    }
}
