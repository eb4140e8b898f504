public import PasskeyCore

// The relying party, the method switches and the well-known documents: the settings passkey
// sign-up and sign-in run with. Plain values; PortvaktServer turns them into PasskeyCore's
// `RelyingParty` and the orchestrator's policy.

extension PortvaktConfiguration {
    /// The attestation conveyance the options ask for: `none` (consumer passkeys) or `direct`.
    public enum AttestationConveyanceSetting: String, Sendable, CaseIterable {
        /// Ask for no attestation; what consumer passkeys send anyway.
        case none
        /// Ask for the authenticator's attestation as generated.
        case direct
    }

    /// The WebAuthn relying party: who passkeys are for and what a ceremony must prove.
    public struct RelyingPartySettings: Sendable, Equatable {
        /// The RP ID: the domain passkeys are scoped to. By default the public URL's host when it
        /// is a name ("localhost" for the embedded default, and for an IP-literal public URL).
        public var id: String
        /// The name authenticators may show (default "Portvakt").
        public var name: String
        /// The exact web origins accepted in clientDataJSON; by default the public URL's origin.
        public var origins: [String]
        /// Android app origins, `android:apk-key-hash:<base64url SHA-256 of the signing certificate>`.
        public var androidOrigins: [String]
        /// Top-level origins the ceremonies may run under in a cross-origin iframe (default none).
        public var topOrigins: [String]
        /// The user verification policy (default required).
        public var userVerification: UserVerificationRequirement
        /// The attestation asked for (default none).
        public var attestation: AttestationConveyanceSetting
        /// Whether an attestation must chain to a trust anchor (default acceptUntrusted).
        public var attestationPolicy: RelyingParty.AttestationPolicy
        /// What a signature counter regression does (default reject).
        public var counterPolicy: RelyingParty.CounterPolicy
        /// How long an issued challenge can be answered, in seconds (30 to 3600, default 300).
        public var challengeLifetimeSeconds: Int
        /// The algorithms offered in pubKeyCredParams, most preferred first, and the only ones
        /// registration accepts (default `RelyingParty.defaultAlgorithms`: no ML-DSA). Stored
        /// credentials of any algorithm keep verifying whatever this lists.
        public var algorithms: [COSEAlgorithm]

        /// Creates relying-party settings; `origins` is required because its default depends on
        /// the public URL (see ``defaults(publicURL:)``).
        public init(
            id: String = "localhost", name: String = "Portvakt", origins: [String],
            androidOrigins: [String] = [], topOrigins: [String] = [],
            userVerification: UserVerificationRequirement = .required,
            attestation: AttestationConveyanceSetting = .none,
            attestationPolicy: RelyingParty.AttestationPolicy = .acceptUntrusted,
            counterPolicy: RelyingParty.CounterPolicy = .reject, challengeLifetimeSeconds: Int = 300,
            algorithms: [COSEAlgorithm] = RelyingParty.defaultAlgorithms
        ) {
            self.id = id
            self.name = name
            self.origins = origins
            self.androidOrigins = androidOrigins
            self.topOrigins = topOrigins
            self.userVerification = userVerification
            self.attestation = attestation
            self.attestationPolicy = attestationPolicy
            self.counterPolicy = counterPolicy
            self.challengeLifetimeSeconds = challengeLifetimeSeconds
            self.algorithms = algorithms
        }

        /// The defaults for a deployment at `publicURL`: its host as RP ID, its origin as the one
        /// accepted origin.
        public static func defaults(publicURL: String) -> Self {
            Self(id: defaultID(publicURL: publicURL), origins: [publicURL])
        }

        /// The public URL's host when it is a DNS name; "localhost" otherwise (an RP ID cannot be
        /// an IP address).
        static func defaultID(publicURL: String) -> String {
            guard let origin = try? ConfigValidators.parseOrigin(publicURL, what: "the public URL"),
                ConfigValidators.ipAddress(origin.host) == nil, !origin.host.hasPrefix("[")
            else { return "localhost" }
            return origin.host
        }
    }

    /// A login method's switches.
    public struct PasskeyMethodSettings: Sendable, Equatable {
        /// Whether passkey sign-in is offered at all (default true).
        public var enabled: Bool
        /// Whether a new account can be created with a passkey and a username (default true).
        public var signup: Bool

        /// Creates passkey method settings.
        public init(enabled: Bool = true, signup: Bool = true) {
            self.enabled = enabled
            self.signup = signup
        }
    }

