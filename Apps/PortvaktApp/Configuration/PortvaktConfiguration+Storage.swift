public import CryptoCore
import Storage

extension PortvaktConfiguration {
    /// libpq's `sslmode` values Portvakt takes. `allow` and `prefer` are left out: both fall back
    /// to plain text when TLS fails, so whoever can interfere with the network decides.
    public enum SSLMode: String, Sendable, CaseIterable {
        /// No TLS: only for a server on the same host or a private network you trust.
        case disable
        /// TLS without checking the server's certificate (libpq checks it as `verify-ca` does
        /// when `rootCertificateFile` is given).
        case require
        /// TLS, the certificate must chain to `rootCertificateFile`; the host name is not checked.
        case verifyCA = "verify-ca"
        /// TLS, the certificate must chain to `rootCertificateFile` and name `host`.
        case verifyFull = "verify-full"
    }

    /// The PostgreSQL server several instances share (`storage.postgresql`), with the password
    /// from the environment.
    public struct PostgreSQLSettings: Sendable, Equatable {
        /// Host name, IP address, or the directory of the server's Unix socket (starting with `/`).
        public var host: String
        /// TCP port (1 to 65535).
        public var port: Int
        /// The database to use.
        public var database: String
        /// The role to connect as.
        public var user: String
        /// Whether and how to use TLS.
        public var sslmode: SSLMode
        /// PEM file of the authorities the server's certificate must chain to; nil means libpq's
        /// default, `~/.postgresql/root.crt` of the user running Portvakt.
        public var rootCertificateFile: String?
        /// The name the server shows for these connections in `pg_stat_activity` and its logs.
        public var applicationName: String
        /// Connections each instance keeps (2 to 1000): maintenance holds one for its lock.
        public var poolSize: Int
        /// How long a request waits for a free connection before failing with `storage.timeout`.
        public var poolWaitTimeoutMilliseconds: Int
        /// How long opening a connection may take (libpq waits at least 2 s).
        public var connectTimeoutSeconds: Int
        /// How long one statement may run on the server before it is cancelled.
        public var statementTimeoutMilliseconds: Int
        /// From `PORTVAKT_DATABASE_PASSWORD` or the password in `PORTVAKT_DATABASE_URL`, never the
        /// file; nil when the server needs none (peer, certificate or trust authentication).
        public var password: Secret?

        /// Creates settings; everything but the server, database and role has a strict default.
        public init(
            host: String, port: Int = 5432, database: String, user: String, sslmode: SSLMode = .verifyFull,
            rootCertificateFile: String? = nil, applicationName: String = "portvakt", poolSize: Int = 10,
            poolWaitTimeoutMilliseconds: Int = 5000, connectTimeoutSeconds: Int = 5,
            statementTimeoutMilliseconds: Int = 5000, password: Secret? = nil
        ) {
            self.host = host
            self.port = port
            self.database = database
            self.user = user
            self.sslmode = sslmode
            self.rootCertificateFile = rootCertificateFile
            self.applicationName = applicationName
            self.poolSize = poolSize
            self.poolWaitTimeoutMilliseconds = poolWaitTimeoutMilliseconds
            self.connectTimeoutSeconds = connectTimeoutSeconds
            self.statementTimeoutMilliseconds = statementTimeoutMilliseconds
            self.password = password
        }

        /// The server as `host:port`, as start-up errors and the log name it.
        public var endpoint: String { "\(host):\(port)" }
    }
}

extension PortvaktConfiguration.EnvironmentVariable {
    /// The PostgreSQL role's password; never in the file.
    public static let databasePassword = "PORTVAKT_DATABASE_PASSWORD"
    /// A whole `postgresql://user:password@host:port/database?sslmode=…` URL: it replaces the
    /// file's connection keys and, unless the file says otherwise, selects PostgreSQL.
    public static let databaseURL = "PORTVAKT_DATABASE_URL"
}

// MARK: Reading

extension PortvaktConfiguration.StorageSettings {
    /// The keys that configure SQLite, refused when the engine is PostgreSQL.
    static let sqliteKeys = ["path", "busyTimeoutMilliseconds", "synchronous", "readers"]

