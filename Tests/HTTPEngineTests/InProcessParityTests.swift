import Foundation
import HTTPEngine
import Kernel
import Synchronization
import TestSupport
import Testing

/// One request, sent the same way over a socket (libcurl) and in process.
struct ParityCase: Sendable, CustomTestStringConvertible {
    let label: String
    let method: String
    let path: String
    var headers: [(String, String)] = []
    var body: [UInt8]? = nil

    var testDescription: String { label }
}

/// Two servers built alike, one listening and one not, each fresh so rate-limit buckets and
/// request counts start equal.
private struct ServerPair {
    let live: HTTPServer
    let liveURL: String
    let inProcess: HTTPServer
    let endpoint: InProcessEndpoint
    let inProcessLog: LogSink

    init(_ configuration: HTTPServerConfiguration = parityConfiguration()) throws {
        live = try HTTPServer(configuration: configuration, router: parityRouter(), accessLog: { _ in })
        liveURL = "http://127.0.0.1:\(try live.start())"
        inProcessLog = LogSink()
        inProcess = try HTTPServer(
            configuration: configuration, router: parityRouter(), accessLog: inProcessLog.append)
        endpoint = InProcessEndpoint(inProcess)
    }

    func stop() {
        live.shutdown(grace: 1)
        endpoint.close()
    }

    /// The same request both ways.
    func exchange(_ parity: ParityCase) throws -> (socket: TestResponse, inProcess: TestResponse) {
        let socket = try HTTPTestClient().send(
            method: parity.method, url: liveURL + parity.path, headers: parity.headers, body: parity.body)
        let local = try InProcessHTTPClient().send(
            method: parity.method, url: endpoint.url + parity.path, headers: parity.headers, body: parity.body
        )
        return (socket, local)
    }
}

/// CORS for one origin, a trusted proxy, a small body limit, and a tight limit on `.strict`.
private func parityConfiguration() -> HTTPServerConfiguration {
    HTTPServerConfiguration(
        threads: 2, maxBodyBytes: 1024, trustedProxies: ["127.0.0.1"],
        cors: CORSPolicy(allowedOrigins: ["https://app.example"], allowCredentials: true),
        rateLimits: [.strict: RateLimit(burst: 2, perSecond: 0.001)])
}

/// The engine tests' router, plus async routes, a 304 and a route that shows the request as the
/// handler sees it.
private func parityRouter() -> Router {
    var router = testRouter()
    router.addAsync(.GET, "/v1/slow", rateClass: .unlimited, summary: "Answers after a suspension") { _ in
        try await Task.sleep(for: .milliseconds(20))
        return .text("slept")
    }
    router.addAsync(.POST, "/v1/slow/{id}", rateClass: .strict, summary: "Fails after a suspension") { _ in
        try await Task.sleep(for: .milliseconds(5))
        throw HTTPError(status: 409, code: "test.conflict", title: "Conflict")
    }
    router.addAsync(.GET, "/v1/slow-boom", rateClass: .unlimited, summary: "Throws a non-HTTP error") { _ in
        await Task.yield()
        throw CocoaError(.fileNoSuchFile)
    }
    router.add(.GET, "/v1/unchanged", rateClass: .unlimited, summary: "Not modified") { _ in
        HTTPResponse(status: 304, headers: ["ETag": "\"v1\""], body: Array("never sent".utf8))
    }
    router.add(.POST, "/v1/request/{rest}", rateClass: .unlimited, summary: "The request as seen") {
        request in
        let shown: [String: [String]] = [
            "method": [request.method.rawValue], "path": [request.path],
            "rest": [request.pathParameters["rest"] ?? "-"],
            "query": request.query.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" },
            "headers": request.headers.map { "\($0.name): [\($0.value)]" },
            "body": [String(decoding: request.body, as: UTF8.self)],
            "client": [request.clientIP, request.peerAddress],
        ]
        // Sorted keys: the bytes, and so Content-Length, must not depend on dictionary order.
        return HTTPResponse(
            status: 200, headers: ["Content-Type": "application/json"],
            body: Array(try JSONCoding.stableEncoder.encode(shown)))
    }
    return router
}