    /// Which sign-in methods this deployment offers.
    public struct MethodSettings: Sendable, Equatable {
        /// Passkeys.
        public var passkey: PasskeyMethodSettings
        /// BankID's journeys.
        public var bankid = BankIDMethodSettings()

        /// Creates method settings.
        public init(passkey: PasskeyMethodSettings = PasskeyMethodSettings()) {
            self.passkey = passkey
        }
    }

    /// One Android app allowed to use this site's passkeys (Digital Asset Links).
    public struct AndroidApp: Sendable, Equatable {
        /// The application id, e.g. "com.example.app".
        public var package: String
        /// SHA-256 fingerprints of the signing certificates, uppercase hex pairs joined by colons.
        public var sha256Fingerprints: [String]

        /// Creates an app entry.
        public init(package: String, sha256Fingerprints: [String]) {
            self.package = package
            self.sha256Fingerprints = sha256Fingerprints
        }
    }

    /// What the /.well-known documents say; each document is served only when it has content.
    public struct WellKnownSettings: Sendable, Equatable {
        /// iOS apps for `apple-app-site-association` webcredentials, "TEAMID.bundle.id".
        public var appleAppIDs: [String]
        /// Android apps for `assetlinks.json`.
        public var androidApps: [AndroidApp]
        /// Other origins allowed to use this RP ID (`/.well-known/webauthn`); also accepted as
        /// ceremony origins.
        public var relatedOrigins: [String]

        /// Creates well-known settings; by default nothing is published.
        public init(appleAppIDs: [String] = [], androidApps: [AndroidApp] = [], relatedOrigins: [String] = [])
        {
            self.appleAppIDs = appleAppIDs
            self.androidApps = androidApps
            self.relatedOrigins = relatedOrigins
        }
    }
}

// MARK: Reading

extension PortvaktConfiguration.RelyingPartySettings {
    /// The range of `challengeLifetimeSeconds`: long enough for a slow user, short enough that a
    /// leaked challenge is soon useless.
    static let challengeLifetimeRange = 30...3600

    init(reading r: ConfigReader, publicURL: String, publicURLValid: Bool) {
        let defaults = Self.defaults(publicURL: publicURL)
        let idGiven = r.contains("id")
        let originsGiven = r.contains("origins")
        self.init(
            id: r.string(
                "id", default: defaults.id, expectation: "a domain name",
                validate: PasskeyValidators.rpIDProblem),
            name: r.string(
                "name", default: defaults.name, expectation: "a name",
                validate: PasskeyValidators.displayNameProblem),
            origins: r.stringArray(
                "origins", default: defaults.origins, elementExpectation: "a web origin",
                validate: PasskeyValidators.webOriginProblem),
            androidOrigins: r.stringArray(
                "androidOrigins", default: defaults.androidOrigins,
                elementExpectation: "an android:apk-key-hash: origin",
                validate: PasskeyValidators.androidOriginProblem),
            topOrigins: r.stringArray(
                "topOrigins", default: defaults.topOrigins, elementExpectation: "a web origin",
                validate: PasskeyValidators.webOriginProblem),
            userVerification: r.choice("userVerification", default: defaults.userVerification),
            attestation: r.choice("attestation", default: defaults.attestation),
            attestationPolicy: r.choice("attestationPolicy", default: defaults.attestationPolicy),
            counterPolicy: r.choice("counterPolicy", default: defaults.counterPolicy),
            challengeLifetimeSeconds: r.integer(
                "challengeLifetimeSeconds", default: defaults.challengeLifetimeSeconds,
                in: Self.challengeLifetimeRange),
            algorithms: Self.readAlgorithms(r, default: defaults.algorithms))
        // Every web origin must be the RP ID or under it, or browsers refuse the ceremony. Checked
        // whenever the operator wrote either value; defaults derived from an IP-literal public URL
        // are left alone (such a deployment can only serve native apps).
        guard idGiven || originsGiven || publicURLValid,
            r.log.allValid(r.keyPath("id"), r.keyPath("origins"))
        else { return }
        if !idGiven, !originsGiven, id != Self.host(of: publicURL) { return }
        for (offset, origin) in origins.enumerated() {
            let host = Self.host(of: origin)
            if host != id, !host.hasSuffix("." + id) {
                let path = originsGiven ? "\(r.keyPath("origins"))[\(offset)]" : r.keyPath("id")
                r.log.add(
                    .conflict, path,
                    "the origin \(ConfigJSONWriter.quoted(origin)) is not on the RP ID \(ConfigJSONWriter.quoted(id)) or a subdomain of it; set relyingParty.id to a domain that contains it"
                )
            }
        }
    }

