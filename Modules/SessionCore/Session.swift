public import FoundationEssentials
public import Kernel

/// How a session's token travels: a cookie for browsers, a bearer token for native apps.
public enum ClientKind: String, Sendable, Codable, CaseIterable {
    case web
    case native
}

/// A server-side session. The token itself is never stored: only its start time and SHA-256 hash.
public struct Session: Sendable, Equatable {
    /// The public identifier, safe to show and to use in URLs (not a credential); it begins with
    /// the creation time, so ids sort in the order sessions began (`SessionKeys`).
    public let id: String
    /// The user the session belongs to.
    public let userID: String
    /// The token's stored form (`SessionService.lookupHash(token:)`): the token's creation time
    /// (6 bytes), then the SHA-256 of its UTF-8 bytes; the SHA-256 alone for a token issued before
    /// tokens carried their time.
    public let tokenHash: [UInt8]
    /// Whether a browser cookie or a bearer token carries the session.
    public let clientKind: ClientKind
    /// How the user signed in (for example "passkey" or "bankid"), for the sessions list and audit.
    public let authMethod: AuthMethod
    /// When the session began.
    public let createdAt: Date
    /// When the session was last used, recorded at most once per touch interval.
    public var lastSeenAt: Date
    /// The absolute end of the session, whatever the activity; brought forward to the end of the
    /// grace when the session is rotated out.
    public var expiresAt: Date
    /// When the session was revoked, if it was.
    public var revokedAt: Date?
    /// The User-Agent that created the session, trimmed, for the sessions list.
    public let userAgent: String?
    /// The client IP that created the session, for the sessions list.
    public let ipAddress: String?
    /// When the session's user last proved presence in it: the sign-in that opened it, then each
    /// re-authentication (a passkey ceremony or a BankID signature). Acts that cannot be undone
    /// ask for a recent one (AuthOrchestrator's `RecentAuthentication`); a rotation keeps it.
    public var authenticatedAt: Date

    /// Creates a session value; `SessionService.issue` is the usual way to get one.
    /// - Parameter authenticatedAt: the last proof of presence; `createdAt` when nil.
    public init(
        id: String, userID: String, tokenHash: [UInt8], clientKind: ClientKind, authMethod: AuthMethod,
        createdAt: Date, lastSeenAt: Date, expiresAt: Date, revokedAt: Date? = nil,
        userAgent: String? = nil, ipAddress: String? = nil, authenticatedAt: Date? = nil
    ) {
        self.id = id
        self.userID = userID
        self.tokenHash = tokenHash
        self.clientKind = clientKind
        self.authMethod = authMethod
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
        self.userAgent = userAgent
        self.ipAddress = ipAddress
        // A session is opened by a sign-in: unless told otherwise, that is its proof of presence.
        self.authenticatedAt = authenticatedAt ?? createdAt
    }
}

/// What a session's holder may do, judged by the policy at one instant.
public enum SessionStatus: Sendable, Equatable {
    /// Usable. `needsTouch` asks the caller to record activity; `rotationDue` suggests a new token.
    case active(needsTouch: Bool, rotationDue: Bool)
    /// Revoked by the user, an administrator or a policy.
    case revoked
    /// Past its absolute lifetime.
    case expired
    /// Unused for longer than the idle timeout.
    case idleExpired
}
