public import AuthOrchestrator
import FoundationEssentials
public import HTTPEngine
import Kernel
import SessionCore

/// Forward auth for reverse proxies (nginx `auth_request`, Traefik `forwardAuth`, Caddy
/// `forward_auth`): `GET /v1/auth/check` answers 204 with the user's headers for a usable
/// session, and 401 for anything else, so the proxy lets a request through to the protected app
/// only when Portvakt says who it is.
///
/// The session rule is `AccountSessionService.signedIn`, the one every signed-in route passes,
/// without rotation: a new token could not reach the client through the proxy. The check reads
/// the session and its account; its only write is the idle timeout's touch, at most once a
/// minute per session.
public struct ForwardAuthAPI: Sendable {
    let access: AccountSessionService
    let transport: SessionTransport

    /// The route's path.
    public static let path = "/v1/auth/check"
    /// The user's id.
    public static let userIDHeader = "Portvakt-User-Id"
    /// The session's id.
    public static let sessionIDHeader = "Portvakt-Session-Id"
    /// The username, percent-encoded UTF-8; absent when the account has none.
    public static let usernameHeader = "Portvakt-Username"
    /// How the session was opened (`passkey`, `bankid`, `review`: `AuthMethod.amr`).
    public static let authMethodHeader = "Portvakt-Auth-Method"

    /// Creates the API over the signed-in rule and the session transport.
    public init(access: AccountSessionService, transport: SessionTransport) {
        self.access = access
        self.transport = transport
    }

    /// Adds `GET /v1/auth/check` (HEAD comes from the router) to `router`, in the `backend` rate
    /// class: a proxy calls it for every request it protects.
    public func register(on router: inout Router) {
        router.add(
            .GET, Self.path, rateClass: .backend,
            summary: "Forward auth for reverse proxies: 204 with the Portvakt-* user headers, or 401",
            contract: Self.contract
        ) { request in
            try check(request)
        }
    }

    /// The check: 204 and the headers, or a 401 problem. A store that fails is not a refusal:
    /// it propagates (503), and the proxy fails closed.
    func check(_ request: HTTPRequest) throws -> HTTPResponse {
        let presented = transport.forwardAuthToken(in: request)
        let signedIn: SignedIn
        do {
            // A cookie rides along on cross-site requests; the app behind the proxy keeps the
            // public API's rule for changes, judged on the method the proxy says the client used.
            if presented?.source == .cookie { try transport.checkForwardedCrossSite(request) }
            signedIn = try access.signedIn(token: presented?.token, rotating: false)
        } catch let error as SessionError {
            return Self.refusal(error.problem)
        } catch let error as AuthError where error.code == .accountDisabled {
            return Self.refusal(error.problem)
        } catch let error as HTTPError
            where error.problem.code == SessionTransport.crossSiteRefused.problem.code
        {
            return Self.refusal(error.problem)
        }
        var response = HTTPResponse.noContent
        response.headers.set(Self.userIDHeader, signedIn.user.id)
        response.headers.set(Self.sessionIDHeader, signedIn.session.id)
        if let username = signedIn.user.username {
            response.headers.set(Self.usernameHeader, Self.percentEncoded(username))
        }
        response.headers.set(Self.authMethodHeader, signedIn.session.authMethod.amr)
        // Per session and per moment: no proxy or browser may keep the answer.
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    /// Every refusal as a 401 with its own code: nginx turns any status but 2xx, 401 and 403
    /// into a 500, and a proxy needs only "not signed in". `no-store`, so nothing is cached.
    static func refusal(_ problem: ProblemDetails) -> HTTPResponse {
        HTTPResponse.problem(
            ProblemDetails(status: 401, code: problem.code, title: "Not signed in", detail: problem.detail),
            headers: [("WWW-Authenticate", "Bearer"), ("Cache-Control", "no-store")])
    }

    /// `text` as UTF-8 with every byte outside RFC 3986's unreserved characters (`A-Z a-z 0-9 -
    /// . _ ~`) written `%XX`: usernames may hold any letter (`Names.normaliseUsername`), and a
    /// header carries ASCII only. `decodeURIComponent` and `urllib.parse.unquote` read it back.
    static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"), UInt8(ascii: "~"):
                bytes.append(byte)
            default:
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The API document's entry: 204 or one of the 401s.
    static let contract: RouteContract = {
        var problems = SessionError.Code.allCases.filter { $0 != .notFound }.map {
            RouteContract.Problem(SessionError($0, ""))
        }
        problems.append(RouteContract.Problem(status: 401, code: AuthError.Code.accountDisabled.rawValue))
        problems.append(
            RouteContract.Problem(status: 401, code: SessionTransport.crossSiteRefused.problem.code))
        return RouteContract(
            responses: [
                .noContent(
                    "Signed in: the headers name the user, for the proxy to copy onto the request to the app",
                    headers: [
                        .init(userIDHeader, "The user's id"),
                        .init(sessionIDHeader, "The session's id"),
                        .init(
                            usernameHeader,
                            "The username as percent-encoded UTF-8 (every byte outside A-Z a-z 0-9 - . _ ~ as %XX); absent when the account has none",
                            required: false),
                        .init(authMethodHeader, "How the session was opened: passkey, bankid or review"),
                    ])
            ],
            problems: problems, security: .session)
    }()
}

extension SessionTransport {
    /// The token a proxied request presents: the bearer only when it is a Portvakt session token
    /// (`pvs_…`), otherwise the cookie. The protected app may use `Authorization` for a scheme
    /// of its own, which must not hide a valid cookie as it does on the public API.
    func forwardAuthToken(in request: HTTPRequest) -> (token: String, source: Source)? {
        if let bearer = request.bearerToken, bearer.hasPrefix(SessionService.tokenPrefix) {
            return (bearer, .bearer)
        }
        if let cookie = request.cookie(cookieName), !cookie.isEmpty { return (cookie, .cookie) }
        return nil
    }

    /// `checkCrossSite` for the request a proxy asks about: the method is the client's, as
    /// `X-Forwarded-Method` gives it (GET when the proxy sends none), and `Origin` /
    /// `Sec-Fetch-Site` are the client's own, which proxies pass on.
    func checkForwardedCrossSite(_ request: HTTPRequest) throws(HTTPError) {
        switch request.headers["x-forwarded-method"]?.trimmingOWS().uppercased() ?? "GET" {
        case "GET", "HEAD", "OPTIONS": return
        default: try checkOrigin(request)
        }
    }
}
