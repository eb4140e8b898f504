import Kernel

/// A request handler: synchronous, run on one of the server's threads.
public typealias HTTPHandler = @Sendable (HTTPRequest) throws -> HTTPResponse

/// A request handler that awaits something slow (a call to BankID, a commit that suspends): it
/// starts on the thread that took the request and, once it awaits, only its connection waits (its
/// own thread, or suspended in a worker pool); the response is sent when it returns.
public typealias AsyncHTTPHandler = @Sendable (HTTPRequest) async throws -> HTTPResponse

/// Why a request went to the router's fallback instead of a route.
public enum FallbackReason: Sendable, Hashable {
    /// No route has the path.
    case notFound
    /// The path has routes, but none for this method; `allowed` is what `Allow` would list.
    case methodNotAllowed(allowed: [HTTPMethod])
    /// The body was larger than `maxBodyBytes` (the request's `body` is empty); `limit` is that limit.
    case bodyTooLarge(limit: Int)
}

/// The handler for requests no route takes (see `Router.fallback`), told why.
public typealias HTTPFallbackHandler = @Sendable (HTTPRequest, FallbackReason) throws -> HTTPResponse

/// What the router knows about one route, for documentation (OpenAPI) and tests. Two
/// descriptions are equal when their method, pattern, summary, class and parameters are: the
/// contract is documentation, not identity.
public struct RouteDescription: Sendable, Hashable {
    /// The method.
    public let method: HTTPMethod
    /// The pattern, e.g. `/v1/me/sessions/{id}`.
    public let pattern: String
    /// A one-line summary for the API document.
    public let summary: String
    /// The rate-limit class requests to this route count against.
    public let rateClass: RateClass
    /// The names of the pattern's `{name}` segments, in order.
    public let parameters: [String]
    /// Its body, query, answers and security, for the API document.
    public let contract: RouteContract

    public static func == (lhs: RouteDescription, rhs: RouteDescription) -> Bool {
        lhs.method == rhs.method && lhs.pattern == rhs.pattern && lhs.summary == rhs.summary
            && lhs.rateClass == rhs.rateClass && lhs.parameters == rhs.parameters
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(method)
        hasher.combine(pattern)
    }
}

/// The routing table: routes are added before the server starts and never change afterwards
/// (the server copies this value when it is created).
public struct Router: Sendable {
    /// One route, shared by reference: every request it answers gets it from the compiled
    /// router, and a copy of the value (a dozen references: strings, arrays, the contract, the
    /// handlers) was retained and released field by field several times per request.
    /// Immutable, so sharing changes nothing a copy could observe.
    final class Route: Sendable {
        let description: RouteDescription
        let segments: [PatternSegment]
        let handler: Handler

        init(description: RouteDescription, segments: [PatternSegment], handler: Handler) {
            self.description = description
            self.segments = segments
            self.handler = handler
        }
    }

    /// What answers a route's requests. A case of its own for each kind, not an optional async
    /// handler beside a synchronous one: a closure kept in an `Optional` (a generic type) is called
    /// through reabstraction thunks, which for an async closure are async frames of their own, on
    /// every request.
    enum Handler: Sendable {
        case sync(HTTPHandler)
        case async(AsyncHTTPHandler)
        /// A synchronous handler that waits for others (`addBlocking`).
        case blocking(HTTPHandler)
    }

    enum PatternSegment: Sendable, Hashable {
        case literal(String)
        case parameter(String)
    }

    /// The handler for requests no route takes, with the rate class it counts against.
    struct Fallback: Sendable {
        let rateClass: RateClass
        let handler: HTTPFallbackHandler
    }

    private(set) var table: [Route] = []
    private(set) var fallback: Fallback?

    /// Creates an empty router.
    public init() {}

    /// Every route, in registration order.
    public var routes: [RouteDescription] { table.map(\.description) }

