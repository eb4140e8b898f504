import Glibc
import Kernel
import Synchronization

/// A response ready for the wire, with the server's own headers still to add.
struct PreparedResponse: Sendable {
    /// The response with the handler's headers and the request-dependent ones.
    let response: HTTPResponse
    /// Sent as X-Request-Id.
    let requestID: String
    /// Whether to add `Content-Security-Policy: frame-ancestors 'none'`.
    let addDefaultCSP: Bool
    /// Whether to add the configured Cache-Control.
    let addDefaultCacheControl: Bool
}

/// How the pipeline answers: at once (every synchronous route, errors, preflights), or later,
/// when an async route's handler returns (the MHD glue suspends the connection meanwhile).
enum PipelineAnswer {
    /// The response is ready.
    case now(PreparedResponse)
    /// Run this to get the response; it finalizes headers and writes the access log itself.
    case later(@Sendable () async -> PreparedResponse)
}

/// A request as read off the wire, before routing.
struct IncomingRequest {
    let methodToken: String
    let path: String
    let query: [String: String]
    let headers: HTTPHeaders
    let body: [UInt8]
    let peer: IPAddress
    /// Set when the body was (or announced it would be) larger than `maxBodyBytes`.
    let bodyTooLarge: Bool
    /// Set when the header block's framing was refused (`RequestFraming`): answered with this
    /// problem, unrouted, and the connection closed.
    var refusal: HTTPError? = nil
    let startNanoseconds: UInt64
}

/// Everything between bytes read and bytes written that does not touch libmicrohttpd: request id,
/// client address, CORS, routing, rate limiting, the handler, error mapping, headers, access log.
///
/// Kept apart from the C glue so the policy reads as Swift and the glue stays small.
final class RequestPipeline: Sendable {
    let configuration: HTTPServerConfiguration
    let router: CompiledRouter
    let resolver: ClientIPResolver
    let limiter: RateLimiter
    let clock: any MonotonicClock
    let accessLog: @Sendable (String) -> Void
    /// Requests by route and status, and latencies; nil when not collected.
    let metrics: HTTPMetrics?
    private let allowedOrigins: Set<String>
    private let corsAllowHeaders: String
    private let corsExposeHeaders: String
    private let corsMaxAge: String

    init(
        configuration: HTTPServerConfiguration, router: Router, clock: any MonotonicClock,
        accessLog: @escaping @Sendable (String) -> Void, metrics: HTTPMetrics? = nil
    ) throws(HTTPServerError) {
        self.metrics = metrics
        self.configuration = configuration
        self.router = CompiledRouter(router)
        self.resolver = try ClientIPResolver(trustedProxies: configuration.trustedProxies)
        // A class without a limit would leave its routes open to any rate: refuse to start.
        if let route = router.routes.first(where: {
            $0.rateClass != .unlimited && configuration.rateLimits[$0.rateClass] == nil
        }) {
            throw HTTPServerError(
                .invalidConfiguration,
                "\(route.method.rawValue) \(route.pattern) counts against rate class '\(route.rateClass)', which has no limit"
            )
        }
        if let fallback = router.fallback, fallback.rateClass != .unlimited,
            configuration.rateLimits[fallback.rateClass] == nil
        {
            throw HTTPServerError(
                .invalidConfiguration,
                "the fallback counts against rate class '\(fallback.rateClass)', which has no limit")
        }
        self.limiter = RateLimiter(
            limits: configuration.rateLimits, maxTrackedClients: configuration.maxTrackedClients, clock: clock
        )
        self.clock = clock
        self.accessLog = accessLog
        allowedOrigins = Set(configuration.cors.allowedOrigins)
        // Joined once here rather than on every preflight.
        corsAllowHeaders = configuration.cors.allowedHeaders.joined(separator: ", ")
        corsExposeHeaders = configuration.cors.exposedHeaders.joined(separator: ", ")
        corsMaxAge = String(configuration.cors.maxAgeSeconds)
    }

