public import FoundationEssentials
import Glibc
import Kernel
import Synchronization

/// The HTTP server: libmicrohttpd in front of a `Router`, over plain HTTP or TLS (with required
/// client certificates when the configuration names a client CA).
///
/// Handlers run synchronously on MHD's threads: a pool of poll() workers, or one thread per
/// connection (`HTTPServerConfiguration.threading`). Start once, shut down once; both are safe to
/// call from any thread.
public final class HTTPServer: Sendable {
    private enum Phase {
        case ready
        case running(MHDDaemon)
        case stopping
        case stopped
    }

    /// Internal, not private: in-process answers (InProcess.swift) use its pipeline.
    let handler: ConnectionHandler
    private let configuration: HTTPServerConfiguration
    private let phase = Locked<Phase>(.ready)
    private let boundPort = Atomic<Int>(0)

    /// Creates a server; nothing listens until `start()`.
    /// - Parameters:
    ///   - configuration: where to listen and the limits to enforce.
    ///   - router: the routes; later changes to the caller's router do not reach the server.
    ///   - accessLog: receives one JSON line per request (and one per unhandled error); called on
    ///     worker threads, so it must be quick and thread-safe.
    ///   - clock: the monotonic clock for durations and rate limiting.
    ///   - metrics: counts requests by route and status and times them, when given.
    /// - Throws: `HTTPServerError.invalidConfiguration` for a bad trusted proxy or limit.
    public init(
        configuration: HTTPServerConfiguration, router: Router,
        accessLog: @escaping @Sendable (String) -> Void, clock: any MonotonicClock = SystemMonotonicClock(),
        metrics: HTTPMetrics? = nil
    ) throws(HTTPServerError) {
        guard configuration.threads >= 1, configuration.connectionLimit >= 1, configuration.maxBodyBytes >= 0,
            configuration.connectionTimeoutSeconds >= 1, configuration.maxTrackedClients >= 1,
            configuration.maxURIBytes >= 1, configuration.maxHeaderBytes >= 1
        else {
            throw HTTPServerError(
                .invalidConfiguration,
                "threads, connectionLimit, connectionTimeoutSeconds, maxTrackedClients, maxURIBytes and maxHeaderBytes must be at least 1"
            )
        }
        self.configuration = configuration
        handler = ConnectionHandler(
            pipeline: try RequestPipeline(
                configuration: configuration, router: router, clock: clock, accessLog: accessLog,
                metrics: metrics))
    }

    /// The routes the server answers, e.g. for `OpenAPIDocument.generate`.
    public var routes: [RouteDescription] { handler.pipeline.router.routes }

    /// Starts listening.
    /// - Returns: the bound port (the system's choice when the configuration says 0).
    /// - Throws: `HTTPServerError` when already started or stopped, or when MHD cannot listen.
    @discardableResult
    public func start() throws(HTTPServerError) -> Int {
        try phase.withLock { phase throws(HTTPServerError) -> Int in
            guard case .ready = phase else {
                throw HTTPServerError(.invalidState, "start() may be called once, before shutdown")
            }
            let daemon = try MHDDaemon(configuration: configuration, handler: handler)
            phase = .running(daemon)
            boundPort.store(daemon.port, ordering: .releasing)
            return daemon.port
        }
    }

    /// The bound port, or 0 before `start()`.
    public var port: Int { boundPort.load(ordering: .acquiring) }

    /// Requests between their first byte and their completion, for shutdown and tests.
    public var inFlightRequests: Int { handler.inFlight.load(ordering: .relaxed) }

    /// Stops gracefully: refuses new connections at once, lets requests in flight finish (for at
    /// most `grace` seconds), then stops MHD and closes what is left. Later calls return at once.
    /// - Parameter grace: the longest wait for requests in flight, in seconds.
    public func shutdown(grace: TimeInterval) {
        let daemon: MHDDaemon? = phase.withLock { phase in
            switch phase {
            case .running(let daemon):
                phase = .stopping
                return daemon
            case .ready:
                phase = .stopped
                return nil
            case .stopping, .stopped:
                return nil
            }
        }
        guard let daemon else { return }
        // Responses from now on ask keep-alive clients to close, so idle connections drain too.
        handler.draining.store(true, ordering: .relaxed)
        daemon.quiesce()
        let deadline = Date().addingTimeInterval(max(0, grace))
        while handler.inFlight.load(ordering: .relaxed) > 0 && Date() < deadline {
            usleep(5_000)
        }
        // Requests still waiting in an async handler get their 503 now, with a moment to be sent
        // before MHD closes what is left.
        handler.answerAllForShutdown()
        let flush = Date().addingTimeInterval(0.5)
        while handler.inFlight.load(ordering: .relaxed) > 0 && Date() < flush {
            usleep(5_000)
        }
        // The last reference: deinit stops MHD and joins its threads.
        phase.withLock { $0 = .stopped }
        _ = consume daemon
    }

    deinit {
        // MHD's threads hold the handler, not the server, so a forgotten server would leak a
        // listening daemon; stop it without waiting.
        shutdown(grace: 0)
    }
}
