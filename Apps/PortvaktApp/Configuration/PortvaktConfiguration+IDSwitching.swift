import FoundationEssentials

extension PortvaktConfiguration {
    /// A feature that exchanges a BankID identification for another way in, which BankID's
    /// relying-party terms call ID switching (ID-växling) and forbid unless the relying party's
    /// bank agrees. The raw values are the names `bankid.idSwitching.features` takes.
    public enum IDSwitchingFeature: String, Sendable, CaseIterable {
        /// `methods.bankid.link`: BankID confirms the identity behind a passkey account.
        case link
        /// `methods.bankid.recovery`: a BankID identification exchanged for an enrollment token
        /// for a new passkey.
        case recovery
        /// A session BankID opened (login, sign-up) adds a passkey, and the BankID result offers
        /// it (`suggestPasskey`).
        case passkeyAfterBankID
        /// The support desk's phone check (admin API, `portvakt admin bankid`): BankID confirms
        /// that a caller is the person behind a passkey account, before an agent revokes a
        /// passkey or mints an enrollment link for them.
        case supportPhoneCheck
    }

    /// `bankid.idSwitching`: the relying party's statement about ID switching.
    ///
    /// `acknowledged: true` with `features` says the bank agreed to exactly those features;
    /// `acknowledged: false` says none is used (on the simulator too, to rehearse a production
    /// configuration). Absent, the simulator has every feature and any other environment none.
    public struct IDSwitchingSettings: Sendable, Equatable {
        /// Whether the bank agreed to the features listed.
        public var acknowledged: Bool
        /// The features agreed to, in `IDSwitchingFeature` order; empty unless acknowledged.
        public var features: [IDSwitchingFeature]

        /// Creates the statement.
        public init(acknowledged: Bool, features: [IDSwitchingFeature] = []) {
            self.acknowledged = acknowledged
            self.features = IDSwitchingFeature.allCases.filter(features.contains)
        }
    }

    /// Why the ID-switching features are allowed.
    public enum IDSwitchingGrant: Sendable, Equatable {
        /// `bankid.environment` is the simulator and `bankid.idSwitching` is not written: no real
        /// person's identification is exchanged, so development shows every journey.
        case simulator
        /// `bankid.idSwitching` says which features the bank agreed to (or that none is used).
        case acknowledged
        /// A real BankID (production or test) without `bankid.idSwitching`: none is allowed.
        case none
    }

    /// Why ID switching is (or is not) allowed in this configuration.
    public var idSwitchingGrant: IDSwitchingGrant {
        if bankid.idSwitching != nil { return .acknowledged }
        return bankid.environment == .simulator ? .simulator : .none
    }

    /// The ID-switching features this configuration allows, whether or not their journeys are on.
    public var idSwitchingAllowed: [IDSwitchingFeature] {
        switch idSwitchingGrant {
        case .simulator: IDSwitchingFeature.allCases
        case .acknowledged:
            bankid.idSwitching.map { $0.acknowledged ? $0.features : [] } ?? []
        case .none: []
        }
    }

    /// The ID-switching features that run: allowed, and their journeys on.
    public var idSwitchingFeatures: [IDSwitchingFeature] {
        idSwitchingAllowed.filter(idSwitchingJourneyOn)
    }

    /// Whether the journeys behind `feature` are on, allowed or not.
    func idSwitchingJourneyOn(_ feature: IDSwitchingFeature) -> Bool {
        let bankID = methods.bankid
        switch feature {
        case .link: return bankID.link
        case .recovery: return bankID.recovery
        case .passkeyAfterBankID:
            // A passkey after BankID needs passkeys, and a BankID journey that opens a session.
            return bankID.enabled && methods.passkey.enabled && (bankID.login || bankID.signup)
        case .supportPhoneCheck:
            // It has no switch of its own: it runs wherever BankID does, once allowed.
            return bankID.enabled
        }
    }

    /// Whether `url` is on BankID's own service (`bankid.com` or a host under it).
    static func isBankIDService(_ url: String) -> Bool {
        guard let host = URLComponents(string: url)?.host?.lowercased() else { return false }
        return host == "bankid.com" || host.hasSuffix(".bankid.com")
    }

    /// What `config check` and the start-up log say about ID switching: the features on and the
    /// reason; nil when BankID is off.
    public var idSwitchingSummary: String? {
        guard methods.bankid.enabled else { return nil }
        let names = idSwitchingFeatures.map(\.rawValue).joined(separator: ", ")
        switch idSwitchingGrant {
        case .simulator:
            return
                "bankid: ID switching on for development because bankid.environment is \"simulator\": \(names.isEmpty ? "none" : names)"
        case .acknowledged where !names.isEmpty:
            return "bankid.idSwitching: ID switching on because it is acknowledged: \(names)"
        case .acknowledged, .none:
            return
                "bankid: no ID switching (no passkey is issued or confirmed by a BankID identification)"
        }
    }

