public import Foundation

/// A person with an account. Credentials and identities hang off the id.
public struct User: Sendable, Equatable {
    /// Opaque, stable identifier (never reused).
    public var id: String
    /// The sign-in name for passkey-first accounts; nil for accounts that have none (BankID-first).
    /// Compared exactly: callers normalise (case, Unicode form) before storing and looking up.
    public var username: String?
    /// The name shown in the UI and in passkey prompts.
    public var displayName: String
    /// When the account was created; `updateUser` never changes it.
    public var createdAt: Date
    /// When an administrator disabled the account, if one did.
    public var disabledAt: Date?
    /// The WebAuthn user handle (`user.id` in creation options, `userHandle` in assertions):
    /// random, unique, and free of personal data, so it is not the `id`. Fixed at creation:
    /// `updateUser` never changes it.
    public var userHandle: [UInt8]

    /// Creates a user value; a new user gets a fresh random user handle unless one is given.
    public init(
        id: String, username: String?, displayName: String, createdAt: Date, disabledAt: Date? = nil,
        userHandle: [UInt8] = User.randomHandle()
    ) {
        self.id = id
        self.username = username
        self.displayName = displayName
        self.createdAt = createdAt
        self.disabledAt = disabledAt
        self.userHandle = userHandle
    }

    /// The length of a generated user handle: 32 bytes, within WebAuthn's 64-byte limit.
    public static let handleByteCount = 32

    /// 32 bytes from the system CSPRNG.
    ///
    /// `SystemRandomNumberGenerator` (getrandom(2) on Linux) rather than CryptoCore's
    /// `SystemRandom`, because it cannot fail and so can serve as a default argument. A caller
    /// that injects randomness passes `userHandle:` explicitly.
    public static func randomHandle() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<handleByteCount).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}

/// One entry of the audit trail: who did what to whom, and when.
public struct AuditEvent: Sendable, Equatable {
    /// Assigned by the store on append (increasing, never reused); nil before that.
    public var id: Int64?
    /// When it happened.
    public var at: Date
    /// What happened, as a stable dotted name (for example "session.revoked").
    public var action: String
    /// Who did it: a user id, "admin", or "system".
    public var actor: String
    /// The user the event concerns, if any. Kept after the user is deleted.
    public var userID: String?
    /// The request that caused it, to correlate with logs.
    public var requestID: String?
    /// The client address, when the event came from a request.
    public var ipAddress: String?
    /// Extra facts. Never secrets or personal numbers.
    public var details: [String: String]

    /// Creates an event; leave `id` nil when appending.
    public init(
        id: Int64? = nil, at: Date, action: String, actor: String, userID: String? = nil,
        requestID: String? = nil, ipAddress: String? = nil, details: [String: String] = [:]
    ) {
        self.id = id
        self.at = at
        self.action = action
        self.actor = actor
        self.userID = userID
        self.requestID = requestID
        self.ipAddress = ipAddress
        self.details = details
    }
}

/// Accounts. Every method is atomic on its own; dates are kept to the millisecond.
public protocol UserStore: Sendable {
    /// Stores a new user.
    /// - Throws: `StorageError(.conflict)` when the id, the username or the user handle is taken.
    func insertUser(_ user: User) throws
    /// The user with this id; nil when none.
    func user(id: String) throws -> User?
    /// The user with exactly this username; nil when none.
    func user(username: String) throws -> User?
    /// The user with this WebAuthn user handle (from a discoverable login's assertion); nil when none.
    func user(handle: [UInt8]) throws -> User?
    /// Replaces the username, display name and disabled time of an existing user (never the
    /// creation time or the user handle).
    /// - Throws: `StorageError(.notFound)` when no user has the id, `.conflict` when the username
    ///   belongs to someone else.
    func updateUser(_ user: User) throws
    /// Deletes the user and, with it, every session and passkey of theirs; false when there was no
    /// such user.
    func deleteUser(id: String) throws -> Bool
    /// Up to `limit` users with ids after `afterID` (from the start when nil), ordered by id's
    /// bytes: pass the last id of one page to get the next.
    func users(afterID: String?, limit: Int) throws -> [User]
    /// How many users there are.
    func userCount() throws -> Int
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
