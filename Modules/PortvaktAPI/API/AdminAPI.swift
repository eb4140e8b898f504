public import AuthOrchestrator
import CryptoCore
import FoundationEssentials
public import HTTPEngine
public import Kernel

/// Checks the admin listener's bearer tokens: 401 without a working token, 403 when a read
/// token asks to change something.
public struct AdminAuthenticator: Sendable {
    let tokens: AdminTokenService

    /// Creates the check over the admin token service.
    public init(tokens: AdminTokenService) {
        self.tokens = tokens
    }

    /// The principal behind the request's token. GET and HEAD need a read token; every other
    /// method changes something and needs a write token.
    /// - Throws: `AuthError` (`admin.unauthorized`, `admin.forbidden`) as a problem.
    public func authorize(_ request: HTTPRequest) throws -> AdminPrincipal {
        let scope: AdminScope = request.method == .GET || request.method == .HEAD ? .read : .write
        return try tokens.authorize(bearer: request.bearerToken, scope: scope)
    }
}

/// A handler on the admin listener: it runs only after the token was checked, and gets who it
/// was.
public typealias AdminHandler = @Sendable (HTTPRequest, AdminPrincipal) throws -> HTTPResponse

extension Router {
    /// Registers an admin route whose handler runs only for a request with a token good for its
    /// method. Every route on the admin listener goes through here, so none can forget the check;
    /// the contract gets the token's security and problems.
    public mutating func addAdmin(
        _ method: HTTPMethod, _ pattern: String, authenticator: AdminAuthenticator, summary: String,
        contract: RouteContract, handler: @escaping AdminHandler
    ) {
        var contract = contract
        contract.security = .adminToken
        contract.problems = Problems.admin(method) + contract.problems
        add(method, pattern, rateClass: .admin, summary: summary, contract: contract) { request in
            let principal = try authenticator.authorize(request)
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
