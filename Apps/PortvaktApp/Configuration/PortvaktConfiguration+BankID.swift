public import BankIDCore
public import CryptoCore
import FoundationEssentials
import Kernel

extension PortvaktConfiguration {
    /// The BankID RP client: which BankID, the certificates, timeouts, and the identity keys.
    ///
    /// With `environment` "simulator" every path may be left out:
    /// the embedded simulator supplies its own URL and certificates. Production and test need the
    /// CA, the client certificate with its passphrase, and at least one identity key.
    public struct BankIDSettings: Sendable, Equatable {
        /// Which BankID the client talks to.
        public enum Environment: String, Sendable, CaseIterable {
            /// https://appapi2.bankid.com/rp/v6.0
            case production
            /// https://appapi2.test.bankid.com/rp/v6.0
            case test
            /// A BankID simulator (the embedded one unless `baseURL` names another).
            case simulator
        }

        /// How the client certificate file is encoded.
        public enum CertificateFormat: String, Sendable, CaseIterable {
            /// A PKCS#12 bundle (certificate and key), as banks issue it; needs the passphrase.
            case pkcs12
            /// A PEM certificate, with the PEM key in `clientKey`.
            case pem
        }

        /// Where an identity key's secret comes from; the secret itself is never in the file.
        public struct IdentityKeySource: Sendable, Equatable {
            /// The key id stored beside each digest.
            public var id: String
            /// A file holding the key (base64 of at least 32 bytes), e.g. a container secret.
            public var file: String?
            /// An environment variable holding the key, `PORTVAKT_BANKID_…`.
            public var environmentVariable: String?
            /// The key's base64 text as read; never shown.
            public var secret: Secret

            /// Creates a source.
            public init(id: String, file: String? = nil, environmentVariable: String? = nil, secret: Secret) {
                self.id = id
                self.file = file
                self.environmentVariable = environmentVariable
                self.secret = secret
            }
        }

        /// Which BankID (default "simulator", the development default).
        public var environment: Environment
        /// The API's base URL; nil means the environment's own (production, test) or the embedded simulator's.
        public var baseURL: String?
        /// The PEM file with BankID's root CA for the environment: the only CA trusted for the server.
        public var caCertificate: String?
        /// The RP's client certificate file.
        public var clientCertificate: String?
        /// The client certificate's encoding.
        public var clientCertificateFormat: CertificateFormat
        /// The PEM private key, for `pem` certificates.
        public var clientKey: String?
        /// A file holding the certificate passphrase (instead of `PORTVAKT_BANKID_PASSPHRASE`).
        public var passphraseFile: String?
        /// The passphrase, from the file or the environment; never shown.
        public var passphrase: Secret?
        /// The longest a connect may take (1 to 60 s, default 5).
        public var connectTimeoutSeconds: Int
        /// The longest a whole call may take (1 to 120 s, default 10).
        public var requestTimeoutSeconds: Int
        /// Threads (each with one kept-alive connection) running BankID calls (1 to 64, default 4).
        public var threads: Int
        /// Calls allowed to wait for a thread before new ones are refused (0 to 100000, default 256).
        public var maxQueued: Int
        /// Days before the RP certificate's expiry that /health/ready and the log warn (1 to 365, default 30).
        public var certificateWarningDays: Int
        /// The id of the identity key new digests are made with.
        public var currentIdentityKey: String?
        /// Every identity key, current and retired, by id.
        public var identityKeys: [IdentityKeySource]
        /// Risk and step-up settings of the journeys (Docs/journeys.md).
        public var flows = BankIDFlowSettings()
        /// What each order carries: app identifiers, texts, requirements (+BankIDOrders.swift).
        public var orders = BankIDOrderSettings()
        /// `bankid.idSwitching`: which ID-switching features the bank agreed to; nil when absent.
        public var idSwitching: IDSwitchingSettings?
        /// The lifetime of sessions BankID opens; nil values are the general `sessions` ones.
        public var sessions = BankIDSessionSettings()

        /// Creates settings with the documented defaults.
        public init(
            environment: Environment = .simulator, baseURL: String? = nil, caCertificate: String? = nil,
            clientCertificate: String? = nil, clientCertificateFormat: CertificateFormat = .pkcs12,
            clientKey: String? = nil, passphraseFile: String? = nil, passphrase: Secret? = nil,
            connectTimeoutSeconds: Int = 5, requestTimeoutSeconds: Int = 10, threads: Int = 4,
            maxQueued: Int = 256,
            certificateWarningDays: Int = 30, currentIdentityKey: String? = nil,
            identityKeys: [IdentityKeySource] = []
        ) {
            self.environment = environment
            self.baseURL = baseURL
            self.caCertificate = caCertificate
            self.clientCertificate = clientCertificate
            self.clientCertificateFormat = clientCertificateFormat
            self.clientKey = clientKey
            self.passphraseFile = passphraseFile
            self.passphrase = passphrase
            self.connectTimeoutSeconds = connectTimeoutSeconds
            self.requestTimeoutSeconds = requestTimeoutSeconds
            self.threads = threads
            self.maxQueued = maxQueued
            self.certificateWarningDays = certificateWarningDays
            self.currentIdentityKey = currentIdentityKey
            self.identityKeys = identityKeys
        }

