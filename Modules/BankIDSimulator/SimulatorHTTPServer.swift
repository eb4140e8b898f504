import CGnuTLS
import CMicroHTTPD
import Glibc
import Synchronization

/// One request as the simulator's handlers see it: the body is complete, headers are by lowercase name.
struct SimulatorRequest: Sendable {
    var method: String
    var path: String
    var headers: [String: String]
    var body: [UInt8]
    /// The peer's IP address as text (what BankID would see as the client's address).
    var peer: String
}

/// What a handler answers: a response, or a dropped connection (a fault the simulator injects).
enum SimulatorReply: Sendable {
    case response(status: Int, contentType: String, body: [UInt8])
    case dropConnection
}

/// A small libmicrohttpd server for the simulator: HTTPS with required client certificates for the
/// RP API, plain HTTP for the user's side. Not HTTPFront's server, on purpose: HTTPFront is tuned
/// for throughput (epoll thread pool, problem+json, security headers, rate limits), while the
/// simulator needs BankID's bare error bodies, TLS with client certificates, one thread per
/// connection so injected latency stalls only its own client, and connections it can drop.
final class SimulatorHTTPServer: @unchecked Sendable {
    // @unchecked: `daemon` is written in init and read only by `stop`, which runs once under `stopped`.
    private let daemon: OpaquePointer
    private let retained: Unmanaged<Handler>
    private let stopped = Atomic<Bool>(false)
    /// The port bound (the system's choice when 0 was asked for).
    let port: Int

    /// The handler state the C callbacks reach through `cls`.
    final class Handler: Sendable {
        let respond: @Sendable (SimulatorRequest) -> SimulatorReply
        let maxBodyBytes = 1 << 20

        init(respond: @escaping @Sendable (SimulatorRequest) -> SimulatorReply) { self.respond = respond }
    }

    /// One request's body between MHD's calls, kept in MHD's per-request slot.
    final class Pending {
        var body: [UInt8] = []
        var tooLarge = false
    }

    /// TLS material as PEM text.
    struct TLS {
        var keyPEM: String
        var certificatePEM: String
        /// The CA client certificates must chain to.
        var trustPEM: String
    }

    /// Starts listening on 127.0.0.1:`port`.
    init(port: Int, tls: TLS?, respond: @escaping @Sendable (SimulatorRequest) -> SimulatorReply)
        throws(SimulatorError)
    {
        guard (0...65_535).contains(port) else {
            throw SimulatorError(.configuration, "port out of range: \(port)")
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
        let handler = Unmanaged.passRetained(Handler(respond: respond))
        let started = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                Self.start(socketAddress, handler: handler, tls: tls)
            }
        }
        guard let started else {
            handler.release()
            throw SimulatorError(
                .listen, "libmicrohttpd could not listen on 127.0.0.1:\(port) (errno \(errno))")
        }
        daemon = started
        retained = handler
        self.port = Int(cmhd_bound_port(started))
    }

    private static func start(
        _ address: UnsafePointer<sockaddr>, handler: Unmanaged<Handler>, tls: TLS?
    ) -> OpaquePointer? {
        let access: MHD_AccessHandlerCallback = { cls, connection, url, method, _, upload, uploadSize, slot in
            guard let cls, let connection, let url, let method, let uploadSize, let slot else { return .NO }
            return Unmanaged<Handler>.fromOpaque(cls).takeUnretainedValue().handle(
                connection: connection, url: url, method: method, upload: upload, uploadSize: uploadSize,
                slot: slot)
        }
        let completed: MHD_RequestCompletedCallback = { _, _, slot, _ in
            guard let slot, let existing = slot.pointee else { return }
            Unmanaged<Pending>.fromOpaque(existing).release()
            slot.pointee = nil
        }
        // Runs for each new connection before its handshake: MHD only *requests* a client
        // certificate when given a trust store, so require one and have GnuTLS verify it against
        // that store; a client without a valid certificate then never gets a request through.
        let notify: MHD_NotifyConnectionCallback = { _, connection, _, code in
            guard code == .CONNECTION_NOTIFY_STARTED, let connection,
                let session = cmhd_tls_session(connection)
            else { return }
            gnutls_certificate_server_set_request(OpaquePointer(session), GNUTLS_CERT_REQUIRE)
            gnutls_session_set_verify_cert(OpaquePointer(session), nil, 0)
        }
        let context = handler.toOpaque()
        guard let tls else {
            return cmhd_start_simulator(address, access, context, completed, nil, nil, nil, nil, nil, nil, 30)
        }
        return tls.keyPEM.withCString { key in
            tls.certificatePEM.withCString { certificate in
                tls.trustPEM.withCString { trust in
                    // MHD copies nothing: the PEM must live until the daemon has loaded it, which
                    // MHD_start_daemon does before it returns.
                    cmhd_start_simulator(
                        address, access, context, completed, nil, notify, nil, key, certificate, trust, 30)
                }
            }
        }
    }

    /// Stops listening and closes every connection (MHD joins its threads).
    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        MHD_stop_daemon(daemon)
        retained.release()
    }

    deinit { stop() }
}

