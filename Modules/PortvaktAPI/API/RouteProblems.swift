import AuthOrchestrator
import HTTPEngine
import Kernel
import PasskeyCore
import SessionCore

/// The problems a route's contract names, built from the error values themselves so the API
/// document says the status and code the mapping (ErrorMapping.swift) actually answers.
enum Problems {
    /// The use-case failures with these codes.
    static func auth(_ codes: AuthError.Code...) -> [RouteContract.Problem] {
        codes.map { RouteContract.Problem(AuthError($0, "")) }
    }

    /// Every reason a presented session token cannot be used (401), a disabled account (403)
    /// and, for a change carried by the cookie, a cross-site origin (403).
    static func signedIn(_ method: HTTPMethod) -> [RouteContract.Problem] {
        var problems = SessionError.Code.allCases.filter { $0 != .notFound }.map {
            RouteContract.Problem(SessionError($0, ""))
        }
        problems += auth(.accountDisabled)
        if method != .GET { problems.append(RouteContract.Problem(SessionTransport.crossSiteRefused)) }
        return problems
    }

    /// A WebAuthn response that fails verification: each step's code (400).
    static let passkeyVerification = PasskeyError.Code.allCases.map {
        RouteContract.Problem(PasskeyError($0, ""))
    }
    .filter { $0.status == 400 }

    /// The admin listener's token check: no working token (401), and a token whose scope does
    /// not reach the route (403). Every token may introspect, so that route has no 403.
    static func admin(requires needed: AdminScope) -> [RouteContract.Problem] {
        needed == .introspect ? auth(.adminUnauthorized) : auth(.adminUnauthorized, .adminForbidden)
    }

    /// A session id that is not the caller's.
    static let sessionNotFound = [RouteContract.Problem(SessionError(.notFound, ""))]
}