    /// Answers a request completely and writes its access-log line. The headers every response
    /// carries are not in the returned response: `PreparedResponse` says which to add, and the
    /// MHD glue adds them from static C strings (this runs for every request).
    /// - Parameter closeConnection: adds `Connection: close`, used while draining for shutdown.
    func respond(to incoming: IncomingRequest, closeConnection: Bool) -> PipelineAnswer {
        // A refused framing leaves the rest of the stream unreadable: the connection must close.
        let closeConnection = closeConnection || incoming.refusal != nil
        let requestID = RequestID.accept(incoming.headers["X-Request-Id"]) ?? RequestID.generate()
        let clientAddress = resolver.resolve(peer: incoming.peer, headers: incoming.headers)
        // Formatted once: the handler's request and the access log both need the text.
        let client = clientAddress.description
        let corsOrigin = incoming.headers["Origin"].flatMap { allowedOrigins.contains($0) ? $0 : nil }
        let method = HTTPMethod(token: incoming.methodToken)
        var routePattern: String?
        var response: HTTPResponse

        if let refusal = incoming.refusal {
            // No route, no fallback, no handler: the request is not trusted to be one request.
            response = .error(refusal)
        } else if incoming.bodyTooLarge {
            response = unrouted(
                .bodyTooLarge(limit: configuration.maxBodyBytes), method: method, incoming: incoming,
                clientAddress: clientAddress, client: client, requestID: requestID)
        } else if method == .OPTIONS {
            response =
                options(path: incoming.path, headers: incoming.headers, corsOrigin: corsOrigin)
                ?? unrouted(
                    .notFound, method: method, incoming: incoming, clientAddress: clientAddress,
                    client: client, requestID: requestID)
        } else {
            switch router.route(method, path: incoming.path) {
            case .matched(let match):
                routePattern = match.route.description.pattern
                // The limit is checked before the handler runs or suspends: a refusal costs neither.
                if case .limited(let seconds) = limiter.check(
                    routeClass: match.route.description.rateClass, client: clientAddress)
                {
                    response = .error(HTTPError.rateLimited(retryAfterSeconds: seconds))
                    break
                }
                // A nested function, not a closure value: nothing is allocated for it per request.
                func later(_ handler: @escaping AsyncHTTPHandler) -> PipelineAnswer {
                    .later(
                        deferred(
                            match, handler: handler, method: method ?? .GET, incoming: incoming,
                            client: client, requestID: requestID, corsOrigin: corsOrigin,
                            closeConnection: closeConnection))
                }
                switch match.route.handler {
                case .async(let handler):
                    return later(handler)
                case .blocking(let handler) where !InlineExecutor.currentThreadMayBlock:
                    // A pool's worker serves other connections meanwhile.
                    return later { try await BlockingHandlerThreads.run(handler, $0) }
                case .sync(let handler), .blocking(let handler):
                    guard
                        let answered = invoke(
                            match, handler, method: method ?? .GET, incoming: incoming, client: client,
                            requestID: requestID)
                    else {
                        // The handler was about to wait where it must not: it runs once more on a
                        // thread that may, as a blocking route's does.
                        return later { try await BlockingHandlerThreads.run(handler, $0) }
                    }
                    response = answered
                }
            case .methodNotAllowed(let allowed):
                response = unrouted(
                    .methodNotAllowed(allowed: allowed), method: method, incoming: incoming,
                    clientAddress: clientAddress, client: client, requestID: requestID)
            case .notFound:
                response = unrouted(
                    .notFound, method: method, incoming: incoming, clientAddress: clientAddress,
                    client: client, requestID: requestID)
            }
        }

        if response.dropsConnection {
            // Nothing will be sent, so there are no headers to settle; the log says status 0.
            metrics?.record(
                route: routePattern, status: 0, nanoseconds: clock.nanoseconds() &- incoming.startNanoseconds)
            logRequest(
                method: incoming.methodToken, route: routePattern, status: 0,
                start: incoming.startNanoseconds, requestID: requestID, client: client)
            return .now(Self.dropped(requestID: requestID))
        }
        let defaults = finalize(&response, corsOrigin: corsOrigin, closeConnection: closeConnection)
        metrics?.record(
            route: routePattern, status: response.status,
            nanoseconds: clock.nanoseconds() &- incoming.startNanoseconds)
        logRequest(
            method: incoming.methodToken, route: routePattern, status: response.status,
            start: incoming.startNanoseconds, requestID: requestID, client: client)
        return .now(
            PreparedResponse(
                response: response, requestID: requestID, addDefaultCSP: defaults.csp,
                addDefaultCacheControl: defaults.cacheControl))
    }

