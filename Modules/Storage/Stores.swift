import FoundationEssentials
public import Kernel

/// Accounts. Every method is atomic on its own; dates are kept to the millisecond.
public protocol UserStore: Sendable {
    /// Stores a new user, and `record` with it.
    /// - Throws: `StorageError(.conflict)` when the id, the username or the user handle is taken;
    ///   nothing is written then.
    func insertUser(_ user: User, record: ChangeRecord) throws
    /// The user with this id; nil when none.
    func user(id: String) throws -> User?
    /// The user with exactly this username; nil when none.
    func user(username: String) throws -> User?
    /// The user with this WebAuthn user handle (from a discoverable login's assertion); nil when none.
    func user(handle: [UInt8]) throws -> User?
    /// Replaces the username, display name and disabled time of an existing user (never the
    /// creation time or the user handle), and writes `record` with it.
    /// - Throws: `StorageError(.notFound)` when no user has the id, `.conflict` when the username
    ///   belongs to someone else; nothing is written then.
    func updateUser(_ user: User, record: ChangeRecord) throws
    /// Deletes the user and, with it, every row that names them (sessions, passkeys, enrollment
    /// tokens, the BankID identity and what hangs on it, their challenges) except the audit
    /// trail, and writes `record` with it; false when there was no such user (and nothing is
    /// written).
    func deleteUser(id: String, record: ChangeRecord) throws -> Bool
    /// Up to `limit` users with ids after `afterID` (from the start when nil), ordered by id's
    /// bytes: pass the last id of one page to get the next.
    func users(afterID: String?, limit: Int) throws -> [User]
    /// How many users there are.
    func userCount() throws -> Int
}

extension UserStore {
    /// Stores a new user, recording nothing (the command line's and the tests' accounts).
    public func insertUser(_ user: User) throws { try insertUser(user, record: .none) }

    /// Replaces a user's names and disabled time, recording nothing.
    public func updateUser(_ user: User) throws { try updateUser(user, record: .none) }

    /// Deletes a user, recording nothing.
    public func deleteUser(id: String) throws -> Bool { try deleteUser(id: id, record: .none) }
}

/// The append-only audit trail.
public protocol AuditStore: Sendable {
    /// Appends `event` (its `id` is ignored) and returns the id it was given.
    func appendAudit(_ event: AuditEvent) throws -> Int64
    /// Up to `limit` events, newest first: only `userID`'s when given, and only those with ids
    /// below `beforeID` when given (pass the last id of one page to get the next).
    func auditEvents(userID: String?, beforeID: Int64?, limit: Int) throws -> [AuditEvent]
}

/// Small server-wide values (for example the admin token's hash), as bytes under string keys.
public protocol SettingsStore: Sendable {
    /// The value under `key`; nil when none.
    func setting(_ key: String) throws -> [UInt8]?
    /// Stores `value` under `key`, replacing any value there.
    func setSetting(_ key: String, value: [UInt8]) throws
    /// Stores `value` only when `key` has no value yet; true when it stored it. Atomic, so two
    /// instances starting at once cannot both create, say, the first admin token.
    func insertSettingIfAbsent(_ key: String, value: [UInt8]) throws -> Bool
}