    init(reading r: ConfigReader, dataDirectory: String, environment: [String: String]) {
        let defaults = Self(path: Self.defaultPath(dataDirectory: dataDirectory))
        let urlVariable = PortvaktConfiguration.EnvironmentVariable.databaseURL
        let passwordVariable = PortvaktConfiguration.EnvironmentVariable.databasePassword
        // The file's engine wins; without one, a database URL in the environment means PostgreSQL.
        let engineWritten = r.contains("engine")
        let written = r.choice("engine", default: PortvaktConfiguration.DatabaseEngine.sqlite)
        let engine = engineWritten ? written : (environment[urlVariable] != nil ? .postgresql : .sqlite)
        self.init(
            path: r.string(
                "path", default: defaults.path, expectation: "a file path",
                validate: ConfigValidators.pathProblem),
            busyTimeoutMilliseconds: r.integer(
                "busyTimeoutMilliseconds", default: defaults.busyTimeoutMilliseconds, in: 0...600_000),
            synchronous: r.choice("synchronous", default: defaults.synchronous),
            readers: r.integer("readers", default: defaults.readers, in: 1...64))
        let sectionWritten = r.contains("postgresql")
        switch engine {
        case .sqlite:
            guard r.log.allValid(r.keyPath("engine")) else { return }
            // Running on a local file while the operator pointed Portvakt at a shared server would
            // split the accounts between two databases: refuse instead of choosing one.
            if environment[urlVariable] != nil {
                r.log.add(
                    .conflict, r.keyPath("engine"),
                    "is \"sqlite\" while \(urlVariable) is set; set it to \"postgresql\" or unset \(urlVariable)"
                )
            }
            if sectionWritten {
                r.log.add(
                    .conflict, r.keyPath("postgresql"),
                    "is given but storage.engine is \"sqlite\"; set storage.engine to \"postgresql\" or remove this section"
                )
            }
            if environment[passwordVariable] != nil {
                r.log.add(.conflict, passwordVariable, "is set but storage.engine is \"sqlite\"")
            }
        case .postgresql:
            for key in Self.sqliteKeys where r.contains(key) {
                r.log.add(
                    .conflict, r.keyPath(key),
                    "applies only to storage.engine \"sqlite\"; remove it (PostgreSQL's settings are under storage.postgresql)"
                )
            }
            postgresql = r.section("postgresql") {
                PortvaktConfiguration.PostgreSQLSettings(reading: $0, environment: environment)
            }
        }
    }
}

extension PortvaktConfiguration.PostgreSQLSettings {
    init(reading r: ConfigReader, environment: [String: String]) {
        let urlVariable = PortvaktConfiguration.EnvironmentVariable.databaseURL
        let passwordVariable = PortvaktConfiguration.EnvironmentVariable.databasePassword
        r.forbid(
            "password", code: .secretInFile,
            message:
                "the database password is never read from the file; remove it and set \(passwordVariable) (or give it in \(urlVariable))"
        )
        r.forbid(
            "url", code: .secretInFile,
            message:
                "a connection URL may hold the password, so it is read only from \(urlVariable); remove it, or give the connection as host, port, database and user"
        )
        let defaults = Self(host: "", database: "", user: "")
        let host = r.optionalString(
            "host", expectation: "a host name, IP address or socket directory",
            validate: ConfigValidators.databaseHostProblem)
        let port = r.integer("port", default: defaults.port, in: 1...65535)
        let database = r.optionalString(
            "database", expectation: "a database name", validate: ConfigValidators.databaseNameProblem)
        let user = r.optionalString(
            "user", expectation: "a role name", validate: ConfigValidators.databaseNameProblem)
        let sslmode = r.choice("sslmode", default: defaults.sslmode)
        let rootCertificateFile = r.optionalString(
            "rootCertificateFile", expectation: "a file path", validate: ConfigValidators.pathProblem)
        let applicationName = r.string(
            "applicationName", default: defaults.applicationName, expectation: "an application name",
            validate: ConfigValidators.applicationNameProblem)
        self.init(
            host: host ?? "", port: port, database: database ?? "", user: user ?? "", sslmode: sslmode,
            rootCertificateFile: rootCertificateFile, applicationName: applicationName,
            poolSize: r.integer("poolSize", default: defaults.poolSize, in: 2...1000),
            poolWaitTimeoutMilliseconds: r.integer(
                "poolWaitTimeoutMilliseconds", default: defaults.poolWaitTimeoutMilliseconds, in: 1...600_000),
            connectTimeoutSeconds: r.integer(
                "connectTimeoutSeconds", default: defaults.connectTimeoutSeconds, in: 1...300),
            statementTimeoutMilliseconds: r.integer(
                "statementTimeoutMilliseconds", default: defaults.statementTimeoutMilliseconds,
                in: 1...3_600_000))
        let expectPassword = r.bool("passwordFromEnvironment")

        if let url = environment[urlVariable] {
            applyURL(url, log: r.log)
        } else {
            for (key, value) in [("host", host), ("database", database), ("user", user)]
            where value == nil && r.log.allValid(r.keyPath(key)) {
                r.log.add(
                    .missingKey, r.keyPath(key),
                    "required for storage.engine \"postgresql\" (or set \(urlVariable))")
            }
        }
        if let value = environment[passwordVariable] {
            if value.isEmpty {
                r.log.add(
                    .invalidEnvironment, passwordVariable,
                    "is empty; unset it when the server needs no password")
            } else if password != nil {
                r.log.add(
                    .conflict, passwordVariable,
                    "is set, and \(urlVariable) holds a password too; give the password in one of them")
            } else {
                password = PortvaktConfiguration.Secret(value)
            }
        }
        // passwordFromEnvironment asserts where the password comes from; config show writes it.
        if let expectPassword, expectPassword != (password != nil) {
            r.log.add(
                .conflict, r.keyPath("passwordFromEnvironment"),
                expectPassword
                    ? "is true but neither \(passwordVariable) nor a password in \(urlVariable) is set"
                    : "is false but a password is set in the environment")
        }
    }

