public import CryptoCore
public import SessionCore

extension PortvaktConfiguration {
    /// Signed access tokens for the app's servers (`POST /v1/session/access-token`,
    /// `GET /.well-known/jwks.json`); off by default.
    public struct AccessTokenSettings: Sendable, Equatable {
        /// Whether the routes exist and keys are kept.
        public var enabled: Bool
        /// The tokens' `aud`: who they are for (required when enabled).
        public var audience: [String]
        /// A token's lifetime in seconds, 60 to 3600 (never beyond its session's end).
        public var lifetimeSeconds: Int
        /// How many days a key signs before the schedule replaces it, 1 to 365.
        public var rotationDays: Int
        /// The key-encryption key from `PORTVAKT_ACCESS_TOKEN_KEY` (base64 of 32 bytes).
        public var key: Secret?

        /// Creates the settings.
        public init(
            enabled: Bool = false, audience: [String] = [], lifetimeSeconds: Int = 300,
            rotationDays: Int = 30,
            key: Secret? = nil
        ) {
            self.enabled = enabled
            self.audience = audience
            self.lifetimeSeconds = lifetimeSeconds
            self.rotationDays = rotationDays
            self.key = key
        }

        /// The key-encryption key, when the variable held a valid one.
        public var keyEncryptionKey: SigningKeyEncryptionKey? {
            key.flatMap { SigningKeyEncryptionKey(base64: $0.value) }
        }
    }
}

extension PortvaktConfiguration.EnvironmentVariable {
    /// The key-encryption key that seals the access-token signing keys: base64 of 32 random
    /// bytes (`openssl rand -base64 32`); never in the file.
    public static let accessTokenKey = "PORTVAKT_ACCESS_TOKEN_KEY"
}

extension PortvaktConfiguration.AccessTokenSettings {
    init(reading r: ConfigReader, environment: [String: String]) {
        let variable = PortvaktConfiguration.EnvironmentVariable.accessTokenKey
        r.forbid(
            "key", code: .secretInFile,
            message: "the key-encryption key is never read from the file; remove it and set \(variable)")
        let defaults = Self()
        let enabled = r.bool("enabled", default: defaults.enabled)
        let audience =
            r.readRaw("audience", expectation: "a string or an array of strings") { value -> [String]? in
                switch value {
                case .string(let text): return [text]
                case .array(let elements):
                    let texts = elements.compactMap { element -> String? in
                        if case .string(let text) = element { return text }
                        return nil
                    }
                    return texts.count == elements.count ? texts : nil
                default: return nil
                }
            } ?? defaults.audience
        let audienceValid = audience.allSatisfy { (1...256).contains($0.count) } && audience.count <= 16
        if !audienceValid {
            r.log.add(
                .invalidValue, r.keyPath("audience"), "expected 1 to 16 audiences of 1 to 256 characters each"
            )
        }
        if enabled, audience.isEmpty, r.log.allValid(r.keyPath("audience")) {
            r.log.add(
                .missingKey, r.keyPath("audience"),
                "required when \(r.keyPath("enabled")) is true: who the tokens are for (their aud)")
        }
        let lifetime = r.integer(
            "lifetimeSeconds", default: defaults.lifetimeSeconds, in: AccessTokenIssuer.lifetimeRange)
        let rotationDays = r.integer("rotationDays", default: defaults.rotationDays, in: 1...365)
        let expectKey = r.bool("keyFromEnvironment")
        var key: PortvaktConfiguration.Secret?
        if let value = environment[variable] {
            if SigningKeyEncryptionKey(base64: value) == nil {
                r.log.add(
                    .invalidEnvironment, variable,
                    "must be base64 of exactly 32 bytes (openssl rand -base64 32), got \(value.count) characters"
                )
            } else {
                key = PortvaktConfiguration.Secret(value)
            }
        } else if enabled {
            r.log.add(
                .missingKey, variable,
                "must be set when \(r.keyPath("enabled")) is true: the key that seals the signing keys")
        }
        if let expectKey, expectKey != (environment[variable] != nil) {
            r.log.add(
                .conflict, r.keyPath("keyFromEnvironment"),
                expectKey ? "is true but \(variable) is not set" : "is false but \(variable) is set")
        }
        self.init(
            enabled: enabled, audience: audienceValid ? audience : [], lifetimeSeconds: lifetime,
            rotationDays: rotationDays, key: key)
    }

    var effectiveJSON: ConfigJSON {
        var members: [(String, ConfigJSON)] = [
            ("enabled", .bool(enabled)),
            ("audience", .array(audience.map { .string($0) })),
            ("lifetimeSeconds", .integer(lifetimeSeconds)),
            ("rotationDays", .integer(rotationDays)),
        ]
        // Never the key; only that the environment supplied one, as for the admin token.
        if key != nil { members.append(("keyFromEnvironment", .bool(true))) }
        return .object(members)
    }
}