    /// The ID-switching rules across `methods` and `bankid`: a journey that exchanges a BankID
    /// identification for a passkey account is refused outside the simulator unless
    /// `bankid.idSwitching` acknowledges it, and a feature acknowledged for a journey that is off
    /// is refused too (it would do nothing). Loading reports these; the server checks them again
    /// for a configuration built in code.
    public func idSwitchingIssues() -> [ConfigurationIssue] {
        var issues: [ConfigurationIssue] = []
        // "Simulator" must mean a simulator: BankID's own service named as one would turn every
        // feature on for real identifications.
        if bankid.environment == .simulator, let baseURL = bankid.baseURL, Self.isBankIDService(baseURL) {
            issues.append(
                ConfigurationIssue(
                    .conflict, path: "bankid.baseURL",
                    message:
                        "names BankID's own service while bankid.environment is \"simulator\"; set bankid.environment to \"production\" or \"test\""
                ))
        }
        let allowed = idSwitchingAllowed
        let environment = bankid.environment.rawValue
        let journeys: [(IDSwitchingFeature, String, String)] = [
            (.link, "methods.bankid.link", "linking a BankID identity to a passkey account"),
            (
                .recovery, "methods.bankid.recovery",
                "recovery (a BankID identification exchanged for a new passkey)"
            ),
        ]
        for (feature, path, what) in journeys
        where idSwitchingJourneyOn(feature) && !allowed.contains(feature) {
            let why =
                idSwitchingGrant == .none
                ? "is on (it is unless set to false) with bankid.environment \"\(environment)\""
                : "is on, but bankid.idSwitching does not acknowledge \"\(feature.rawValue)\""
            issues.append(
                ConfigurationIssue(
                    .idSwitchingNotAcknowledged, path: path,
                    message:
                        "\(why): \(what) is ID switching, which BankID's terms forbid unless your bank agrees. Set \(path) to false, or, with your bank's agreement, set bankid.idSwitching to {\"acknowledged\": true, \"features\": [\"\(feature.rawValue)\"…]} (Docs/bankid.md#bankid-and-id-switching)"
                ))
        }
        if let written = bankid.idSwitching, written.acknowledged {
            for (offset, feature) in written.features.enumerated() where !idSwitchingJourneyOn(feature) {
                let needs =
                    switch feature {
                    case .link: "methods.bankid.link is off"
                    case .recovery: "methods.bankid.recovery is off"
                    case .passkeyAfterBankID:
                        "no BankID session may add a passkey: it needs methods.passkey.enabled and methods.bankid.login or methods.bankid.signup"
                    case .supportPhoneCheck: "methods.bankid.enabled is false"
                    }
                issues.append(
                    ConfigurationIssue(
                        .conflict, path: "bankid.idSwitching.features[\(offset)]",
                        message: "acknowledges \"\(feature.rawValue)\", but \(needs); remove it"))
            }
        }
        return issues
    }
}

extension PortvaktConfiguration.IDSwitchingSettings {
    /// Reads `bankid.idSwitching`; nil when the key is absent.
    static func read(from r: ConfigReader) -> Self? {
        let present = r.contains("idSwitching")
        return r.section("idSwitching") { s -> Self? in
            guard present else { return nil }
            let acknowledged = s.bool("acknowledged")
            let names = PortvaktConfiguration.IDSwitchingFeature.allCases.map { "\"\($0.rawValue)\"" }
                .joined(separator: ", ")
            let written = s.stringArray(
                "features", default: [], elementExpectation: "a feature name",
                validate: {
                    PortvaktConfiguration.IDSwitchingFeature(rawValue: $0) == nil
                        ? "expected one of \(names)" : nil
                })
            var features: [PortvaktConfiguration.IDSwitchingFeature] = []
            for (offset, name) in written.enumerated() {
                guard let feature = PortvaktConfiguration.IDSwitchingFeature(rawValue: name) else { continue }
                if features.contains(feature) {
                    s.log.add(
                        .invalidValue, "\(s.keyPath("features"))[\(offset)]", "\"\(name)\" is listed twice")
                }
                features.append(feature)
            }
            guard s.log.allValid(s.path) else { return nil }
            guard let acknowledged else {
                s.log.add(
                    .missingKey, s.keyPath("acknowledged"),
                    "required: true states that your bank agreed to the features listed, false that none is used"
                )
                return nil
            }
            if acknowledged, features.isEmpty {
                s.log.add(
                    .missingKey, s.keyPath("features"),
                    "name the features your bank agreed to (\(names)), or set acknowledged to false")
            }
            if !acknowledged, !features.isEmpty {
                s.log.add(
                    .conflict, s.keyPath("features"),
                    "lists features while acknowledged is false; set acknowledged to true only with your bank's agreement"
                )
            }
            return Self(acknowledged: acknowledged, features: features)
        }
    }