    /// Takes the connection from `PORTVAKT_DATABASE_URL`: its host, port, database, user, password,
    /// sslmode, sslrootcert, application_name and connect_timeout replace the file's, and what the
    /// URL leaves out takes the built-in default, not the file's value. Problems are reported on
    /// the variable, never quoting it (it may hold the password).
    private mutating func applyURL(_ url: String, log: ConfigIssueLog) {
        let variable = PortvaktConfiguration.EnvironmentVariable.databaseURL
        let connection: PostgreSQLConfiguration
        do {
            connection = try PostgreSQLConfiguration(url: url)
        } catch {
            log.add(.invalidEnvironment, variable, error.message)
            return
        }
        // The same rules as the file's keys, so what config show prints is a valid file.
        let checks = [
            ("host", ConfigValidators.databaseHostProblem(connection.host)),
            ("database", ConfigValidators.databaseNameProblem(connection.database)),
            ("user", ConfigValidators.databaseNameProblem(connection.user)),
            ("application_name", ConfigValidators.applicationNameProblem(connection.applicationName)),
            ("sslrootcert", connection.rootCertificatePath.flatMap(ConfigValidators.pathProblem)),
        ]
        for case (let part, let problem?) in checks {
            log.add(.invalidEnvironment, variable, "its \(part): \(problem)")
        }
        host = connection.host
        port = connection.port
        database = connection.database
        user = connection.user
        password = connection.password.map { PortvaktConfiguration.Secret($0) }
        sslmode =
            switch connection.tlsMode {
            case .disable: .disable
            case .require: .require
            case .verifyCA: .verifyCA
            case .verifyFull: .verifyFull
            }
        rootCertificateFile = connection.rootCertificatePath
        applicationName = connection.applicationName
        connectTimeoutSeconds = Int(connection.connectTimeout.components.seconds)
    }
}

// MARK: Showing

extension PortvaktConfiguration.StorageSettings {
    /// The effective `storage` object: the engine and that engine's keys only. The password
    /// never appears, only `passwordFromEnvironment: true` when there is one.
    var effectiveJSON: ConfigJSON {
        guard let postgresql else {
            return .object([
                ("engine", .string(engine.rawValue)),
                ("path", .string(path)),
                ("busyTimeoutMilliseconds", .integer(busyTimeoutMilliseconds)),
                ("synchronous", .string(synchronous.rawValue)),
                ("readers", .integer(readers)),
            ])
        }
        var members: [(String, ConfigJSON)] = [
            ("host", .string(postgresql.host)),
            ("port", .integer(postgresql.port)),
            ("database", .string(postgresql.database)),
            ("user", .string(postgresql.user)),
            ("sslmode", .string(postgresql.sslmode.rawValue)),
            ("applicationName", .string(postgresql.applicationName)),
            ("poolSize", .integer(postgresql.poolSize)),
            ("poolWaitTimeoutMilliseconds", .integer(postgresql.poolWaitTimeoutMilliseconds)),
            ("connectTimeoutSeconds", .integer(postgresql.connectTimeoutSeconds)),
            ("statementTimeoutMilliseconds", .integer(postgresql.statementTimeoutMilliseconds)),
        ]
        if let file = postgresql.rootCertificateFile {
            members.append(("rootCertificateFile", .string(file)))
        }
        // Absent rather than false without a password, as admin.tokenFromEnvironment.
        if postgresql.password != nil { members.append(("passwordFromEnvironment", .bool(true))) }
        return .object([("engine", .string(engine.rawValue)), ("postgresql", .object(members))])
    }
}

// MARK: Validators

extension ConfigValidators {
    /// A PostgreSQL host: a DNS name, an IP address (IPv6 without brackets), or the absolute path
    /// of the directory holding the server's Unix socket. One host: libpq's comma lists are not taken.
    static func databaseHostProblem(_ text: String) -> String? {
        if text.hasPrefix("/") { return pathProblem(text) }
        if ipAddress(text) != nil { return nil }
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        let valid =
            !text.isEmpty && text.count <= 253
            && labels.allSatisfy { label in
                !label.isEmpty && label.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                    && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
            }
        return valid
            ? nil
            : "expected a host name, an IP address (IPv6 without brackets) or an absolute socket directory, got \(ConfigJSONWriter.quoted(text))"
    }

    /// A database or role name: PostgreSQL cuts identifiers at 63 bytes, so a longer name would
    /// silently be another one.
    static func databaseNameProblem(_ text: String) -> String? {
        guard (1...63).contains(text.utf8.count), !text.contains("\0") else {
            return "expected 1 to 63 bytes, got \(text.utf8.count)"
        }
        return nil
    }

    /// An application name: the server keeps 63 bytes of printable ASCII and turns the rest into `?`.
    static func applicationNameProblem(_ text: String) -> String? {
        let valid =
            (1...63).contains(text.count)
            && text.unicodeScalars.allSatisfy { (0x20...0x7E).contains($0.value) }
        return valid
            ? nil : "expected 1 to 63 printable ASCII characters, got \(ConfigJSONWriter.quoted(text))"
    }
}