extension SimulatorHTTPServer.Handler {
    /// The access handler: collects the body over MHD's calls, then answers once.
    func handle(
        connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>,
        upload: UnsafePointer<CChar>?, uploadSize: UnsafeMutablePointer<Int>,
        slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let existing = slot.pointee else {
            // Headers only: answering now would make MHD close the connection, so wait for the body.
            slot.pointee = Unmanaged.passRetained(SimulatorHTTPServer.Pending()).toOpaque()
            return .YES
        }
        let pending = Unmanaged<SimulatorHTTPServer.Pending>.fromOpaque(existing).takeUnretainedValue()
        let size = uploadSize.pointee
        if size > 0 {
            uploadSize.pointee = 0
            if pending.body.count + size > maxBodyBytes {
                pending.tooLarge = true
            } else if let upload {
                upload.withMemoryRebound(to: UInt8.self, capacity: size) { bytes in
                    pending.body.append(contentsOf: UnsafeBufferPointer(start: bytes, count: size))
                }
            }
            return .YES
        }
        var headers: [String: String] = [:]
        withUnsafeMutablePointer(to: &headers) { pointer in
            _ = MHD_get_connection_values(
                connection, .HEADER_KIND,
                { cls, _, key, value in
                    guard let cls, let key else { return .YES }
                    let headers = cls.assumingMemoryBound(to: [String: String].self)
                    headers.pointee[String(cString: key).lowercased()] =
                        value.map { String(cString: $0) } ?? ""
                    return .YES
                }, pointer)
        }
        let request = SimulatorRequest(
            method: String(cString: method), path: String(cString: url), headers: headers,
            body: pending.tooLarge ? [] : pending.body, peer: Self.peer(connection))
        switch respond(request) {
        case .dropConnection:
            // MHD_NO makes MHD close the connection without a response: what a dropped link looks like.
            return .NO
        case .response(let status, let contentType, let body):
            let created = body.withUnsafeBytes { raw in
                MHD_create_response_from_buffer(
                    raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), .RESPMEM_MUST_COPY)
            }
            guard let response = created else { return .NO }
            defer { MHD_destroy_response(response) }
            _ = MHD_add_response_header(response, "Content-Type", contentType)
            _ = MHD_add_response_header(response, "Cache-Control", "no-store")
            return MHD_queue_response(connection, UInt32(status), response)
        }
    }

    /// The peer's address as text, "127.0.0.1" when MHD cannot tell.
    private static func peer(_ connection: OpaquePointer) -> String {
        guard let address = cmhd_client_address(connection) else { return "127.0.0.1" }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        if address.pointee.sa_family == sa_family_t(AF_INET6) {
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                var raw = v6.pointee.sin6_addr
                return inet_ntop(AF_INET6, &raw, &buffer, socklen_t(buffer.count)).map { String(cString: $0) }
                    ?? "::1"
            }
        }
        return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
            var raw = v4.pointee.sin_addr
            return inet_ntop(AF_INET, &raw, &buffer, socklen_t(buffer.count)).map { String(cString: $0) }
                ?? "127.0.0.1"
        }
    }
}