    var effectiveJSON: ConfigJSON {
        .object([
            ("acknowledged", .bool(acknowledged)),
            ("features", .array(features.map { .string($0.rawValue) })),
        ])
    }
}

extension PortvaktConfiguration {
    /// `bankid.sessionLifetimeSeconds` and `bankid.sessionIdleTimeoutSeconds`: the lifetime of
    /// sessions a BankID identification opens (login, sign-up), at most the general one.
    public struct BankIDSessionSettings: Sendable, Equatable {
        /// The absolute lifetime; nil means `sessions.absoluteLifetimeSeconds`.
        public var lifetimeSeconds: Int?
        /// The idle timeout; nil means `sessions.idleTimeoutSeconds`, or the BankID lifetime when
        /// that is shorter.
        public var idleTimeoutSeconds: Int?

        /// Creates the settings; nil takes the general session settings.
        public init(lifetimeSeconds: Int? = nil, idleTimeoutSeconds: Int? = nil) {
            self.lifetimeSeconds = lifetimeSeconds
            self.idleTimeoutSeconds = idleTimeoutSeconds
        }

        /// The lifetime in force against the general `sessions` settings.
        public func resolved(_ general: SessionSettings) -> (lifetime: Int, idle: Int) {
            let lifetime = lifetimeSeconds ?? general.absoluteLifetimeSeconds
            return (lifetime, idleTimeoutSeconds ?? min(general.idleTimeoutSeconds, lifetime))
        }
    }

    /// Reads `bankid.sessionLifetimeSeconds` and `bankid.sessionIdleTimeoutSeconds` from the
    /// `bankid` section, as written (nil when absent).
    static func readBankIDSessions(_ r: ConfigReader) -> BankIDSessionSettings {
        let range = SessionSettings.lifetimeRange
        return BankIDSessionSettings(
            lifetimeSeconds: r.integer("sessionLifetimeSeconds", required: false, in: range),
            idleTimeoutSeconds: r.integer("sessionIdleTimeoutSeconds", required: false, in: range))
    }

    /// Checks the BankID session lifetimes against `sessions`: BankID sessions may be shorter
    /// than the general ones, never longer. They stay as written (nil: the general value), so a
    /// general lifetime changed later still bounds them.
    func checkBankIDSessions(_ log: ConfigIssueLog, methodsValid: Bool) {
        let written = bankid.sessions
        let resolved = written.resolved(sessions)
        let lifetimePath = "bankid.sessionLifetimeSeconds"
        let idlePath = "bankid.sessionIdleTimeoutSeconds"
        // A lifetime for sessions that nothing opens would do nothing: refused like a typo.
        if !methods.bankid.login, !methods.bankid.signup, methodsValid {
            for (path, value) in [
                (lifetimePath, written.lifetimeSeconds), (idlePath, written.idleTimeoutSeconds),
            ]
            where value != nil {
                log.add(
                    .conflict, path,
                    "is set while no BankID journey opens a session (methods.bankid.login and methods.bankid.signup are off)"
                )
            }
            return
        }
        guard log.allValid("sessions") else { return }
        if let lifetime = written.lifetimeSeconds, lifetime > sessions.absoluteLifetimeSeconds {
            log.add(
                .conflict, lifetimePath,
                "must not exceed sessions.absoluteLifetimeSeconds (\(sessions.absoluteLifetimeSeconds)), got \(lifetime)"
            )
        }
        if let idle = written.idleTimeoutSeconds {
            if idle > sessions.idleTimeoutSeconds {
                log.add(
                    .conflict, idlePath,
                    "must not exceed sessions.idleTimeoutSeconds (\(sessions.idleTimeoutSeconds)), got \(idle)"
                )
            } else if idle > resolved.lifetime, log.allValid(lifetimePath) {
                log.add(
                    .conflict, idlePath,
                    "must not exceed bankid.sessionLifetimeSeconds (\(resolved.lifetime)), got \(idle)")
            }
        }
    }
}

extension PortvaktConfiguration.BankIDSettings {
    /// `idSwitching` and the BankID session lifetimes, each when written (absent lifetimes are
    /// the general `sessions` values, which the output shows).
    var effectiveIDSwitchingMembers: [(String, ConfigJSON)] {
        var members: [(String, ConfigJSON)] = []
        if let idSwitching { members.append(("idSwitching", idSwitching.effectiveJSON)) }
        if let lifetime = sessions.lifetimeSeconds {
            members.append(("sessionLifetimeSeconds", .integer(lifetime)))
        }
        if let idle = sessions.idleTimeoutSeconds {
            members.append(("sessionIdleTimeoutSeconds", .integer(idle)))
        }
        return members
    }
}
