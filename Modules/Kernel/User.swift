public import FoundationEssentials

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

    /// Creates a user value. The handle is always given: a new account's use case draws
    /// `handleByteCount` bytes from its injected randomness, a stored one is read back.
    public init(
        id: String, username: String?, displayName: String, createdAt: Date, disabledAt: Date? = nil,
        userHandle: [UInt8]
    ) {
        self.id = id
        self.username = username
        self.displayName = displayName
        self.createdAt = createdAt
        self.disabledAt = disabledAt
        self.userHandle = userHandle
    }

    /// Whether an administrator has disabled the account: then no method lets it in.
    public var isDisabled: Bool { disabledAt != nil }

    /// The length of a generated user handle: 32 bytes, within WebAuthn's 64-byte limit.
    public static let handleByteCount = 32
}