    /// `algorithms`: IANA COSE names, at least one, none twice; the defaults when any is wrong.
    static func readAlgorithms(_ r: ConfigReader, default fallback: [COSEAlgorithm]) -> [COSEAlgorithm] {
        let names = r.stringArray(
            "algorithms", default: fallback.map(\.name), elementExpectation: "a COSE algorithm name",
            validate: PasskeyValidators.algorithmProblem)
        let algorithms = names.compactMap(COSEAlgorithm.init(name:))
        if algorithms.isEmpty {
            r.log.add(
                .invalidValue, r.keyPath("algorithms"), "expected at least one algorithm, e.g. [\"ES256\"]")
            return fallback
        }
        if let repeated = algorithms.enumerated().first(where: {
            algorithms[..<$0.offset].contains($0.element)
        }) {
            r.log.add(
                .invalidValue, "\(r.keyPath("algorithms"))[\(repeated.offset)]",
                "\(ConfigJSONWriter.quoted(repeated.element.name)) is listed twice")
            return fallback
        }
        return algorithms
    }

    /// The host of a checked origin, without brackets or port.
    static func host(of origin: String) -> String {
        guard let parsed = try? ConfigValidators.parseOrigin(origin, what: "an origin") else { return "" }
        return parsed.host
    }
}

extension PortvaktConfiguration.MethodSettings {
    init(reading r: ConfigReader) {
        self.init(
            passkey: r.section("passkey") { p in
                let defaults = PortvaktConfiguration.PasskeyMethodSettings()
                return .init(
                    enabled: p.bool("enabled", default: defaults.enabled),
                    signup: p.bool("signup", default: defaults.signup))
            })
        bankid = r.section("bankid") { PortvaktConfiguration.BankIDMethodSettings(reading: $0) }
    }
}

extension PortvaktConfiguration.WellKnownSettings {
    init(reading r: ConfigReader) {
        let defaults = Self()
        let appleAppIDs = r.stringArray(
            "appleAppIDs", default: defaults.appleAppIDs, elementExpectation: "TEAMID.bundle.id",
            validate: PasskeyValidators.appleAppIDProblem)
        let relatedOrigins = r.stringArray(
            "relatedOrigins", default: defaults.relatedOrigins, elementExpectation: "a web origin",
            validate: PasskeyValidators.webOriginProblem)
        self.init(
            appleAppIDs: appleAppIDs, androidApps: Self.readAndroidApps(r), relatedOrigins: relatedOrigins)
    }

    /// `androidApps`: an array of `{"package", "sha256Fingerprints"}` objects, each key required.
    private static func readAndroidApps(_ r: ConfigReader) -> [PortvaktConfiguration.AndroidApp] {
        guard let elements = r.array("androidApps") else { return [] }
        var apps: [PortvaktConfiguration.AndroidApp] = []
        for (offset, element) in elements.enumerated() {
            let path = "\(r.keyPath("androidApps"))[\(offset)]"
            guard case .object(let object) = element else {
                r.log.add(.wrongType, path, "expected an object, got \(element.shortDescription)")
                continue
            }
            let app = ConfigReader(object, path: path, log: r.log)
            let package = app.requiredString(
                "package", expectation: "an Android application id",
                validate: PasskeyValidators.androidPackageProblem)
            let fingerprints = app.stringArray(
                "sha256Fingerprints", default: [], elementExpectation: "a SHA-256 fingerprint",
                validate: PasskeyValidators.fingerprintProblem)
            if app.log.allValid(app.keyPath("sha256Fingerprints")), fingerprints.isEmpty {
                app.log.add(
                    app.contains("sha256Fingerprints") ? .invalidValue : .missingKey,
                    app.keyPath("sha256Fingerprints"),
                    "expected at least one SHA-256 fingerprint, e.g. \"AB:CD:…\" (32 pairs)")
            }
            app.finish()
            if let package, !fingerprints.isEmpty {
                apps.append(.init(package: package, sha256Fingerprints: fingerprints))
            }
        }
        return apps
    }
}

// MARK: Validators