    /// Registers a route.
    /// - Parameters:
    ///   - method: the method; HEAD is served by the GET route and OPTIONS by the router.
    ///   - pattern: a path starting with `/`; a whole segment `{name}` captures one segment.
    ///   - rateClass: the rate-limit class (`.unlimited` for none).
    ///   - summary: a one-line description for the API document.
    ///   - contract: the body, query, answers and security the API document describes.
    ///   - handler: the handler.
    /// - Precondition: the pattern is well formed and the method/pattern pair is new; a bad route
    ///   table is a programming error that must stop the server from starting.
    public mutating func add(
        _ method: HTTPMethod, _ pattern: String, rateClass: RateClass, summary: String,
        contract: RouteContract = .undocumented, handler: @escaping HTTPHandler
    ) {
        add(method, pattern, rateClass: rateClass, summary: summary, contract: contract, .sync(handler))
    }

    /// The one registration behind `add`, `addAsync` and `addBlocking`.
    private mutating func add(
        _ method: HTTPMethod, _ pattern: String, rateClass: RateClass, summary: String,
        contract: RouteContract, _ handler: Handler
    ) {
        precondition(method != .HEAD && method != .OPTIONS, "HEAD and OPTIONS are answered by the router")
        let segments = Self.parsePattern(pattern)
        precondition(
            !table.contains { $0.description.method == method && $0.segments == segments },
            "duplicate route \(method.rawValue) \(pattern)")
        let parameters = segments.compactMap { segment -> String? in
            if case .parameter(let name) = segment { name } else { nil }
        }
        precondition(Set(parameters).count == parameters.count, "repeated parameter name in \(pattern)")
        table.append(
            Route(
                description: RouteDescription(
                    method: method, pattern: pattern, summary: summary, rateClass: rateClass,
                    parameters: parameters, contract: contract),
                segments: segments, handler: handler))
    }

    /// Registers a route whose handler awaits something slow. Only its connection waits while it
    /// runs (on its own thread, or suspended with libmicrohttpd's suspend/resume in a worker pool),
    /// so no other request waits behind it; everything else (rate limits, CORS, headers, the
    /// access log) is as for `add`.
    public mutating func addAsync(
        _ method: HTTPMethod, _ pattern: String, rateClass: RateClass, summary: String,
        contract: RouteContract = .undocumented, handler: @escaping AsyncHTTPHandler
    ) {
        add(method, pattern, rateClass: rateClass, summary: summary, contract: contract, .async(handler))
    }

    /// Registers a route whose synchronous handler may wait for others: a commit queued behind
    /// other requests' writes. On a connection's own thread it runs there, as an `add` route's
    /// does. On a worker of a pool, which serves many connections, it runs on one of the threads
    /// of `BlockingHandlerThreads` instead, with its connection parked, so the worker goes on
    /// serving its other connections while this one waits. Everything else is as for `add`.
    public mutating func addBlocking(
        _ method: HTTPMethod, _ pattern: String, rateClass: RateClass, summary: String,
        contract: RouteContract = .undocumented, handler: @escaping HTTPHandler
    ) {
        add(method, pattern, rateClass: rateClass, summary: summary, contract: contract, .blocking(handler))
    }

    /// Answers what the engine would otherwise refuse itself with a problem: an unknown path (404),
    /// a method the path lacks (405) and a body over `maxBodyBytes` (413). Without a fallback those
    /// stay `application/problem+json`; a server whose clients expect errors of another shape (the
    /// BankID simulator, whose clients parse BankID's `errorCode` bodies) answers them here.
    ///
    /// Everything else is as for a route: the request counts against `rateClass`, the handler's
    /// response gets the request id, security headers and CORS, a thrown error is mapped, and the
    /// access log has the line (with no route). The request's `route` is `*`. Not sent here: OPTIONS
    /// for a path that has routes (`Allow` and CORS preflight), HEAD for a GET route, and method
    /// tokens `HTTPMethod` does not name, which the engine answers 405 or 501 itself (a handler
    /// could not be told the method).
    /// - Parameters:
    ///   - rateClass: the rate-limit class these requests count against (`.unlimited` for none).
    ///   - handler: the handler, told why no route took the request.
    /// - Precondition: no fallback was set before.
    public mutating func fallback(rateClass: RateClass, handler: @escaping HTTPFallbackHandler) {
        precondition(fallback == nil, "the router already has a fallback")
        fallback = Fallback(rateClass: rateClass, handler: handler)
    }