        /// The base URL in force: the configured one, or the environment's; nil for the embedded simulator.
        public var effectiveBaseURL: String? {
            if let baseURL { return baseURL }
            switch environment {
            case .production: return BankIDTransportConfiguration.productionBaseURL
            case .test: return BankIDTransportConfiguration.testBaseURL
            case .simulator: return nil
            }
        }

        /// The transport's configuration; nil while the URL or the certificates are left to the
        /// embedded simulator.
        public var transportConfiguration: BankIDTransportConfiguration? {
            guard let baseURL = effectiveBaseURL, let caCertificate, let clientCertificate else { return nil }
            let identity: BankIDClientIdentity
            switch clientCertificateFormat {
            case .pkcs12:
                identity = .pkcs12(
                    path: clientCertificate, passphrase: passphrase ?? RedactedSecret(""))
            case .pem:
                identity = .pem(
                    certificatePath: clientCertificate, keyPath: clientKey ?? "",
                    keyPassphrase: passphrase)
            }
            return BankIDTransportConfiguration(
                baseURL: baseURL, clientIdentity: identity, caCertificatePath: caCertificate,
                connectTimeout: Double(connectTimeoutSeconds), requestTimeout: Double(requestTimeoutSeconds),
                threads: threads, maximumQueued: maxQueued)
        }

        /// The identity hasher over the configured keys; nil when none are configured.
        /// - Throws: `BankIDError(.configuration)`, which loading has already ruled out.
        public func identityHasher() throws(BankIDError) -> IdentityHasher? {
            guard let currentIdentityKey, !identityKeys.isEmpty else { return nil }
            var keys: [IdentityKey] = []
            for source in identityKeys {
                guard let bytes = Self.keyBytes(source.secret.value) else {
                    throw BankIDError(.configuration, "identity key \(source.id) is not base64")
                }
                keys.append(try IdentityKey(id: source.id, secret: bytes))
            }
            return try IdentityHasher(currentKeyID: currentIdentityKey, keys: keys)
        }

        /// The bytes of a key written as base64 or base64url, padded or not, surrounding whitespace ignored.
        static func keyBytes(_ text: String) -> [UInt8]? {
            var normalised = text.trimmingWhitespaceAndNewlines()
                .replacingEvery("-", with: "+").replacingEvery("_", with: "/")
            while normalised.count % 4 != 0 { normalised += "=" }
            return Data(base64Encoded: normalised).map { [UInt8]($0) }
        }
    }
}

extension PortvaktConfiguration.EnvironmentVariable {
    /// The BankID client certificate's passphrase (or use `bankid.passphraseFile`).
    public static let bankIDPassphrase = "PORTVAKT_BANKID_PASSPHRASE"
    /// Identity keys may name their own variables; each must start with this prefix.
    public static let bankIDKeyPrefix = "PORTVAKT_BANKID_"
}

