import FoundationEssentials

extension PortvaktConfiguration {
    /// BankID's switches under `methods.bankid`: each journey on its own.
    ///
    /// All on by default, so the embedded default shows every journey against the simulator; a
    /// deployment turns off what it does not offer. `enabled: false` turns every journey off, and
    /// then a journey switched on explicitly is a contradiction reported at start.
    public struct BankIDMethodSettings: Sendable, Equatable {
        /// Whether BankID is offered at all (default true).
        public var enabled: Bool
        /// BankID login to an account with a linked identity (default true).
        public var login: Bool
        /// BankID-first sign-up: an identity-verified account (default true).
        public var signup: Bool
        /// Getting back in with BankID after losing every passkey (default true; the flow itself comes later).
        public var recovery: Bool
        /// Linking BankID to a signed-in account (default true).
        public var link: Bool
        /// Step-up: signing a text with BankID while signed in (default true).
        public var sign: Bool

        /// Creates BankID switches.
        public init(
            enabled: Bool = true, login: Bool = true, signup: Bool = true, recovery: Bool = true,
            link: Bool = true, sign: Bool = true
        ) {
            self.enabled = enabled
            self.login = login && enabled
            self.signup = signup && enabled
            self.recovery = recovery && enabled
            self.link = link && enabled
            self.sign = sign && enabled
        }

        static let switchNames = ["login", "signup", "recovery", "link", "sign"]

        func value(of name: String) -> Bool {
            switch name {
            case "login": login
            case "signup": signup
            case "recovery": recovery
            case "link": link
            default: sign
            }
        }
    }

    /// The risk levels BankID reports with `returnRisk`.
    public enum RiskLevel: String, Sendable, CaseIterable, Comparable {
        /// Low risk.
        case low
        /// Moderate risk.
        case moderate
        /// High risk.
        case high

        public static func < (lhs: Self, rhs: Self) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }
    }

    /// How BankID orders are run for the journeys (the `bankid` keys beyond the client's own).
    public struct BankIDFlowSettings: Sendable, Equatable {
        /// Ask BankID for its risk assessment (`returnRisk`, default false).
        public var returnRisk: Bool
        /// The highest risk a login accepts; nil accepts any. Needs `returnRisk`.
        public var riskCeiling: RiskLevel?
        /// How long a BankID signature keeps the session stepped up (60 to 86400 s, default 600).
        public var stepUpSeconds: Int
        /// Keep BankID's signature itself in a signature's evidence (it names the signer), where
        /// the deployment may; otherwise its SHA-256 only (default false).
        public var keepSignatures: Bool

        /// Creates flow settings with the documented defaults.
        public init(
            returnRisk: Bool = false, riskCeiling: RiskLevel? = nil, stepUpSeconds: Int = 600,
            keepSignatures: Bool = false
        ) {
            self.returnRisk = returnRisk
            self.riskCeiling = riskCeiling
            self.stepUpSeconds = stepUpSeconds
            self.keepSignatures = keepSignatures
        }
    }

    /// What a BankID recovery revokes once the new passkey is stored.
    public struct RecoverySettings: Sendable, Equatable {
        /// Revoke the account's other sessions on recovery (default true).
        public var revokeOtherSessions: Bool
        /// Revoke the account's older passkeys on recovery (default false).
        public var revokeOldPasskeys: Bool

        /// Creates the recovery policy.
        public init(revokeOtherSessions: Bool = true, revokeOldPasskeys: Bool = false) {
            self.revokeOtherSessions = revokeOtherSessions
            self.revokeOldPasskeys = revokeOldPasskeys
        }
    }

    /// The app-store review account (off by default): a reviewer without a Swedish BankID or a
    /// passkey of the account signs in with a username and a code to one sandboxed account.
    public struct ReviewAccountSettings: Sendable, Equatable {
        /// Whether the reviewer login exists (default false).
        public var enabled: Bool
        /// The one sandboxed account it reaches (created on start); required when enabled.
        public var username: String?
        /// The name the account shows.
        public var displayName: String
        /// The reviewer's code, from `PORTVAKT_REVIEW_CODE` only; required when enabled.
        public var code: Secret?

        /// The shortest code accepted: it is a shared secret typed by a person, so long enough
        /// that guessing within the rate limit is hopeless.
        public static let minimumCodeLength = 20

        /// Creates review account settings.
        public init(
            enabled: Bool = false, username: String? = nil, displayName: String = "App review",
            code: Secret? = nil
        ) {
            self.enabled = enabled
            self.username = username
            self.displayName = displayName
            self.code = code
        }
    }
}

extension PortvaktConfiguration.BankIDMethodSettings {
    init(reading r: ConfigReader) {
        let enabled = r.bool("enabled", default: true)
        var values: [String: Bool] = [:]
        for name in Self.switchNames {
            let explicit = r.bool(name)
            if explicit == true, !enabled {
                r.log.add(
                    .conflict, r.keyPath(name),
                    "is true while \(r.keyPath("enabled")) is false; turn BankID on or this journey off")
            }
            values[name] = explicit ?? true
        }
        self.init(
            enabled: enabled, login: values["login"]!, signup: values["signup"]!,
            recovery: values["recovery"]!, link: values["link"]!, sign: values["sign"]!)
    }

