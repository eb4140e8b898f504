import Foundation
import HTTPEngine
import Kernel
import TestSupport
import Testing

/// One request with framing RFC 9112 §6 says to refuse, and the answer owed.
struct FramingCase: Sendable, CustomTestStringConvertible {
    let name: String
    /// The request's head lines after the request line and Host, each ending in CRLF.
    let fields: String
    /// What follows the header block before the smuggled request.
    let body: String
    let status: Int
    let code: String
    var requestLine = "POST /v1/echo HTTP/1.1\r\nHost: x\r\n"

    var testDescription: String { name }
}

/// Message framing as RFC 9112 §6 asks, over a raw socket: each refused request gets exactly one
/// problem+json answer, its connection is closed, and a request smuggled behind it is never
/// answered (issue 15, item 3).
@Suite("HTTP/1.1 framing (RFC 9112 §6)")
struct FramingTests {
    /// A request a front proxy would frame differently, hidden behind the refused one.
    static let smuggled = "GET /v1/items/smuggled HTTP/1.1\r\nHost: x\r\n\r\n"

    static let refused: [FramingCase] = [
        FramingCase(
            name: "§6.1: Transfer-Encoding with Content-Length",
            fields: "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
            body: "0\r\n\r\n", status: 400, code: "request.bad_framing"),
        FramingCase(
            name: "§6.1: Content-Length after Transfer-Encoding",
            fields: "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
            body: "0\r\n\r\n", status: 400, code: "request.bad_framing"),
        FramingCase(
            name: "§6.3 item 5: two different Content-Length fields",
            fields: "Content-Length: 2\r\nContent-Length: 5\r\n",
            body: "{}", status: 400, code: "request.bad_framing"),
        FramingCase(
            name: "§6.3 item 4: unknown coding xchunked (chunked not final)",
            fields: "Transfer-Encoding: xchunked\r\n",
            body: "2\r\n{}\r\n0\r\n\r\n", status: 400, code: "request.bad_framing"),
        FramingCase(
            name: "§6.3 item 4: identity alone", fields: "Transfer-Encoding: identity\r\n", body: "{}",
            status: 400,
            code: "request.bad_framing"),
        FramingCase(
            name: "§6.3 item 4: chunked, identity", fields: "Transfer-Encoding: chunked, identity\r\n",
            body: "2\r\n{}\r\n0\r\n\r\n", status: 400, code: "request.bad_framing"),
        FramingCase(
            name: "§6.3 item 4: chunked in one field, identity in a second",
            fields:
                "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n", body: "2\r\n{}\r\n0\r\n\r\n",
            status: 400, code: "request.bad_framing"),
        FramingCase(
            name: "§7: chunked twice", fields: "Transfer-Encoding: chunked, chunked\r\n",
            body: "2\r\n{}\r\n0\r\n\r\n",
            status: 400, code: "request.bad_framing"),
        FramingCase(
            name: "§6.1: a coding not implemented before chunked (gzip, chunked)",
            fields: "Transfer-Encoding: gzip, chunked\r\n", body: "2\r\n{}\r\n0\r\n\r\n", status: 501,
            code: "request.transfer_coding_not_implemented"),
        FramingCase(
            name:
                "chunked with trailing whitespace, which MHD 0.9.75 would read to the end of the connection",
            fields: "Transfer-Encoding: chunked \r\n", body: "2\r\n{}\r\n0\r\n\r\n", status: 400,
            code: "request.bad_framing"),
        FramingCase(
            name: "§6.1: Transfer-Encoding in HTTP/1.0", fields: "Transfer-Encoding: chunked\r\n",
            body: "2\r\n{}\r\n0\r\n\r\n", status: 400, code: "request.bad_framing",
            requestLine: "POST /v1/echo HTTP/1.0\r\nHost: x\r\n"),
        FramingCase(
            name: "§5.2: Transfer-Encoding folded onto a continuation line (obs-fold)",
            fields: "Transfer-Encoding:\r\n chunked\r\n", body: "2\r\n{}\r\n0\r\n\r\n", status: 400,
            code: "request.malformed_header"),
        FramingCase(
            name: "§5.1: whitespace between a field name and its colon", fields: "Content-Length : 2\r\n",
            body: "{}",
            status: 400, code: "request.malformed_header"),
        FramingCase(
            name: "§3.2: HTTP/1.1 without Host", fields: "Content-Length: 2\r\n", body: "{}", status: 400,
            code: "request.bad_host", requestLine: "POST /v1/echo HTTP/1.1\r\n"),
        FramingCase(
            name: "§3.2: two Host fields", fields: "Host: y\r\nContent-Length: 2\r\n", body: "{}",
            status: 400,
            code: "request.bad_host"),
    ]

