public import HTTPEngine

/// Portvakt's rate-limit classes: each is limited per client by `rateLimits.<class>` in the
/// configuration, and each route names one (the health and document routes are `.unlimited`).
public enum RouteClass: String, Sendable, CaseIterable {
    /// Every public route not in another class.
    case `default`
    /// Routes that start or finish a sign-in, sign-up or recovery.
    case auth
    /// The admin API.
    case admin
    /// Starting BankID orders (each one costs a call to BankID).
    case bankid
    /// Forward auth: a reverse proxy asks once for every request it protects, from its own
    /// address unless `http.trustedProxies` lets `X-Forwarded-For` name the client.
    case backend
    /// A user's download of everything held about them (`GET /v1/me/export`): it reads every
    /// row about the account, so it is limited far below the routes that read one.
    case export

    /// The engine's class for this one.
    public var rateClass: RateClass { RateClass(rawValue) }
}

extension RateClass {
    /// `RouteClass.default`.
    public static let standard = RouteClass.default.rateClass
    /// `RouteClass.auth`.
    public static let auth = RouteClass.auth.rateClass
    /// `RouteClass.admin`.
    public static let admin = RouteClass.admin.rateClass
    /// `RouteClass.bankid`.
    public static let bankid = RouteClass.bankid.rateClass
    /// `RouteClass.backend`.
    public static let backend = RouteClass.backend.rateClass
    /// `RouteClass.export`.
    public static let export = RouteClass.export.rateClass
}