    static func parsePattern(_ pattern: String) -> [PatternSegment] {
        precondition(pattern.hasPrefix("/"), "route pattern must start with /: \(pattern)")
        return splitPath(pattern).map { segment in
            if segment.hasPrefix("{") && segment.hasSuffix("}") && segment.count > 2 {
                let name = String(segment.dropFirst().dropLast())
                precondition(!name.contains("{") && !name.contains("}"), "bad parameter in \(pattern)")
                return .parameter(name)
            }
            precondition(
                !segment.contains("{") && !segment.contains("}"),
                "braces must wrap a whole segment: \(pattern)")
            return .literal(String(segment))
        }
    }

    /// Splits `/a/b` into `["a", "b"]`; `/` is no segments, and a trailing `/` an empty last one,
    /// so `/a/` and `/a` stay different resources.
    static func splitPath(_ path: some StringProtocol) -> [Substring] {
        let body = Substring(path).dropFirst()
        if body.isEmpty { return [] }
        return body.split(separator: "/", omittingEmptySubsequences: false)
    }
}

/// The router compiled into a segment tree for matching; immutable, shared by all threads.
final class CompiledRouter: Sendable {
    /// A route found for a request.
    struct Match {
        let route: Router.Route
        let parameters: [String: String]
    }

    /// What the router decided for a method and path.
    enum Outcome {
        /// A route handles it.
        case matched(Match)
        /// The path exists but not with this method; lists the methods it has, for `Allow`.
        case methodNotAllowed([HTTPMethod])
        /// No route has this path.
        case notFound
    }

    final class Node: Sendable {
        let literals: [String: Node]
        let parameter: (name: String, node: Node)?
        let handlers: [HTTPMethod: Router.Route]

        init(
            literals: [String: Node], parameter: (name: String, node: Node)?,
            handlers: [HTTPMethod: Router.Route]
        ) {
            self.literals = literals
            self.parameter = parameter
            self.handlers = handlers
        }
    }

    let root: Node
    let routes: [RouteDescription]
    /// Where requests no route takes go, when the server has one.
    let fallback: Router.Fallback?
    /// Routes without parameters by their exact path: most requests (health checks, the API's
    /// fixed endpoints) are answered by one hash lookup instead of splitting and walking the tree.
    private let exactRoutes: [String: [HTTPMethod: Router.Route]]

    init(_ router: Router) {
        routes = router.routes
        fallback = router.fallback
        root = Self.build(router.table.map { ($0.segments[...], $0) })
        var exact: [String: [HTTPMethod: Router.Route]] = [:]
        for route in router.table where route.description.parameters.isEmpty {
            exact[route.description.pattern, default: [:]][route.description.method] = route
        }
        exactRoutes = exact
    }

    private static func build(_ entries: [(ArraySlice<Router.PatternSegment>, Router.Route)]) -> Node {
        var handlers: [HTTPMethod: Router.Route] = [:]
        var literalGroups: [String: [(ArraySlice<Router.PatternSegment>, Router.Route)]] = [:]
        var parameterGroup: [(ArraySlice<Router.PatternSegment>, Router.Route)] = []
        var parameterName: String?
        for (segments, route) in entries {
            guard let first = segments.first else {
                handlers[route.description.method] = route
                continue
            }
            switch first {
            case .literal(let text): literalGroups[text, default: []].append((segments.dropFirst(), route))
            case .parameter(let name):
                // One parameter child per node: `/a/{id}` and `/a/{key}` would be ambiguous.
                precondition(
                    parameterName == nil || parameterName == name,
                    "conflicting parameter names at \(route.description.pattern)")
                parameterName = name
                parameterGroup.append((segments.dropFirst(), route))
            }
        }
        return Node(
            literals: literalGroups.mapValues { build($0) },
            parameter: parameterName.map { ($0, build(parameterGroup)) },
            handlers: handlers)
    }

