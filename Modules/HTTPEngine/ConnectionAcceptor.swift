import Dispatch
import Glibc
import Kernel
import Synchronization

/// The listening socket of a worker pool, accepted on a thread of its own, each connection handed
/// on (to libmicrohttpd with `MHD_add_connection`, by `MHDDaemon`).
///
/// Left to itself, every worker of MHD's pool polls the listening socket and whichever wakes first
/// accepts, so a worker that was idle at the moment takes a run of connections, and it serves the
/// connections it took for their lifetime: at 16 clients one client was served a fifth as often
/// as another. `MHD_add_connection` places a connection on a worker by its descriptor (modulo the
/// pool's size), which spreads them evenly (Docs/performance.md, "Why the pool serves clients
/// unevenly"). MHD still applies its connection limits and the per-address limit to each one.
final class ConnectionAcceptor: @unchecked Sendable {
    // @unchecked: `socket` is written only by `close()`, after the accepting thread has exited.
    private var socket: Int32
    /// The port bound (the system's choice when 0 was asked for).
    let port: Int
    private let stopping = Atomic<Bool>(false)
    private let exited = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)

    /// Binds and listens on `address` (IPv4 or IPv6, `SO_REUSEADDR`, v6 only for an IPv6 address,
    /// as MHD's own listening socket is).
    /// - Throws: the `errno` of the call that failed (EADDRINUSE for a taken port).
    init(address: sockaddr_storage) throws(ListenFailure) {
        var address = address
        let family = Int32(address.ss_family)
        let length = socklen_t(
            family == AF_INET6 ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size)
        let descriptor = Glibc.socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw ListenFailure(errno: errno) }
        var on: Int32 = 1
        let size = socklen_t(MemoryLayout<Int32>.size)
        var failed = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &on, size) != 0
        if !failed, family == AF_INET6 {
            failed = setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, size) != 0
        }
        if !failed {
            failed = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, length) != 0 || listen(descriptor, SOMAXCONN) != 0
                }
            }
        }
        var bound = sockaddr_storage()
        var boundLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        if !failed {
            failed = withUnsafeMutablePointer(to: &bound) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    getsockname(descriptor, $0, &boundLength) != 0
                }
            }
        }
        guard !failed else {
            let code = errno
            Glibc.close(descriptor)
            throw ListenFailure(errno: code)
        }
        socket = descriptor
        port = withUnsafeBytes(of: &bound) { raw in
            let family = raw.load(fromByteOffset: 0, as: sa_family_t.self)
            let port =
                family == sa_family_t(AF_INET6)
                ? raw.load(as: sockaddr_in6.self).sin6_port : raw.load(as: sockaddr_in.self).sin_port
            return Int(UInt16(bigEndian: port))
        }
    }

    /// Starts the accepting thread, which gives every connection to `handOff` (its descriptor
    /// and peer address; `handOff` owns the descriptor) until `close()`.
    func start(handOff: @escaping @Sendable (Int32, UnsafePointer<sockaddr>, socklen_t) -> Void) {
        started.store(true, ordering: .releasing)
        let socket = socket
        Threads.start(name: "http-accept", stackSize: 128 * 1024) { [self] in
            defer { exited.signal() }
            while !stopping.load(ordering: .acquiring) {
                var peer = sockaddr_storage()
                var peerLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let client = withUnsafeMutablePointer(to: &peer) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(socket, $0, &peerLength) }
                }
                guard client >= 0 else {
                    switch errno {
                    case EINTR, ECONNABORTED, EPROTO:
                        continue
                    case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                        // Out of descriptors or memory: the connection waits in the backlog until
                        // some close, as it would for MHD's own accept.
                        usleep(10_000)
                        continue
                    default:
                        // EINVAL once `close()` shut the socket down; nothing else is expected.
                        return
                    }
                }
                withUnsafePointer(to: &peer) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { handOff(client, $0, peerLength) }
                }
            }
        }
    }

    /// Stops accepting: the socket is shut down (new connections are refused at once), the
    /// accepting thread is waited for, and the socket closed. Later calls return at once.
    func close() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        shutdown(socket, Int32(SHUT_RDWR))
        if started.load(ordering: .acquiring) { exited.wait() }
        Glibc.close(socket)
        socket = -1
    }

    deinit { close() }

    /// A socket call that failed while setting up the listening socket.
    struct ListenFailure: Error {
        let errno: Int32
    }
}