/// Asserts that two answers to the same request are the same: status, every header in order
/// (Date and X-Request-Id only present, their values differ by nature), and the body. JSON bodies
/// are compared as JSON: Foundation writes an object's members in hash order, which differs
/// between two responses of one process.
private func expectSame(
    _ socket: TestResponse, _ inProcess: TestResponse, _ label: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(socket.status == inProcess.status, "\(label): status", sourceLocation: sourceLocation)
    let comparable = { (response: TestResponse) in
        response.headers.map { field in
            ["date", "x-request-id"].contains(field.name.lowercased())
                ? "\(field.name): <varies>" : "\(field.name): \(field.value)"
        }
    }
    #expect(comparable(socket) == comparable(inProcess), "\(label): headers", sourceLocation: sourceLocation)
    for response in [socket, inProcess] {
        #expect(
            response.headers.values(for: "X-Request-Id").count == 1, "\(label)",
            sourceLocation: sourceLocation)
        let date = response.headers["Date"] ?? ""
        #expect(
            date.wholeMatch(of: /(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT/)
                != nil, "\(label): Date \(date)", sourceLocation: sourceLocation)
    }
    let json = { (response: TestResponse) in
        try? JSONSerialization.jsonObject(with: Data(response.body)) as? NSObject
    }
    if let left = json(socket), let right = json(inProcess) {
        #expect(left == right, "\(label): JSON body", sourceLocation: sourceLocation)
    } else {
        #expect(socket.body == inProcess.body, "\(label): body", sourceLocation: sourceLocation)
    }
}

