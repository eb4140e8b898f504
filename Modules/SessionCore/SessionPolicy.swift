public import Foundation

/// Lifetimes of sessions. A pure value: `evaluate` decides a session's status without I/O.
public struct SessionPolicy: Sendable, Equatable {
    /// The longest a session lives, however active (default 30 days).
    public var absoluteLifetime: TimeInterval
    /// The longest a session may go unused (default 7 days).
    public var idleTimeout: TimeInterval
    /// After this age a presented token is exchanged for a new one (default 1 day).
    public var rotationInterval: TimeInterval
    /// How long a rotated-out token keeps working, so requests already in flight with it (a
    /// page's parallel calls, a retry) still succeed (default 60 s).
    public var rotationGrace: TimeInterval
    /// Activity is written back at most this often, to spare the database (default 60 s).
    public var touchInterval: TimeInterval

    /// Creates a policy; the defaults suit a consumer app.
    public init(
        absoluteLifetime: TimeInterval = 30 * 86_400, idleTimeout: TimeInterval = 7 * 86_400,
        rotationInterval: TimeInterval = 86_400, rotationGrace: TimeInterval = 60,
        touchInterval: TimeInterval = 60
    ) {
        self.absoluteLifetime = absoluteLifetime
        self.idleTimeout = idleTimeout
        self.rotationInterval = rotationInterval
        self.rotationGrace = rotationGrace
        self.touchInterval = touchInterval
    }

    /// The status of `session` at `now`. Revocation wins over expiry; both boundaries are exclusive
    /// (a session whose end equals `now` is over).
    public func evaluate(_ session: Session, at now: Date) -> SessionStatus {
        if session.revokedAt != nil { return .revoked }
        if now >= session.expiresAt { return .expired }
        if now.timeIntervalSince(session.lastSeenAt) >= idleTimeout { return .idleExpired }
        let needsTouch = now.timeIntervalSince(session.lastSeenAt) >= touchInterval
        // A session within its grace of the end has nothing to rotate to (rotation never extends
        // the absolute end), and one already rotated out has had its end brought that near.
        let rotationDue =
            now.timeIntervalSince(session.createdAt) >= rotationInterval
            && session.expiresAt.timeIntervalSince(now) > rotationGrace
        return .active(needsTouch: needsTouch, rotationDue: rotationDue)
    }
}
