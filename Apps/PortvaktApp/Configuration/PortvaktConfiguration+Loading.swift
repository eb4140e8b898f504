import CryptoCore
import Glibc
import PortvaktAPI

extension PortvaktConfiguration {
    /// The environment variables Portvakt reads; nothing else in the environment is consulted.
    public enum EnvironmentVariable {
        /// Overrides `dataDirectory`.
        public static let dataDirectory = "PORTVAKT_DATA"
        /// The admin API's bearer token (at least 32 visible ASCII characters); never in the file.
        public static let adminToken = "PORTVAKT_ADMIN_TOKEN"

        static let all = [
            dataDirectory, adminToken, bankIDPassphrase, reviewCode, databasePassword, databaseURL,
            accessTokenKey,
        ]
    }

    /// A configuration file larger than this is refused: a real one is a few kilobytes.
    static let maximumFileBytes = 1 << 20

    /// The shortest admin token accepted from the environment.
    static let minimumAdminTokenLength = 32

    /// Loads and checks the configuration file at `path`, then applies `environment`.
    ///
    /// - Parameters:
    ///   - path: The JSON file; nil means no file, that is the embedded default.
    ///   - environment: The process environment (pass `ProcessInfo.processInfo.environment`);
    ///     only the variables in `EnvironmentVariable` are used.
    /// - Returns: The checked configuration, with dependent defaults resolved.
    /// - Throws: Every problem in the file and the environment, each naming its key path.
    public static func load(path: String?, environment: [String: String]) throws(ConfigurationError)
        -> PortvaktConfiguration
    {
        guard let path else { return try parse(json: Array("{}".utf8), environment: environment) }
        return try parse(json: readFile(path), environment: environment)
    }

    /// Checks a configuration document and applies `environment`.
    ///
    /// - Parameters:
    ///   - json: The UTF-8 JSON document; `{}` means every default.
    ///   - environment: Variables that override the file (`PORTVAKT_DATA`) or supply secrets
    ///     (`PORTVAKT_ADMIN_TOKEN`).
    /// - Returns: The checked configuration, with dependent defaults resolved.
    /// - Throws: Every problem found, in one error: syntax errors with line and column, or all
    ///   unknown keys, wrong types, invalid values and conflicts at once.
    public static func parse(json: [UInt8], environment: [String: String]) throws(ConfigurationError)
        -> PortvaktConfiguration
    {
        let document: ConfigJSON
        do {
            document = try ConfigJSONParser.parse(json)
        } catch {
            throw ConfigurationError(issues: [
                ConfigurationIssue(
                    .invalidJSON, path: "line \(error.line), column \(error.column)",
                    message: "invalid JSON: \(error.message)")
            ])
        }
        guard case .object(let root) = document else {
            throw ConfigurationError(issues: [
                ConfigurationIssue(
                    .wrongType, path: "(document)",
                    message: "expected a JSON object, got \(document.shortDescription)")
            ])
        }
        let log = ConfigIssueLog()
        let reader = ConfigReader(root, path: "", log: log)
        let configuration = PortvaktConfiguration(reading: reader, environment: environment)
        reader.finish()
        checkEnvironmentNames(environment, log: log)
        if !log.issues.isEmpty { throw ConfigurationError(issues: log.issues) }
        return configuration
    }

