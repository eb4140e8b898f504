public import FoundationEssentials
public import Kernel

/// How long a session may live: its absolute lifetime and its idle timeout.
public struct SessionLifetime: Sendable, Equatable {
    /// The longest a session lives, however active.
    public var absolute: TimeInterval
    /// The longest a session may go unused.
    public var idle: TimeInterval

    /// Creates a lifetime.
    public init(absolute: TimeInterval, idle: TimeInterval) {
        self.absolute = absolute
        self.idle = idle
    }
}

/// Lifetimes of sessions. A pure value: `evaluate` decides a session's status without I/O.
///
/// Sessions of some sign-in methods may have their own lifetime (`methodLifetimes`; BankID
/// sessions, for a deployment that keeps them shorter than passkey ones). The method is stored
/// on every session (`Session.authMethod`), so the same row decides both ends: the absolute end
/// is written when the session is issued, and the idle timeout is looked up by the method each
/// time the session is judged. No column holds a lifetime, and a session cannot be issued under
/// one lifetime and judged under another.
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
    /// Lifetimes that replace `absoluteLifetime` and `idleTimeout` for sessions opened by a
    /// method (default none: every method has the general lifetime).
    public var methodLifetimes: [AuthMethod: SessionLifetime]

    /// Creates a policy; the defaults suit a consumer app.
    public init(
        absoluteLifetime: TimeInterval = 30 * 86_400, idleTimeout: TimeInterval = 7 * 86_400,
        rotationInterval: TimeInterval = 86_400, rotationGrace: TimeInterval = 60,
        touchInterval: TimeInterval = 60, methodLifetimes: [AuthMethod: SessionLifetime] = [:]
    ) {
        self.absoluteLifetime = absoluteLifetime
        self.idleTimeout = idleTimeout
        self.rotationInterval = rotationInterval
        self.rotationGrace = rotationGrace
        self.touchInterval = touchInterval
        self.methodLifetimes = methodLifetimes
    }

    /// The lifetime of sessions opened by `method`: its own, or the general one.
    public func lifetime(for method: AuthMethod) -> SessionLifetime {
        methodLifetimes[method] ?? SessionLifetime(absolute: absoluteLifetime, idle: idleTimeout)
    }

    /// The status of `session` at `now`. Revocation wins over expiry; both boundaries are exclusive
    /// (a session whose end equals `now` is over). The idle timeout is that of the session's
    /// method.
    public func evaluate(_ session: Session, at now: Date) -> SessionStatus {
        if session.revokedAt != nil { return .revoked }
        if now >= session.expiresAt { return .expired }
        if now.timeIntervalSince(session.lastSeenAt) >= lifetime(for: session.authMethod).idle {
            return .idleExpired
        }
        let needsTouch = now.timeIntervalSince(session.lastSeenAt) >= touchInterval
        // A session within its grace of the end has nothing to rotate to (rotation never extends
        // the absolute end), and one already rotated out has had its end brought that near.
        let rotationDue =
            now.timeIntervalSince(session.createdAt) >= rotationInterval
            && session.expiresAt.timeIntervalSince(now) > rotationGrace
        return .active(needsTouch: needsTouch, rotationDue: rotationDue)
    }
}
