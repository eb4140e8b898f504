import CCurl
import Dispatch
public import Foundation
public import HTTPEngine
import Synchronization

/// What carries a test's requests: libcurl over a socket (`HTTPTestClient`) or the server's
/// pipeline in process (`InProcessHTTPClient`). Test helpers take one of these, so the same
/// helper drives a server either way.
public protocol HTTPTestTransport: AnyObject {
    /// Sends one request and waits for the whole response.
    /// - Parameters:
    ///   - method: the method token, e.g. `GET` (any token, so tests can send unknown ones).
    ///   - url: the absolute URL.
    ///   - headers: request header fields; a field with an empty value is not sent (as with curl).
    ///   - body: the request body, if any.
    /// - Returns: the response.
    /// - Throws: `HTTPTestClientError` when nothing answers at the URL, or not in time.
    func send(method: String, url: String, headers: [(String, String)], body: [UInt8]?)
        throws(HTTPTestClientError) -> TestResponse
}

extension HTTPTestTransport {
    /// Sends a request with headers given as a dictionary: the short form most tests use.
    public func send(
        _ method: HTTPMethod, _ url: String, headers: [String: String] = [:], body: [UInt8]? = nil
    ) throws(HTTPTestClientError) -> TestResponse {
        try send(method: method.rawValue, url: url, headers: headers.map { ($0.key, $0.value) }, body: body)
    }

    /// Sends a JSON body with `Content-Type: application/json`.
    public func sendJSON(
        method: String = "POST", url: String, json: String, headers: [(String, String)] = []
    ) throws(HTTPTestClientError) -> TestResponse {
        try send(
            method: method, url: url, headers: [("Content-Type", "application/json")] + headers,
            body: Array(json.utf8))
    }
}

/// Makes a server reachable by `InProcessHTTPClient` under a base URL of its own, as a listening
/// socket makes it reachable by curl, until `close()` (or until the endpoint goes away).
///
/// The URLs are `http://in-process-N.invalid`: `.invalid` never resolves, so a socket client
/// pointed at one by mistake fails at once instead of reaching anything.
public final class InProcessEndpoint: Sendable {
    /// The base URL, e.g. `http://in-process-3.invalid`, with no trailing slash.
    public let url: String

    private static let servers = Mutex<[String: HTTPServer]>([:])
    private static let counter = Atomic<Int>(0)

    /// Registers `server` under a new base URL; the server need not listen.
    public init(_ server: HTTPServer) {
        let number = Self.counter.add(1, ordering: .relaxed).newValue
        url = "http://in-process-\(number).invalid"
        let key = url
        Self.servers.withLock { $0[key] = server }
    }

    deinit { close() }

    /// Stops answering: later requests fail as a refused connection does.
    public func close() {
        let key = url
        _ = Self.servers.withLock { $0.removeValue(forKey: key) }
    }

    /// The server registered under `origin` (`http://host[:port]`), if any.
    static func server(at origin: String) -> HTTPServer? {
        servers.withLock { $0[origin] }
    }
}

/// Serves `router` in process for `body`, with no socket: the shape of a socket test's
/// `withServer`, for tests of routes that need no `TestServer` around them.
/// - Parameters:
///   - router: the routes.
///   - configuration: limits and policies; every rate class the routes name needs a limit.
///   - body: receives the base URL for `InProcessHTTPClient` and the server.
/// - Throws: `HTTPServerError` when the server cannot be built, or what `body` throws.
public func withInProcessServer(
    router: Router, configuration: HTTPServerConfiguration = HTTPServerConfiguration(),
    _ body: (_ base: String, _ server: HTTPServer) throws -> Void
) throws {
    let server = try HTTPServer(configuration: configuration, router: router, accessLog: { _ in })
    let endpoint = InProcessEndpoint(server)
    defer { endpoint.close() }
    try body(endpoint.url, server)
}

/// A client for tests that answers requests in process (HummingbirdTesting's `.router` mode):
/// a request goes through the server's whole pipeline with no socket, and the response carries
/// the headers a socket client would read. Interchangeable with `HTTPTestClient` (one line in a
/// test); requests reach servers registered as an `InProcessEndpoint`, such as a
/// `TestServer(.inProcess)`.
///
/// The request is the one curl would send for the same call: its `Host` and `Accept: */*`, then
/// the test's fields, then `Content-Length` and, for a body without a type, curl's
/// `application/x-www-form-urlencoded`; the URL's fragment is dropped and its dot segments
/// removed. What only a connection shows (keep-alive, timeouts, TLS, streamed bodies, MHD's own
/// 400s) needs `HTTPTestClient`.
public final class InProcessHTTPClient: HTTPTestTransport {
    /// How long one exchange may take, in seconds; an async route's handler keeps running after.
    public var timeout: TimeInterval
    /// The socket peer the server sees, an IP literal.
    public var peer: String

    /// Creates a client.
    /// - Parameters:
    ///   - timeout: the limit for each exchange, in seconds.
    ///   - peer: the address the requests come from, as a socket peer would.
    public init(timeout: TimeInterval = 10, peer: String = "127.0.0.1") {
        self.timeout = timeout
        self.peer = peer
    }

