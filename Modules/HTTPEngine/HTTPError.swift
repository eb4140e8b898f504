public import Kernel

/// An error that knows its HTTP answer: a status, a problem body, and any extra headers.
///
/// Handlers throw these; the server renders them as `application/problem+json`. Any other error
/// becomes a 500 `internal` problem whose body says nothing about the cause.
public protocol HTTPResponseError: Error {
    /// The HTTP status code.
    var status: Int { get }
    /// The problem document sent as the body.
    var problem: ProblemDetails { get }
    /// Extra response headers, such as `Allow` or `Retry-After`.
    var headers: [(String, String)] { get }
    /// The dependency failure behind this error, when a use case had to carry one inside its
    /// own error type (typed throws): the response is then that failure's, as if it had passed
    /// through untouched, so a database outage reads `storage.unavailable` on every route.
    var dependencyFailure: (any DependencyFailure)? { get }
}

extension HTTPResponseError {
    /// No extra headers unless the error says otherwise.
    public var headers: [(String, String)] { [] }
    /// No dependency behind it unless the error says otherwise.
    public var dependencyFailure: (any DependencyFailure)? { nil }
}

/// The HTTP front's own failures, and a general-purpose `HTTPResponseError` for handlers.
///
/// Equality is on the stable code only: details and headers may change between releases.
public struct HTTPError: HTTPResponseError, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status code.
    public let status: Int
    /// The problem document sent as the body.
    public let problem: ProblemDetails
    /// Extra response headers.
    public let headers: [(String, String)]

    /// Creates an error from a problem document; the status comes from the document.
    /// - Parameters:
    ///   - problem: the body.
    ///   - headers: extra response headers.
    public init(_ problem: ProblemDetails, headers: [(String, String)] = []) {
        self.status = problem.status
        self.problem = problem
        self.headers = headers
    }

    /// Creates an error from its parts.
    /// - Parameters:
    ///   - status: the HTTP status code.
    ///   - code: the stable code.
    ///   - title: the summary for this kind of problem.
    ///   - detail: an explanation of this occurrence, without secrets or personal data.
    ///   - headers: extra response headers.
    public init(
        status: Int, code: String, title: String, detail: String? = nil,
        headers: [(String, String)] = []
    ) {
        self.init(ProblemDetails(status: status, code: code, title: title, detail: detail), headers: headers)
    }

    /// The stable code, e.g. `route.not_found`.
    public var code: String { problem.code }

    /// The code and title; never the detail, which may describe request data.
    public var description: String { "\(problem.code) (\(status)): \(problem.title)" }

    /// Errors are equal when their codes are.
    public static func == (lhs: HTTPError, rhs: HTTPError) -> Bool { lhs.code == rhs.code }

    /// 400 `request.malformed_json`: the body is missing, not JSON, or not the expected shape.
    public static func malformedJSON(detail: String = "The request body is not valid JSON for this endpoint.")
        -> HTTPError
    {
        HTTPError(status: 400, code: "request.malformed_json", title: "Malformed JSON body", detail: detail)
    }

    /// 413 `request.body_too_large`: the body exceeds the configured limit.
    public static func bodyTooLarge(limit: Int) -> HTTPError {
        HTTPError(
            ProblemDetails(
                status: 413, code: "request.body_too_large", title: "Request body too large",
                detail: "The request body exceeds \(limit) bytes.", extensions: ["limit": .int(limit)]))
    }

    /// 415 `request.unsupported_media_type`: a body was sent that is not `application/json`.
    public static func unsupportedMediaType() -> HTTPError {
        HTTPError(
            status: 415, code: "request.unsupported_media_type", title: "Unsupported media type",
            detail: "Send the body as application/json.", headers: [("Accept", "application/json")])
    }

    /// 404 `route.not_found`: no route matches the path.
    public static func notFound() -> HTTPError {
        HTTPError(status: 404, code: "route.not_found", title: "Not found")
    }

    /// 405 `route.method_not_allowed`, with `Allow` listing what the path does accept.
    public static func methodNotAllowed(allowed: [HTTPMethod]) -> HTTPError {
        let allow = allowed.map(\.rawValue).joined(separator: ", ")
        return HTTPError(
            status: 405, code: "route.method_not_allowed", title: "Method not allowed",
            headers: [("Allow", allow)])
    }

    /// 501 `request.method_not_implemented`: a method token this server does not know at all.
    public static func methodNotImplemented() -> HTTPError {
        HTTPError(status: 501, code: "request.method_not_implemented", title: "Method not implemented")
    }

    /// 429 `rate_limited`, with `Retry-After` in whole seconds.
    public static func rateLimited(retryAfterSeconds: Int) -> HTTPError {
        HTTPError(
            ProblemDetails(
                status: 429, code: "rate_limited", title: "Too many requests",
                detail: "Retry after \(retryAfterSeconds) seconds.",
                extensions: ["retryAfter": .int(retryAfterSeconds)]),
            headers: [("Retry-After", String(retryAfterSeconds))])
    }

    /// 503 `server.stopping`: the server stopped while an async route's request waited.
    public static let serverStopping = HTTPError(
        status: 503, code: "server.stopping", title: "Server stopping",
        detail: "The server stopped before this request finished; try again.")

    /// 500 `internal`: something failed that the client cannot fix; the body says nothing more.
    public static func `internal`() -> HTTPError {
        HTTPError(status: 500, code: "internal", title: "Internal server error")
    }
}

/// How a dependency's failure is answered: a temporary one is `503` with its code and
/// `Retry-After: 1`; any other is a `500 internal` like an unmapped error.
struct DependencyProblem: HTTPResponseError {
    let failure: any DependencyFailure

    var status: Int { failure.isTemporary ? 503 : 500 }

    var problem: ProblemDetails {
        failure.isTemporary
            ? ProblemDetails(
                status: 503, code: failure.failureCode, title: "Temporarily unavailable",
                detail: "A service the server depends on is busy or not answering; try again shortly.")
            : ProblemDetails(status: 500, code: "internal", title: "Internal error", detail: nil)
    }

    var headers: [(String, String)] { failure.isTemporary ? [("Retry-After", "1")] : [] }
}
