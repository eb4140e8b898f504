public import Foundation
import Glibc

/// A bare TCP connection for requests curl will not send: slow, silent or malformed ones.
public final class RawSocketClient {
    /// The connected socket; owned here and closed in deinit.
    private let socket: Int32

    /// Connects to an IPv4 address (loopback by default).
    /// - Parameters:
    ///   - host: the server's IPv4 address.
    ///   - port: the server's port.
    ///   - source: the local IPv4 address to connect from, e.g. `127.0.0.2` (Linux routes all of
    ///     127.0.0.0/8 to lo), so one test can be several clients; nil lets the system choose.
    /// - Throws: `POSIXError` when binding the source or the connection fails.
    public init(host: String = "127.0.0.1", port: Int, source: String? = nil) throws {
        let descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else {
                let code = errno
                close(descriptor)
                throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close(descriptor)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
        socket = descriptor
    }

    deinit {
        close(socket)
    }

    /// Writes all of `text` as bytes.
    public func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    /// Writes all of `bytes`.
    /// - Throws: `POSIXError` when the peer has closed the connection or the write fails.
    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { raw in
                Glibc.send(socket, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            offset += written
        }
    }

    /// Reads until the peer closes the connection or `timeout` passes without it.
    /// - Returns: the bytes read, and whether the peer closed (EOF or reset) within the timeout.
    public func readUntilClosed(timeout: TimeInterval) -> (bytes: [UInt8], closed: Bool) {
        var collected: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { return (collected, false) }
            var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(max(1, remaining * 1000)))
            if ready <= 0 { continue }
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return (collected, true) }
            collected.append(contentsOf: buffer[0..<count])
        }
    }

    /// Reads until a complete response head and `Content-Length` body have arrived, or timeout.
    /// - Returns: the response text as received.
    public func readResponse(timeout: TimeInterval) -> String {
        var collected: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while deadline.timeIntervalSinceNow > 0 {
            var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000))) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            collected.append(contentsOf: buffer[0..<count])
            let text = String(decoding: collected, as: UTF8.self)
            if let headEnd = text.range(of: "\r\n\r\n") {
                let head = text[..<headEnd.lowerBound].lowercased()
                let length =
                    head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap {
                        Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
                    } ?? 0
                if text.utf8.count - text[..<headEnd.upperBound].utf8.count >= length { return text }
            }
        }
        return String(decoding: collected, as: UTF8.self)
    }
}
