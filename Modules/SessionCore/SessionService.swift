import CryptoCore
public import FoundationEssentials
public import Kernel

/// A session token handed to a client exactly once, with the stored session it opens.
public struct IssuedSession: Sendable {
    /// The bearer secret. Give it to the client; never log or store it.
    public let token: String
    /// The stored session (holding only the token's hash).
    public let session: Session
}

/// Opens, checks, rotates and ends sessions, over any `SessionRepository`.
public struct SessionService: Sendable {
    /// Every token starts with this, so secret scanners can recognise leaked tokens.
    public static var tokenPrefix: String { SessionKeys.prefix }

    /// Where sessions are kept.
    public let repository: any SessionRepository
    /// Lifetimes.
    public let policy: SessionPolicy
    private let clock: any WallClock
    private let random: any RandomSource

    /// Creates the service with its injected clock and randomness.
    public init(
        repository: any SessionRepository, policy: SessionPolicy, clock: any WallClock = SystemClock(),
        random: any RandomSource = SystemRandom()
    ) {
        self.repository = repository
        self.policy = policy
        self.clock = clock
        self.random = random
    }

    /// Opens a session for `userID` with a fresh 256-bit token, ending after the lifetime of
    /// `authMethod` (`SessionPolicy.lifetime(for:)`).
    public func issue(
        userID: String, clientKind: ClientKind, authMethod: AuthMethod, userAgent: String? = nil,
        ipAddress: String? = nil
    ) throws -> IssuedSession {
        let issued = try makeSession(
            userID: userID, clientKind: clientKind, authMethod: authMethod, userAgent: userAgent,
            ipAddress: ipAddress)
        try repository.insertSession(issued.session)
        return issued
    }

    /// Makes a session for `userID` with a fresh token without storing it, for a caller that
    /// stores it in the same transaction as the rest of a sign-in (see Storage's
    /// `PasskeyLoginStore`). Until that commit the token opens nothing.
    public func prepare(
        userID: String, clientKind: ClientKind, authMethod: AuthMethod, userAgent: String? = nil,
        ipAddress: String? = nil
    ) throws -> IssuedSession {
        try makeSession(
            userID: userID, clientKind: clientKind, authMethod: authMethod, userAgent: userAgent,
            ipAddress: ipAddress)
    }

    /// The live session `token` opens, recording activity when due.
    /// - Parameter touching: record the use for the idle timeout (at most one write a minute);
    ///   false only skips that write (session introspection, unless configured to count as use),
    ///   the session is judged the same.
    /// - Throws: `SessionError` with `.missing`, `.unknown`, `.revoked`, `.expired` or `.idleExpired`.
    public func authenticate(token: String, touching: Bool = true) throws -> Session {
        let hash = try Self.lookupHash(token: token)
        guard let stored = try repository.session(tokenHash: hash) else {
            throw SessionError(.unknown, "the session token is not known")
        }
        return try judge(stored, presentedHash: hash, touching: touching)
    }

    /// The stored form of a presented token, to look its session up by
    /// (`SessionRepository.session(tokenHash:)` or a store that reads the session with more): the
    /// token's creation time, then its SHA-256 (`SessionKeys`).
    /// - Throws: `SessionError(.missing)` when `token` cannot be one of ours, before anything
    ///   touches storage.
    public static func lookupHash(token: String) throws -> [UInt8] {
        guard let key = SessionKeys.lookupKey(token: token) else {
            throw SessionError(.missing, "no session token was presented")
        }
        return key
    }

