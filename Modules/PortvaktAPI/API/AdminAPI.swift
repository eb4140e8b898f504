public import AuthOrchestrator
import CryptoCore
import FoundationEssentials
public import HTTPEngine
public import Kernel

/// Checks the admin listener's bearer tokens: 401 without a working token, 403 when the token's
/// scope does not allow the route (`AdminScope.allows(_:)`).
public struct AdminAuthenticator: Sendable {
    let tokens: AdminTokenService

    /// Creates the check over the admin token service.
    public init(tokens: AdminTokenService) {
        self.tokens = tokens
    }

    /// The scope a route needs when it states none: GET and HEAD only look and need `read`;
    /// every other method changes something and needs `write`.
    public static func scope(for method: HTTPMethod) -> AdminScope {
        method == .GET || method == .HEAD ? .read : .write
    }

    /// The principal behind the request's token, when its scope allows `requires` (or, when nil,
    /// the scope the request's method needs).
    /// - Throws: `AuthError` (`admin.unauthorized`, `admin.forbidden`) as a problem.
    public func authorize(_ request: HTTPRequest, requires: AdminScope? = nil) throws -> AdminPrincipal {
        try tokens.authorize(bearer: request.bearerToken, scope: requires ?? Self.scope(for: request.method))
    }
}

/// A handler on the admin listener: it runs only after the token was checked, and gets who it
/// was.
public typealias AdminHandler = @Sendable (HTTPRequest, AdminPrincipal) throws -> HTTPResponse

extension Router {
    /// Registers an admin route whose handler runs only for a request with a token good for it.
    /// Every route on the admin listener goes through here, so none can forget the check; the
    /// contract gets the token's security, the scope it needs (as the requirement's role) and
    /// the problems.
    /// - Parameters:
    ///   - requires: the scope the route needs; nil for the method's (`AdminAuthenticator.scope(for:)`).
    ///   - rateClass: the limit it counts against.
    public mutating func addAdmin(
        _ method: HTTPMethod, _ pattern: String, authenticator: AdminAuthenticator, summary: String,
        contract: RouteContract, requires: AdminScope? = nil, rateClass: RateClass = .admin,
        handler: @escaping AdminHandler
    ) {
        let needed = requires ?? AdminAuthenticator.scope(for: method)
        var contract = contract
        contract.security = .adminToken
        contract.roles = [needed.rawValue]
        contract.problems = Problems.admin(requires: needed) + contract.problems
        add(method, pattern, rateClass: rateClass, summary: summary, contract: contract) { request in
            let principal = try authenticator.authorize(request, requires: needed)
            return try handler(request, principal)
        }
    }
}

/// The admin listener's operational routes: liveness and the effective configuration. Like
/// every admin route, both need a token.
public struct AdminAPI: Sendable {
    let authenticator: AdminAuthenticator
    let effectiveConfiguration: @Sendable () -> [UInt8]
    let readiness: @Sendable () throws -> [String]

    /// Creates the admin API. `effectiveConfiguration` renders the configuration with secrets
    /// redacted.
    public init(
        authenticator: AdminAuthenticator, effectiveConfiguration: @escaping @Sendable () -> [UInt8],
        readiness: @escaping @Sendable () throws -> [String]
    ) {
        self.authenticator = authenticator
        self.effectiveConfiguration = effectiveConfiguration
        self.readiness = readiness
    }

    /// Adds the routes to `router`.
    public func register(on router: inout Router) {
        router.addAdmin(
            .GET, "/health/alive", authenticator: authenticator, summary: "Liveness of the admin listener",
            contract: HealthResponse.contract
        ) { _, _ in
            HealthResponse.alive
        }
        router.addAdmin(
            .GET, "/admin/v1/config", authenticator: authenticator,
            summary: "The effective configuration, secrets redacted",
            contract: RouteContract(responses: [.json(described: EffectiveConfigurationSchema.self)])
        ) { _, _ in
            HTTPResponse(
                status: 200, headers: ["Content-Type": "application/json"], body: effectiveConfiguration())
        }
    }
}

/// The effective configuration: the configuration file's shape (Docs/configuration.md), every
/// section present, secrets redacted.
enum EffectiveConfigurationSchema: JSONSchemaDescribed {
    static var jsonSchema: JSONSchema {
        JSONSchema.object([]).described("The configuration, as in Docs/configuration.md; secrets redacted")
    }
}