/// Checks for the passkey settings' values. Each returns the problem as a message, or nil.
enum PasskeyValidators {
    /// An RP ID: a lowercase DNS name (no scheme, port or path), not an IP address.
    static func rpIDProblem(_ text: String) -> String? {
        if text.contains("://") || text.contains("/") || text.contains(":") {
            return
                "expected a bare domain such as \"example.com\" (no scheme, port or path), got \(ConfigJSONWriter.quoted(text))"
        }
        if ConfigValidators.ipAddress(text) != nil {
            return "an RP ID cannot be an IP address; use a domain name"
        }
        return ConfigValidators.hostProblem(text)
    }

    /// A COSE algorithm Portvakt verifies, by its IANA name.
    static func algorithmProblem(_ text: String) -> String? {
        guard COSEAlgorithm(name: text) == nil else { return nil }
        let names = COSEAlgorithm.allCases.map { ConfigJSONWriter.quoted($0.name) }.joined(separator: ", ")
        return "expected one of \(names), got \(ConfigJSONWriter.quoted(text))"
    }

    /// A display name: 1 to 64 characters, no control characters.
    static func displayNameProblem(_ text: String) -> String? {
        let valid =
            !text.isEmpty && text.count <= 64
            && !text.unicodeScalars.contains { $0.properties.generalCategory == .control }
        return valid ? nil : "expected 1 to 64 characters without control characters"
    }

    /// A web origin, `http(s)://host[:port]` exactly as browsers send it.
    static func webOriginProblem(_ text: String) -> String? {
        do {
            _ = try ConfigValidators.parseOrigin(text, what: "an origin")
            return nil
        } catch {
            return error.message
        }
    }

    /// `android:apk-key-hash:` followed by 43 base64url characters (a SHA-256, unpadded).
    static func androidOriginProblem(_ text: String) -> String? {
        let prefix = "android:apk-key-hash:"
        let hash = text.hasPrefix(prefix) ? Substring(text.dropFirst(prefix.count)) : ""
        let valid =
            hash.utf8.count == 43
            && hash.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                    true
                default: false
                }
            }
        return valid
            ? nil
            : "expected \"android:apk-key-hash:\" and 43 base64url characters (the SHA-256 of the signing certificate, unpadded), got \(ConfigJSONWriter.quoted(text))"
    }

    /// An Apple app id: a 10-character team id, a dot, and a bundle id.
    static func appleAppIDProblem(_ text: String) -> String? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let team = parts[0]
        let validTeam =
            team.count == 10 && team.allSatisfy { $0.isASCII && ($0.isUppercase || $0.isNumber) }
        let validBundle =
            parts.count == 2 && !parts[1].isEmpty
            && parts[1].split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
                !label.isEmpty && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
            }
        return validTeam && validBundle
            ? nil
            : "expected TEAMID.bundle.id (a 10-character uppercase team id, e.g. \"ABCDE12345.com.example.app\"), got \(ConfigJSONWriter.quoted(text))"
    }

    /// An Android application id: two or more dot-separated Java identifiers.
    static func androidPackageProblem(_ text: String) -> String? {
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        let valid =
            labels.count >= 2
            && labels.allSatisfy { label in
                guard let first = label.first, first.isASCII, first.isLetter else { return false }
                return label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
            }
        return valid
            ? nil
            : "expected an application id such as \"com.example.app\", got \(ConfigJSONWriter.quoted(text))"
    }

    /// A SHA-256 certificate fingerprint: 32 uppercase hex pairs joined by colons.
    static func fingerprintProblem(_ text: String) -> String? {
        let pairs = text.split(separator: ":", omittingEmptySubsequences: false)
        let valid =
            pairs.count == 32
            && pairs.allSatisfy { pair in
                pair.count == 2 && pair.allSatisfy { $0.isHexDigit && ($0.isNumber || $0.isUppercase) }
            }
        return valid
            ? nil
            : "expected 32 uppercase hex pairs joined by colons (\"AB:CD:…\", as keytool prints), got \(ConfigJSONWriter.quoted(text))"
    }
}

extension ConfigReader {
    /// The raw elements of an array at `key`; nil (after reporting) when absent or not an array.
    func array(_ key: String) -> [ConfigJSON]? {
        readRaw(key, expectation: "an array") { value in
            if case .array(let elements) = value { return elements }
            return nil
        }
    }

    /// A string that must be present and pass `validate`; nil after reporting otherwise.
    func requiredString(_ key: String, expectation: String, validate: (String) -> String?) -> String? {
        guard contains(key) else {
            log.add(.missingKey, keyPath(key), "missing, expected \(expectation)")
            return nil
        }
        let marker = "\u{0}missing"
        let value = string(key, default: marker, expectation: expectation, validate: validate)
        return value == marker ? nil : value
    }
}
