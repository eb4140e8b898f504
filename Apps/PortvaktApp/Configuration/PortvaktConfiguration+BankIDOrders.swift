import BankIDCore
import FoundationEssentials
import Kernel

extension PortvaktConfiguration {
    /// What each BankID order carries (the `bankid` keys `appIdentifiers`, `texts`,
    /// `requirements`): the apps a native order may name, the text the user approves per intent
    /// and language, and the requirements per intent. Docs/bankid.md, "What each order carries".
    public struct BankIDOrderSettings: Sendable, Equatable {
        /// The intents an order is started for, as the configuration names them.
        public enum Intent: String, Sendable, CaseIterable {
            /// BankID login.
            case login
            /// BankID-first sign-up.
            case signup
            /// Linking BankID to a signed-in account.
            case link
            /// Recovery after losing every passkey.
            case recovery
            /// Step-up signature.
            case sign
        }

        /// How BankID renders a configured text.
        public enum TextFormat: String, Sendable, CaseIterable {
            /// Plain text (BankID's default; no format is sent).
            case plaintext
            /// BankID's Markdown subset.
            case simpleMarkdownV1
        }

        /// The card reader class a requirement may demand.
        public enum CardReader: String, Sendable, CaseIterable {
            /// A reader with or without a PIN pad.
            case class1
            /// A reader with a PIN pad.
            case class2
        }

        /// One intent's text; a language left out keeps the built-in text.
        public struct Text: Sendable, Equatable {
            /// The Swedish text (`sv`).
            public var swedish: String?
            /// The English text (`en`).
            public var english: String?
            /// How BankID renders both.
            public var format: TextFormat

            /// Creates a text.
            public init(swedish: String? = nil, english: String? = nil, format: TextFormat = .plaintext) {
                self.swedish = swedish
                self.english = english
                self.format = format
            }
        }

        /// One intent's requirement; nil members are not sent.
        public struct Requirement: Sendable, Equatable {
            /// The security code must be used, not biometrics.
            public var pinCode: Bool?
            /// The user must scan their passport or ID card in the app.
            public var mrtd: Bool?
            /// The card reader class for BankID on card.
            public var cardReader: CardReader?
            /// The certificate policies (OIDs) accepted.
            public var certificatePolicies: [String]?

            /// Creates a requirement.
            public init(
                pinCode: Bool? = nil, mrtd: Bool? = nil, cardReader: CardReader? = nil,
                certificatePolicies: [String]? = nil
            ) {
                self.pinCode = pinCode
                self.mrtd = mrtd
                self.cardReader = cardReader
                self.certificatePolicies = certificatePolicies
            }
        }

        /// The app identifiers native orders may name (default none: native orders are refused).
        public var appIdentifiers: [String]
        /// Texts by intent (sign shows the API's text and has none).
        public var texts: [Intent: Text]
        /// Requirements by intent.
        public var requirements: [Intent: Requirement]

        /// Creates order settings; the defaults send built-in texts and no requirement.
        public init(
            appIdentifiers: [String] = [], texts: [Intent: Text] = [:],
            requirements: [Intent: Requirement] = [:]
        ) {
            self.appIdentifiers = appIdentifiers
            self.texts = texts
            self.requirements = requirements
        }

        /// The certificate policies BankID documents for production.
        public static let productionPolicies = ["1.2.752.78.1.1", "1.2.752.78.1.2", "1.2.752.78.1.5"]
        /// The certificate policies BankID documents for its test environment.
        public static let testPolicies = ["1.2.3.4.5", "1.2.3.4.10", "1.2.3.4.25", "1.2.752.60.1.6"]
    }
}

extension PortvaktConfiguration.BankIDOrderSettings {
    /// Reads the keys from the `bankid` section; certificate policies are checked against the
    /// environment's documented ones (the simulator takes either set).
    init(reading r: ConfigReader, environment: PortvaktConfiguration.BankIDSettings.Environment) {
        let appIdentifiers = r.stringArray(
            "appIdentifiers", default: [], elementExpectation: "an app identifier",
            validate: Self.appIdentifierProblem)
        if Set(appIdentifiers).count != appIdentifiers.count {
            r.log.add(.invalidValue, r.keyPath("appIdentifiers"), "lists an app identifier twice")
        }
        let texts = r.section("texts") { t -> [Intent: Text] in
            var texts: [Intent: Text] = [:]
            for intent in Intent.allCases where intent != .sign {
                if t.contains(intent.rawValue) { texts[intent] = t.section(intent.rawValue, Self.readText) }
            }
            t.forbid(
                "sign", code: .invalidValue,
                message:
                    "a sign order shows the text its request gives (userVisibleData); there is no configured one"
            )
            return texts
        }
        let requirements = r.section("requirements") { q -> [Intent: Requirement] in
            var requirements: [Intent: Requirement] = [:]
            for intent in Intent.allCases where q.contains(intent.rawValue) {
                requirements[intent] = q.section(intent.rawValue) { Self.readRequirement($0, environment) }
            }
            return requirements
        }
        self.init(appIdentifiers: appIdentifiers, texts: texts, requirements: requirements)
    }