    /// Whether `path` holds a `%`, reading its contiguous UTF-8 as a buffer (iterating the
    /// `UTF8View` checked an index per byte: ~430 Ir for a 30-byte path, on every request).
    private static func hasPercent(_ path: String) -> Bool {
        path.utf8.withContiguousStorageIfAvailable { $0.contains(UInt8(ascii: "%")) }
            ?? path.utf8.contains(UInt8(ascii: "%"))
    }

    /// Routes a method and raw (percent-encoded) path. HEAD falls back to GET.
    func route(_ method: HTTPMethod?, path: String) -> Outcome {
        // A literal match is what the tree search would find first too (literals win), so the
        // shortcut cannot change an answer. Escaped paths take the full route to be decoded.
        if let method, let handlers = exactRoutes[path], !Self.hasPercent(path),
            let route = handlers[method] ?? (method == .HEAD ? handlers[.GET] : nil)
        {
            return .matched(Match(route: route, parameters: [:]))
        }
        let raw = Router.splitPath(path)
        var decoded: [String] = []
        decoded.reserveCapacity(raw.count)
        for segment in raw {
            guard let text = PercentDecoding.decode(segment, plusAsSpace: false) else { return .notFound }
            decoded.append(text)
        }
        var captured: [String] = []
        if let method {
            let lookup: (Node) -> Router.Route? = { node in
                node.handlers[method] ?? (method == .HEAD ? node.handlers[.GET] : nil)
            }
            if let (node, route) = find(root, decoded[...], &captured, accept: lookup) {
                _ = node
                var parameters: [String: String] = [:]
                let names = route.description.parameters
                for (index, name) in names.enumerated() { parameters[name] = captured[index] }
                return .matched(Match(route: route, parameters: parameters))
            }
        }
        captured.removeAll()
        if let (node, _) = find(root, decoded[...], &captured, accept: { $0.handlers.values.first }) {
            return .methodNotAllowed(Self.allowed(node))
        }
        return .notFound
    }

    /// Every method a path accepts, for `Allow` and preflight answers; nil when no route has it.
    func allowedMethods(path: String) -> [HTTPMethod]? {
        if case .methodNotAllowed(let methods) = route(nil, path: path) { return methods }
        return nil
    }

    private static func allowed(_ node: Node) -> [HTTPMethod] {
        var methods = Set(node.handlers.keys)
        if methods.contains(.GET) { methods.insert(.HEAD) }
        methods.insert(.OPTIONS)
        return methods.sorted()
    }

    /// Depth-first search with literal segments tried before the parameter, backtracking so a
    /// literal dead end (`/a/b/x` against `/a/b/y` and `/a/{p}/x`) still reaches the parameter.
    private func find(
        _ node: Node, _ segments: ArraySlice<String>, _ captured: inout [String],
        accept: (Node) -> Router.Route?
    ) -> (Node, Router.Route)? {
        guard let segment = segments.first else {
            return accept(node).map { (node, $0) }
        }
        let rest = segments.dropFirst()
        if let child = node.literals[segment], let found = find(child, rest, &captured, accept: accept) {
            return found
        }
        if let (_, child) = node.parameter {
            captured.append(segment)
            if let found = find(child, rest, &captured, accept: accept) { return found }
            captured.removeLast()
        }
        return nil
    }
}

/// Percent-decoding for path segments and query components.
enum PercentDecoding {
    /// Decodes `%XX` escapes (and `+` as space in queries); nil for a broken escape or bad UTF-8.
    static func decode(_ text: some StringProtocol, plusAsSpace: Bool) -> String? {
        let utf8 = text.utf8
        // The common case has nothing to decode: return without building a byte buffer.
        if !utf8.contains(UInt8(ascii: "%")) && !(plusAsSpace && utf8.contains(UInt8(ascii: "+"))) {
            return String(text)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var iterator = utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue),
                    let low = iterator.next().flatMap(hexValue)
                else {
                    return nil
                }
                bytes.append(high << 4 | low)
            case UInt8(ascii: "+") where plusAsSpace:
                bytes.append(UInt8(ascii: " "))
            default:
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
