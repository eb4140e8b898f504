import Foundation
import Glibc

/// A keep-alive HTTP/1.1 connection for the benchmark's clients: requests are written as bytes
/// and responses read by Content-Length, with none of a general client's work (libcurl's header
/// callbacks, Foundation's string handling), so the clients' own CPU stays small next to the
/// server's on a machine they share.
final class BenchConnection {
    struct Response {
        var status: Int
        var body: [UInt8]
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let port: Int
    private var socket: Int32 = -1
    private var buffer: [UInt8] = []

    init(port: Int) { self.port = port }

    deinit { if socket >= 0 { close(socket) } }

    /// Sends `POST path` with a JSON body and returns the response; reconnects once when the
    /// server has closed the kept-alive connection.
    func post(_ path: String, body: [UInt8], headers: [(String, String)] = []) throws -> Response {
        try send("POST", path, body: body, headers: headers)
    }

    /// Sends `GET path`.
    func get(_ path: String, headers: [(String, String)] = []) throws -> Response {
        try send("GET", path, body: [], headers: headers)
    }

    /// Sends `method path` with a JSON body (sent with a Content-Length unless the method is GET).
    func send(_ method: String, _ path: String, body: [UInt8], headers: [(String, String)]) throws
        -> Response
    {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        if method != "GET" { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        let request = Array(head.utf8) + body
        do {
            return try exchange(request)
        } catch {
            disconnect()
            return try exchange(request)
        }
    }

    private func exchange(_ request: [UInt8]) throws -> Response {
        if socket < 0 { try connect() }
        try write(request)
        return try readResponse()
    }

    private func connect() throws {
        let descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            throw Failure(description: "connect: \(errno)")
        }
        // Requests are small and answered at once: do not let Nagle hold the second segment.
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        socket = descriptor
        buffer.removeAll(keepingCapacity: true)
    }

    private func disconnect() {
        if socket >= 0 { close(socket) }
        socket = -1
        buffer.removeAll(keepingCapacity: true)
    }

    private func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { throw Failure(description: "send: \(errno)") }
            offset += sent
        }
    }

    /// Where `recv` writes, reused for every read.
    private var chunk = [UInt8](repeating: 0, count: 16_384)

    /// Reads more bytes into the buffer; throws when the peer has closed.
    private func fill() throws {
        let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw Failure(description: "the server closed the connection") }
        buffer.append(contentsOf: chunk[..<count])
    }

    private func readResponse() throws -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        var headerEnd: Int?
        while headerEnd == nil {
            headerEnd = buffer.end(of: separator)
            if headerEnd == nil { try fill() }
        }
        guard let headerEnd else { throw Failure(description: "no header end") }
        // Read as bytes, not Strings: the server's dozen security headers made line splitting and
        // lowercasing the largest part of the clients' own CPU.
        let head = buffer[..<headerEnd]
        guard head.count >= 12,
            let status = Self.decimal(head[(head.startIndex + 9)..<(head.startIndex + 12)])
        else { throw Failure(description: "bad status line") }
        var length = 0
        var closes = false
        var lineStart = head.startIndex
        while let lineEnd = head[lineStart...].firstIndex(of: 13) {
            let line = head[lineStart..<lineEnd]
            if let value = Self.value(of: Self.contentLength, in: line) {
                length = Self.decimal(value.filter { $0 != 32 }) ?? 0
            } else if let value = Self.value(of: Self.connection, in: line) {
                closes = value.map(Self.folded).end(of: Self.closeToken) != nil
            }
            lineStart = lineEnd + 2
        }
        while buffer.count < headerEnd + length { try fill() }
        let body = Array(buffer[headerEnd..<(headerEnd + length)])
        buffer.removeFirst(headerEnd + length)
        if closes { disconnect() }
        return Response(status: status, body: body)
    }

    private static let contentLength = Array("content-length:".utf8)
    private static let connection = Array("connection:".utf8)
    private static let closeToken = Array("close".utf8)

    /// `byte` with ASCII capitals lowercased.
    private static func folded(_ byte: UInt8) -> UInt8 { (65...90).contains(byte) ? byte | 0x20 : byte }

    /// What follows `name` (lowercase, with its colon) when `line` starts with it, ASCII case
    /// folded; nil otherwise.
    private static func value(of name: [UInt8], in line: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        guard line.count >= name.count,
            zip(line, name).allSatisfy({ folded($0) == $1 })
        else { return nil }
        return line.dropFirst(name.count)
    }

    /// The ASCII decimal number `digits` spells; nil for anything else.
    private static func decimal<Digits: Collection<UInt8>>(_ digits: Digits) -> Int? {
        guard !digits.isEmpty, digits.count < 10 else { return nil }
        var value = 0
        for digit in digits {
            guard (48...57).contains(digit) else { return nil }
            value = value * 10 + Int(digit - 48)
        }
        return value
    }
}

extension [UInt8] {
    /// The string value of the first `"name":"…"` member in a JSON document whose strings carry
    /// no escapes (the server's options: base64url and ids only).
    func jsonString(named name: String) -> String? {
        let marker = Array("\"\(name)\":\"".utf8)
        guard let start = end(of: marker),
            let end = self[start...].firstIndex(of: UInt8(ascii: "\""))
        else { return nil }
        return String(decoding: self[start..<end], as: UTF8.self)
    }
}

extension [UInt8] {
    /// The index just past the first occurrence of `pattern`; a plain scan (Foundation's
    /// `firstRange(of:)` showed in the clients' profile).
    func end(of pattern: [UInt8]) -> Int? {
        guard count >= pattern.count, let first = pattern.first else { return nil }
        var index = 0
        while index <= count - pattern.count {
            if self[index] == first {
                var matched = 1
                while matched < pattern.count, self[index + matched] == pattern[matched] { matched += 1 }
                if matched == pattern.count { return index + pattern.count }
            }
            index += 1
        }
        return nil
    }
}
