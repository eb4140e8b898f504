public import Foundation
public import HTTPEngine
public import Kernel
public import SessionCore
import Storage

/// How the public API finds and sets session tokens: `Authorization: Bearer` for native apps,
/// an HttpOnly cookie for browsers.
public struct SessionTransport: Sendable {
    /// The cookie's name ("__Host-" prefixed when Secure, so no subdomain can set it).
    public let cookieName: String
    /// Whether the cookie is marked Secure (false only for http://localhost development).
    public let cookieSecure: Bool
    /// Origins allowed to make cookie-authenticated state-changing requests: the public URL's
    /// origin and the configured CORS origins.
    public let trustedOrigins: Set<String>

    /// Creates the transport settings.
    public init(cookieName: String, cookieSecure: Bool, trustedOrigins: Set<String>) {
        self.cookieName = cookieName
        self.cookieSecure = cookieSecure
        self.trustedOrigins = trustedOrigins
    }

    /// Where a request's token came from; cookie-borne tokens need cross-site protection.
    enum Source: Equatable { case bearer, cookie }

    /// The token a request presents, if any. A bearer header wins over a cookie.
    func token(in request: HTTPRequest) -> (token: String, source: Source)? {
        if request.headers["authorization"] != nil {
            return request.bearerToken.map { ($0, .bearer) }
        }
        if let cookie = request.cookie(cookieName), !cookie.isEmpty { return (cookie, .cookie) }
        return nil
    }

    /// Refuses a cookie-authenticated, state-changing request that a browser sent from another
    /// site. SameSite=Lax already keeps the cookie off most cross-site requests; this closes the
    /// rest (same-site subdomains, old browsers) and fails closed when no origin is given.
    func checkCrossSite(_ request: HTTPRequest) throws(HTTPError) {
        switch request.method {
        case .GET, .HEAD, .OPTIONS: return
        default: break
        }
        if let origin = request.headers["origin"] {
            if trustedOrigins.contains(origin) { return }
        } else if request.headers["sec-fetch-site"] == "same-origin" {
            return
        }
        throw HTTPError(
            status: 403, code: "request.cross_site_refused",
            title: "Cross-site request refused",
            detail: "A cookie-authenticated request that changes state must come from a trusted origin.")
    }

    /// The Set-Cookie value that hands `token` to a browser for `lifetime` seconds.
    public func setCookie(token: String, lifetime: TimeInterval) -> String {
        var cookie = "\(cookieName)=\(token); Path=/; Max-Age=\(Int(lifetime)); HttpOnly; SameSite=Lax"
        if cookieSecure { cookie += "; Secure" }
        return cookie
    }

    /// The Set-Cookie value that hands a just-issued session to a browser for its whole life.
    public func setCookie(for issued: IssuedSession) -> String {
        setCookie(
            token: issued.token,
            lifetime: issued.session.expiresAt.timeIntervalSince(issued.session.createdAt))
    }

    /// The Set-Cookie value that removes the session cookie.
    public var clearCookie: String {
        var cookie = "\(cookieName)=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax"
        if cookieSecure { cookie += "; Secure" }
        return cookie
    }
}

extension HTTPRequest {
    /// The token of an `Authorization: Bearer` header; nil when absent or another scheme.
    /// The scheme is case-insensitive (RFC 9110 §11.1); the token is not.
    var bearerToken: String? {
        guard let authorization = headers["authorization"] else { return nil }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingOWS()
        return token.isEmpty ? nil : token
    }
}

/// A request's authenticated session together with the token that opened it.
public struct AuthenticatedSession: Sendable {
    /// The live session.
    public let session: Session
    /// Whether the token came in a cookie (web) or a bearer header (native).
    let source: SessionTransport.Source
}

extension SessionService {
    /// The live session behind a request, or a 401 problem.
    func authenticate(_ request: HTTPRequest, transport: SessionTransport) throws -> AuthenticatedSession {
        guard let (token, source) = transport.token(in: request) else {
            throw SessionError(.missing, "no session token was presented")
        }
        let session = try authenticate(token: token)
        if source == .cookie { try transport.checkCrossSite(request) }
        return AuthenticatedSession(session: session, source: source)
    }
}

extension SessionService {
    /// The live session behind a request and its user, refusing disabled or deleted accounts.
    func currentUser(_ request: HTTPRequest, transport: SessionTransport, users: any UserStore) throws
        -> (AuthenticatedSession, User)
    {
        let auth = try authenticate(request, transport: transport)
        guard let user = try users.user(id: auth.session.userID) else {
            throw SessionError(.unknown, "the session's account no longer exists")
        }
        guard user.disabledAt == nil else {
            throw HTTPError(
                status: 403, code: "account.disabled", title: "Account disabled",
                detail: "This account has been disabled by an administrator.")
        }
        return (auth, user)
    }
}
