import Foundation
import HTTPEngine
import Kernel
import TestSupport
import Testing

/// Limits on the request target and header block that this server answers itself, as
/// problem+json with the usual headers, below the size where libmicrohttpd would answer with its
/// own HTML page (issue 15, item 4).
@Suite("URI and header size limits answered as problem+json")
struct RequestSizeLimitTests {
    /// Sends `raw` on a fresh connection and reads until the server closes it (or 5 s).
    static func exchange(_ raw: String, port: Int) throws -> FramingTests.Exchange {
        try FramingTests.exchange(raw, port: port)
    }

    static let oversized: [(name: String, raw: String, status: Int, code: String)] = [
        (
            "a path past 8 KiB",
            "GET /v1/items/" + String(repeating: "a", count: 9_000) + " HTTP/1.1\r\nHost: x\r\n\r\n",
            414, "request.uri_too_long"
        ),
        (
            "a query past 8 KiB",
            "GET /v1/search?q=" + String(repeating: "a", count: 9_000) + " HTTP/1.1\r\nHost: x\r\n\r\n",
            414, "request.uri_too_long"
        ),
        (
            "one header field past 16 KiB",
            "GET /v1/items/1 HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "b", count: 17_000)
                + "\r\n\r\n", 431,
            "request.header_fields_too_large"
        ),
        (
            "many small fields past 16 KiB",
            "GET /v1/items/1 HTTP/1.1\r\nHost: x\r\n"
                + (0..<180).map { "X-F\($0): " + String(repeating: "c", count: 90) + "\r\n" }.joined()
                + "\r\n", 431,
            "request.header_fields_too_large"
        ),
    ]

    @Test(
        "over the engine's limit: one problem+json 414/431 with X-Request-Id and the security headers, connection closed",
        arguments: 0..<oversized.count)
    func oversizedRequest(_ index: Int) throws {
        let request = Self.oversized[index]
        try withServer { _, log, server in
            let exchange = try Self.exchange(request.raw + FramingTests.smuggled, port: server.port)
            #expect(exchange.closed, "\(request.name): the connection stayed open")
            #expect(exchange.statusLines.count == 1, "\(request.name): \(exchange.statusLines)")
            #expect(
                exchange.statusLines.first?.hasPrefix("HTTP/1.1 \(request.status) ") == true,
                "\(request.name)")
            #expect(exchange.head.contains("content-type: application/problem+json"), "\(request.name)")
            #expect(
                exchange.head.contains("x-request-id: ") && exchange.head.contains("x-frame-options: deny"))
            #expect(exchange.head.contains("x-content-type-options: nosniff"))
            #expect(
                exchange.body.contains("\"code\":\"\(request.code)\""), "\(request.name): \(exchange.body)")
            #expect(!exchange.text.contains("smuggled"))
            #expect(log.all.count == 1 && log.all[0].contains("\"status\":\(request.status)"))
        }
    }

    @Test("just under the limits: a 7 KiB target and a 15 KiB header block are served")
    func underTheLimits() throws {
        try withServer { _, _, server in
            let socket = try RawSocketClient(port: server.port)
            try socket.send(
                "GET /v1/search?q=" + String(repeating: "a", count: 7_000) + " HTTP/1.1\r\nHost: x\r\nX-Big: "
                    + String(repeating: "b", count: 15_000) + "\r\n\r\n")
            let response = socket.readResponse(timeout: 5)
            #expect(response.hasPrefix("HTTP/1.1 200 "), "\(response.prefix(200))")
        }
    }

    @Test("at both limits at once: an 8 KiB target and a 16 KiB header block in 100 fields are served")
    func atBothLimits() throws {
        // The target as the engine counts it: the path, then `q`, the value and 2 for `?` and `=`.
        let value = String(repeating: "a", count: 8 * 1024 - "/v1/search".utf8.count - 1 - 2)
        // Each field counts `name: value` CRLF; Host: x is 9 of the 16 KiB.
        var fields = (0..<99).map { "X-F\($0 < 10 ? "0" : "")\($0)" }
        fields.append("X-Last")
        let overhead = 9 + fields.reduce(0) { $0 + $1.utf8.count + 4 }
        let each = (16 * 1024 - overhead) / fields.count
        let last = 16 * 1024 - overhead - each * (fields.count - 1)
        let block = fields.enumerated().map { index, name in
            "\(name): " + String(repeating: "b", count: index == fields.count - 1 ? last : each) + "\r\n"
        }.joined()
        try withServer { _, _, server in
            let socket = try RawSocketClient(port: server.port)
            try socket.send("GET /v1/search?q=\(value) HTTP/1.1\r\nHost: x\r\n\(block)\r\n")
            let response = socket.readResponse(timeout: 5)
            #expect(response.hasPrefix("HTTP/1.1 200 "), "\(response.prefix(200))")
        }
        // One byte more on either side is ours to refuse, not libmicrohttpd's.
        try withServer { _, _, server in
            let exchange = try Self.exchange(
                "GET /v1/search?q=\(value)a HTTP/1.1\r\nHost: x\r\n\(block)\r\n", port: server.port)
            #expect(exchange.statusLines.first?.hasPrefix("HTTP/1.1 414 ") == true, "\(exchange.statusLines)")
            #expect(exchange.head.contains("content-type: application/problem+json"))
            let longer = try Self.exchange(
                "GET /v1/search?q=\(value) HTTP/1.1\r\nHost: x\r\n\(block)X: \r\n\r\n", port: server.port)
            #expect(longer.statusLines.first?.hasPrefix("HTTP/1.1 431 ") == true, "\(longer.statusLines)")
            #expect(longer.head.contains("content-type: application/problem+json"))
        }
    }

    @Test("the limits are configurable: a 64-byte header limit refuses an ordinary request with 431")
    func configuredLimit() throws {
        try withServer(HTTPServerConfiguration(threads: 2, maxURIBytes: 16, maxHeaderBytes: 64)) {
            _, _, server in
            let exchange = try Self.exchange(
                "GET /v1/items/1 HTTP/1.1\r\nHost: x\r\nUser-Agent: " + String(repeating: "u", count: 80)
                    + "\r\n\r\n",
                port: server.port)
            #expect(exchange.statusLines.first?.hasPrefix("HTTP/1.1 431 ") == true)
            let long = try Self.exchange(
                "GET /v1/items/12345678901 HTTP/1.1\r\nHost: x\r\n\r\n", port: server.port)
            #expect(long.statusLines.first?.hasPrefix("HTTP/1.1 414 ") == true)
        }
    }

    @Test("past libmicrohttpd's own buffer (100 KiB of header): refused and closed, no handler runs")
    func pastMHDBuffer() throws {
        try withServer { _, log, server in
            let exchange = try Self.exchange(
                "GET /v1/items/1 HTTP/1.1\r\nHost: x\r\nX-Huge: " + String(repeating: "h", count: 100_000)
                    + "\r\n\r\n",
                port: server.port)
            #expect(exchange.closed)
            #expect(exchange.statusLines.first?.hasPrefix("HTTP/1.1 431 ") == true, "\(exchange.statusLines)")
            #expect(log.all.isEmpty)
            withKnownIssue(
                "libmicrohttpd 0.9.75 answers a request past its buffer itself, in HTML without our headers"
            ) {
                #expect(exchange.statusLines.count == 1)
                #expect(exchange.head.contains("x-request-id: "))
            }
        }
    }
}