    /// Sends one request through the registered server's pipeline and waits for its answer.
    /// - Throws: `HTTPTestClientError` with curl's codes, so tests read it alike: "couldn't
    ///   connect" when no server is registered at the URL, "URL malformed" for a URL, header or
    ///   peer no socket could carry, "timeout" when the answer takes longer than `timeout`.
    public func send(
        method: String = "GET", url: String, headers: [(String, String)] = [], body: [UInt8]? = nil
    ) throws(HTTPTestClientError) -> TestResponse {
        guard let target = RequestTarget(url) else {
            throw HTTPTestClientError(
                curlCode: Int(CURLE_URL_MALFORMAT.rawValue), message: "URL malformed: \(url)")
        }
        guard let server = InProcessEndpoint.server(at: target.origin) else {
            throw HTTPTestClientError(
                curlCode: Int(CURLE_COULDNT_CONNECT.rawValue),
                message: "no in-process server answers at \(target.origin)")
        }
        // What curl puts on the wire for the same call (HTTPTestClient): HEAD sends no body, GET
        // without one neither, every other method its body or, for POST, PUT and PATCH, an empty one.
        let sendsBody = method != "HEAD" && (body != nil || ["POST", "PUT", "PATCH"].contains(method))
        let request: InProcessRequest
        do {
            request = try InProcessRequest(
                method: method, target: target.pathAndQuery,
                headers: Self.curlHeaders(
                    host: target.authority, headers, body: sendsBody ? body ?? [] : nil),
                body: sendsBody ? body ?? [] : [], peer: peer)
        } catch {
            throw HTTPTestClientError(curlCode: Int(CURLE_URL_MALFORMAT.rawValue), message: error.message)
        }
        let answer = Answer()
        server.respond(to: request) { response in answer.deliver(response) }
        guard let response = answer.wait(seconds: timeout) else {
            throw HTTPTestClientError(
                curlCode: Int(CURLE_OPERATION_TIMEDOUT.rawValue),
                message: "no answer within \(timeout) seconds")
        }
        // As curl's header callback reads them (HTTPTestClient's ResponseSink): values trimmed.
        var received = HTTPHeaders()
        for field in response.headers {
            received.add(field.name, field.value.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        // No connection is opened in process, so none is ever counted as new.
        return TestResponse(
            status: response.status, headers: received, body: response.body, newConnections: 0)
    }

    /// Whether an in-process server answers at `url`'s origin (so a helper that gets only a URL
    /// can choose the transport that reaches it).
    public static func reaches(_ url: String) -> Bool {
        RequestTarget(url).map { InProcessEndpoint.server(at: $0.origin) != nil } ?? false
    }

    /// The header fields curl 7.88 sends for this call, in its order (checked against a capture of
    /// curl's requests): `Host` first, the test's own `Host` replacing it; `Accept: */*` unless the
    /// test sends an Accept; the test's fields, without empty ones (an empty value is curl's way
    /// to remove a field); then the body's `Content-Length`, and its default `Content-Type`.
    static func curlHeaders(host: String, _ fields: [(String, String)], body: [UInt8]?) -> HTTPHeaders {
        let given = HTTPHeaders(fields)
        var headers = HTTPHeaders()
        if given["Host"]?.isEmpty != true { headers.add("Host", given["Host"] ?? host) }
        if !given.contains("Accept") { headers.add("Accept", "*/*") }
        for (name, value) in fields where !value.isEmpty && name.lowercased() != "host" {
            headers.add(name, value)
        }
        if let body {
            if !given.contains("Content-Length") { headers.add("Content-Length", String(body.count)) }
            if !given.contains("Content-Type") {
                headers.add("Content-Type", "application/x-www-form-urlencoded")
            }
        }
        return headers
    }
}

/// One answer handed from whichever thread the pipeline finishes on to the waiting test thread.
private final class Answer: Sendable {
    private let response = Mutex<HTTPResponse?>(nil)
    private let ready = DispatchSemaphore(value: 0)

    func deliver(_ value: HTTPResponse) {
        response.withLock { $0 = value }
        ready.signal()
    }

    func wait(seconds: TimeInterval) -> HTTPResponse? {
        guard ready.wait(timeout: .now() + seconds) == .success else { return nil }
        return response.withLock { $0 }
    }
}

/// An absolute http URL taken apart as curl sends it.
private struct RequestTarget {
    /// `http://host[:port]`, the key an endpoint is registered under.
    let origin: String
    /// `host[:port]`, sent as `Host`.
    let authority: String
    /// The path without dot segments, and the query; no fragment.
    let pathAndQuery: String

    init?(_ url: String) {
        guard url.hasPrefix("http://") else { return nil }
        var rest = url.dropFirst("http://".count)
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        let end = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = String(rest[..<end])
        guard !authority.isEmpty else { return nil }
        var path = rest[end...]
        var query: Substring = ""
        if let mark = path.firstIndex(of: "?") {
            query = path[mark...]
            path = path[..<mark]
        }
        self.authority = authority
        origin = "http://" + authority
        pathAndQuery = Self.removingDotSegments(path.isEmpty ? "/" : String(path)) + query
    }

    /// RFC 3986 §5.2.4, which curl applies to every URL it is given.
    static func removingDotSegments(_ path: String) -> String {
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        for (index, segment) in segments.enumerated() {
            let isLast = index == segments.count - 1
            switch segment {
            case ".":
                if isLast { output.append("") }
            case "..":
                if !output.isEmpty { output.removeLast() }
                if isLast { output.append("") }
            default:
                output.append(segment)
            }
        }
        return "/" + output.joined(separator: "/")
    }
}
