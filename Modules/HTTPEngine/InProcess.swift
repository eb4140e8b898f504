import Glibc
import Synchronization

/// A request handed to a server in process: what a client would have put on the wire, and the
/// socket peer it would have come from. No socket, parser or libmicrohttpd is involved, so
/// MHD's own refusals (a malformed request line, a missing `Host`) are not reproduced here;
/// those belong to the engine's socket tests.
public struct InProcessRequest: Sendable {
    /// The method token as sent, e.g. `GET`; tokens the router does not know are answered as
    /// over the socket (405 or 501).
    public let method: String
    /// The request target in origin form: the path and query as sent, still percent-encoded,
    /// e.g. `/v1/users?search=ada%25`.
    public let target: String
    /// The header fields as the client sent them (a client's own `Host`, `Content-Length` and
    /// `Content-Type` included: nothing is added on the way in).
    public let headers: HTTPHeaders
    /// The body.
    public let body: [UInt8]
    /// The socket peer, parsed once here so an answer never fails on it.
    let peerAddress: IPAddress

    /// The socket peer's address, normalised as a socket peer is (IPv4-mapped IPv6 as IPv4).
    public var peer: String { peerAddress.description }

    /// Creates a request.
    /// - Parameters:
    ///   - method: the method token.
    ///   - target: the path and optional query, starting with `/`.
    ///   - headers: the header fields; a value's leading whitespace is dropped, as libmicrohttpd
    ///     drops it before the handler sees the value.
    ///   - body: the body bytes.
    ///   - peer: the socket peer as an IPv4 or IPv6 literal; the client address is resolved from it
    ///     (and from forwarding headers when it is a trusted proxy) as for a socket.
    /// - Throws: `HTTPServerError.invalidRequest` for what no socket could carry: a method or
    ///   target with whitespace or control characters, a target not starting with `/`, a header
    ///   field with CR, LF or NUL, or a peer that is not an IP literal.
    public init(
        method: String = "GET", target: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [],
        peer: String = "127.0.0.1"
    ) throws(HTTPServerError) {
        guard !method.isEmpty, method.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
            throw HTTPServerError(.invalidRequest, "the method must be a token")
        }
        guard target.hasPrefix("/"), target.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7f }) else {
            throw HTTPServerError(.invalidRequest, "the target must start with / and hold no whitespace")
        }
        var fields = HTTPHeaders()
        for field in headers {
            guard !field.name.isEmpty, !field.name.utf8.contains(where: Self.isForbiddenInName),
                !field.value.utf8.contains(where: Self.isForbiddenInValue)
            else {
                throw HTTPServerError(.invalidRequest, "a header field cannot be sent as given")
            }
            // libmicrohttpd strips the whitespace before a value (only before: trailing
            // whitespace reaches the handler) before the handler sees it.
            fields.add(field.name, String(field.value.drop { $0 == " " || $0 == "\t" }))
        }
        guard let address = IPAddress(peer) else {
            throw HTTPServerError(.invalidRequest, "the peer must be an IP literal")
        }
        self.method = method
        self.target = target
        self.headers = fields
        self.body = body
        self.peerAddress = address
    }

    private static func isForbiddenInName(_ byte: UInt8) -> Bool {
        byte <= 0x20 || byte == UInt8(ascii: ":") || byte == 0x7f
    }

    private static func isForbiddenInValue(_ byte: UInt8) -> Bool {
        byte == 0 || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\n")
    }
}

extension HTTPServer {
    /// Answers one request in process, through the pipeline a request read off the socket goes
    /// through: request id, client address, routing (404, 405 with `Allow`), the rate limit, the
    /// handler (an async route's awaited on the engine's handler executor), error mapping to
    /// problem+json, the security, CORS and cache headers, and the access-log line.
    ///
    /// The answer is what a client reads off the socket: the server's own headers, libmicrohttpd's
    /// `Date`, `Connection: close` and `Content-Length`, in the order they are sent, and no body
    /// for HEAD, 1xx, 204 or 304. It works whether or not the server listens, and shares the
    /// listener's rate-limit buckets and metrics when it does.
    /// - Parameter request: the request as a client would send it.
    /// - Returns: the response as the client would receive it.
    public func respond(to request: InProcessRequest) async -> HTTPResponse {
        await withCheckedContinuation { continuation in
            respond(to: request) { continuation.resume(returning: $0) }
        }
    }

