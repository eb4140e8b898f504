import CryptoCore
import FoundationEssentials

/// A response a handler returns: status, headers and body bytes.
///
/// The server adds the request id, the security headers and `Cache-Control` when missing.
public struct HTTPResponse: Sendable {
    /// The HTTP status code.
    public var status: Int
    /// The response header fields.
    public var headers: HTTPHeaders
    /// The body bytes (not sent for HEAD, 204 or 304).
    public var body: [UInt8]
    /// Whether this is `dropConnection`: no answer at all, the connection closed instead.
    public private(set) var dropsConnection = false

    /// Creates a response.
    /// - Parameters:
    ///   - status: the HTTP status code.
    ///   - headers: the header fields.
    ///   - body: the body bytes.
    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response encoded with the front's shared encoder.
    /// - Parameters:
    ///   - value: the body value.
    ///   - status: the HTTP status code, 200 by default.
    /// - Throws: `EncodingError` when the value cannot be encoded (answered as a 500).
    public static func json(_ value: some Encodable, status: Int = 200) throws -> HTTPResponse {
        let data = try JSONCoding.encoder.encode(value)
        return HTTPResponse(
            status: status, headers: ["Content-Type": "application/json"], body: [UInt8](data))
    }

    /// A JSON response written by hand (see `JSONWritable`), for the sign-in path.
    public static func json(writing value: some JSONWritable, status: Int = 200) -> HTTPResponse {
        var writer = JSONWriter()
        value.write(to: &writer)
        return HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: writer.bytes)
    }

    /// No response at all: the server closes the connection without a byte of answer, which is
    /// what a failed network looks like to the client. For servers that simulate faults (the BankID
    /// simulator's injected `dropConnection`); the access log and metrics record it as status 0.
    public static var dropConnection: HTTPResponse {
        var response = HTTPResponse(status: 0)
        response.dropsConnection = true
        return response
    }

    /// 204 No Content.
    public static var noContent: HTTPResponse { HTTPResponse(status: 204) }

    /// A UTF-8 plain-text response.
    /// - Parameters:
    ///   - text: the body.
    ///   - status: the HTTP status code, 200 by default.
    public static func text(_ text: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Array(text.utf8))
    }

    /// A UTF-8 HTML response.
    /// - Parameters:
    ///   - html: the body.
    ///   - status: the HTTP status code, 200 by default.
    public static func html(_ html: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: ["Content-Type": "text/html; charset=utf-8"], body: Array(html.utf8))
    }

    /// An `application/problem+json` response.
    /// - Parameters:
    ///   - problem: the body; its `status` is the response status.
    ///   - headers: extra header fields.
    public static func problem(_ problem: ProblemDetails, headers: [(String, String)] = []) -> HTTPResponse {
        var fields = HTTPHeaders(headers)
        fields.set("Content-Type", "application/problem+json")
        // A problem document holds only strings and numbers, so encoding cannot fail in practice;
        // should it, a fixed body still tells the client what happened.
        let body =
            (try? JSONCoding.encoder.encode(problem)).map { [UInt8]($0) }
            ?? Array(#"{"title":"Internal server error","status":500,"code":"internal"}"#.utf8)
        return HTTPResponse(status: problem.status, headers: fields, body: body)
    }

    /// The problem response for an error that knows its HTTP answer.
    public static func error(_ error: some HTTPResponseError) -> HTTPResponse {
        if let failure = error.dependencyFailure {
            let problem = DependencyProblem(failure: failure)
            return Self.problem(problem.problem, headers: problem.headers)
        }
        return problem(error.problem, headers: error.headers)
    }
}
