import CPQ

/// How Storage connects to a PostgreSQL server: where, as whom, over what TLS, with which timeouts.
///
/// A plain value with strict defaults (TLS with full certificate and host-name checks). Storage
/// reads no file and no environment variable for it: the app builds it, and takes the password
/// from the environment. `description` never shows the password.
public struct PostgreSQLConfiguration: Sendable, CustomStringConvertible {
    /// Whether and how the connection uses TLS (libpq's `sslmode`).
    ///
    /// libpq's `allow` and `prefer` are left out on purpose: both fall back to plain text when
    /// TLS fails, so whoever can interfere with the network picks whether there is encryption.
    public enum TLSMode: String, Sendable, CaseIterable {
        /// No TLS: only for a server on the same host or a private network you trust.
        case disable
        /// TLS, without checking the server's certificate (encryption against eavesdroppers only).
        /// libpq checks it as `verify-ca` does when `rootCertificatePath` is set.
        case require
        /// TLS, and the certificate must chain to `rootCertificatePath`; the host name is not checked.
        case verifyCA = "verify-ca"
        /// TLS, the certificate must chain to `rootCertificatePath` and name the host connected to.
        case verifyFull = "verify-full"
    }

    /// Host name, IP address, or the directory of the server's Unix socket (a path starting with `/`).
    public var host: String
    /// TCP port, or the number in the Unix socket's name.
    public var port: Int
    /// The database to connect to.
    public var database: String
    /// The role to connect as.
    public var user: String
    /// The role's password, or nil when the server needs none (peer or certificate authentication).
    public var password: String?
    /// Whether and how to use TLS.
    public var tlsMode: TLSMode
    /// PEM file of the certificate authorities `verify-ca` and `verify-full` accept (`sslrootcert`);
    /// nil means libpq's default, `~/.postgresql/root.crt`.
    public var rootCertificatePath: String?
    /// The name the server shows for these connections in `pg_stat_activity` and its logs.
    public var applicationName: String
    /// How long opening one connection may take. libpq counts whole seconds, at least two, so this
    /// is rounded up to that.
    public var connectTimeout: Duration
    /// How long one statement may run on the server before it is cancelled (`storage.timeout`);
    /// the client also gives up on a server that stays silent this long plus a short grace.
    public var statementTimeout: Duration

    /// Creates a configuration; everything but the server, database and role has a strict default.
    public init(
        host: String, port: Int = 5432, database: String, user: String, password: String? = nil,
        tlsMode: TLSMode = .verifyFull, rootCertificatePath: String? = nil,
        applicationName: String = "portvakt", connectTimeout: Duration = .seconds(5),
        statementTimeout: Duration = .seconds(5)
    ) {
        self.host = host
        self.port = port
        self.database = database
        self.user = user
        self.password = password
        self.tlsMode = tlsMode
        self.rootCertificatePath = rootCertificatePath
        self.applicationName = applicationName
        self.connectTimeout = connectTimeout
        self.statementTimeout = statementTimeout
    }

