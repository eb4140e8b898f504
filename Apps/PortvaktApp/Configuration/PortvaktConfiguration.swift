public import CryptoCore
import FoundationEssentials
public import HTTPEngine
public import PortvaktAPI

/// Everything a Portvakt deployment is configured with: plain values, read once at start.
///
/// Every key has a safe default, so `{}` (or no file at all) gives ``embeddedDefault``: a server for
/// http://localhost with local data. Load it with ``load(path:environment:)`` or
/// ``parse(json:environment:)``, which check every key and report every problem at once; show it
/// with ``effectiveJSON()``. Values that depend on others (the database path, the cookie
/// name) are resolved at load, so a loaded configuration states exactly what will run.
/// Docs/configuration.md is the reference for each key.
public struct PortvaktConfiguration: Sendable, Equatable {
    /// The URL users reach Portvakt at, `scheme://host[:port]`; https except on the local machine.
    public var publicURL: String
    /// Where Portvakt keeps its state (database, generated keys); `PORTVAKT_DATA` overrides it.
    public var dataDirectory: String
    /// The addresses the public and admin APIs listen on.
    public var listen: ListenSettings
    /// Limits and trust settings of the HTTP front.
    public var http: HTTPSettings
    /// Token-bucket limits per route class.
    public var rateLimits: RateLimitSettings
    /// The database: SQLite by default, or a shared PostgreSQL server.
    public var storage: StorageSettings
    /// Session lifetimes and the session cookie.
    public var sessions: SessionSettings
    /// The admin API and its token.
    public var admin: AdminSettings
    /// What is logged.
    public var logging: LoggingSettings
    /// The WebAuthn relying party (RP ID, origins, policies).
    public var relyingParty: RelyingPartySettings
    /// Which sign-in methods are offered.
    public var methods: MethodSettings
    /// The /.well-known documents for apps and related origins.
    public var wellKnown: WellKnownSettings
    /// The BankID RP client (see Docs/bankid.md; the embedded simulator by default).
    public var bankid: BankIDSettings
    /// What a BankID recovery revokes.
    public var recovery = RecoverySettings()
    /// The app-store review account (off by default).
    public var reviewAccount = ReviewAccountSettings()
    /// Session introspection for the app's servers.
    public var introspection = IntrospectionSettings()
    /// Webhooks to the app's servers (none by default).
    public var webhooks = WebhookSettings()
    /// Signed access tokens for the app's servers (off by default).
    public var accessTokens = AccessTokenSettings()
    /// The user's own account: how recent a sign-in deleting it needs.
    public var account = AccountSettings()
    /// The audit trail's retention.
    public var audit = AuditSettings()

    /// The embedded defaults: what `{}` and a missing file mean.
    public static let embeddedDefault = PortvaktConfiguration()

    /// Creates a configuration; unspecified storage, sessions and relying party get defaults
    /// resolved against `dataDirectory` and `publicURL`. Values are not checked here: checking happens on load.
    public init(
        publicURL: String = "http://localhost:8080",
        dataDirectory: String = "./.portvakt",
        listen: ListenSettings = ListenSettings(),
        http: HTTPSettings = HTTPSettings(),
        rateLimits: RateLimitSettings = RateLimitSettings(),
        storage: StorageSettings? = nil,
        sessions: SessionSettings? = nil,
        admin: AdminSettings = AdminSettings(),
        logging: LoggingSettings = LoggingSettings(),
        relyingParty: RelyingPartySettings? = nil,
        methods: MethodSettings = MethodSettings(),
        wellKnown: WellKnownSettings = WellKnownSettings(),
        bankid: BankIDSettings = BankIDSettings()
    ) {
        self.publicURL = publicURL
        self.dataDirectory = dataDirectory
        self.listen = listen
        self.http = http
        self.rateLimits = rateLimits
        self.storage =
            storage ?? StorageSettings(path: StorageSettings.defaultPath(dataDirectory: dataDirectory))
        self.sessions =
            sessions
            ?? SessionSettings(cookieName: SessionSettings.defaultCookieName(secure: Self.isHTTPS(publicURL)))
        self.admin = admin
        self.logging = logging
        self.relyingParty = relyingParty ?? RelyingPartySettings.defaults(publicURL: publicURL)
        self.methods = methods
        self.wellKnown = wellKnown
        self.bankid = bankid
    }

    // MARK: Derived values

    /// Whether cookies carry `Secure`: the public URL is https.
    public var cookieSecure: Bool { Self.isHTTPS(publicURL) }

    /// The SQLite database file, resolved at load from `storage.path` or the data directory.
    public var storagePath: String { storage.path }