extension PortvaktConfiguration.BankIDSettings {
    init(reading r: ConfigReader, environment variables: [String: String]) {
        let defaults = Self()
        r.forbid(
            "passphrase", code: .secretInFile,
            message:
                "the certificate passphrase is never read from the configuration; use bankid.passphraseFile or \(PortvaktConfiguration.EnvironmentVariable.bankIDPassphrase)"
        )
        let environment = r.choice("environment", default: defaults.environment)
        let baseURL = r.optionalString("baseURL", expectation: "an https URL", validate: Self.baseURLProblem)
        let path = { (key: String) in
            r.optionalString(key, expectation: "a file path", validate: ConfigValidators.pathProblem)
        }
        let caCertificate = path("caCertificate")
        let clientCertificate = path("clientCertificate")
        let format = r.choice("clientCertificateFormat", default: defaults.clientCertificateFormat)
        let clientKey = path("clientKey")
        let passphraseFile = path("passphraseFile")
        let connect = r.integer("connectTimeoutSeconds", default: defaults.connectTimeoutSeconds, in: 1...60)
        let total = r.integer("requestTimeoutSeconds", default: defaults.requestTimeoutSeconds, in: 1...120)
        let threads = r.integer("threads", default: defaults.threads, in: 1...64)
        let maxQueued = r.integer("maxQueued", default: defaults.maxQueued, in: 0...100_000)
        let warningDays = r.integer(
            "certificateWarningDays", default: defaults.certificateWarningDays, in: 1...365)
        let current = r.optionalString(
            "currentIdentityKey", expectation: "a key id", validate: Self.keyIDProblem)
        let keys = r.section("identityKeys") { Self.readKeys($0, environment: variables) }

        // The passphrase: a file or the environment, never both.
        let variable = PortvaktConfiguration.EnvironmentVariable.bankIDPassphrase
        var passphrase: PortvaktConfiguration.Secret?
        if let value = variables[variable] { passphrase = .init(value) }
        if let passphraseFile, r.log.allValid(r.keyPath("passphraseFile")) {
            if passphrase != nil {
                r.log.add(
                    .conflict, r.keyPath("passphraseFile"), "is set, and so is \(variable); use one of them")
            } else if let text = Self.readSecretFile(
                passphraseFile, path: r.keyPath("passphraseFile"), log: r.log)
            {
                // One trailing newline is how secret files are usually written; it is not part of the passphrase.
                passphrase = .init(text.hasSuffix("\n") ? String(text.dropLast()) : text)
            }
        }

        self.init(
            environment: environment, baseURL: baseURL, caCertificate: caCertificate,
            clientCertificate: clientCertificate, clientCertificateFormat: format, clientKey: clientKey,
            passphraseFile: passphraseFile, passphrase: passphrase, connectTimeoutSeconds: connect,
            requestTimeoutSeconds: total, threads: threads, maxQueued: maxQueued,
            certificateWarningDays: warningDays, currentIdentityKey: current, identityKeys: keys)
        flows = PortvaktConfiguration.BankIDFlowSettings(reading: r)
        orders = PortvaktConfiguration.BankIDOrderSettings(reading: r, environment: environment)
        idSwitching = PortvaktConfiguration.IDSwitchingSettings.read(from: r)
        sessions = PortvaktConfiguration.readBankIDSessions(r)
        checkConsistency(r)
    }

    /// Cross-key rules, each reported on the key to change.
    private func checkConsistency(_ r: ConfigReader) {
        if r.log.allValid(r.keyPath("connectTimeoutSeconds"), r.keyPath("requestTimeoutSeconds")),
            requestTimeoutSeconds < connectTimeoutSeconds
        {
            r.log.add(
                .conflict, r.keyPath("requestTimeoutSeconds"),
                "must be at least bankid.connectTimeoutSeconds (\(connectTimeoutSeconds)), got \(requestTimeoutSeconds)"
            )
        }
        if environment != .simulator {
            for (key, value) in [("caCertificate", caCertificate), ("clientCertificate", clientCertificate)]
            where value == nil && r.log.allValid(r.keyPath(key)) {
                r.log.add(.missingKey, r.keyPath(key), "required for the \(environment.rawValue) environment")
            }
            if identityKeys.isEmpty, r.log.allValid(r.keyPath("identityKeys")) {
                r.log.add(
                    .missingKey, r.keyPath("identityKeys"),
                    "at least one identity key is required for the \(environment.rawValue) environment")
            }
        }
        if clientCertificateFormat == .pem, clientCertificate != nil, clientKey == nil {
            r.log.add(.missingKey, r.keyPath("clientKey"), "a pem client certificate needs its key")
        }
        if clientCertificateFormat == .pkcs12, clientKey != nil {
            r.log.add(
                .conflict, r.keyPath("clientKey"), "a pkcs12 bundle holds its own key; remove clientKey")
        }
        if clientCertificateFormat == .pkcs12, clientCertificate != nil, passphrase == nil,
            r.log.allValid(r.keyPath("passphraseFile"))
        {
            r.log.add(
                .missingKey, r.keyPath("passphraseFile"),
                "a pkcs12 client certificate needs its passphrase: set \(PortvaktConfiguration.EnvironmentVariable.bankIDPassphrase) or bankid.passphraseFile"
            )
        }
        if !identityKeys.isEmpty, r.log.allValid(r.keyPath("currentIdentityKey")) {
            if let currentIdentityKey {
                if !identityKeys.contains(where: { $0.id == currentIdentityKey }) {
                    r.log.add(
                        .conflict, r.keyPath("currentIdentityKey"),
                        "names \(currentIdentityKey), which is not among bankid.identityKeys")
                }
            } else {
                r.log.add(
                    .missingKey, r.keyPath("currentIdentityKey"), "say which identity key makes new digests")
            }
        }
    }