    /// Answers one request in process, as `respond(to:)`, for synchronous callers (test clients
    /// that block a thread, as a socket client blocks in its read).
    /// - Parameters:
    ///   - request: the request as a client would send it.
    ///   - completion: receives the response exactly once: before this returns for every
    ///     synchronous route and every answer the pipeline gives itself (404, 405, 429...), later
    ///     from the engine's async-handler executor for an async route. That executor has threads
    ///     of its own, so a caller blocking a thread of Swift's global executor until then cannot
    ///     starve it.
    public func respond(
        to request: InProcessRequest, completion: @escaping @Sendable (HTTPResponse) -> Void
    ) {
        let pipeline = handler.pipeline
        let start = pipeline.clock.nanoseconds()
        let (path, query) = InProcessWire.split(request.target)
        // As the MHD glue decides on its first call: an announced length over the limit is refused
        // before a byte is read, and then MHD closes the connection after the 413.
        let limit = pipeline.configuration.maxBodyBytes
        let refusedUnread = request.headers["Content-Length"].flatMap { Int($0) }.map { $0 > limit } ?? false
        let tooLarge = refusedUnread || request.body.count > limit
        let incoming = IncomingRequest(
            methodToken: request.method, path: path, query: InProcessWire.arguments(query),
            headers: request.headers, body: tooLarge ? [] : request.body, peer: request.peerAddress,
            bodyTooLarge: tooLarge, startNanoseconds: start)
        let closes = refusedUnread || InProcessWire.asksToClose(request.headers)
        let method = request.method
        let cacheControl = pipeline.configuration.apiCacheControl
        let deliver: @Sendable (PreparedResponse) -> Void = { prepared in
            completion(
                InProcessWire.response(
                    prepared, method: method, cacheControl: cacheControl, closesConnection: closes))
        }
        switch pipeline.respond(to: incoming, closeConnection: handler.draining.load(ordering: .relaxed)) {
        case .now(let prepared):
            deliver(prepared)
        case .later(let work):
            // As `ConnectionHandler.suspend` runs it: its own task (a caller giving up does not
            // cancel it, as a client hanging up does not) on the handlers' executor.
            Task(executorPreference: AsyncHandlerExecutor.shared) { deliver(await work()) }
        }
    }
}

/// What the socket path does outside the pipeline, done here for in-process answers: splitting
/// the target and parsing the query as libmicrohttpd and the MHD glue do, and adding the headers
/// the glue (from `StaticHeader`) and libmicrohttpd add. The engine's parity tests compare every
/// piece against a real socket, which is what keeps this from drifting.
enum InProcessWire {
    /// The path and the query (without `?`), as MHD splits the request target.
    static func split(_ target: String) -> (path: String, query: Substring) {
        guard let mark = target.firstIndex(of: "?") else { return (target, "") }
        return (String(target[..<mark]), target[target.index(after: mark)...])
    }

    /// The query's arguments as the MHD glue collects them: MHD splits on `&` and `=` (a trailing
    /// `&` ends the list, an empty piece is an empty name) and turns `+` into a space; the glue
    /// percent-decodes, skips a name that does not decode, and keeps the first value of a name.
    static func arguments(_ query: Substring) -> [String: String] {
        var arguments: [String: String] = [:]
        var pieces = query.split(separator: "&", omittingEmptySubsequences: false)
        if pieces.last?.isEmpty == true { pieces.removeLast() }
        for piece in pieces {
            let name: Substring
            let value: Substring?
            if let equals = piece.firstIndex(of: "=") {
                name = piece[..<equals]
                value = piece[piece.index(after: equals)...]
            } else {
                name = piece
                value = nil
            }
            guard let decodedName = PercentDecoding.decode(name, plusAsSpace: true) else { continue }
            let decoded = value.flatMap { PercentDecoding.decode($0, plusAsSpace: true) } ?? ""
            if arguments[decodedName] == nil { arguments[decodedName] = decoded }
        }
        return arguments
    }

    /// Whether the request's `Connection` field lists `close`, after which MHD closes.
    static func asksToClose(_ headers: HTTPHeaders) -> Bool {
        headers.values(for: "Connection").contains { value in
            value.split(separator: ",").contains { HTTPHeaders.equalIgnoringCase($0.trimmingOWS(), "close") }
        }
    }

    /// The response with the headers the socket adds, in wire order: MHD's `Date` and
    /// `Connection: close` first, the response's own, the request id, the security headers and
    /// the default CSP and Cache-Control the glue adds, then MHD's `Content-Length` (which for a
    /// 304 still gives the length of the body it does not send).
    static func response(
        _ prepared: PreparedResponse, method: String, cacheControl: String, closesConnection: Bool
    ) -> HTTPResponse {
        let response = prepared.response
        var headers = HTTPHeaders()
        headers.add("Date", httpDate(time(nil)))
        if closesConnection && !response.headers.contains("Connection") { headers.add("Connection", "close") }
        for field in response.headers { headers.add(field.name, field.value) }
        headers.add(StaticHeader.requestID.description, prepared.requestID)
        for header in StaticHeader.security { headers.add(header.name.description, header.value.description) }
        if prepared.addDefaultCSP {
            headers.add(StaticHeader.csp.name.description, StaticHeader.csp.value.description)
        }
        if prepared.addDefaultCacheControl {
            headers.add(StaticHeader.cacheControl.description, cacheControl)
        }
        // RFC 9110 §6.4.1: 1xx and 204 have no content and MHD sends no length for them; a 304's
        // body is not sent either, but MHD announces its length, as for HEAD.
        let status = response.status
        let lengthless = (100..<200).contains(status) || status == 204
        if !lengthless { headers.add("Content-Length", String(response.body.count)) }
        let bodyless = lengthless || status == 304 || method == "HEAD"
        return HTTPResponse(status: status, headers: headers, body: bodyless ? [] : response.body)
    }

    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]

    /// An IMF-fixdate (RFC 9110 §5.6.7), as MHD writes `Date`; by hand, since strftime's names
    /// follow the locale.
    static func httpDate(_ seconds: time_t) -> String {
        var clock = seconds
        var parts = tm()
        gmtime_r(&clock, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return
            "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