    /// Reads a `postgresql://user:password@host:port/database?sslmode=…` URL (or a libpq
    /// `key=value` string), parsed by libpq itself.
    ///
    /// The URL may set `sslmode`, `sslrootcert`, `application_name` and `connect_timeout` besides
    /// the parts above; anything else is refused, so a typo cannot silently fall back to a
    /// default. Host, user and database are required. The timeouts not in the URL keep their
    /// defaults.
    /// - Throws: `StorageError(.invalidArgument)`; its message never quotes the URL, which may hold
    ///   the password.
    public init(url: String) throws(StorageError) {
        let options = try Self.parse(url)
        func required(_ key: String, _ name: String) throws(StorageError) -> String {
            guard let value = options[key], !value.isEmpty else {
                throw StorageError(.invalidArgument, "the PostgreSQL URL names no \(name)")
            }
            return value
        }
        self.init(
            host: try required("host", "host"), database: try required("dbname", "database"),
            user: try required("user", "user"), password: options["password"])
        if let port = options["port"] {
            guard let number = Int(port) else {
                throw StorageError(.invalidArgument, "the PostgreSQL URL's port is not a number")
            }
            self.port = number
        }
        if let mode = options["sslmode"] {
            guard let tlsMode = TLSMode(rawValue: mode) else {
                throw StorageError(
                    .invalidArgument,
                    "sslmode \"\(mode)\" is not one of \(TLSMode.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            self.tlsMode = tlsMode
        }
        rootCertificatePath = options["sslrootcert"]
        if let name = options["application_name"] { applicationName = name }
        if let seconds = options["connect_timeout"] {
            guard let number = Int(seconds), number > 0 else {
                throw StorageError(
                    .invalidArgument, "the PostgreSQL URL's connect_timeout is not a positive number")
            }
            connectTimeout = .seconds(number)
        }
        try validate()
    }

    /// The server as `host:port`, for messages: every connection error names it.
    public var endpoint: String { "\(host):\(port)" }

    /// The configuration as a URL without the password.
    public var description: String {
        let password = password == nil ? "" : ":<redacted>"
        var text = "postgresql://\(user)\(password)@\(endpoint)/\(database)?sslmode=\(tlsMode.rawValue)"
        if let rootCertificatePath { text += "&sslrootcert=\(rootCertificatePath)" }
        return text
    }

    /// Refuses values libpq would misread or that would disable a bound Storage relies on.
    func validate() throws(StorageError) {
        guard !host.isEmpty, !database.isEmpty, !user.isEmpty else {
            throw StorageError(.invalidArgument, "PostgreSQL needs a host, a database and a user")
        }
        guard (1...65535).contains(port) else {
            throw StorageError(.invalidArgument, "the PostgreSQL port \(port) is not in 1…65535")
        }
        // A zero timeout means "wait forever" to libpq and to the server: never what Storage wants.
        guard connectTimeout > .zero, statementTimeout >= .milliseconds(1) else {
            throw StorageError(
                .invalidArgument, "the PostgreSQL connect and statement timeouts must be positive")
        }
        // libpq takes a NUL-terminated string per keyword, so a NUL would cut a value short.
        let values = [host, database, user, password ?? "", rootCertificatePath ?? "", applicationName]
        guard !values.contains(where: { $0.utf8.contains(0) }) else {
            throw StorageError(.invalidArgument, "a PostgreSQL connection setting contains a NUL character")
        }
    }

    /// libpq's keywords and values for this configuration.
    ///
    /// Every setting libpq would otherwise take from its `PG*` environment variables is given
    /// explicitly, so only the caller decides where Portvakt connects. An absent password is
    /// passed as empty, which keeps `PGPASSWORD` out too (libpq still consults `~/.pgpass`).
    var connectionParameters: [(String, String)] {
        let connectSeconds = max(2, Int((connectTimeout.milliseconds + 999) / 1000))
        var parameters: [(String, String)] = [
            ("host", host), ("port", String(port)), ("dbname", database), ("user", user),
            ("password", password ?? ""), ("sslmode", tlsMode.rawValue),
            ("application_name", applicationName), ("connect_timeout", String(connectSeconds)),
            // Text goes in and out as UTF-8 whatever the server's encoding.
            ("client_encoding", "UTF8"),
            // Portvakt does not use Kerberos; without this libpq may try GSSAPI encryption first.
            ("gssencmode", "disable"),
            // Set in the start-up packet, so every connection has it before its first statement.
            ("options", "-c statement_timeout=\(statementTimeout.milliseconds)"),
        ]
        if let rootCertificatePath { parameters.append(("sslrootcert", rootCertificatePath)) }
        return parameters
    }

    /// The keywords `init(url:)` accepts.
    private static let urlKeywords: Set<String> = [
        "host", "port", "dbname", "user", "password", "sslmode", "sslrootcert", "application_name",
        "connect_timeout",
    ]

    /// The options `conninfo` sets explicitly, by libpq keyword.
    private static func parse(_ conninfo: String) throws(StorageError) -> [String: String] {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &errorMessage) else {
            // libpq's message may quote part of the URL, and so of the password: it is dropped.
            PQfreemem(errorMessage)
            throw StorageError(.invalidArgument, "not a valid postgresql:// URL or connection string")
        }
        defer { PQconninfoFree(options) }
        var values: [String: String] = [:]
        var option = options
        // The array ends with an entry whose keyword is NULL; unset options have a NULL value.
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val {
                let key = String(cString: keyword)
                guard urlKeywords.contains(key) else {
                    throw StorageError(
                        .invalidArgument, "the PostgreSQL URL sets \(key), which Storage does not take")
                }
                values[key] = String(cString: value)
            }
            option += 1
        }
        return values
    }
}

extension Duration {
    /// This duration in whole milliseconds, rounded down.
    var milliseconds: Int64 {
        let parts = components
        return parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000
    }
}
