public import AuthOrchestrator
import CryptoCore
public import FoundationEssentials
import HTTPEngine
import Kernel
public import SessionCore

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
        default: try checkOrigin(request)
        }
    }

    /// The half of `checkCrossSite` that judges where a change came from: a trusted `Origin`,
    /// or with none `Sec-Fetch-Site: same-origin`; anything else is refused.
    func checkOrigin(_ request: HTTPRequest) throws(HTTPError) {
        if let origin = request.headers["origin"] {
            if trustedOrigins.contains(origin) { return }
        } else if request.headers["sec-fetch-site"] == "same-origin" {
            return
        }
        throw Self.crossSiteRefused
    }

    static let crossSiteRefused = HTTPError(
        status: 403, code: "request.cross_site_refused", title: "Cross-site request refused",
        detail: "A cookie-authenticated request that changes state must come from a trusted origin.")

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
        headers["authorization"].flatMap(Self.bearerToken(in:))
    }

    /// The token of an Authorization value: the scheme after any leading spaces, one space, and
    /// the rest without its surrounding spaces and tabs. Read from the UTF-8 bytes (every
    /// forward-auth check and bearer request runs this), with no split into new strings.
    static func bearerToken(in authorization: String) -> String? {
        let utf8 = authorization.utf8
        let space = UInt8(ascii: " ")
        guard let schemeStart = utf8.firstIndex(where: { $0 != space }),
            let schemeEnd = utf8[schemeStart...].firstIndex(of: space),
            // ASCII case folding: no other character folds to one of these letters.
            utf8[schemeStart..<schemeEnd].elementsEqual("bearer".utf8, by: { ($0 | 0x20) == $1 })
        else { return nil }
        let token = authorization[utf8.index(after: schemeEnd)...].trimmingOWS()
        return token.isEmpty ? nil : token
    }
}

/// A signed-in request: its account and session, and where its token came from.
public struct AuthenticatedRequest: Sendable {
    /// The account and session (and the token's replacement when it was rotated).
    public let signedIn: SignedIn
    /// Whether the token came in a cookie (web) or a bearer header (native).
    let source: SessionTransport.Source
}

extension SessionTransport {
    /// The header that hands a bearer client its rotated token (cookie clients get Set-Cookie).
    public static let rotatedTokenHeader = "Portvakt-Session-Token"
    /// The header beside it with the new token's absolute end (RFC 3339).
    public static let rotatedExpiryHeader = "Portvakt-Session-Expires-At"

    /// The request's signed-in account, through the use case that holds the rules (a live session,
    /// an account that exists and is not disabled, rotation when due).
    ///
    /// A cookie-borne state change from another site is refused before the token is used, so no
    /// cross-site request can rotate a browser's session out from under it.
    /// - Parameter rotating: exchange a token past the rotation interval; the caller then adds
    ///   `rotationHeaders(for:)` to its response.
    func signedIn(_ request: HTTPRequest, access: AccountSessionService, rotating: Bool) throws
        -> AuthenticatedRequest
    {
        let presented = token(in: request)
        if presented?.source == .cookie { try checkCrossSite(request) }
        let signedIn = try access.signedIn(token: presented?.token, rotating: rotating)
        return AuthenticatedRequest(signedIn: signedIn, source: presented?.source ?? .bearer)
    }

    /// The request's signed-in account when it presents a usable session, else why not (nil
    /// and nil when it presents none). Never rotates: the routes using it answer ceremonies,
    /// where a new token could be lost.
    /// - Throws: only `InlineExecutor.WouldBlock` (recording the session's use must wait, and
    ///   this thread may not: the engine runs the handler again where it may).
    func optionallySignedIn(_ request: HTTPRequest, access: AccountSessionService) throws -> (
        signedIn: SignedIn?, failure: (any Error)?
    ) {
        guard token(in: request) != nil else { return (nil, nil) }
        do {
            return (try signedIn(request, access: access, rotating: false).signedIn, nil)
        } catch let wait as InlineExecutor.WouldBlock {
            throw wait
        } catch {
            return (nil, error)
        }
    }

    /// The headers that hand a rotated token to its client: a new cookie, or for a bearer
    /// client the token and its end in `Portvakt-Session-Token` / `Portvakt-Session-Expires-At`.
    func rotationHeaders(for authenticated: AuthenticatedRequest) -> [(String, String)] {
        guard let rotated = authenticated.signedIn.rotated else { return [] }
        switch authenticated.source {
        case .cookie: return [("Set-Cookie", setCookie(for: rotated))]
        case .bearer:
            return [
                (Self.rotatedTokenHeader, rotated.token),
                (Self.rotatedExpiryHeader, UTCTimestamp.string(rotated.session.expiresAt)),
            ]
        }
    }
}

extension Router {
    /// Registers a route for signed-in requests: the handler gets the authenticated request, and
    /// the response (an error's too) carries the rotated token when the request's was rotated.
    /// The contract gets the session's security and problems.
    /// - Parameters:
    ///   - rateClass: the route's rate-limit class; the default one unless it costs more.
    ///   - commits: whether the handler commits a write (`Router.addBlocking`): true for every
    ///     route that changes something, so a worker of a pool does not wait for its commit.
    ///     (Checking the session may write too: its use at most once a minute, a token due for
    ///     rotation once a day. On a pool's worker that throws `InlineExecutor.WouldBlock` first,
    ///     and the engine runs the handler again where it may wait.)
    mutating func addSignedIn(
        _ method: HTTPMethod, _ pattern: String, summary: String, contract: RouteContract,
        transport: SessionTransport, access: AccountSessionService, rotating: Bool = true,
        rateClass: RateClass = .standard, commits: Bool = false,
        handler: @escaping @Sendable (HTTPRequest, AuthenticatedRequest) throws -> HTTPResponse
    ) {
        var contract = contract
        contract.security = .session
        contract.problems = Problems.signedIn(method) + contract.problems
        let route: HTTPHandler = { request in
            let authenticated = try transport.signedIn(request, access: access, rotating: rotating)
            let headers = transport.rotationHeaders(for: authenticated)
            var response: HTTPResponse
            do {
                response = try handler(request, authenticated)
            } catch let error as any HTTPResponseError {
                // The new token must reach the client even when the request fails, or its
                // session ends with the grace.
                response = .error(error)
            }
            for (name, value) in headers { response.headers.add(name, value) }
            return response
        }
        if commits {
            addBlocking(
                method, pattern, rateClass: rateClass, summary: summary, contract: contract, handler: route)
        } else {
            add(method, pattern, rateClass: rateClass, summary: summary, contract: contract, handler: route)
        }
    }
}