    /// Reads a file with POSIX calls, whose errno gives operators a precise reason.
    private static func readFile(_ path: String) throws(ConfigurationError) -> [UInt8] {
        func failure(_ message: String) -> ConfigurationError {
            ConfigurationError(issues: [ConfigurationIssue(.unreadableFile, path: path, message: message)])
        }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw failure("cannot open the file: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw failure("cannot stat the file: \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFREG else { throw failure("not a regular file") }
        guard Int(status.st_size) <= maximumFileBytes else {
            throw failure(
                "the file is \(status.st_size) bytes; a configuration may be at most \(maximumFileBytes)")
        }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes {
                read(descriptor, $0.baseAddress! + filled, $0.count - filled)
            }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else {
                throw failure("cannot read the file: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }  // The file shrank while being read: parse what is there.
            filled += count
        }
        return Array(bytes[..<filled])
    }

    /// Reports Portvakt variables that look like a misspelling of a known one: a typo in
    /// PORTVAKT_ADMIN_TOKEN would otherwise silently leave the admin API on its stored token.
    private static func checkEnvironmentNames(_ environment: [String: String], log: ConfigIssueLog) {
        for name in environment.keys.sorted()
        where name.hasPrefix("PORTVAKT_") && !EnvironmentVariable.all.contains(name)
            && !name.hasPrefix(EnvironmentVariable.webhookSecretPrefix)
        {
            let nearest = EnvironmentVariable.all.min {
                KeySuggestion.editDistance(Array(name), Array($0))
                    < KeySuggestion.editDistance(Array(name), Array($1))
            }!
            if KeySuggestion.editDistance(Array(name), Array(nearest)) <= 2 {
                log.add(.invalidEnvironment, name, "unknown environment variable (did you mean \(nearest)?)")
            }
        }
    }
}

// MARK: Sections
// Each section declares its keys once, here, through the reader's typed getters; the defaults come
// from the settings' initializers, so they too are written once.

extension PortvaktConfiguration {
    init(reading r: ConfigReader, environment: [String: String]) {
        let defaults = PortvaktConfiguration()
        let publicURL = r.string(
            "publicURL", default: defaults.publicURL, expectation: "an absolute http(s) URL",
            validate: ConfigValidators.publicURLProblem)
        var dataDirectory = r.string(
            "dataDirectory", default: defaults.dataDirectory, expectation: "a directory path",
            validate: ConfigValidators.pathProblem)
        if let override = environment[EnvironmentVariable.dataDirectory] {
            if let problem = ConfigValidators.pathProblem(override) {
                r.log.add(.invalidEnvironment, EnvironmentVariable.dataDirectory, problem)
            } else {
                dataDirectory = override
            }
        }
        // Dependent defaults follow the values actually in force, including the override above.
        let secure = Self.isHTTPS(publicURL)
        let listen = r.section("listen") { ListenSettings(reading: $0) }
        let storage = r.section("storage") {
            StorageSettings(reading: $0, dataDirectory: dataDirectory, environment: environment)
        }
        self.init(
            publicURL: publicURL,
            dataDirectory: dataDirectory,
            listen: listen,
            http: r.section("http") { HTTPSettings(reading: $0, engine: storage.engine) },
            rateLimits: r.section("rateLimits") { RateLimitSettings(reading: $0) },
            storage: storage,
            sessions: r.section("sessions") {
                SessionSettings(reading: $0, secure: secure, publicURLValid: r.log.allValid("publicURL"))
            },
            admin: r.section("admin") { AdminSettings(reading: $0, environment: environment) },
            logging: r.section("logging") { LoggingSettings(reading: $0) },
            relyingParty: r.section("relyingParty") {
                RelyingPartySettings(
                    reading: $0, publicURL: publicURL, publicURLValid: r.log.allValid("publicURL"))
            },
            methods: r.section("methods") { MethodSettings(reading: $0) },
            wellKnown: r.section("wellKnown") { WellKnownSettings(reading: $0) },
            bankid: r.section("bankid") { BankIDSettings(reading: $0, environment: environment) })
        recovery = r.section("recovery") { RecoverySettings(reading: $0) }
        reviewAccount = r.section("reviewAccount") {
            ReviewAccountSettings(reading: $0, environment: environment)
        }
        introspection = r.section("introspection") { IntrospectionSettings(reading: $0) }
        account = r.section("account") { AccountSettings(reading: $0) }
        audit = r.section("audit") { AuditSettings(reading: $0) }
        webhooks = r.section("webhooks") { WebhookSettings(reading: $0, environment: environment) }
        accessTokens = r.section("accessTokens") {
            AccessTokenSettings(reading: $0, environment: environment)
        }
        // Judged on the values in force: a switch, environment or statement reported while reading
        // was replaced by its default and is not judged again (decided before the cross-section
        // rules below add their own issues under `methods`, so every problem shows in one pass).
        let judgeIDSwitching = r.log.allValid("methods", "bankid.environment", "bankid.idSwitching")
        let judgeBankIDSessions = r.log.allValid("methods")
        checkMethodConsistency(r)
        checkBankIDSessions(r.log, methodsValid: judgeBankIDSessions)
        if judgeIDSwitching {
            for issue in idSwitchingIssues() { r.log.add(issue.code, issue.path, issue.message) }
        }
    }
}

extension PortvaktConfiguration.Listener {
    init(reading r: ConfigReader, default defaults: Self) {
        self.init(
            host: r.string(
                "host", default: defaults.host, expectation: "an IP address",
                validate: ConfigValidators.listenHostProblem),
            port: r.integer("port", default: defaults.port, in: 0...65535))
    }
}

extension PortvaktConfiguration.ListenSettings {
    init(reading r: ConfigReader) {
        let defaults = Self()
        self.init(
            public: r.section("public") { .init(reading: $0, default: defaults.public) },
            admin: r.section("admin") { .init(reading: $0, default: defaults.admin) })
        // Two listeners on one address cannot both bind; a wildcard overlaps every address.
        guard r.log.allValid(r.keyPath("public"), r.keyPath("admin")), self.public.port == admin.port,
            admin.port != 0,
            let publicAddress = ConfigValidators.ipAddress(self.public.host),
            let adminAddress = ConfigValidators.ipAddress(admin.host)
        else { return }
        if publicAddress.bytes == adminAddress.bytes || ConfigValidators.isWildcard(publicAddress.bytes)
            || ConfigValidators.isWildcard(adminAddress.bytes)
        {
            r.log.add(
                .conflict, r.keyPath("admin"),
                "the admin listener \(admin.host) port \(admin.port) overlaps the public listener \(self.public.host) port \(self.public.port); use another port"
            )
        }
    }
}

extension PortvaktConfiguration.HTTPSettings {
    init(reading r: ConfigReader, engine: PortvaktConfiguration.DatabaseEngine) {
        let defaults = Self()
        let threading = r.choice("threading", default: Threading.default(for: engine))
        var threads = defaults.threads
        // A misspelt threading was reported already: then threads is only range-checked, not also
        // called a conflict with a threading nobody wrote.
        if threading == .pool || !r.log.allValid(r.keyPath("threading")) {
            threads = r.integer("threads", default: defaults.threads, in: 1...256)
        } else {
            let chosen = r.contains("threading") ? "" : " (the default with PostgreSQL storage)"
            r.forbid(
                "threads", code: .conflict,
                message:
                    "threads sizes the pool of http.threading \"pool\"; with \"\(threading.rawValue)\"\(chosen) every connection has its own thread: remove threads, or set threading to \"pool\""
            )
        }
        self.init(
            threading: threading, threads: threads,
            connectionTimeoutSeconds: r.integer(
                "connectionTimeoutSeconds", default: defaults.connectionTimeoutSeconds, in: 1...3600),
            connectionLimit: r.integer("connectionLimit", default: defaults.connectionLimit, in: 1...100_000),
            maxBodyBytes: r.integer("maxBodyBytes", default: defaults.maxBodyBytes, in: 1024...16_777_216),
            maxTrackedClients: r.integer(
                "maxTrackedClients", default: defaults.maxTrackedClients, in: 100...10_000_000),
            trustedProxies: r.stringArray(
                "trustedProxies", default: defaults.trustedProxies,
                elementExpectation: "an IP address or CIDR network",
                validate: ConfigValidators.proxyProblem),
            cors: r.section("cors") { .init(reading: $0) },
            maxURIBytes: r.integer("maxURIBytes", default: defaults.maxURIBytes, in: 1024...65_536),
            maxHeaderBytes: r.integer("maxHeaderBytes", default: defaults.maxHeaderBytes, in: 4096...262_144),
            perAddressConnectionLimit: r.integer(
                "perAddressConnectionLimit", default: defaults.perAddressConnectionLimit, in: 1...100_000),
            requestDeadlineSeconds: r.integer(
                "requestDeadlineSeconds", default: defaults.requestDeadlineSeconds, in: 1...3600))
    }
}

extension PortvaktConfiguration.CORSSettings {
    init(reading r: ConfigReader) {
        let defaults = Self()
        self.init(
            allowedOrigins: r.stringArray(
                "allowedOrigins", default: defaults.allowedOrigins, elementExpectation: "an origin",
                validate: ConfigValidators.corsOriginProblem),
            allowCredentials: r.bool("allowCredentials", default: defaults.allowCredentials),
            maxAgeSeconds: r.integer("maxAgeSeconds", default: defaults.maxAgeSeconds, in: 0...86_400))
    }
}

extension PortvaktConfiguration.RateLimitSettings {
    init(reading r: ConfigReader) {
        self.init()
        for routeClass in PortvaktConfiguration.RouteClass.allCases where r.contains(routeClass.rawValue) {
            // A class that is given replaces its default wholly, so both keys are required.
            let limit = r.section(routeClass.rawValue) { c -> PortvaktConfiguration.RateLimit? in
                // A class that is not an object was reported already; its keys are not "missing".
                guard c.log.allValid(c.path) else { return nil }
                let burst = c.integer("burst", required: true, in: 1...100_000)
                let perSecond = c.double("perSecond", required: true, above: 0, atMost: 100_000)
                guard let burst, let perSecond else { return nil }
                return .init(burst: burst, perSecond: perSecond)
            }
            if let limit { self[routeClass] = limit }
        }
        r.finish(noun: "route class") { key in
            key == "maxTrackedClients"
                ? "not a route class: the number of tracked clients is set at http.maxTrackedClients" : nil
        }
    }
}

extension PortvaktConfiguration.SessionSettings {
    /// Lifetimes range from a minute (the activity write-back interval) to a leap year.
    static let lifetimeRange = 60...31_622_400

    init(reading r: ConfigReader, secure: Bool, publicURLValid: Bool) {
        let defaults = Self(cookieName: Self.defaultCookieName(secure: secure))
        self.init(
            absoluteLifetimeSeconds: r.integer(
                "absoluteLifetimeSeconds", default: defaults.absoluteLifetimeSeconds, in: Self.lifetimeRange),
            idleTimeoutSeconds: r.integer(
                "idleTimeoutSeconds", default: defaults.idleTimeoutSeconds, in: Self.lifetimeRange),
            rotationIntervalSeconds: r.integer(
                "rotationIntervalSeconds", default: defaults.rotationIntervalSeconds, in: Self.lifetimeRange),
            cookieName: r.string(
                "cookieName", default: defaults.cookieName, expectation: "a cookie name",
                validate: ConfigValidators.cookieNameProblem))
        if r.log.allValid(r.keyPath("absoluteLifetimeSeconds"), r.keyPath("idleTimeoutSeconds")),
            idleTimeoutSeconds > absoluteLifetimeSeconds
        {
            r.log.add(
                .conflict, r.keyPath("idleTimeoutSeconds"),
                "must not exceed sessions.absoluteLifetimeSeconds (\(absoluteLifetimeSeconds)), got \(idleTimeoutSeconds)"
            )
        }
        // Browsers drop __Host- and __Secure- cookies that are not Secure, i.e. on http.
        if !secure, publicURLValid, r.log.allValid(r.keyPath("cookieName")),
            cookieName.hasPrefix("__Host-") || cookieName.hasPrefix("__Secure-")
        {
            r.log.add(
                .conflict, r.keyPath("cookieName"),
                "the __Host- and __Secure- prefixes need an https publicURL; browsers refuse them on http")
        }
    }
}

extension PortvaktConfiguration.AdminSettings {
    init(reading r: ConfigReader, environment: [String: String]) {
        r.forbid(
            "token", code: .secretInFile,
            message:
                "the admin token is never read from the file; remove it and set the environment variable \(PortvaktConfiguration.EnvironmentVariable.adminToken)"
        )
        let enabled = r.bool("enabled", default: true)
        let expectToken = r.bool("tokenFromEnvironment")
        let name = PortvaktConfiguration.EnvironmentVariable.adminToken
        let token = PortvaktConfiguration.environmentSecret(
            name, minimumLength: PortvaktConfiguration.minimumAdminTokenLength, environment: environment,
            log: r.log)
        // admin.tokenFromEnvironment asserts where the token comes from; config show writes it.
        if let expectToken, expectToken != (environment[name] != nil) {
            r.log.add(
                .conflict, r.keyPath("tokenFromEnvironment"),
                expectToken ? "is true but \(name) is not set" : "is false but \(name) is set")
        }
        self.init(enabled: enabled, token: token)
    }
}

extension PortvaktConfiguration {
    /// A secret from the environment variable `name`: at least `minimumLength` visible ASCII
    /// characters. Problems are reported on the variable with the length and kind only, never
    /// the value.
    static func environmentSecret(
        _ name: String, minimumLength: Int, environment: [String: String], log: ConfigIssueLog
    ) -> Secret? {
        guard let value = environment[name] else { return nil }
        if value.count < minimumLength {
            log.add(
                .invalidEnvironment, name, "must be at least \(minimumLength) characters, got \(value.count)")
            return nil
        }
        guard value.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) }) else {
            log.add(.invalidEnvironment, name, "must be visible ASCII characters without spaces")
            return nil
        }
        return Secret(value)
    }
}

extension PortvaktConfiguration.LoggingSettings {
    init(reading r: ConfigReader) {
        let defaults = Self()
        self.init(
            level: r.choice("level", default: defaults.level),
            accessLog: r.bool("accessLog", default: defaults.accessLog))
    }
}