    /// An async route's work: the handler, then the headers and the access log.
    private func deferred(
        _ match: CompiledRouter.Match, handler: @escaping AsyncHTTPHandler, method: HTTPMethod,
        incoming: IncomingRequest, client: String, requestID: String, corsOrigin: String?,
        closeConnection: Bool
    ) -> @Sendable () async -> PreparedResponse {
        let route = match.route.description
        let request = HTTPRequest(
            method: method, path: incoming.path, query: incoming.query, headers: incoming.headers,
            body: incoming.body, peerAddress: incoming.peer.description, clientIP: client,
            requestID: requestID, pathParameters: match.parameters, route: route.pattern)
        let methodToken = incoming.methodToken
        let start = incoming.startNanoseconds
        return { [self] in
            let response: HTTPResponse
            do {
                do {
                    response = try await handler(request)
                } catch is InlineExecutor.WouldBlock {
                    // It was about to wait where it must not, before changing anything: once
                    // more, from a thread that may wait.
                    response = try await BlockingHandlerThreads.run(handler, request)
                }
            } catch {
                response = self.answer(for: error, route: route.pattern, requestID: requestID)
            }
            return self.prepare(
                response, method: methodToken, route: route.pattern, start: start, requestID: requestID,
                client: client, corsOrigin: corsOrigin, closeConnection: closeConnection)
        }
    }

    /// Finalizes and logs a response produced after the request was first seen.
    func prepare(
        _ response: HTTPResponse, method: String, route: String?, start: UInt64, requestID: String,
        client: String,
        corsOrigin: String?, closeConnection: Bool
    ) -> PreparedResponse {
        var response = response
        // Counted like every other route's answer: async routes (BankID start and cancel) are
        // in the metrics too.
        let status = response.dropsConnection ? 0 : response.status
        metrics?.record(route: route, status: status, nanoseconds: clock.nanoseconds() &- start)
        if response.dropsConnection {
            logRequest(
                method: method, route: route, status: 0, start: start, requestID: requestID, client: client)
            return Self.dropped(requestID: requestID)
        }
        let defaults = finalize(&response, corsOrigin: corsOrigin, closeConnection: closeConnection)
        logRequest(
            method: method, route: route, status: response.status, start: start, requestID: requestID,
            client: client)
        return PreparedResponse(
            response: response, requestID: requestID, addDefaultCSP: defaults.csp,
            addDefaultCacheControl: defaults.cacheControl)
    }

    /// The answer owed to a request waiting for its async handler when the server stops first.
    func unavailable(requestID: String) -> PreparedResponse {
        var response = HTTPResponse.error(HTTPError.serverStopping)
        _ = finalize(&response, corsOrigin: nil, closeConnection: true)
        return PreparedResponse(
            response: response, requestID: requestID, addDefaultCSP: true, addDefaultCacheControl: true)
    }

    /// What the MHD glue gets for `HTTPResponse.dropConnection`: it closes without answering.
    private static func dropped(requestID: String) -> PreparedResponse {
        PreparedResponse(
            response: .dropConnection, requestID: requestID, addDefaultCSP: false,
            addDefaultCacheControl: false)
    }

    /// A request no route takes: the router's fallback answers when there is one and it can be told
    /// the method, else the engine's own problem (404, 405 with Allow, 413, or 501).
    private func unrouted(
        _ reason: FallbackReason, method: HTTPMethod?, incoming: IncomingRequest, clientAddress: IPAddress,
        client: String, requestID: String
    ) -> HTTPResponse {
        guard let fallback = router.fallback, let method else {
            switch reason {
            case .bodyTooLarge(let limit): return .error(HTTPError.bodyTooLarge(limit: limit))
            case .methodNotAllowed(let allowed):
                // The resource exists: whatever the token, `Allow` tells the client what works.
                return .error(HTTPError.methodNotAllowed(allowed: allowed))
            case .notFound:
                // No resource and a token no HTTP specification defines: 501 (RFC 9110 §15.6.2).
                return .error(
                    method == nil && !Self.isStandardMethod(incoming.methodToken)
                        ? HTTPError.methodNotImplemented() : HTTPError.notFound())
            }
        }
        if case .limited(let seconds) = limiter.check(routeClass: fallback.rateClass, client: clientAddress) {
            return .error(HTTPError.rateLimited(retryAfterSeconds: seconds))
        }
        let request = HTTPRequest(
            method: method, path: incoming.path, query: incoming.query, headers: incoming.headers,
            body: incoming.bodyTooLarge ? [] : incoming.body, peerAddress: incoming.peer.description,
            clientIP: client, requestID: requestID, route: Self.fallbackRoute)
        return run(route: Self.fallbackRoute, requestID: requestID) { try fallback.handler(request, reason) }
    }

    /// The `route` a fallback's request carries: no pattern matched.
    static let fallbackRoute = "*"