    /// `identityKeys`: an object from key id to `{"file": path}` or `{"environment": "PORTVAKT_BANKID_…"}`.
    private static func readKeys(_ r: ConfigReader, environment variables: [String: String])
        -> [IdentityKeySource]
    {
        var keys: [IdentityKeySource] = []
        for id in r.writtenKeys {
            guard
                let source = r.section(
                    id,
                    { k -> IdentityKeySource? in
                        guard k.log.allValid(k.path) else { return nil }
                        let file = k.optionalString(
                            "file", expectation: "a file path", validate: ConfigValidators.pathProblem)
                        let variable = k.optionalString(
                            "environment", expectation: "an environment variable name",
                            validate: keyVariableProblem)
                        if let problem = keyIDProblem(id) {
                            k.log.add(.invalidValue, k.path, problem)
                            return nil
                        }
                        guard k.log.allValid(k.path) else { return nil }
                        let text: String?
                        switch (file, variable) {
                        case (let file?, nil):
                            text = readSecretFile(file, path: k.keyPath("file"), log: k.log)
                        case (nil, let variable?):
                            text = variables[variable]
                            if text == nil {
                                k.log.add(.invalidEnvironment, variable, "is not set (identity key \(id))")
                            }
                        default:
                            k.log.add(.invalidValue, k.path, "give exactly one of file and environment")
                            return nil
                        }
                        guard let text else { return nil }
                        guard let bytes = keyBytes(text), bytes.count >= IdentityKey.minimumSecretBytes else {
                            // The value is a secret: only what is wrong with it is reported.
                            k.log.add(
                                .invalidValue, k.path,
                                "the key must be base64 of at least \(IdentityKey.minimumSecretBytes) random bytes"
                            )
                            return nil
                        }
                        return IdentityKeySource(
                            id: id, file: file, environmentVariable: variable, secret: .init(text))
                    })
            else { continue }
            keys.append(source)
        }
        // By id, as the effective JSON's sorted keys show them, so the shown form reads back equal.
        return keys.sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
    }

    /// Reads a secret file; problems are reported without the contents.
    private static func readSecretFile(_ file: String, path: String, log: ConfigIssueLog) -> String? {
        guard let data = FileManager.default.contents(atPath: file), data.count <= 64 * 1024,
            let text = String(data: data, encoding: .utf8)
        else {
            log.add(.unreadableFile, path, "cannot read the secret file \(file)")
            return nil
        }
        return text
    }

    static func baseURLProblem(_ text: String) -> String? {
        guard let components = URLComponents(string: text), components.scheme == "https",
            let host = components.host, !host.isEmpty, components.query == nil, components.fragment == nil
        else { return "expected an https URL such as \"https://appapi2.test.bankid.com/rp/v6.0\"" }
        return nil
    }

    static func keyIDProblem(_ text: String) -> String? {
        ConfigValidators.identifierProblem(text, what: "a key id")
    }

    static func keyVariableProblem(_ text: String) -> String? {
        ConfigValidators.secretVariableProblem(
            text, prefix: PortvaktConfiguration.EnvironmentVariable.bankIDKeyPrefix)
    }

    /// The section as `effectiveJSON` shows it: paths and sources, never a secret.
    var effectiveJSON: ConfigJSON {
        var members: [(String, ConfigJSON)] = [("environment", .string(environment.rawValue))]
        let optional: [(String, String?)] = [
            ("baseURL", baseURL), ("caCertificate", caCertificate), ("clientCertificate", clientCertificate),
            ("clientKey", clientKey), ("passphraseFile", passphraseFile),
            ("currentIdentityKey", currentIdentityKey),
        ]
        for (key, value) in optional { if let value { members.append((key, .string(value))) } }
        members += [
            ("clientCertificateFormat", .string(clientCertificateFormat.rawValue)),
            ("connectTimeoutSeconds", .integer(connectTimeoutSeconds)),
            ("requestTimeoutSeconds", .integer(requestTimeoutSeconds)),
            ("threads", .integer(threads)), ("maxQueued", .integer(maxQueued)),
            ("certificateWarningDays", .integer(certificateWarningDays)),
            (
                "identityKeys",
                .object(
                    identityKeys.map { key in
                        (
                            key.id,
                            .object(
                                key.file.map { [("file", .string($0))] }
                                    ?? [("environment", .string(key.environmentVariable ?? ""))])
                        )
                    })
            ),
        ]
        members += flows.effectiveMembers
        members += orders.effectiveMembers
        members += effectiveIDSwitchingMembers
        return .object(members)
    }
}

extension ConfigReader {
    /// A string accepted by `validate` when present; nil when absent or invalid (reported).
    func optionalString(_ key: String, expectation: String, validate: (String) -> String?) -> String? {
        let text = readRaw(key, expectation: expectation) { value -> String? in
            if case .string(let text) = value { return text }
            return nil
        }
        guard let text else { return nil }
        if let problem = validate(text) {
            log.add(.invalidValue, keyPath(key), problem)
            return nil
        }
        return text
    }
}
