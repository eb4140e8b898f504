public import CryptoCore

/// How the HTTP server listens and defends itself; every default is the strict choice.
public struct HTTPServerConfiguration: Sendable {
    /// How connections are spread over threads.
    public enum Threading: Sendable, Hashable {
        /// `threads` workers, each polling many connections (poll()) and serving them one request
        /// at a time: few threads for many idle connections, but a handler that blocks (a commit
        /// to wait for) holds up its worker's other connections. Slow handlers are
        /// `Router.addAsync` routes, which park their connection instead of a worker.
        case workerPool
        /// A thread of its own for every connection, up to `connectionLimit`: a handler that blocks
        /// (a commit to wait for, a simulated latency) stalls only its own client, and the kernel
        /// shares the CPU evenly between clients. `threads` is not used.
        case threadPerConnection
    }

    /// The address to bind: an IPv4 or IPv6 literal. Loopback unless deliberately exposed.
    public var host: String
    /// The port to bind; 0 asks the system for a free one (see `HTTPServer.start()`).
    public var port: Int
    /// Worker threads, each polling its own connections; handlers run on these (`.workerPool`).
    public var threads: Int
    /// Whether connections share a pool of `threads` workers or each get their own thread.
    public var threading: Threading
    /// HTTPS with this key and certificate, and client certificates when it names a client CA;
    /// nil serves plain HTTP.
    public var tls: HTTPServerTLS?
    /// Seconds a connection may receive and send nothing (including mid-request) before it is
    /// closed. Every byte restarts it, so a client trickling a request is bounded by
    /// `requestDeadlineSeconds`, not by this.
    public var connectionTimeoutSeconds: Int
    /// Simultaneous connections accepted in all; more are closed as soon as they are accepted.
    /// Each costs a descriptor and MHD's per-connection buffer, so keep it below the process's
    /// open-file limit (see Docs/configuration.md for why 1024).
    public var connectionLimit: Int
    /// Simultaneous connections accepted from one client address (the socket peer, so a proxy's
    /// address when behind one); more from it are closed as soon as they are accepted, while other
    /// addresses are still served.
    public var perAddressConnectionLimit: Int
    /// Seconds a connection has to deliver a whole request, header block and body, counted from
    /// the connection's accept (or the previous response) and not restarted by arriving bytes;
    /// past it the connection is shut down. Bounds a client that trickles a byte at a time, which
    /// `connectionTimeoutSeconds` (reset by every byte) does not.
    public var requestDeadlineSeconds: Int
    /// The largest request body accepted; larger ones get 413, whether announced by
    /// Content-Length or discovered while reading a chunked body.
    public var maxBodyBytes: Int
    /// The longest request target (path and query) accepted; longer ones get a problem+json 414.
    /// libmicrohttpd's connection buffer is sized from this and `maxHeaderBytes` so that this
    /// check, not MHD's own HTML page, answers (see Docs/threat-model.md for what MHD still answers).
    public var maxURIBytes: Int
    /// The largest header block accepted (each field counted as `name: value` CRLF); larger ones
    /// get a problem+json 431.
    public var maxHeaderBytes: Int
    /// Proxies (IP addresses or CIDR blocks, IPv4 and IPv6) whose forwarding headers are believed.
    public var trustedProxies: [String]
    /// Which browser origins may call the API.
    public var cors: CORSPolicy
    /// Token buckets per route class. Every class a route names must have one (`.unlimited`
    /// excepted): the server refuses to start otherwise.
    public var rateLimits: [RateClass: RateLimit]
    /// How many (route class, client) buckets the rate limiter keeps at most: its memory bound.
    public var maxTrackedClients: Int
    /// The `Cache-Control` added to responses whose handler did not set one.
    public var apiCacheControl: String

