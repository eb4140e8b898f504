import PasskeyCore
import PortvaktAPI

extension PortvaktConfiguration {
    /// The configuration in force as pretty JSON with sorted keys, every key with its value.
    ///
    /// This is what `portvakt config show` prints and `/admin/v1/config` returns. Resolved defaults
    /// appear as values (`storage.path`, `sessions.cookieName`); the admin token never appears, only
    /// `admin.tokenFromEnvironment: true` when `PORTVAKT_ADMIN_TOKEN` supplied one, and the database
    /// password only as `storage.postgresql.passwordFromEnvironment: true`. Parsing the
    /// output with the same environment gives an equal configuration. There is deliberately no
    /// way to render secrets: whatever prints or serves this can never leak one.
    ///
    /// - Returns: The JSON text, ending in a newline.
    public func effectiveJSON() -> String {
        var adminMembers: [(String, ConfigJSON)] = [("enabled", .bool(admin.enabled))]
        // Absent rather than false when there is no token, so the output asserts nothing about an
        // environment that may legitimately gain a token later.
        if admin.token != nil {
            adminMembers.append(("tokenFromEnvironment", .bool(true)))
        }
        let document = ConfigJSON.object([
            ("publicURL", .string(publicURL)),
            ("dataDirectory", .string(dataDirectory)),
            (
                "listen",
                .object([
                    ("public", Self.json(listen.public)),
                    ("admin", Self.json(listen.admin)),
                ])
            ),
            (
                "http",
                .object(
                    [("threading", .string(http.threading.rawValue))]
                        + (http.threading == .pool ? [("threads", .integer(http.threads))] : []) + [
                            ("connectionTimeoutSeconds", .integer(http.connectionTimeoutSeconds)),
                            ("connectionLimit", .integer(http.connectionLimit)),
                            ("perAddressConnectionLimit", .integer(http.perAddressConnectionLimit)),
                            ("requestDeadlineSeconds", .integer(http.requestDeadlineSeconds)),
                            ("maxBodyBytes", .integer(http.maxBodyBytes)),
                            ("maxURIBytes", .integer(http.maxURIBytes)),
                            ("maxHeaderBytes", .integer(http.maxHeaderBytes)),
                            ("maxTrackedClients", .integer(http.maxTrackedClients)),
                            ("trustedProxies", .array(http.trustedProxies.map { .string($0) })),
                            (
                                "cors",
                                .object([
                                    ("allowedOrigins", .array(http.cors.allowedOrigins.map { .string($0) })),
                                    ("allowCredentials", .bool(http.cors.allowCredentials)),
                                    ("maxAgeSeconds", .integer(http.cors.maxAgeSeconds)),
                                ])
                            ),
                        ])
            ),
            (
                "rateLimits",
                .object(
                    RouteClass.allCases.map { routeClass in
                        let limit = rateLimits[routeClass]
                        return (
                            routeClass.rawValue,
                            .object([
                                ("burst", .integer(limit.burst)),
                                ("perSecond", .number(limit.perSecond, text: limit.perSecond.description)),
                            ])
                        )
                    })
            ),
            ("storage", storage.effectiveJSON),
            (
                "sessions",
                .object([
                    ("absoluteLifetimeSeconds", .integer(sessions.absoluteLifetimeSeconds)),
                    ("idleTimeoutSeconds", .integer(sessions.idleTimeoutSeconds)),
                    ("rotationIntervalSeconds", .integer(sessions.rotationIntervalSeconds)),
                    ("cookieName", .string(sessions.cookieName)),
                ])
            ),
            ("admin", .object(adminMembers)),
            ("bankid", bankid.effectiveJSON),
            (
                "logging",
                .object([
                    ("level", .string(logging.level.rawValue)),
                    ("accessLog", .bool(logging.accessLog)),
                ])
            ),
            (
                "relyingParty",
                .object([
                    ("id", .string(relyingParty.id)),
                    ("name", .string(relyingParty.name)),
                    ("origins", Self.strings(relyingParty.origins)),
                    ("androidOrigins", Self.strings(relyingParty.androidOrigins)),
                    ("topOrigins", Self.strings(relyingParty.topOrigins)),
                    ("userVerification", .string(relyingParty.userVerification.rawValue)),
                    ("attestation", .string(relyingParty.attestation.rawValue)),
                    ("attestationPolicy", .string(relyingParty.attestationPolicy.rawValue)),
                    ("counterPolicy", .string(relyingParty.counterPolicy.rawValue)),
                    ("challengeLifetimeSeconds", .integer(relyingParty.challengeLifetimeSeconds)),
                    ("algorithms", Self.strings(relyingParty.algorithms.map(\.name))),
                ])
            ),
            (
                "methods",
                .object([
                    (
                        "passkey",
                        .object([
                            ("enabled", .bool(methods.passkey.enabled)),
                            ("signup", .bool(methods.passkey.signup)),
                        ])
                    ),
                    ("bankid", methods.bankid.effectiveJSON),
                ])
            ),
            ("recovery", recovery.effectiveJSON),
            ("reviewAccount", reviewAccount.effectiveJSON),
            ("introspection", introspection.effectiveJSON),
            ("webhooks", webhooks.effectiveJSON),
            ("accessTokens", accessTokens.effectiveJSON),
            ("account", account.effectiveJSON),
            ("audit", audit.effectiveJSON),
            (
                "wellKnown",
                .object([
                    ("appleAppIDs", Self.strings(wellKnown.appleAppIDs)),
                    (
                        "androidApps",
                        .array(
                            wellKnown.androidApps.map { app in
                                .object([
                                    ("package", .string(app.package)),
                                    ("sha256Fingerprints", Self.strings(app.sha256Fingerprints)),
                                ])
                            })
                    ),
                    ("relatedOrigins", Self.strings(wellKnown.relatedOrigins)),
                ])
            ),
        ])
        return ConfigJSONWriter.render(document)
    }

    private static func strings(_ values: [String]) -> ConfigJSON { .array(values.map { .string($0) }) }

    private static func json(_ listener: Listener) -> ConfigJSON {
        .object([("host", .string(listener.host)), ("port", .integer(listener.port))])
    }
}

extension ConfigJSON {
    /// An object from key-value pairs, for building output.
    static func object(_ pairs: [(String, ConfigJSON)]) -> ConfigJSON {
        .object(ConfigJSONObject(members: pairs.map { .init(key: $0.0, value: $0.1, line: 0) }))
    }
}