/// The in-process answer against the socket's, request by request, so the in-process path
/// cannot drift from what clients get over the wire.
@Suite("In-process answers equal socket answers")
struct InProcessParityTests {
    static let cases: [ParityCase] = [
        ParityCase(label: "200 JSON with a path parameter", method: "GET", path: "/v1/items/a%20b"),
        ParityCase(label: "HEAD: GET's headers and length, no body", method: "HEAD", path: "/v1/items/7"),
        ParityCase(label: "404 problem", method: "GET", path: "/v1/nothing/here"),
        ParityCase(label: "405 with Allow", method: "PUT", path: "/v1/items/3", body: []),
        ParityCase(label: "501 for an unknown token", method: "BREW", path: "/v1/nowhere"),
        ParityCase(
            label: "201 from a JSON body", method: "POST", path: "/v1/echo",
            headers: [("Content-Type", "application/json")], body: Array(#"{"name":"a","count":2}"#.utf8)),
        ParityCase(
            label: "415 for curl's default form type", method: "POST", path: "/v1/echo",
            body: Array("name=a".utf8)),
        ParityCase(label: "a thrown error's 500 problem", method: "GET", path: "/v1/boom"),
        ParityCase(label: "a handler's own CSP and Cache-Control", method: "GET", path: "/v1/page"),
        ParityCase(label: "304: no body, its length announced", method: "GET", path: "/v1/unchanged"),
        ParityCase(
            label: "CORS preflight from the listed origin", method: "OPTIONS", path: "/v1/items/1",
            headers: [("Origin", "https://app.example"), ("Access-Control-Request-Method", "DELETE")]),
        ParityCase(
            label: "OPTIONS from an unlisted origin", method: "OPTIONS", path: "/v1/items/1",
            headers: [("Origin", "https://evil.example"), ("Access-Control-Request-Method", "DELETE")]),
        ParityCase(
            label: "CORS on a simple request", method: "GET", path: "/v1/items/1",
            headers: [("Origin", "https://app.example")]),
        ParityCase(label: "an async route", method: "GET", path: "/v1/slow"),
        ParityCase(
            label: "an async route's thrown HTTP error", method: "POST", path: "/v1/slow/1",
            headers: [("Content-Type", "application/json")], body: Array("{}".utf8)),
        ParityCase(label: "an async route's thrown other error", method: "GET", path: "/v1/slow-boom"),
        ParityCase(label: "HEAD on an async route", method: "HEAD", path: "/v1/slow"),
        ParityCase(
            label: "a forwarded client behind the trusted proxy", method: "GET", path: "/v1/whoami",
            headers: [("X-Forwarded-For", "203.0.113.9")]),
        ParityCase(
            label: "a query as MHD splits and the glue decodes it", method: "GET",
            path: "/v1/search?x=1&&q=caf%C3%A9+au+lait&q=second&%zz=bad&+=plus&bare&"),
        ParityCase(
            label: "Connection: close asked by the client", method: "GET", path: "/v1/items/1",
            headers: [("Connection", "close")]),
        ParityCase(
            label: "413 for an announced body over the limit, and the connection closed", method: "POST",
            path: "/v1/echo", headers: [("Content-Type", "application/json")],
            body: Array(repeating: UInt8(ascii: "a"), count: 2048)),
        ParityCase(
            label: "a kept incoming X-Request-Id", method: "GET", path: "/v1/items/1",
            headers: [("X-Request-Id", "client-id-1")]),
    ]

    @Test("status, headers in order, and body match the socket's", arguments: cases)
    func sameAnswer(_ parity: ParityCase) throws {
        let pair = try ServerPair()
        defer { pair.stop() }
        let (socket, inProcess) = try pair.exchange(parity)
        expectSame(socket, inProcess, parity.label)
        if parity.headers.contains(where: { $0.0 == "X-Request-Id" }) {
            #expect(socket.headers["X-Request-Id"] == "client-id-1")
            #expect(inProcess.headers["X-Request-Id"] == "client-id-1")
        }
    }

    @Test("the handler sees the same request: method, raw path, decoded query, headers and body")
    func sameRequest() throws {
        let pair = try ServerPair()
        defer { pair.stop() }
        // An explicit Host, or each side would show its own URL's.
        let parity = ParityCase(
            label: "request echo", method: "POST", path: "/v1/request/a%2Fb/../c%20d?k=v+w&k=2&e=&n",
            headers: [
                ("Host", "portvakt.test"), ("X-Padded", "  two  words  "), ("X-Empty-Removed", ""),
                ("X-Repeated", "1"), ("x-repeated", "2"), ("Authorization", "Bearer "),
            ],
            body: Array("raw body".utf8))
        let (socket, inProcess) = try pair.exchange(parity)
        #expect(socket.status == 200, "\(socket.text)")
        expectSame(socket, inProcess, parity.label)
        #expect(socket.body == inProcess.body, "the echo is sorted JSON: byte for byte")
    }

    @Test("a rate limit's 429 with Retry-After comes at the same request, with the same answer")
    func rateLimited() throws {
        let pair = try ServerPair()
        defer { pair.stop() }
        var statuses: [Int] = []
        for _ in 0..<3 {
            let (socket, inProcess) = try pair.exchange(
                ParityCase(label: "limited", method: "GET", path: "/v1/limited"))
            expectSame(socket, inProcess, "request \(statuses.count + 1) to the limited route")
            statuses.append(inProcess.status)
        }
        #expect(statuses == [200, 200, 429])
        // An async route is charged before its handler runs, in process as over the socket.
        let async = ParityCase(
            label: "limited async", method: "POST", path: "/v1/slow/2",
            headers: [("Content-Type", "application/json")], body: Array("{}".utf8))
        let (socket, inProcess) = try pair.exchange(async)
        expectSame(socket, inProcess, async.label)
        #expect(inProcess.status == 429 && inProcess.headers["Retry-After"] != nil)
    }
}

/// `HTTPServer.respond(to:)` itself, without the test client.
@Suite("In-process answers")
struct InProcessAnswerTests {
    @Test("a server that never listens answers an async route, logs the request and counts its limit")
    func neverListening() async throws {
        let log = LogSink()
        let server = try HTTPServer(
            configuration: parityConfiguration(), router: parityRouter(), accessLog: log.append)
        let slow = await server.respond(to: try InProcessRequest(target: "/v1/slow"))
        #expect(slow.status == 200 && slow.body == Array("slept".utf8))
        #expect(slow.headers["Content-Length"] == "5" && slow.headers["Cache-Control"] == "no-store")
        #expect(log.all.contains { $0.contains(#""route":"/v1/slow""#) && $0.contains(#""status":200"#) })
        #expect(server.port == 0, "nothing was bound")
        var statuses: [Int] = []
        for _ in 0..<3 {
            statuses.append(await server.respond(to: try InProcessRequest(target: "/v1/limited")).status)
        }
        #expect(statuses == [200, 200, 429])
    }

    @Test("the peer is the test's: it is the client address, and a trusted proxy's forwarding is believed")
    func peer() async throws {
        let server = try HTTPServer(
            configuration: parityConfiguration(), router: parityRouter(), accessLog: { _ in })
        let direct = await server.respond(
            to: try InProcessRequest(target: "/v1/whoami", peer: "198.51.100.7"))
        let directBody = try JSONDecoder().decode([String: String].self, from: Data(direct.body))
        #expect(directBody == ["clientIp": "198.51.100.7", "peer": "198.51.100.7"])
        let forwarded = await server.respond(
            to: try InProcessRequest(
                target: "/v1/whoami", headers: ["X-Forwarded-For": "203.0.113.9"], peer: "::ffff:127.0.0.1"))
        let forwardedBody = try JSONDecoder().decode([String: String].self, from: Data(forwarded.body))
        #expect(forwardedBody == ["clientIp": "203.0.113.9", "peer": "127.0.0.1"])
    }

    @Test("a request no socket could carry is refused with http.invalid_request")
    func invalidRequests() {
        let refusals = [
            #expect(throws: HTTPServerError.self) { try InProcessRequest(target: "/", peer: "localhost") },
            #expect(throws: HTTPServerError.self) { try InProcessRequest(target: "v1/items") },
            #expect(throws: HTTPServerError.self) { try InProcessRequest(target: "/a b") },
            #expect(throws: HTTPServerError.self) { try InProcessRequest(method: "GE T", target: "/") },
            #expect(throws: HTTPServerError.self) {
                try InProcessRequest(target: "/", headers: ["X-Split": "a\r\nSet-Cookie: b"])
            },
            #expect(throws: HTTPServerError.self) {
                try InProcessRequest(target: "/", headers: ["Bad:Name": "x"])
            },
        ]
        #expect(refusals.map { $0?.code } == Array(repeating: .invalidRequest, count: 6))
        #expect(throws: Never.self) { try InProcessRequest(method: "BREW", target: "/x?y=1", peer: "::1") }
    }

    @Test("an unregistered or closed endpoint refuses like a closed port; a slow answer times out")
    func refusedAndTimeout() throws {
        let server = try HTTPServer(
            configuration: parityConfiguration(), router: parityRouter(), accessLog: { _ in })
        let endpoint = InProcessEndpoint(server)
        let client = InProcessHTTPClient()
        #expect(try client.send(url: endpoint.url + "/v1/items/1").status == 200)
        #expect(InProcessHTTPClient.reaches(endpoint.url + "/anything"))
        endpoint.close()
        #expect(!InProcessHTTPClient.reaches(endpoint.url))
        do {
            _ = try client.send(url: endpoint.url + "/v1/items/1")
            Issue.record("a closed endpoint answered")
        } catch {
            #expect(error.isConnectionRefused)
        }
        let again = InProcessEndpoint(server)
        defer { again.close() }
        let impatient = InProcessHTTPClient(timeout: 0.001)
        do {
            _ = try impatient.send(url: again.url + "/v1/slow")
            Issue.record("a 20 ms handler answered within 1 ms")
        } catch {
            #expect(error.isTimeout)
        }
    }
}