    /// The session cookie's name, resolved at load (`__Host-portvakt_session` when https).
    public var sessionCookieName: String { sessions.cookieName }

    /// The origin browsers send for pages under ``publicURL``: the URL itself, which the checker
    /// keeps to exactly `scheme://host[:port]` (lowercase, no path, no default port).
    public var publicOrigin: String { publicURL }

    /// The admin token from `PORTVAKT_ADMIN_TOKEN`, or nil; a secret: hash or compare it, never
    /// log or show it.
    public var adminToken: String? { admin.token?.value }

    static func isHTTPS(_ url: String) -> Bool { url.hasPrefix("https://") }
}

extension PortvaktConfiguration {
    /// A listener's address.
    public struct Listener: Sendable, Equatable {
        /// An IPv4 or IPv6 address literal (IPv6 without brackets); `0.0.0.0` or `::` for all.
        public var host: String
        /// The TCP port, 0 to 65535; 0 lets the system choose (for tests).
        public var port: Int

        /// Creates a listener address.
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
    }

    /// The public and admin listeners; both stay on loopback unless configured otherwise.
    public struct ListenSettings: Sendable, Equatable {
        /// The public API (default 127.0.0.1:8080).
        public var `public`: Listener
        /// The admin API (default 127.0.0.1:8081); never public by default.
        public var admin: Listener

        /// Creates listener settings with loopback defaults.
        public init(
            public: Listener = Listener(host: "127.0.0.1", port: 8080),
            admin: Listener = Listener(host: "127.0.0.1", port: 8081)
        ) {
            self.public = `public`
            self.admin = admin
        }
    }

    /// Limits and trust settings of the HTTP front.
    public struct HTTPSettings: Sendable, Equatable {
        /// How connections are spread over threads.
        public enum Threading: String, Sendable, CaseIterable {
            /// A thread of its own for every open connection (up to `connectionLimit`): a request
            /// waiting for storage holds up no other connection, whatever it waits for. The
            /// default with PostgreSQL, where every query waits for the database server.
            case perConnection
            /// `threads` workers, each serving a share of the connections one request at a time;
            /// a request that waits for a commit parks its connection and the worker serves the
            /// others meanwhile. The default with SQLite, whose commits are what requests wait for.
            case pool

            /// The threading loading a configuration chooses when none is written.
            public static func `default`(for engine: DatabaseEngine) -> Threading {
                switch engine {
                case .sqlite: .pool
                case .postgresql: .perConnection
                }
            }
        }

        /// A pool's default size: one worker per core the process may run on (its CPU affinity and
        /// cgroup quota, as `ProcessInfo.activeProcessorCount` reads them).
        public static var oneThreadPerCore: Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }

        /// How connections are spread over threads (when loaded, `Threading.default(for:)` the
        /// storage engine).
        public var threading: Threading
        /// Threads serving requests with `.pool` threading (1 to 256; one per core by default); not
        /// used otherwise.
        public var threads: Int
        /// Seconds an idle connection is kept (1 to 3600).
        public var connectionTimeoutSeconds: Int
        /// Concurrent connections accepted (1 to 100000).
        public var connectionLimit: Int
        /// Concurrent connections accepted from one client address, a proxy's when behind one
        /// (1 to 100000).
        public var perAddressConnectionLimit: Int
        /// Seconds a connection has for a whole request, header block and body, however its bytes
        /// trickle in (1 to 3600).
        public var requestDeadlineSeconds: Int
        /// The largest request body accepted, in bytes (1024 to 16777216).
        public var maxBodyBytes: Int
        /// The longest request target (path and query) accepted, in bytes (1024 to 65536); longer is 414.
        public var maxURIBytes: Int
        /// The largest request header block accepted, in bytes (4096 to 262144); larger is 431.
        public var maxHeaderBytes: Int
        /// Clients the rate limiter tracks at once; the least recently seen are dropped (100 to 10000000).
        public var maxTrackedClients: Int
        /// Reverse proxies whose `X-Forwarded-For` is believed: addresses or CIDR networks, as written.
        public var trustedProxies: [String]
        /// Cross-origin access for browser apps on other origins.
        public var cors: CORSSettings