    /// What came back on one connection for `raw`, read until the server closed it (or 5 s).
    struct Exchange {
        let text: String
        let closed: Bool

        /// Every status line sent, wherever it starts: a response's body has no CRLF after it, so
        /// the next status line follows it directly. `HTTP/1.x NNN ` never occurs in our bodies.
        var statusLines: [Substring] {
            var found: [Substring] = []
            var rest = text[...]
            while let start = rest.range(of: "HTTP/1.") {
                let line = rest[start.lowerBound...].prefix { $0 != "\r" }
                let fields = line.split(separator: " ", maxSplits: 2)
                if fields.count >= 2, fields[1].count == 3, fields[1].allSatisfy(\.isNumber) {
                    found.append(line)
                }
                rest = rest[start.upperBound...]
            }
            return found
        }

        /// The first response's header block, lowercased.
        var head: String {
            String(text[..<(text.range(of: "\r\n\r\n")?.lowerBound ?? text.endIndex)]).lowercased()
        }

        /// The first response's body.
        var body: String {
            text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
        }
    }

    static func exchange(_ raw: String, port: Int) throws -> Exchange {
        let socket = try RawSocketClient(port: port)
        try socket.send(raw)
        let read = socket.readUntilClosed(timeout: 5)
        return Exchange(text: String(decoding: read.bytes, as: UTF8.self), closed: read.closed)
    }