    /// Creates a configuration; every parameter has the strict default.
    public init(
        host: String = "127.0.0.1", port: Int = 0, threads: Int = 4, connectionTimeoutSeconds: Int = 30,
        connectionLimit: Int = 1024, maxBodyBytes: Int = 64 * 1024, trustedProxies: [String] = [],
        cors: CORSPolicy = CORSPolicy(), rateLimits: [RateClass: RateLimit] = [:],
        maxTrackedClients: Int = 100_000, apiCacheControl: String = "no-store",
        threading: Threading = .workerPool, tls: HTTPServerTLS? = nil, maxURIBytes: Int = 8 * 1024,
        maxHeaderBytes: Int = 16 * 1024, perAddressConnectionLimit: Int = 64, requestDeadlineSeconds: Int = 20
    ) {
        self.perAddressConnectionLimit = perAddressConnectionLimit
        self.requestDeadlineSeconds = requestDeadlineSeconds
        self.maxURIBytes = maxURIBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.host = host
        self.port = port
        self.threads = threads
        self.threading = threading
        self.tls = tls
        self.connectionTimeoutSeconds = connectionTimeoutSeconds
        self.connectionLimit = connectionLimit
        self.maxBodyBytes = maxBodyBytes
        self.trustedProxies = trustedProxies
        self.cors = cors
        self.rateLimits = rateLimits
        self.maxTrackedClients = maxTrackedClients
        self.apiCacheControl = apiCacheControl
    }
}

/// HTTPS for a listener: the server's key and certificate, and optionally the CA its clients'
/// certificates must chain to.
public struct HTTPServerTLS: Sendable {
    /// The server's private key, PEM (PKCS#8 or the key type's own form). Secret: it prints as
    /// `<redacted>` and never reaches an error message or a log.
    public var keyPEM: RedactedSecret
    /// The server's certificate, PEM, optionally followed by the intermediates a client needs.
    public var certificatePEM: String
    /// When set, the PEM CA certificate(s) a client certificate must chain to, and a client
    /// certificate is *required*: the handshake fails for a client without one or with one this CA
    /// did not issue, so no request from it reaches a handler. Nil asks for no client certificate.
    public var clientCAPEM: String?

    /// Creates TLS settings.
    /// - Parameters:
    ///   - keyPEM: the server's private key, PEM.
    ///   - certificatePEM: the server's certificate (and chain), PEM.
    ///   - clientCAPEM: the CA that must have issued every client's certificate; nil for none.
    public init(keyPEM: RedactedSecret, certificatePEM: String, clientCAPEM: String? = nil) {
        self.keyPEM = keyPEM
        self.certificatePEM = certificatePEM
        self.clientCAPEM = clientCAPEM
    }
}

/// Cross-origin access for browsers: only exactly listed origins get CORS headers.
public struct CORSPolicy: Sendable {
    /// Origins allowed to call the API, compared exactly (scheme, host and port), e.g.
    /// `https://app.example.com`. Empty means no cross-origin access.
    public var allowedOrigins: [String]
    /// Whether cross-origin requests may carry cookies (`Access-Control-Allow-Credentials`).
    public var allowCredentials: Bool
    /// Seconds a browser may cache a preflight answer.
    public var maxAgeSeconds: Int
    /// Request headers a cross-origin request may send.
    public var allowedHeaders: [String]
    /// Response headers a cross-origin script may read.
    public var exposedHeaders: [String]

    /// Creates a policy; by default no origin is allowed.
    public init(
        allowedOrigins: [String] = [], allowCredentials: Bool = false, maxAgeSeconds: Int = 600,
        allowedHeaders: [String] = ["Content-Type", "Authorization", "X-Request-Id"],
        exposedHeaders: [String] = ["X-Request-Id", "Retry-After"]
    ) {
        self.allowedOrigins = allowedOrigins
        self.allowCredentials = allowCredentials
        self.maxAgeSeconds = maxAgeSeconds
        self.allowedHeaders = allowedHeaders
        self.exposedHeaders = exposedHeaders
    }
}

/// A token bucket: `burst` requests at once, refilled at `perSecond`.
public struct RateLimit: Sendable, Hashable {
    /// The bucket's size: how many requests may arrive back to back.
    public var burst: Int
    /// Tokens added per second.
    public var perSecond: Double

    /// Creates a limit.
    /// - Parameters:
    ///   - burst: the bucket size, at least 1.
    ///   - perSecond: the refill rate, greater than 0.
    public init(burst: Int, perSecond: Double) {
        precondition(burst >= 1 && perSecond > 0, "a rate limit needs burst >= 1 and perSecond > 0")
        self.burst = burst
        self.perSecond = perSecond
    }
}