    private static func readText(_ r: ConfigReader) -> Text {
        let format = r.choice("format", default: TextFormat.plaintext)
        let check = { (text: String) in textProblem(text, format: format) }
        let swedish = r.optionalString("sv", expectation: "the Swedish text", validate: check)
        let english = r.optionalString("en", expectation: "the English text", validate: check)
        if !r.contains("sv"), !r.contains("en") {
            r.log.add(.missingKey, r.path, "give the text in sv, en or both")
        }
        return Text(swedish: swedish, english: english, format: format)
    }

    private static func readRequirement(
        _ r: ConfigReader, _ environment: PortvaktConfiguration.BankIDSettings.Environment
    ) -> Requirement {
        let allowed: [String] =
            switch environment {
            case .production: productionPolicies
            case .test: testPolicies
            case .simulator: productionPolicies + testPolicies
            }
        var policies: [String]?
        if r.contains("certificatePolicies") {
            policies = r.stringArray(
                "certificatePolicies", default: [], elementExpectation: "a certificate policy OID"
            ) { oid in
                allowed.contains(oid)
                    ? nil
                    : "not a certificate policy BankID documents for \(environment.rawValue) (\(allowed.joined(separator: ", ")))"
            }
            if policies?.isEmpty == true, r.log.allValid(r.keyPath("certificatePolicies")) {
                r.log.add(
                    .invalidValue, r.keyPath("certificatePolicies"), "give at least one OID or leave it out")
            }
            if policies?.isEmpty == true { policies = nil }
        }
        var reader: CardReader?
        if r.contains("cardReader") { reader = r.choice("cardReader", default: CardReader.class1) }
        return Requirement(
            pinCode: r.bool("pinCode"), mrtd: r.bool("mrtd"), cardReader: reader,
            certificatePolicies: policies)
    }

    /// A bundle id or package name: dot-separated parts of letters, digits, `_` and `-`, at
    /// least two parts, at most 256 bytes (BankID's field limit).
    static func appIdentifierProblem(_ text: String) -> String? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let valid =
            text.utf8.count <= BankIDValidation.deviceFieldLimit && parts.count >= 2
            && parts.allSatisfy { part in
                !part.isEmpty
                    && part.unicodeScalars.allSatisfy {
                        ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                            || $0 == "_" || $0 == "-"
                    }
            }
        return valid
            ? nil
            : "expected a bundle id or package name such as \"se.example.app\" (letters, digits, _ and - in dot-separated parts, at most \(BankIDValidation.deviceFieldLimit) bytes)"
    }

    /// A text BankID would show: not blank, no control characters but newlines and tabs, at
    /// most BankID's limit after base64, and within simpleMarkdownV1 when that is its format.
    static func textProblem(_ text: String, format: TextFormat) -> String? {
        if text.trimmingWhitespaceAndNewlines().isEmpty { return "must not be blank" }
        if text.unicodeScalars.contains(where: {
            $0.properties.generalCategory == .control && $0 != "\n" && $0 != "\t" && $0 != "\r"
        }) {
            return "must not contain control characters (newlines and tabs are fine)"
        }
        let encoded = BankIDValidation.base64Length(text)
        if encoded > BankIDValidation.userVisibleDataLimit {
            return
                "\(encoded) characters after base64; BankID takes at most \(BankIDValidation.userVisibleDataLimit)"
        }
        if format == .simpleMarkdownV1, let problem = SimpleMarkdownV1.problem(text) {
            return "not simpleMarkdownV1: \(problem)"
        }
        return nil
    }

    /// The keys as `effectiveJSON` shows them (what was configured; built-in texts are not shown).
    var effectiveMembers: [(String, ConfigJSON)] {
        var members: [(String, ConfigJSON)] = [("appIdentifiers", .array(appIdentifiers.map { .string($0) }))]
        let texts: [(String, ConfigJSON)] = Intent.allCases.compactMap { intent in
            guard let text = self.texts[intent] else { return nil }
            var fields: [(String, ConfigJSON)] = [("format", .string(text.format.rawValue))]
            if let english = text.english { fields.append(("en", .string(english))) }
            if let swedish = text.swedish { fields.append(("sv", .string(swedish))) }
            return (intent.rawValue, .object(fields))
        }
        let requirements: [(String, ConfigJSON)] = Intent.allCases.compactMap { intent in
            guard let requirement = self.requirements[intent] else { return nil }
            var fields: [(String, ConfigJSON)] = []
            if let reader = requirement.cardReader { fields.append(("cardReader", .string(reader.rawValue))) }
            if let policies = requirement.certificatePolicies {
                fields.append(("certificatePolicies", .array(policies.map { .string($0) })))
            }
            if let mrtd = requirement.mrtd { fields.append(("mrtd", .bool(mrtd))) }
            if let pinCode = requirement.pinCode { fields.append(("pinCode", .bool(pinCode))) }
            return (intent.rawValue, .object(fields))
        }
        members += [("requirements", .object(requirements)), ("texts", .object(texts))]
        return members
    }
}