    /// RFC 9110 methods we do not serve still deserve 405 rather than "not implemented".
    private static func isStandardMethod(_ token: String) -> Bool {
        token == "TRACE" || token == "CONNECT"
    }

    /// A synchronous route's answer; nil when its handler threw `InlineExecutor.WouldBlock` (it
    /// is to run again where it may wait).
    private func invoke(
        _ match: CompiledRouter.Match, _ handler: HTTPHandler, method: HTTPMethod, incoming: IncomingRequest,
        client: String, requestID: String
    ) -> HTTPResponse? {
        let route = match.route.description
        let request = HTTPRequest(
            method: method, path: incoming.path, query: incoming.query, headers: incoming.headers,
            body: incoming.body, peerAddress: incoming.peer.description, clientIP: client,
            requestID: requestID, pathParameters: match.parameters, route: route.pattern)
        var wouldBlock = false
        let response = run(route: route.pattern, requestID: requestID) {
            do {
                return try handler(request)
            } catch is InlineExecutor.WouldBlock {
                wouldBlock = true
                return .noContent
            }
        }
        return wouldBlock ? nil : response
    }

    /// Runs a synchronous handler; an error it throws is answered as `answer(for:route:requestID:)`
    /// says.
    private func run(route: String, requestID: String, _ handler: () throws -> HTTPResponse) -> HTTPResponse {
        do {
            return try handler()
        } catch {
            return answer(for: error, route: route, requestID: requestID)
        }
    }

    /// What a handler's error answers: an `HTTPResponseError` its problem, a dependency's failure
    /// its problem, anything else a 500 whose body says nothing and whose log line names only the
    /// error's type.
    private func answer(for error: any Error, route: String, requestID: String) -> HTTPResponse {
        switch error {
        case let error as any HTTPResponseError:
            return .error(error)
        case let failure as any DependencyFailure:
            return .error(DependencyProblem(failure: failure))
        default:
            // Only the type: an error's message can carry request data or secrets.
            accessLog(
                "{\"ts\":\"\(Self.timestamp())\",\"level\":\"error\",\"msg\":\"unhandled error\",\"errorType\":"
                    + "\(Self.jsonString(String(reflecting: type(of: error)))),\"route\":\(Self.jsonString(route)),"
                    + "\"requestId\":\(Self.jsonString(requestID))}")
            return .error(HTTPError.internal())
        }
    }

    /// OPTIONS: a CORS preflight from an allowed origin gets the CORS grant; anything else gets
    /// `Allow` only, which a browser treats as a refused preflight. Nil when no route has the path.
    private func options(path: String, headers: HTTPHeaders, corsOrigin: String?) -> HTTPResponse? {
        guard let allowed = router.allowedMethods(path: path) else { return nil }
        var response = HTTPResponse.noContent
        let allow = allowed.map(\.rawValue).joined(separator: ", ")
        response.headers.add("Allow", allow)
        if let corsOrigin, headers.contains("Access-Control-Request-Method") {
            response.headers.add("Access-Control-Allow-Origin", corsOrigin)
            response.headers.add("Access-Control-Allow-Methods", allow)
            response.headers.add("Access-Control-Allow-Headers", corsAllowHeaders)
            response.headers.add("Access-Control-Max-Age", corsMaxAge)
            if configuration.cors.allowCredentials {
                response.headers.add("Access-Control-Allow-Credentials", "true")
            }
        }
        return response
    }

    /// Settles the headers that depend on the handler or the request (CORS, Connection), and
    /// says whether the default CSP and Cache-Control are owed (a handler may set its own).
    private func finalize(
        _ response: inout HTTPResponse, corsOrigin: String?, closeConnection: Bool
    ) -> (csp: Bool, cacheControl: Bool) {
        // One scan for the fields a handler might have set, instead of a scan per header added:
        // this runs on every response.
        var hasCSP = false
        var hasCacheControl = false
        var hasAllowOrigin = false
        var hasFixed = false
        for field in response.headers {
            let name = field.name
            if HTTPHeaders.equalIgnoringCase(name, "Content-Security-Policy") {
                hasCSP = true
            } else if HTTPHeaders.equalIgnoringCase(name, "Cache-Control") {
                hasCacheControl = true
            } else if HTTPHeaders.equalIgnoringCase(name, "Access-Control-Allow-Origin") {
                hasAllowOrigin = true
            } else if Self.fixedHeaderNames.contains(where: { HTTPHeaders.equalIgnoringCase(name, $0) }) {
                hasFixed = true
            }
        }
        if hasFixed {
            // The request id and the security headers are the server's, not the handler's.
            for name in Self.fixedHeaderNames { response.headers.remove(name) }
        }
        if !allowedOrigins.isEmpty {
            // Answers differ by Origin whenever CORS is on, so shared caches must key on it.
            response.headers.add("Vary", "Origin")
            if let corsOrigin, !hasAllowOrigin {
                response.headers.add("Access-Control-Allow-Origin", corsOrigin)
                response.headers.add("Access-Control-Expose-Headers", corsExposeHeaders)
                if configuration.cors.allowCredentials {
                    response.headers.add("Access-Control-Allow-Credentials", "true")
                }
            }
        }
        if closeConnection { response.headers.set("Connection", "close") }
        return (!hasCSP, !hasCacheControl)
    }