    @Test(
        "refused framing: exactly one problem+json answer with the usual headers, the connection closed, nothing smuggled answered",
        arguments: refused)
    func refusedFraming(_ framing: FramingCase) throws {
        try withServer { _, log, server in
            let raw =
                framing.requestLine + "Content-Type: application/json\r\n" + framing.fields + "\r\n"
                + framing.body
                + Self.smuggled
            let exchange = try Self.exchange(raw, port: server.port)
            #expect(exchange.closed, "the connection stayed open: \(exchange.text)")
            #expect(exchange.statusLines.count == 1, "\(exchange.text)")
            #expect(
                exchange.statusLines.first?.hasPrefix("HTTP/1.1 \(framing.status) ") == true,
                "\(exchange.text)")
            #expect(!exchange.text.contains("smuggled"))
            #expect(exchange.head.contains("content-type: application/problem+json"))
            #expect(exchange.head.contains("connection: close"))
            #expect(exchange.head.contains("x-request-id: "))
            #expect(exchange.head.contains("x-content-type-options: nosniff"))
            #expect(exchange.head.contains("x-frame-options: deny"))
            #expect(exchange.body.contains("\"code\":\"\(framing.code)\""), "\(exchange.body)")
            // Logged once as the refusal, never as the smuggled request's route.
            #expect(log.all.filter { $0.contains("\"status\":\(framing.status)") }.count == 1)
            #expect(!log.all.contains { $0.contains("/v1/items/{id}") })
        }
    }

    @Test(
        "with a thread per connection (the BankID simulator's mode) too: TE with CL is one 400 and the connection closed"
    )
    func refusedWithThreadPerConnection() throws {
        try withServer(HTTPServerConfiguration(threads: 2, threading: .threadPerConnection)) { _, _, server in
            let exchange = try Self.exchange(
                "POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                    + Self.smuggled, port: server.port)
            #expect(exchange.closed)
            #expect(
                exchange.statusLines.count == 1
                    && exchange.statusLines.first?.hasPrefix("HTTP/1.1 400 ") == true)
            #expect(exchange.head.contains("application/problem+json") && !exchange.text.contains("smuggled"))
        }
    }

    @Test(
        "§5.5, §7: OWS around chunked and any letter case frame as chunked, for MHD and a proxy alike",
        arguments: ["chunked", "  chunked", "\tchunked", "CHUNKED", "Chunked"])
    func acceptedChunked(_ value: String) throws {
        try withServer { _, _, server in
            let socket = try RawSocketClient(port: server.port)
            let body = #"{"name":"a","count":1}"#
            let chunk = String(body.utf8.count, radix: 16) + "\r\n" + body + "\r\n0\r\n\r\n"
            try socket.send(
                "POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding:\(value)\r\n\r\n"
                    + chunk)
            let first = socket.readResponse(timeout: 5)
            #expect(first.hasPrefix("HTTP/1.1 201 "), "\(first)")
            #expect(first.contains(#""name":"a""#) && first.contains(#""count":1"#), "\(first)")
            // The chunked body ended where a proxy would say it does: the next request is read as one.
            try socket.send("GET /v1/items/after HTTP/1.1\r\nHost: x\r\n\r\n")
            let second = socket.readResponse(timeout: 5)
            #expect(second.hasPrefix("HTTP/1.1 200 ") && second.contains("after"), "\(second)")
        }
    }

    @Test(
        "§8.6 of RFC 9110: Content-Length repeated with the same value frames one body; the next request follows"
    )
    func repeatedEqualContentLength() throws {
        try withServer { _, _, server in
            let body = #"{"name":"a","count":1}"#
            // Pipelined, the second asking to close: both answers arrive before the close only if
            // the first body ended where both fields say.
            let exchange = try Self.exchange(
                "POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
                    + "Content-Length: \(body.utf8.count)\r\n\r\n" + body
                    + "GET /v1/items/after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                port: server.port)
            #expect(exchange.closed)
            #expect(
                exchange.statusLines.map { $0.prefix(13) } == ["HTTP/1.1 201 ", "HTTP/1.1 200 "],
                "\(exchange.text)")
            #expect(exchange.text.contains(#""count":1"#) && exchange.text.contains("after"))
        }
    }

    @Test("a Content-Length past Int.max but within 2^64 gets our 413 at once, not a wait for the body")
    func hugeContentLength() throws {
        try withServer { _, _, server in
            let exchange = try Self.exchange(
                "POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 18446744073709551000\r\n\r\n{}"
                    + Self.smuggled, port: server.port)
            #expect(exchange.closed)
            #expect(
                exchange.statusLines.count == 1
                    && exchange.statusLines.first?.hasPrefix("HTTP/1.1 413 ") == true)
            #expect(
                exchange.head.contains("application/problem+json") && exchange.head.contains("x-request-id: ")
            )
            #expect(!exchange.text.contains("smuggled"))
        }
    }

    @Test(
        "Content-Length MHD refuses before any handler runs (sign, list, 2^64): refused and closed, nothing smuggled answered",
        arguments: ["-1", "+2", "2, 2", "18446744073709551616"])
    func contentLengthMHDRefuses(_ value: String) throws {
        try withServer { _, log, server in
            let exchange = try Self.exchange(
                "POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(value)\r\n\r\n{}"
                    + Self.smuggled, port: server.port)
            #expect(exchange.closed)
            #expect(exchange.statusLines.first?.hasPrefix("HTTP/1.1 4") == true, "\(exchange.text)")
            #expect(!exchange.text.contains("smuggled"))
            #expect(log.all.isEmpty, "no handler ran")
            withKnownIssue(
                "libmicrohttpd 0.9.75 answers these itself, in HTML, with its status line and head twice"
            ) {
                #expect(exchange.statusLines.count == 1)
                #expect(exchange.head.contains("application/problem+json"))
            }
        }
    }
}
