import Foundation
import HTTPEngine
import Kernel
import TestSupport
import Testing

@Suite("HTTP server over real sockets")
struct HTTPServerTests {
    @Test("routes by path and decodes path parameters, literal segments win over parameters")
    func routingAndPathParameters() throws {
        try withServer { base, _, _ in
            let client = HTTPTestClient()
            let byParameter = try client.send(url: base + "/v1/items/a%20b")
            #expect(byParameter.status == 200)
            #expect(try byParameter.json([String: String].self) == ["id": "a b", "route": "/v1/items/{id}"])
            let slash = try client.send(url: base + "/v1/items/x%2Fy")
            #expect(try slash.json([String: String].self)["id"] == "x/y")
            let literal = try client.send(url: base + "/v1/items/special")
            #expect(try literal.json([String: String].self) == ["id": "literal"])
            #expect(try client.send(method: "DELETE", url: base + "/v1/items/7").status == 204)
            #expect(
                try client.send(url: base + "/v1/search?q=caf%C3%A9+au+lait&q=second").json(
                    [String: String].self) == ["q": "café au lait"])
        }
    }

    @Test("unknown path is 404 route.not_found as problem+json")
    func notFound() throws {
        try withServer { base, _, _ in
            let response = try HTTPTestClient().send(url: base + "/v1/nothing/here")
            #expect(response.status == 404)
            #expect(response.headers["Content-Type"] == "application/problem+json")
            let problem = try response.jsonObject()
            #expect(problem["code"] as? String == "route.not_found")
            #expect(problem["status"] as? Int == 404)
            #expect(problem["title"] is String)
            #expect(problem["type"] is String)
        }
    }

    @Test("wrong method is 405 route.method_not_allowed with Allow listing the path's methods")
    func methodNotAllowed() throws {
        try withServer { base, _, _ in
            let response = try HTTPTestClient().send(method: "PUT", url: base + "/v1/items/3", body: [])
            #expect(response.status == 405)
            #expect(response.headers["Allow"] == "GET, HEAD, DELETE, OPTIONS")
            #expect(try response.jsonObject()["code"] as? String == "route.method_not_allowed")
        }
    }

    @Test("an unknown method token is 501 on an unknown path, 405 with Allow on a known one")
    func unknownMethod() throws {
        try withServer { base, _, _ in
            let client = HTTPTestClient()
            let unknown = try client.send(method: "BREW", url: base + "/v1/nowhere")
            #expect(unknown.status == 501)
            #expect(try unknown.jsonObject()["code"] as? String == "request.method_not_implemented")
            #expect(try client.send(method: "BREW", url: base + "/v1/items/1").status == 405)
        }
    }

    @Test("a JSON body is decoded; malformed JSON is 400 request.malformed_json")
    func malformedJSON() throws {
        try withServer { base, _, _ in
            let client = HTTPTestClient()
            let good = try client.sendJSON(url: base + "/v1/echo", json: #"{"name":"a","count":2}"#)
            #expect(good.status == 201)
            #expect(try good.json(Echo.self) == Echo(name: "a", count: 2))
            let bad = try client.sendJSON(url: base + "/v1/echo", json: #"{"name": "#)
            #expect(bad.status == 400)
            #expect(try bad.jsonObject()["code"] as? String == "request.malformed_json")
            let wrongShape = try client.sendJSON(url: base + "/v1/echo", json: #"{"name":"secret-value"}"#)
            #expect(wrongShape.status == 400)
            #expect(!wrongShape.text.contains("secret-value"))
        }
    }

    @Test("a body that is not application/json is 415 request.unsupported_media_type")
    func unsupportedMediaType() throws {
        try withServer { base, _, _ in
            let response = try HTTPTestClient().send(
                method: "POST", url: base + "/v1/echo", headers: [("Content-Type", "text/plain")],
                body: Array(#"{"name":"a","count":1}"#.utf8))
            #expect(response.status == 415)
            #expect(try response.jsonObject()["code"] as? String == "request.unsupported_media_type")
        }
    }

    @Test("a Content-Length over maxBodyBytes is 413 before the body is read")
    func bodyTooLargeByContentLength() throws {
        try withServer(HTTPServerConfiguration(threads: 2, maxBodyBytes: 1024)) { base, _, server in
            let socket = try RawSocketClient(port: server.port)
            try socket.send(
                "POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
            )
            let response = socket.readResponse(timeout: 5)
            #expect(response.hasPrefix("HTTP/1.1 413"))
            #expect(response.contains("request.body_too_large"))
        }
    }

    @Test("a chunked body growing past maxBodyBytes is 413")
    func bodyTooLargeByChunks() throws {
        try withServer(HTTPServerConfiguration(threads: 2, maxBodyBytes: 1024)) { base, _, server in
            let socket = try RawSocketClient(port: server.port)
            try socket.send(
                "POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            let chunk = String(repeating: "a", count: 512)
            for _ in 0..<6 { try socket.send("200\r\n" + chunk + "\r\n") }
            try socket.send("0\r\n\r\n")
            let response = socket.readResponse(timeout: 5)
            #expect(response.hasPrefix("HTTP/1.1 413"))
            #expect(response.contains("request.body_too_large"))
            // A chunked body within the limit still gets through.
            let small = try RawSocketClient(port: server.port)
            try small.send(
                "POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "16\r\n{\"name\":\"a\",\"count\":1}\r\n0\r\n\r\n")
            #expect(small.readResponse(timeout: 5).hasPrefix("HTTP/1.1 201"))
        }
    }

    @Test("every response carries X-Request-Id, the security headers and no-store")
    func securityHeadersEverywhere() throws {
        try withServer { base, _, _ in
            let client = HTTPTestClient()
            for (method, path) in [
                ("GET", "/v1/items/1"), ("GET", "/missing"), ("GET", "/v1/boom"), ("PUT", "/v1/items/1"),
                ("OPTIONS", "/v1/items/1"),
            ] {
                let response = try client.send(
                    method: method, url: base + path, body: method == "PUT" ? [] : nil)
                #expect(RequestIDShape.isGenerated(response.headers["X-Request-Id"]), "\(method) \(path)")
                #expect(response.headers["X-Content-Type-Options"] == "nosniff")
                #expect(response.headers["X-Frame-Options"] == "DENY")
                #expect(response.headers["Content-Security-Policy"] == "frame-ancestors 'none'")
                #expect(response.headers["Referrer-Policy"] == "no-referrer")
                #expect(response.headers["Cache-Control"] == "no-store")
            }
            let page = try client.send(url: base + "/v1/page")
            #expect(page.headers["Content-Security-Policy"] == "default-src 'self'")
            #expect(page.headers["Cache-Control"] == "public, max-age=60")
            #expect(page.headers.values(for: "Cache-Control").count == 1)
        }
    }

    @Test("a valid incoming X-Request-Id is echoed, an invalid one replaced")
    func requestIDEchoedOrReplaced() throws {
        try withServer { base, _, _ in
            let client = HTTPTestClient()
            let valid = "abc-123_DEF.456"
            #expect(
                try client.send(url: base + "/v1/items/1", headers: [("X-Request-Id", valid)]).headers[
                    "X-Request-Id"] == valid)
            for invalid in ["has space", "semi;colon", String(repeating: "a", count: 129), "<script>"] {
                let echoed = try client.send(url: base + "/v1/items/1", headers: [("X-Request-Id", invalid)])
                    .headers["X-Request-Id"]
                #expect(echoed != invalid)
                #expect(RequestIDShape.isGenerated(echoed))
            }
        }
    }

    @Test("HEAD is served by the GET route with the headers and no body")
    func head() throws {
        try withServer { base, _, _ in
            let client = HTTPTestClient()
            let get = try client.send(url: base + "/v1/items/9")
            let head = try client.send(method: "HEAD", url: base + "/v1/items/9")
            #expect(head.status == 200)
            #expect(head.body.isEmpty)
            #expect(head.headers["Content-Length"] == String(get.body.count))
            #expect(head.headers["Content-Type"] == "application/json")
        }
    }

    @Test("CORS: a listed origin gets a preflight grant and Vary: Origin, an unlisted one no CORS headers")
    func corsPreflight() throws {
        let cors = CORSPolicy(
            allowedOrigins: ["https://app.example"], allowCredentials: true, maxAgeSeconds: 300)
        try withServer(HTTPServerConfiguration(threads: 2, cors: cors)) { base, _, _ in
            let client = HTTPTestClient()
            let preflight = try client.send(
                method: "OPTIONS", url: base + "/v1/items/1",
                headers: [("Origin", "https://app.example"), ("Access-Control-Request-Method", "DELETE")])
            #expect(preflight.status == 204)
            #expect(preflight.headers["Access-Control-Allow-Origin"] == "https://app.example")
            #expect(preflight.headers["Access-Control-Allow-Methods"] == "GET, HEAD, DELETE, OPTIONS")
            #expect(preflight.headers["Access-Control-Allow-Credentials"] == "true")
            #expect(preflight.headers["Access-Control-Max-Age"] == "300")
            #expect(preflight.headers["Access-Control-Allow-Headers"]?.contains("Content-Type") == true)
            #expect(preflight.headers["Vary"] == "Origin")
            #expect(preflight.headers.values(for: "Access-Control-Allow-Origin").count == 1)

            let actual = try client.send(
                url: base + "/v1/items/1", headers: [("Origin", "https://app.example")])
            #expect(actual.headers["Access-Control-Allow-Origin"] == "https://app.example")
            #expect(actual.headers["Access-Control-Expose-Headers"]?.contains("X-Request-Id") == true)

            for origin in ["https://evil.example", "https://app.example.evil", "null"] {
                let refused = try client.send(
                    method: "OPTIONS", url: base + "/v1/items/1",
                    headers: [("Origin", origin), ("Access-Control-Request-Method", "DELETE")])
                #expect(refused.headers["Access-Control-Allow-Origin"] == nil)
                #expect(refused.headers["Access-Control-Allow-Methods"] == nil)
                #expect(refused.headers["Access-Control-Allow-Credentials"] == nil)
                #expect(refused.headers["Vary"] == "Origin")
                let plain = try client.send(url: base + "/v1/items/1", headers: [("Origin", origin)])
                #expect(plain.headers["Access-Control-Allow-Origin"] == nil)
            }
        }
    }

    @Test("client IP is the socket peer when no proxy is trusted, forwarding headers ignored")
    func clientIPFromPeer() throws {
        try withServer(HTTPServerConfiguration(threads: 2, trustedProxies: ["10.0.0.0/8", "2001:db8::/32"])) {
            base, _, _ in
            let response = try HTTPTestClient().send(
                url: base + "/v1/whoami",
                headers: [("X-Forwarded-For", "203.0.113.9"), ("Forwarded", "for=198.51.100.1")])
            #expect(
                try response.json([String: String].self) == ["clientIp": "127.0.0.1", "peer": "127.0.0.1"])
        }
    }

    @Test("client IP from X-Forwarded-For and Forwarded when the peer is a trusted proxy")
    func clientIPFromTrustedProxy() throws {
        try withServer(HTTPServerConfiguration(threads: 2, trustedProxies: ["127.0.0.1", "10.0.0.0/8"])) {
            base, _, _ in
            let client = HTTPTestClient()
            let clientIP = { (headers: [(String, String)]) -> String? in
                try? client.send(url: base + "/v1/whoami", headers: headers).json([String: String].self)[
                    "clientIp"]
            }
            // The rightmost untrusted hop is the client; anything left of it could be forged.
            #expect(clientIP([("X-Forwarded-For", "198.51.100.7, 203.0.113.9, 10.1.2.3")]) == "203.0.113.9")
            #expect(clientIP([("X-Forwarded-For", "203.0.113.9")]) == "203.0.113.9")
            #expect(
                clientIP([("Forwarded", #"for=192.0.2.60;proto=https, for="[2001:db8:cafe::17]:4711""#)])
                    == "2001:db8:cafe::17")
            #expect(
                clientIP([("Forwarded", "for=192.0.2.43:8080"), ("X-Forwarded-For", "203.0.113.1")])
                    == "192.0.2.43")
            #expect(clientIP([("X-Forwarded-For", "::ffff:203.0.113.5")]) == "203.0.113.5")
            #expect(clientIP([("Forwarded", "for=unknown")]) == "127.0.0.1")
            #expect(clientIP([]) == "127.0.0.1")
        }
    }

    @Test("rate limit: 429 rate_limited with Retry-After once the burst is spent, then refills with time")
    func rateLimit() throws {
        let clock = ManualMonotonicClock()
        let configuration = HTTPServerConfiguration(
            threads: 2, rateLimits: [RateClass("strict"): RateLimit(burst: 2, perSecond: 0.5)])
        try withServer(configuration, clock: clock) { base, _, _ in
            let client = HTTPTestClient()
            #expect(try client.send(url: base + "/v1/limited").status == 200)
            #expect(try client.send(url: base + "/v1/limited").status == 200)
            let limited = try client.send(url: base + "/v1/limited")
            #expect(limited.status == 429)
            #expect(limited.headers["Retry-After"] == "2")
            #expect(try limited.jsonObject()["code"] as? String == "rate_limited")
            // Other classes are not limited.
            for _ in 0..<5 { #expect(try client.send(url: base + "/v1/items/1").status == 200) }
            clock.advance(seconds: 2)
            #expect(try client.send(url: base + "/v1/limited").status == 200)
            #expect(try client.send(url: base + "/v1/limited").status == 429)
        }
    }

    @Test("access log: one JSON line per request with the route pattern, never query, path ids or tokens")
    func accessLog() throws {
        try withServer { base, log, _ in
            let client = HTTPTestClient()
            _ = try client.send(
                url: base + "/v1/items/user-4711?token=s3cr3t-token",
                headers: [
                    ("Authorization", "Bearer hdr-token"), ("Cookie", "sid=cookie-token"),
                    ("X-Request-Id", "log-test-1"),
                ])
            _ = try client.send(url: base + "/v1/missing-s3cr3t")
            let lines = log.all
            #expect(lines.count == 2)
            for line in lines {
                for secret in ["s3cr3t", "hdr-token", "cookie-token", "user-4711", "token="] {
                    #expect(!line.contains(secret))
                }
            }
            let entry = try #require(
                try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
            #expect(
                Set(entry.keys) == [
                    "ts", "level", "msg", "method", "route", "status", "durationMs", "requestId", "clientIp",
                ])
            #expect(entry["level"] as? String == "info")
            #expect(entry["msg"] as? String == "request")
            #expect(entry["method"] as? String == "GET")
            #expect(entry["route"] as? String == "/v1/items/{id}")
            #expect(entry["status"] as? Int == 200)
            #expect(entry["durationMs"] is Double || entry["durationMs"] is Int)
            #expect(entry["requestId"] as? String == "log-test-1")
            #expect(entry["clientIp"] as? String == "127.0.0.1")
            #expect(
                (entry["ts"] as? String).map {
                    ISO8601DateFormatter.withFractionalSeconds.date(from: $0) != nil
                } == true)
            let missing = try #require(
                try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
            #expect(missing["route"] is NSNull)
            #expect(missing["status"] as? Int == 404)
        }
    }

    @Test("a thrown non-HTTP error is a 500 internal problem with no internals in the body")
    func unmappedErrorIsOpaque500() throws {
        try withServer { base, log, _ in
            let response = try HTTPTestClient().send(url: base + "/v1/boom")
            #expect(response.status == 500)
            let problem = try response.jsonObject()
            #expect(problem["code"] as? String == "internal")
            #expect(!response.text.contains("secret"))
            #expect(!response.text.contains("CocoaError"))
            let errorLine = try #require(log.all.first { $0.contains("\"level\":\"error\"") })
            #expect(errorLine.contains("CocoaError"))
            #expect(!errorLine.contains("secret"))
        }
    }

    @Test("graceful shutdown: the in-flight request completes with 200, new connections are refused")
    func gracefulShutdown() throws {
        let started = DispatchSemaphore(value: 0)
        var router = Router()
        router.add(.GET, "/slow", rateClass: .unlimited, summary: "Sleeps one second") { _ in
            started.signal()
            Thread.sleep(forTimeInterval: 1)
            return .text("done")
        }
        let server = try HTTPServer(
            configuration: HTTPServerConfiguration(threads: 2), router: router, accessLog: { _ in })
        let port = try server.start()
        let slowResult = ResultBox()
        let slow = Thread {
            slowResult.set(Result { try HTTPTestClient().send(url: "http://127.0.0.1:\(port)/slow") })
        }
        slow.start()
        #expect(started.wait(timeout: .now() + 5) == .success)
        let shutdownDone = DispatchSemaphore(value: 0)
        let shutdownThread = Thread {
            server.shutdown(grace: 5)
            shutdownDone.signal()
        }
        let shutdownStart = Date()
        shutdownThread.start()
        Thread.sleep(forTimeInterval: 0.2)
        // While the slow request is still running, the listener is already gone.
        #expect(server.inFlightRequests == 1)
        do {
            _ = try HTTPTestClient(timeout: 2).send(url: "http://127.0.0.1:\(port)/slow")
            Issue.record("a new connection was accepted after shutdown began")
        } catch {
            #expect(error.isConnectionRefused)
        }
        #expect(shutdownDone.wait(timeout: .now() + 10) == .success)
        #expect(Date().timeIntervalSince(shutdownStart) >= 0.5)
        let response = try slowResult.wait().get()
        #expect(response.status == 200)
        #expect(response.text == "done")
        server.shutdown(grace: 1)  // idempotent
    }

    @Test(
        "shutdown answers an async route still waiting 503 at once, its connection suspended or its thread blocked",
        arguments: [HTTPServerConfiguration.Threading.workerPool, .threadPerConnection])
    func shutdownAnswersWaitingAsyncRoute(threading: HTTPServerConfiguration.Threading) throws {
        let started = DispatchSemaphore(value: 0)
        var router = Router()
        router.addAsync(.GET, "/hang", rateClass: .unlimited, summary: "Waits a minute") { _ in
            started.signal()
            try? await Task.sleep(for: .seconds(60))
            return .text("too late")
        }
        let server = try HTTPServer(
            configuration: HTTPServerConfiguration(threads: 1, threading: threading), router: router,
            accessLog: { _ in })
        let port = try server.start()
        let waiting = ResultBox()
        Thread {
            waiting.set(Result { try HTTPTestClient(timeout: 30).send(url: "http://127.0.0.1:\(port)/hang") })
        }
        .start()
        #expect(started.wait(timeout: .now() + 5) == .success)
        let began = Date()
        // No grace: what answers the request is shutdown itself, not the handler finishing.
        server.shutdown(grace: 0)
        #expect(Date().timeIntervalSince(began) < 5)
        let response = try waiting.wait().get()
        #expect(response.status == 503, "\(response.text)")
    }

    @Test("a connection that sends nothing is closed after the connection timeout")
    func idleConnectionTimesOut() throws {
        try withServer(HTTPServerConfiguration(threads: 2, connectionTimeoutSeconds: 1)) { _, _, server in
            let socket = try RawSocketClient(port: server.port)
            let start = Date()
            let (bytes, closed) = socket.readUntilClosed(timeout: 6)
            #expect(closed)
            #expect(bytes.isEmpty)
            #expect(Date().timeIntervalSince(start) < 5)
            // A slow-loris that sends half a request line is cut off too.
            let slow = try RawSocketClient(port: server.port)
            try slow.send("GET /v1/items/1 HTTP/1.1\r\nHost: x\r\n")
            #expect(slow.readUntilClosed(timeout: 6).closed)
        }
    }

    @Test("start reports the bound port, a bad host is a configuration error, and start is once only")
    func startAndConfiguration() throws {
        #expect(throws: HTTPServerError(.invalidConfiguration, "")) {
            try HTTPServer(
                configuration: HTTPServerConfiguration(host: "localhost"), router: Router(),
                accessLog: { _ in }
            ).start()
        }
        #expect(throws: HTTPServerError(.invalidConfiguration, "")) {
            _ = try HTTPServer(
                configuration: HTTPServerConfiguration(trustedProxies: ["10.0.0.0/33"]), router: Router(),
                accessLog: { _ in })
        }
        let server = try HTTPServer(
            configuration: HTTPServerConfiguration(
                threads: 1, rateLimits: [.strict: RateLimit(burst: 1, perSecond: 1)]),
            router: testRouter(), accessLog: { _ in })
        let port = try server.start()
        #expect(port > 0 && port == server.port)
        #expect(throws: HTTPServerError(.invalidState, "")) { try server.start() }
        server.shutdown(grace: 0)
    }

    @Test("a route whose rate class has no configured limit stops the server from being built")
    func rateClassWithoutLimitIsRefused() throws {
        var router = Router()
        router.add(.GET, "/v1/open", rateClass: RateClass("forgotten"), summary: "No limit configured") { _ in
            .noContent
        }
        #expect(throws: HTTPServerError(.invalidConfiguration, "")) {
            _ = try HTTPServer(configuration: HTTPServerConfiguration(), router: router, accessLog: { _ in })
        }
        var limits = HTTPServerConfiguration()
        limits.rateLimits = [RateClass("forgotten"): RateLimit(burst: 1, perSecond: 1)]
        _ = try HTTPServer(configuration: limits, router: router, accessLog: { _ in })
    }
    @Test("keep-alive: one client sends many requests over one connection")
    func keepAlive() throws {
        try withServer { base, _, _ in
            let client = HTTPTestClient()
            var connections = 0
            for index in 0..<20 {
                let response = try client.send(url: base + "/v1/items/\(index)")
                #expect(response.status == 200)
                connections += response.newConnections
            }
            let posted = try client.sendJSON(url: base + "/v1/echo", json: #"{"name":"k","count":1}"#)
            #expect(posted.status == 201)
            connections += posted.newConnections
            #expect(connections == 1)
        }
    }
}

/// Generated request ids are 32 lowercase hex digits.
enum RequestIDShape {
    static func isGenerated(_ id: String?) -> Bool {
        guard let id else { return false }
        return id.utf8.count == 32 && id.allSatisfy { $0.isHexDigit && !$0.isUppercase }
    }
}

/// Hands a result from a worker thread to the test.
final class ResultBox: @unchecked Sendable {
    // @unchecked: the semaphore orders the single write before the read.
    private var result: Result<TestResponse, any Error>?
    private let ready = DispatchSemaphore(value: 0)

    func set(_ value: Result<TestResponse, any Error>) {
        result = value
        ready.signal()
    }

    func wait() -> Result<TestResponse, any Error> {
        _ = ready.wait(timeout: .now() + 10)
        return result ?? .failure(HTTPTestClientError(curlCode: -1, message: "no result"))
    }
}

extension ISO8601DateFormatter {
    nonisolated(unsafe) static let withFractionalSeconds: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()
}