    private static let fixedHeaderNames = [
        "X-Request-Id", "X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy",
    ]

    /// One JSON line per request: the route pattern, never the raw path, query, headers or body,
    /// so ids, tokens and personal data in URLs stay out of logs. Built as bytes in one reserved
    /// buffer: this runs for every request, and String appends cost several times more.
    private func logRequest(
        method: String, route: String?, status: Int, start: UInt64, requestID: String, client: String
    ) {
        let elapsed = clock.nanoseconds() &- start
        var line = LogLine()
        line.append("{\"ts\":\"")
        line.appendTimestamp()
        line.append("\",\"level\":\"info\",\"msg\":\"request\",\"method\":")
        // An unknown method token is client-chosen text: bound it before it reaches the log.
        line.appendJSONString(method.utf8.count <= 16 ? method : String(method.prefix(16)))
        line.append(",\"route\":")
        if let route { line.appendJSONString(route) } else { line.append("null") }
        line.append(",\"status\":")
        line.appendDecimal(UInt64(max(status, 0)))
        line.append(",\"durationMs\":")
        let micros = elapsed / 1_000
        line.appendDecimal(micros / 1_000)
        line.append(".")
        line.appendDecimal(micros % 1_000, width: 3)
        line.append(",\"requestId\":")
        line.appendJSONString(requestID)
        line.append(",\"clientIp\":")
        line.appendJSONString(client)
        line.append("}")
        accessLog(String(decoding: line.bytes, as: UTF8.self))
    }

    /// A JSON string literal with quotes, backslashes and control characters escaped.
    static func jsonString(_ text: String) -> String {
        var line = LogLine()
        line.appendJSONString(text)
        return String(decoding: line.bytes, as: UTF8.self)
    }

    /// The current UTC time as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    static func timestamp() -> String {
        var line = LogLine()
        line.appendTimestamp()
        return String(decoding: line.bytes, as: UTF8.self)
    }
}

/// Request ids: a client's own id is kept when it is safe to echo and log, otherwise a fresh one.
enum RequestID {
    /// The incoming id if it is 1...128 characters of `[A-Za-z0-9._-]`, else nil.
    static func accept(_ candidate: String?) -> String? {
        guard let candidate else { return nil }
        let utf8 = candidate.utf8
        guard (1...128).contains(utf8.count) else { return nil }
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "-"):
                continue
            default:
                return nil
            }
        }
        return candidate
    }

    private static let digits = Array("0123456789abcdef".utf8)

    /// Random per process, so ids from different instances and restarts do not collide.
    private static let processPrefix: UInt64 = UInt64.random(in: .min ... .max)
    private static let seed: UInt64 = UInt64.random(in: .min ... .max)
    private static let counter = Atomic<UInt64>(0)

    /// 32 lowercase hex digits: a random per-process prefix, then a counter scrambled by the
    /// SplitMix64 finaliser. The finaliser is a bijection, so ids never repeat within a process,
    /// and there is no getrandom system call per request. Ids need uniqueness, not secrecy.
    static func generate() -> String {
        var mixed = counter.add(1, ordering: .relaxed).newValue &+ seed
        mixed = (mixed ^ (mixed >> 30)) &* 0xbf58_476d_1ce4_e5b9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94d0_49bb_1331_11eb
        mixed ^= mixed >> 31
        let high = processPrefix
        let low = mixed
        return String(unsafeUninitializedCapacity: 32) { buffer in
            for index in 0..<16 {
                let word = index < 8 ? high : low
                let byte = UInt8(truncatingIfNeeded: word >> UInt64((7 - index % 8) * 8))
                buffer[index * 2] = digits[Int(byte >> 4)]
                buffer[index * 2 + 1] = digits[Int(byte & 0x0f)]
            }
            return 32
        }
    }
}
