// A bare libmicrohttpd server: the baseline the HTTP front is measured against with wrk.
// Same daemon flags and thread pool as HTTPEngine's MHDDaemon; every request gets a fixed 200
// JSON body and nothing else (no routing, no headers beyond Content-Type, no logging).
//
// Usage: bench-bare-http [--port N] [--threads N]
import CMicroHTTPD
import Glibc

/// The server, in a type of its own so the C callback is formed outside main.swift's top-level
/// (MainActor-isolated) code: MHD calls it from its own threads.
enum BareServer {
    static func start(port: Int, threads: Int) -> (OpaquePointer, Int)? {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let flags = UInt32(
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue | MHD_USE_ITC.rawValue)
        let daemon = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                cmhd_start(
                    flags, socketAddress,
                    { _, connection, _, _, _, _, uploadDataSize, requestSlot in
                        // The first call only marks the request as seen: answering on it would make
                        // MHD close the connection and lose keep-alive (HTTPEngine does the same).
                        if let requestSlot, requestSlot.pointee == nil {
                            requestSlot.pointee = UnsafeMutableRawPointer(bitPattern: 1)
                            return .YES
                        }
                        // Consume any body, then answer (MHD calls again with size 0).
                        if let uploadDataSize, uploadDataSize.pointee > 0 {
                            uploadDataSize.pointee = 0
                            return .YES
                        }
                        return BareServer.answer(connection)
                    }, nil,
                    { _, _, _, _ in }, nil,
                    // The engine's own limits (a per-address cap as high as the total, since wrk's
                    // connections all come from 127.0.0.1); no connection notifications.
                    UInt32(threads), 30, 1024, 48 * 1024, 1024, nil, nil)
            }
        }
        guard let daemon else { return nil }
        return (daemon, Int(cmhd_bound_port(daemon)))
    }

    /// The fixed body lives for the whole process, so MHD may point at it without copying.
    nonisolated(unsafe) static let body: UnsafeMutableRawBufferPointer = {
        let bytes = Array(#"{"status":"alive"}"#.utf8)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 1)
        buffer.copyBytes(from: bytes)
        return buffer
    }()

    static func answer(_ connection: OpaquePointer?) -> MHD_Result {
        guard
            let response = MHD_create_response_from_buffer(body.count, body.baseAddress, .RESPMEM_PERSISTENT)
        else {
            return .NO
        }
        defer { MHD_destroy_response(response) }
        _ = MHD_add_response_header(response, "Content-Type", "application/json")
        return MHD_queue_response(connection, 200, response)
    }
}

var port = 8090
var threads = 4
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--port": port = arguments.next().flatMap { Int($0) } ?? port
    case "--threads": threads = arguments.next().flatMap { Int($0) } ?? threads
    default:
        print("usage: bench-bare-http [--port N] [--threads N]")
        exit(2)
    }
}
guard let (_, bound) = BareServer.start(port: port, threads: threads) else {
    print("could not listen on 127.0.0.1:\(port)")
    exit(1)
}
// write(2) rather than print: stdout is block-buffered in a pipe and a script waits for this line.
let banner = Array("bench-bare-http listening on 127.0.0.1:\(bound) with \(threads) threads\n".utf8)
_ = banner.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
// MHD's threads serve everything; the main thread only has to stay alive.
while true { pause() }
