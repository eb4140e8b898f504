public import AuthOrchestrator
import CryptoCore
import FoundationEssentials
public import HTTPEngine
import Kernel
import SessionCore

/// Signed access tokens (`accessTokens.enabled`): a signed-in client asks for a short-lived
/// ES256 JWT to show the app's own servers, which verify it offline against the keys published
/// at `/.well-known/jwks.json`. Neither route exists when access tokens are off.
public struct AccessTokenAPI: Sendable {
    let service: AccessTokenService
    let access: AccountSessionService
    let transport: SessionTransport

    /// The token route's path.
    public static let tokenPath = "/v1/session/access-token"
    /// The key set's path.
    public static let jwksPath = "/.well-known/jwks.json"
    /// How long verifiers and caches may keep the key set: a new key is published at least
    /// twice this long before it signs on the schedule (a manual rotation gives 10 s, and
    /// verifiers that refetch on an unknown `kid` still follow at once).
    public static let jwksCacheControl = "public, max-age=300"

    /// Creates the API.
    public init(service: AccessTokenService, access: AccountSessionService, transport: SessionTransport) {
        self.service = service
        self.access = access
        self.transport = transport
    }

    /// Adds both routes to `router`.
    public func register(on router: inout Router) {
        let service = service
        router.addSignedIn(
            .POST, Self.tokenPath,
            summary: "A short-lived signed access token (ES256 JWT) for the app's own servers",
            contract: RouteContract(
                responses: [.json(AccessTokenView.self)],
                problems: Problems.auth(.accessTokenKeyUnavailable)),
            transport: transport, access: access
        ) { _, auth in
            let issued = try service.issue(for: auth.signedIn)
            var response = try HTTPResponse.json(
                AccessTokenView(accessToken: issued.token, expiresAt: UTCTimestamp.string(issued.expiresAt)))
            // A bearer credential: no cache may keep it.
            response.headers.set("Cache-Control", "no-store")
            return response
        }
        router.add(
            .GET, Self.jwksPath, rateClass: .backend,
            summary: "The public keys that verify access tokens (a JSON Web Key Set)",
            contract: RouteContract(responses: [.json(JWKSView.self)])
        ) { _ in
            HTTPResponse(
                status: 200,
                headers: ["Content-Type": "application/json", "Cache-Control": Self.jwksCacheControl],
                body: try service.jwks())
        }
    }
}

/// The token and when it ends.
struct AccessTokenView: Codable {
    /// The compact JWS.
    let accessToken: String
    /// The token's `exp`, RFC 3339 in UTC with milliseconds (as every time the API writes).
    let expiresAt: String
}

/// A JSON Web Key Set (RFC 7517 §5) of P-256 keys.
struct JWKSView: Codable {
    /// Every published key, the one that signs now and those whose tokens may still be valid.
    let keys: [JWKView]
}

/// One P-256 verification key (RFC 7518 §6.2).
struct JWKView: Codable {
    /// Always `EC`.
    let kty: String
    /// Always `P-256`.
    let crv: String
    /// The x coordinate, base64url.
    let x: String
    /// The y coordinate, base64url.
    let y: String
    /// The key's id (its RFC 7638 thumbprint), the `kid` of the tokens it signs.
    let kid: String
    /// Always `ES256`.
    let alg: String
    /// Always `sig`.
    let use: String
}
