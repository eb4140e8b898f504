public import FoundationEssentials
public import Kernel
public import SessionCore

/// What introspection tells an app's server about an active session token.
public struct Introspection: Sendable {
    /// The session the token opens.
    public let session: Session
    /// Its account (existing and not disabled).
    public let user: User
    /// Until when a BankID signature made in the session steps it up; nil when none is in force.
    public let steppedUpUntil: Date?
}

/// Session introspection for the app's own servers (the shape of RFC 7662): is this token one
/// a signed-in user may use right now, and whose is it?
///
/// The answer is the same rule every signed-in request passes (`AccountSessionService.signedIn`),
/// so introspection can never call active a session the public API would refuse. It never
/// rotates (the new token could not reach the holder), and counts as use of the session for
/// the idle timeout only when the deployment says so.
public struct SessionIntrospection: Sendable {
    let access: AccountSessionService
    let touchesSession: Bool

    /// Creates the use case.
    /// - Parameter touchesSession: whether an introspection counts as use of the session for the
    ///   idle timeout (`introspection.touchesSession`; off by default, so an app's server asking
    ///   does not keep an abandoned session alive).
    public init(access: AccountSessionService, touchesSession: Bool) {
        self.access = access
        self.touchesSession = touchesSession
    }

    /// The active session `token` opens, or nil for anything else: no token, a malformed, unknown,
    /// revoked, expired or idle-expired one, or one whose account is gone or disabled. Which of
    /// these it was is deliberately not told, so the caller learns nothing about a token it
    /// should not hold.
    /// - Throws: `StorageError` when the database cannot answer (a 503, never "inactive": an
    ///   outage must not read as a signed-out user, nor the reverse).
    public func introspect(token: String) throws -> Introspection? {
        let signedIn: SignedIn
        do {
            signedIn = try access.signedIn(token: token, rotating: false, touching: touchesSession)
        } catch is SessionError {
            return nil
        } catch let error as AuthError where error.code == .accountDisabled {
            return nil
        }
        return Introspection(
            session: signedIn.session, user: signedIn.user,
            steppedUpUntil: try access.steppedUpUntil(signedIn))
    }
}