    var effectiveJSON: ConfigJSON {
        .object(
            [("enabled", .bool(enabled))] + Self.switchNames.map { ($0, .bool(value(of: $0))) })
    }
}

extension PortvaktConfiguration.BankIDFlowSettings {
    /// Reads the keys from the `bankid` section (beside the client's own).
    init(reading r: ConfigReader) {
        let defaults = Self()
        let returnRisk = r.bool("returnRisk", default: defaults.returnRisk)
        var ceiling: PortvaktConfiguration.RiskLevel?
        if r.contains("riskCeiling") {
            ceiling = r.choice("riskCeiling", default: PortvaktConfiguration.RiskLevel.high)
            if !returnRisk, r.log.allValid(r.keyPath("riskCeiling")) {
                r.log.add(
                    .conflict, r.keyPath("riskCeiling"),
                    "needs \(r.keyPath("returnRisk")): true, or BankID never reports a risk to compare")
            }
        }
        self.init(
            returnRisk: returnRisk, riskCeiling: ceiling,
            stepUpSeconds: r.integer("stepUpSeconds", default: defaults.stepUpSeconds, in: 60...86_400),
            keepSignatures: r.bool("keepSignatures", default: defaults.keepSignatures))
    }

    var effectiveMembers: [(String, ConfigJSON)] {
        var members: [(String, ConfigJSON)] = [
            ("returnRisk", .bool(returnRisk)), ("stepUpSeconds", .integer(stepUpSeconds)),
            ("keepSignatures", .bool(keepSignatures)),
        ]
        if let riskCeiling { members.append(("riskCeiling", .string(riskCeiling.rawValue))) }
        return members
    }
}

extension PortvaktConfiguration.RecoverySettings {
    init(reading r: ConfigReader) {
        let defaults = Self()
        self.init(
            revokeOtherSessions: r.bool("revokeOtherSessions", default: defaults.revokeOtherSessions),
            revokeOldPasskeys: r.bool("revokeOldPasskeys", default: defaults.revokeOldPasskeys))
    }

    var effectiveJSON: ConfigJSON {
        .object([
            ("revokeOldPasskeys", .bool(revokeOldPasskeys)),
            ("revokeOtherSessions", .bool(revokeOtherSessions)),
        ])
    }
}

extension PortvaktConfiguration.EnvironmentVariable {
    /// The app-store reviewer's code (at least 20 visible ASCII characters); never in the file.
    public static let reviewCode = "PORTVAKT_REVIEW_CODE"
}

extension PortvaktConfiguration.ReviewAccountSettings {
    init(reading r: ConfigReader, environment: [String: String]) {
        let variable = PortvaktConfiguration.EnvironmentVariable.reviewCode
        r.forbid(
            "code", code: .secretInFile,
            message: "the reviewer's code is never read from the file; remove it and set \(variable)")
        let enabled = r.bool("enabled", default: false)
        let username = r.optionalString("username", expectation: "a username") { text in
            (1...64).contains(text.count) ? nil : "expected 1 to 64 characters"
        }
        let displayName =
            r.optionalString("displayName", expectation: "a name") { text in
                (1...64).contains(text.count) ? nil : "expected 1 to 64 characters"
            } ?? Self().displayName
        if enabled, username == nil, r.log.allValid(r.keyPath("username")) {
            r.log.add(.missingKey, r.keyPath("username"), "required when \(r.keyPath("enabled")) is true")
        }
        let code = PortvaktConfiguration.environmentSecret(
            variable, minimumLength: Self.minimumCodeLength, environment: environment, log: r.log)
        if enabled, code == nil, environment[variable] == nil {
            r.log.add(
                .missingKey, variable, "must be set when \(r.keyPath("enabled")) is true: the reviewer's code"
            )
        }
        self.init(enabled: enabled, username: username, displayName: displayName, code: enabled ? code : nil)
    }

    var effectiveJSON: ConfigJSON {
        var members: [(String, ConfigJSON)] = [
            ("displayName", .string(displayName)), ("enabled", .bool(enabled)),
        ]
        if let username { members.append(("username", .string(username))) }
        return .object(members)
    }
}

extension PortvaktConfiguration {
    /// Rules across sections, each reported on the key to change.
    func checkMethodConsistency(_ r: ConfigReader) {
        // Recovery ends with a new passkey: without passkeys there is nothing to recover to.
        if methods.bankid.recovery, !methods.passkey.enabled, r.log.allValid("methods") {
            r.log.add(
                .conflict, "methods.bankid.recovery",
                "is on while methods.passkey.enabled is false; recovery enrolls a new passkey")
        }
        // The review account stands in for BankID login for reviewers without a Swedish BankID.
        if reviewAccount.enabled, !methods.passkey.enabled, !methods.bankid.login, r.log.allValid("methods") {
            r.log.add(
                .conflict, "reviewAccount.enabled",
                "is true while no login method is on (methods.passkey.enabled, methods.bankid.login)")
        }
    }
}