    /// Judges `stored`, the session `presentedHash` (from `lookupHash`) was looked up by: the one
    /// place a presented token's session meets the policy, whichever read found it. A live one is
    /// returned, its use recorded when due (at most one write a minute).
    /// - Parameter touching: as in `authenticate(token:touching:)`.
    /// - Throws: `SessionError` with `.unknown` (the stored hash is not the presented one),
    ///   `.revoked`, `.expired` or `.idleExpired`.
    public func judge(_ stored: Session, presentedHash: [UInt8], touching: Bool) throws -> Session {
        guard ConstantTime.equals(stored.tokenHash, presentedHash) else {
            throw SessionError(.unknown, "the session token is not known")
        }
        var session = stored
        let now = clock.now()
        switch policy.evaluate(session, at: now) {
        case .revoked: throw SessionError(.revoked, "the session was revoked")
        case .expired: throw SessionError(.expired, "the session has expired")
        case .idleExpired: throw SessionError(.idleExpired, "the session expired after inactivity")
        case .active(let needsTouch, _):
            if needsTouch && touching {
                // A pool's worker must not wait for the commit: the request is answered from a
                // thread that may (once a minute per session is too rare to move whole routes).
                guard InlineExecutor.currentThreadMayBlock else { throw InlineExecutor.WouldBlock() }
                try repository.touchSession(id: session.id, at: now)
                session.lastSeenAt = now
            }
            return session
        }
    }

    /// Rotates `session` (just authenticated) when it is older than the rotation interval: the
    /// new token for the same user, kind, method and absolute end, or nil when none is due or
    /// another request rotated it first. Callers that must check more than the token (the
    /// account behind it) do so before rotating.
    public func rotateIfDue(_ session: Session) throws -> IssuedSession? {
        let now = clock.now()
        guard case .active(_, rotationDue: true) = policy.evaluate(session, at: now) else { return nil }
        // A pool's worker must not wait for the commit: the request is answered from a thread
        // that may (a day's rotation per session is too rare to move every signed-in route).
        guard InlineExecutor.currentThreadMayBlock else { throw InlineExecutor.WouldBlock() }
        let fresh = try successor(of: session)
        let retiring = now.addingTimeInterval(policy.rotationGrace)
        guard
            try repository.rotateSession(
                oldID: session.id, replacement: fresh.session, oldExpiresAt: retiring)
        else { return nil }
        return fresh
    }

    /// Replaces the session behind `token` with a new one for the same user; the old token stops
    /// working at once. The new session keeps the old absolute expiry: rotation never extends it.
    public func rotate(token: String) throws -> IssuedSession {
        let old = try authenticate(token: token)
        let now = clock.now()
        let fresh = try successor(of: old)
        try repository.rotateSession(oldID: old.id, replacement: fresh.session, at: now)
        return fresh
    }

    /// The user's live sessions, newest first (idle-expired ones are left out).
    public func list(userID: String) throws -> [Session] {
        let now = clock.now()
        return try repository.sessions(userID: userID, liveAt: now).filter {
            if case .active = policy.evaluate($0, at: now) { return true }
            return false
        }
    }

    /// Deletes sessions that ended more than `retention` ago.
    @discardableResult
    public func purge(retention: TimeInterval = 86_400) throws -> Int {
        try repository.purgeSessions(endedBefore: clock.now().addingTimeInterval(-retention))
    }

    /// A new token for `session`'s user, kind and method, ending when `session` ends and proved
    /// when `session` was: rotation never extends a session or refreshes its proof.
    private func successor(of session: Session) throws -> IssuedSession {
        // A new token is no new proof of presence: the successor keeps the old one's.
        try makeSession(
            userID: session.userID, clientKind: session.clientKind, authMethod: session.authMethod,
            userAgent: session.userAgent, ipAddress: session.ipAddress, expiresAt: session.expiresAt,
            authenticatedAt: session.authenticatedAt)
    }

    private func makeSession(
        userID: String, clientKind: ClientKind, authMethod: AuthMethod, userAgent: String?,
        ipAddress: String?, expiresAt: Date? = nil, authenticatedAt: Date? = nil
    ) throws -> IssuedSession {
        let now = clock.now()
        let (id, token, storedForm) = try SessionKeys.make(at: now, random: random)
        let session = Session(
            id: id, userID: userID, tokenHash: storedForm,
            clientKind: clientKind, authMethod: authMethod, createdAt: now, lastSeenAt: now,
            expiresAt: expiresAt ?? now.addingTimeInterval(policy.lifetime(for: authMethod).absolute),
            userAgent: userAgent.map { String($0.prefix(256)) }, ipAddress: ipAddress,
            authenticatedAt: authenticatedAt)
        return IssuedSession(token: token, session: session)
    }
}
