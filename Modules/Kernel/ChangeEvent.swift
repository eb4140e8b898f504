public import FoundationEssentials

/// The kind of a change an app's servers hear of by webhook, as a stable dotted name
/// (Docs/webhooks.md).
///
/// An open enumeration, as `AuditAction` is: the types this release emits are the static members,
/// so a misspelt one does not compile, while a type a newer release wrote to the shared outbox
/// still reads back under its own name during a rolling upgrade.
public struct ChangeEventType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The stable dotted name, as the event's `type` and `webhooks.endpoints[].events` spell it.
    public let rawValue: String

    /// A type by its name; configuration and Storage reading the outbox back need this.
    public init(rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    /// An account was created (passkey or BankID sign-up, or an administrator).
    public static let userCreated = Self(rawValue: "user.created")
    /// An account was disabled; its sessions were revoked with it.
    public static let userDisabled = Self(rawValue: "user.disabled")
    /// A disabled account was enabled again.
    public static let userEnabled = Self(rawValue: "user.enabled")
    /// An account was deleted, with its passkeys and sessions.
    public static let userDeleted = Self(rawValue: "user.deleted")
    /// A passkey was registered to an account.
    public static let passkeyAdded = Self(rawValue: "passkey.added")
    /// A passkey was removed from an account.
    public static let passkeyRemoved = Self(rawValue: "passkey.removed")
    /// A session ended before its time: logout, revocation, a disabled account, a recovery.
    public static let sessionRevoked = Self(rawValue: "session.revoked")
    /// A BankID identity was linked to an account.
    public static let bankIDLinked = Self(rawValue: "bankid.linked")
    /// An account was recovered through BankID and a new passkey.
    public static let recoveryCompleted = Self(rawValue: "recovery.completed")

    /// Every type this release emits, in the order the docs list them.
    public static let all: [Self] = [
        .userCreated, .userDisabled, .userEnabled, .userDeleted, .passkeyAdded, .passkeyRemoved,
        .sessionRevoked, .bankIDLinked, .recoveryCompleted,
    ]
}

/// One change to tell the app's servers about: its type, when it happened, and its data, which
/// holds ids and small words only, never a personal number, a token, a name or a digest.
///
/// Build one with the static constructor of its type, so each type always carries the fields
/// Docs/webhooks.md lists, in that order.
public struct ChangeEvent: Sendable, Equatable {
    /// One value of the event's data.
    public enum Value: Sendable, Equatable {
        /// A JSON string.
        case string(String)
        /// A JSON integer.
        case integer(Int64)
        /// Bytes, written as an unpadded base64url JSON string (credential ids).
        case bytes([UInt8])
    }

    /// What changed.
    public var type: ChangeEventType
    /// When it changed (the change's own time, not the delivery's).
    public var at: Date
    /// The data members in the order they are written.
    public var data: [(name: String, value: Value)]

    /// An event with explicit data; prefer the typed constructors.
    public init(type: ChangeEventType, at: Date, data: [(name: String, value: Value)]) {
        self.type = type
        self.at = at
        self.data = data
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.type == rhs.type && lhs.at == rhs.at && lhs.data.count == rhs.data.count
            && zip(lhs.data, rhs.data).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    /// The data value named `name`, if the event has it.
    public subscript(name: String) -> Value? {
        data.first { $0.name == name }?.value
    }

    /// How an account came to be.
    public enum CreationMethod: String, Sendable, CaseIterable {
        case passkey, bankid, admin
    }

    /// How a passkey was added.
    public enum PasskeyOrigin: String, Sendable, CaseIterable {
        /// The account's first passkey, at a passkey sign-up.
        case signup
        /// A signed-in user added one.
        case added
        /// Through a one-time enrollment link.
        case enrollment
        /// Through a BankID recovery's enrollment token.
        case recovery
    }

    /// Who removed a passkey.
    public enum PasskeyRemover: String, Sendable, CaseIterable {
        case user, admin, recovery
    }

    /// Why a session ended early.
    public enum RevocationReason: String, Sendable, CaseIterable {
        /// The holder logged out.
        case logout
        /// The user ended one of their own sessions.
        case user
        /// An administrator ended it.
        case admin
        /// The account was disabled.
        case userDisabled = "user_disabled"
        /// A recovery ended the account's other sessions.
        case recovery
        /// A new sign-in on the same client replaced it.
        case replaced
    }

    /// `user.created`: `userId`, `method`.
    public static func userCreated(userID: String, method: CreationMethod, at: Date) -> Self {
        Self(
            type: .userCreated, at: at,
            data: [("userId", .string(userID)), ("method", .string(method.rawValue))])
    }

    /// `user.disabled`: `userId`, `sessionsRevoked` (how many sessions the disabling ended).
    public static func userDisabled(userID: String, sessionsRevoked: Int, at: Date) -> Self {
        Self(
            type: .userDisabled, at: at,
            data: [("userId", .string(userID)), ("sessionsRevoked", .integer(Int64(sessionsRevoked)))])
    }

    /// `user.enabled`: `userId`.
    public static func userEnabled(userID: String, at: Date) -> Self {
        Self(type: .userEnabled, at: at, data: [("userId", .string(userID))])
    }

    /// `user.deleted`: `userId`. The account's passkeys and sessions go with it, with no events of
    /// their own.
    public static func userDeleted(userID: String, at: Date) -> Self {
        Self(type: .userDeleted, at: at, data: [("userId", .string(userID))])
    }

    /// `passkey.added`: `userId`, `credentialId` (base64url), `via`.
    public static func passkeyAdded(userID: String, credentialID: [UInt8], via: PasskeyOrigin, at: Date)
        -> Self
    {
        Self(
            type: .passkeyAdded, at: at,
            data: [
                ("userId", .string(userID)), ("credentialId", .bytes(credentialID)),
                ("via", .string(via.rawValue)),
            ])
    }

    /// `passkey.removed`: `userId`, `credentialId` (base64url), `by`.
    public static func passkeyRemoved(userID: String, credentialID: [UInt8], by: PasskeyRemover, at: Date)
        -> Self
    {
        Self(
            type: .passkeyRemoved, at: at,
            data: [
                ("userId", .string(userID)), ("credentialId", .bytes(credentialID)),
                ("by", .string(by.rawValue)),
            ])
    }

    /// `session.revoked`: `userId`, `sessionId`, `reason`.
    public static func sessionRevoked(userID: String, sessionID: String, reason: RevocationReason, at: Date)
        -> Self
    {
        Self(
            type: .sessionRevoked, at: at,
            data: [
                ("userId", .string(userID)), ("sessionId", .string(sessionID)),
                ("reason", .string(reason.rawValue)),
            ])
    }

    /// `bankid.linked`: `userId` (never the identity itself).
    public static func bankIDLinked(userID: String, at: Date) -> Self {
        Self(type: .bankIDLinked, at: at, data: [("userId", .string(userID))])
    }

    /// `recovery.completed`: `userId`, `credentialId` (the new passkey), `sessionsRevoked`,
    /// `passkeysRevoked`.
    public static func recoveryCompleted(
        userID: String, credentialID: [UInt8], sessionsRevoked: Int, passkeysRevoked: Int, at: Date
    ) -> Self {
        Self(
            type: .recoveryCompleted, at: at,
            data: [
                ("userId", .string(userID)), ("credentialId", .bytes(credentialID)),
                ("sessionsRevoked", .integer(Int64(sessionsRevoked))),
                ("passkeysRevoked", .integer(Int64(passkeysRevoked))),
            ])
    }
}
