import Foundation
import HTTPEngine
import Kernel
import Synchronization
import TestSupport

/// Collects access-log lines from the server's threads.
final class LogSink: Sendable {
    private let lines = Mutex<[String]>([])

    func append(_ line: String) { lines.withLock { $0.append(line) } }

    var all: [String] { lines.withLock { $0 } }
}

struct Echo: Codable, Equatable {
    var name: String
    var count: Int
}

/// A router with the routes most tests use.
func testRouter() -> Router {
    var router = Router()
    router.add(.GET, "/v1/items/{id}", rateClass: .unlimited, summary: "Get an item") { request in
        try .json(["id": request.pathParameters["id"] ?? "", "route": request.route])
    }
    router.add(.GET, "/v1/items/special", rateClass: .unlimited, summary: "The special item") { _ in
        try .json(["id": "literal"])
    }
    router.add(.DELETE, "/v1/items/{id}", rateClass: .unlimited, summary: "Delete an item") { _ in .noContent
    }
    router.add(.POST, "/v1/echo", rateClass: .unlimited, summary: "Echo a JSON body") { request in
        try .json(try request.decodeJSON(Echo.self), status: 201)
    }
    router.add(.GET, "/v1/whoami", rateClass: .unlimited, summary: "The client address") { request in
        try .json(["clientIp": request.clientIP, "peer": request.peerAddress])
    }
    router.add(.GET, "/v1/search", rateClass: .unlimited, summary: "Echo a query parameter") { request in
        try .json(["q": request.query["q"] ?? ""])
    }
    router.add(.GET, "/v1/boom", rateClass: .unlimited, summary: "Fails with a non-HTTP error") { _ in
        throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: "/secret/path/token-abc"])
    }
    router.add(.GET, "/v1/limited", rateClass: .strict, summary: "Rate limited") { _ in .text("ok") }
    router.add(.GET, "/v1/page", rateClass: .unlimited, summary: "A page with its own CSP and caching") { _ in
        var response = HTTPResponse.html("<p>hi</p>")
        response.headers.set("Content-Security-Policy", "default-src 'self'")
        response.headers.set("Cache-Control", "public, max-age=60")
        return response
    }
    return router
}

/// Starts a server on a free port, runs `body`, and shuts the server down.
func withServer(
    _ configuration: HTTPServerConfiguration = HTTPServerConfiguration(threads: 2),
    router: Router = testRouter(), clock: any MonotonicClock = SystemMonotonicClock(),
    _ body: (_ base: String, _ log: LogSink, _ server: HTTPServer) throws -> Void
) throws {
    let log = LogSink()
    // The test router's limited route needs its class configured; tests of the limit set their own.
    var configuration = configuration
    if configuration.rateLimits[.strict] == nil {
        configuration.rateLimits[.strict] = RateLimit(burst: 10_000, perSecond: 10_000)
    }
    let server = try HTTPServer(
        configuration: configuration, router: router, accessLog: log.append, clock: clock)
    let port = try server.start()
    defer { server.shutdown(grace: 1) }
    try body("http://127.0.0.1:\(port)", log, server)
}

extension RateClass {
    /// The test router's limited class.
    static let strict = RateClass("strict")
}
