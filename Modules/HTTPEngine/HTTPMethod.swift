/// The request methods Portvakt routes; anything else is answered before routing.
public enum HTTPMethod: String, Sendable, Hashable, CaseIterable, Comparable {
    /// Read a resource.
    case GET
    /// Read a resource's headers only; served by the GET handler without a body.
    case HEAD
    /// Create or act.
    case POST
    /// Replace a resource.
    case PUT
    /// Change part of a resource.
    case PATCH
    /// Remove a resource.
    case DELETE
    /// Ask what a resource allows; answered by the router (CORS preflight, `Allow`).
    case OPTIONS

    /// Parses a request-line method token; nil for methods Portvakt does not serve.
    /// Method tokens are case-sensitive (RFC 9110 §9.1), so `get` is not `GET`.
    public init?(token: String) {
        self.init(rawValue: token)
    }

    /// Orders methods as they are listed in `Allow` headers, so the header is stable.
    public static func < (lhs: HTTPMethod, rhs: HTTPMethod) -> Bool {
        lhs.order < rhs.order
    }

    private var order: Int {
        switch self {
        case .GET: 0
        case .HEAD: 1
        case .POST: 2
        case .PUT: 3
        case .PATCH: 4
        case .DELETE: 5
        case .OPTIONS: 6
        }
    }
}
