public import CryptoCore
public import Foundation

/// Checks the admin listener's bearer token against the stored SHA-256 hash, in constant time.
public struct AdminAuthenticator: Sendable {
    private let tokenHash: [UInt8]

    /// Creates the check from the hash of the one valid admin token.
    public init(tokenHash: [UInt8]) {
        self.tokenHash = tokenHash
    }

    /// Passes when the request carries the admin token; otherwise a 401 problem.
    func authorize(_ request: HTTPRequest) throws(HTTPError) {
        let presented = request.bearerToken
        // Hash first so the comparison always runs over 32 bytes, whatever was sent.
        guard let presented, ConstantTime.equals(Digest.sha256(presented), tokenHash) else {
            throw HTTPError(
                status: 401, code: "admin.unauthorized", title: "Admin token required",
                detail: "Send Authorization: Bearer with the admin token.",
                headers: [("WWW-Authenticate", "Bearer")])
        }
    }
}

/// The admin listener's routes. Every route but liveness requires the admin token.
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
        router.add(.GET, "/health/alive", rateClass: "health", summary: "Liveness of the admin listener") {
            _ in
            HealthResponse.alive
        }
        router.add(
            .GET, "/admin/v1/config", rateClass: "admin",
            summary: "The effective configuration, secrets redacted"
        ) {
            request in
            try authenticator.authorize(request)
            return HTTPResponse(
                status: 200, headers: ["Content-Type": "application/json"], body: effectiveConfiguration())
        }
    }
}