        /// Creates HTTP settings with the documented defaults.
        public init(
            threading: Threading = .pool, threads: Int = oneThreadPerCore, connectionTimeoutSeconds: Int = 30,
            connectionLimit: Int = 1024,
            maxBodyBytes: Int = 65536, maxTrackedClients: Int = 100_000, trustedProxies: [String] = [],
            cors: CORSSettings = CORSSettings(), maxURIBytes: Int = 8192, maxHeaderBytes: Int = 16384,
            perAddressConnectionLimit: Int = 64, requestDeadlineSeconds: Int = 20
        ) {
            self.perAddressConnectionLimit = perAddressConnectionLimit
            self.requestDeadlineSeconds = requestDeadlineSeconds
            self.maxURIBytes = maxURIBytes
            self.maxHeaderBytes = maxHeaderBytes
            self.threading = threading
            self.threads = threads
            self.connectionTimeoutSeconds = connectionTimeoutSeconds
            self.connectionLimit = connectionLimit
            self.maxBodyBytes = maxBodyBytes
            self.maxTrackedClients = maxTrackedClients
            self.trustedProxies = trustedProxies
            self.cors = cors
        }
    }

    /// Which other origins may call the public API from a browser.
    public struct CORSSettings: Sendable, Equatable {
        /// Exact origins, `scheme://host[:port]`; empty means no cross-origin access.
        public var allowedOrigins: [String]
        /// Whether those origins may send cookies (`Access-Control-Allow-Credentials`).
        public var allowCredentials: Bool
        /// How long browsers may cache a preflight answer, in seconds (0 to 86400).
        public var maxAgeSeconds: Int

        /// Creates CORS settings; by default no origin is allowed.
        public init(allowedOrigins: [String] = [], allowCredentials: Bool = true, maxAgeSeconds: Int = 600) {
            self.allowedOrigins = allowedOrigins
            self.allowCredentials = allowCredentials
            self.maxAgeSeconds = maxAgeSeconds
        }
    }

    /// The rate-limit classes, as the API declares them.
    public typealias RouteClass = PortvaktAPI.RouteClass
    /// A token bucket: `burst` requests at once, refilled at `perSecond`.
    public struct RateLimit: Sendable, Equatable {
        /// The bucket's size (1 to 100000).
        public var burst: Int
        /// Requests added back per second (above 0, at most 100000).
        public var perSecond: Double

        /// Creates a limit.
        public init(burst: Int, perSecond: Double) {
            self.burst = burst
            self.perSecond = perSecond
        }
    }

    /// The rate limit of each route class, per client.
    public struct RateLimitSettings: Sendable, Equatable {
        /// Routes in no other class (default burst 100, 50 per second).
        public var `default`: RateLimit
        /// Authentication routes (default burst 20, 5 per second).
        public var auth: RateLimit
        /// The admin API (default burst 50, 20 per second).
        public var admin: RateLimit
        /// Starting BankID orders (default burst 10, one every 5 seconds).
        public var bankid = RateLimit(burst: 10, perSecond: 0.2)
        /// A user's data export, which reads every row about them (default burst 3, one a minute).
        public var export = RateLimit(burst: 3, perSecond: 1.0 / 60)
        /// Forward auth, which a reverse proxy calls for every request it protects (default burst
        /// 2000, 1000 per second): without `http.trustedProxies` every check counts against the
        /// proxy's own address, and a 429 becomes the proxy's 500.
        public var backend = RateLimit(burst: 2000, perSecond: 1000)

        /// Creates rate limits with the documented defaults.
        public init(
            default: RateLimit = RateLimit(burst: 100, perSecond: 50),
            auth: RateLimit = RateLimit(burst: 20, perSecond: 5),
            admin: RateLimit = RateLimit(burst: 50, perSecond: 20)
        ) {
            self.default = `default`
            self.auth = auth
            self.admin = admin
        }

        /// Each class's limit transformed, keyed by the engine's class, the form the HTTP engine takes.
        public func mapValues<T>(_ transform: (RateLimit) throws -> T) rethrows -> [RateClass: T] {
            var result: [RateClass: T] = [:]
            for routeClass in RouteClass.allCases {
                result[routeClass.rateClass] = try transform(self[routeClass])
            }
            return result
        }

        /// The limit of one route class.
        public subscript(routeClass: RouteClass) -> RateLimit {
            get {
                switch routeClass {
                case .default: self.default
                case .auth: auth
                case .admin: admin
                case .bankid: bankid
                case .backend: backend
                case .export: export
                }
            }
            set {
                switch routeClass {
                case .default: self.default = newValue
                case .auth: auth = newValue
                case .admin: admin = newValue
                case .bankid: bankid = newValue
                case .backend: backend = newValue
                case .export: export = newValue
                }
            }
        }
    }

    /// SQLite's `synchronous` setting in WAL mode.
    public enum SynchronousMode: String, Sendable, CaseIterable {
        /// Durable against application crashes; a power loss may lose the last transactions.
        case normal
        /// Durable against power loss too, at some write cost.
        case full
    }

    /// The database engines Portvakt runs on (`storage.engine`).
    public enum DatabaseEngine: String, Sendable, CaseIterable {
        /// One SQLite file in the data directory: the embedded default, for one instance.
        case sqlite
        /// A PostgreSQL server that several instances share.
        case postgresql
    }

    /// The database: SQLite (the default) or PostgreSQL.
    public struct StorageSettings: Sendable, Equatable {
        /// SQLite's database file; by default `<dataDirectory>/portvakt.sqlite`, resolved at load.
        /// Resolved under PostgreSQL too, but unused there.
        public var path: String
        /// How long a SQLite statement waits for a lock, in milliseconds (0 to 600000).
        public var busyTimeoutMilliseconds: Int
        /// SQLite's `synchronous` mode.
        public var synchronous: SynchronousMode
        /// SQLite read connections kept open beside the one writer (1 to 64).
        public var readers: Int
        /// The PostgreSQL server, set exactly when the engine is PostgreSQL; the four SQLite
        /// settings above are then unused.
        public var postgresql: PostgreSQLSettings?

        /// Which engine runs: PostgreSQL when `postgresql` is set, otherwise SQLite.
        public var engine: DatabaseEngine { postgresql == nil ? .sqlite : .postgresql }

        /// Creates storage settings for the SQLite database at `path`, or for PostgreSQL when
        /// `postgresql` is given.
        public init(
            path: String, busyTimeoutMilliseconds: Int = 5000, synchronous: SynchronousMode = .normal,
            readers: Int = 4, postgresql: PostgreSQLSettings? = nil
        ) {
            self.path = path
            self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
            self.synchronous = synchronous
            self.readers = readers
            self.postgresql = postgresql
        }

        /// The database file Portvakt uses in `dataDirectory` when `storage.path` is not given.
        public static func defaultPath(dataDirectory: String) -> String {
            dataDirectory.hasSuffix("/")
                ? dataDirectory + "portvakt.sqlite" : dataDirectory + "/portvakt.sqlite"
        }
    }

    /// Session lifetimes (all in seconds, 60 to 31622400) and the cookie name.
    public struct SessionSettings: Sendable, Equatable {
        /// The longest a session lives, however active (default 30 days).
        public var absoluteLifetimeSeconds: Int
        /// The longest a session may go unused (default 7 days); at most the absolute lifetime.
        public var idleTimeoutSeconds: Int
        /// After this age a client should exchange its token for a new one (default 1 day).
        public var rotationIntervalSeconds: Int
        /// The session cookie's name, resolved at load: `__Host-portvakt_session` for https,
        /// `portvakt_session` for http://localhost.
        public var cookieName: String

        /// Creates session settings with the documented lifetimes.
        public init(
            absoluteLifetimeSeconds: Int = 2_592_000, idleTimeoutSeconds: Int = 604_800,
            rotationIntervalSeconds: Int = 86_400, cookieName: String
        ) {
            self.absoluteLifetimeSeconds = absoluteLifetimeSeconds
            self.idleTimeoutSeconds = idleTimeoutSeconds
            self.rotationIntervalSeconds = rotationIntervalSeconds
            self.cookieName = cookieName
        }

        /// The default cookie name: with `__Host-` when cookies are Secure, which binds the cookie
        /// to this host and path `/` (browsers refuse the prefix without Secure).
        public static func defaultCookieName(secure: Bool) -> String {
            secure ? "__Host-portvakt_session" : "portvakt_session"
        }
    }

    /// The admin API.
    public struct AdminSettings: Sendable, Equatable {
        /// Whether the admin listener runs at all.
        public var enabled: Bool
        /// The token from `PORTVAKT_ADMIN_TOKEN`, never from the file; nil means the app uses the
        /// token it created and stored on first start.
        public var token: Secret?

        /// Creates admin settings.
        public init(enabled: Bool = true, token: Secret? = nil) {
            self.enabled = enabled
            self.token = token
        }
    }

    /// How much is logged.
    public enum LogLevel: String, Sendable, CaseIterable {
        /// Everything, for development.
        case debug
        /// Start, stop and notable events.
        case info
        /// Things an operator should look at.
        case warning
        /// Failures only.
        case error
    }

    /// What is logged.
    public struct LoggingSettings: Sendable, Equatable {
        /// The least severe level written.
        public var level: LogLevel
        /// Whether each request is logged (method, path, status, duration; never tokens).
        public var accessLog: Bool

        /// Creates logging settings.
        public init(level: LogLevel = .info, accessLog: Bool = true) {
            self.level = level
            self.accessLog = accessLog
        }
    }

    /// A secret string that does not print itself (CryptoCore's `RedactedSecret`): what the
    /// configuration holds for passphrases and keys.
    public typealias Secret = RedactedSecret
}
