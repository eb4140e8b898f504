public import AuthOrchestrator
import BankIDCore
import CryptoCore
import Dispatch
public import FoundationEssentials
public import HTTPEngine
public import Kernel
import PasskeyCore
import PortvaktAPI
public import SessionCore
public import Storage

/// The whole server, assembled from a configuration: the database, the services, the public and
/// admin listeners. `portvakt serve` runs one; tests start one in-process on port 0.
public final class PortvaktServer: Sendable {
    /// The configuration the server was built from.
    public let configuration: PortvaktConfiguration
    /// The opened database, SQLite or PostgreSQL (migrations applied).
    public let engine: StorageEngine
    /// The stores over `engine`.
    public let store: SQLStore
    /// Sessions over `store`.
    public let sessions: SessionService
    /// Passkey sign-up, sign-in and management over `store`.
    public let passkeys: PasskeyService
    /// BankID login, sign-up, linking and step-up over `store` and the BankID runtime.
    public let bankIDFlows: BankIDService
    /// The admin token, when this start created it (first start); print it once, never log it.
    public let createdAdminToken: String?
    /// BankID: the client, its collect coordinator, the certificate's health and, in the embedded
    /// default, the simulator. Nil when `methods.bankid.enabled` is false: then nothing of BankID
    /// runs (no simulator, no client threads, no certificate in readiness) and its routes answer
    /// `method_disabled`.
    let bankID: BankIDRuntime?
    /// Admin API tokens over `store` (and `PORTVAKT_ADMIN_TOKEN` when set).
    public let adminTokens: AdminTokenService
    /// One-time passkey enrollment tokens (admin enrollment links).
    public let enrollment: EnrollmentService
    /// The app-store reviewer login (its policy nil when `reviewAccount.enabled` is false).
    public let reviewLogin: ReviewLoginService
    /// The support desk's BankID phone verifications; nil when BankID is off.
    public let phoneVerifications: BankIDPhoneVerificationService?
    /// The administrators' use cases over `store`.
    public let administration: AccountAdministration
    /// Every route of the admin listener (empty when it is off), for tests and documentation.
    public let adminRoutes: [RouteDescription]
    /// The change feed the use cases write webhook events through (`.off` without endpoints).
    public let changeFeed: ChangeFeed
    /// Webhooks: the feed and this instance's dispatcher.
    let webhooks: WebhookRuntime

    private let publicServer: HTTPServer
    private let adminServer: HTTPServer?
    private let logger: Logger
    /// Hourly upkeep; Locked makes the non-Sendable timer object safe to hold here.
    private let maintenance: Locked<MaintenanceTimer>

    /// Opens the database, applies migrations, ensures an admin token exists and builds both
    /// listeners. Nothing listens until `start()`.
    ///
    /// `certificateClock` judges certificate lifetimes (the BankID RP certificate's health). It is
    /// the real time unless a test moves it: TLS checks certificates against the real time, so
    /// the server's injected clock, which tests fix, must not decide it.
    public init(
        configuration: PortvaktConfiguration, logger: Logger, clock: any WallClock = SystemClock(),
        random: any RandomSource = SystemRandom(), certificateClock: any WallClock = SystemClock()
    ) throws {
        // A configuration built in code has not been through the loader's checks: the rule
        // against ID switching is checked here again, before anything opens.
        let idSwitchingIssues = configuration.idSwitchingIssues()
        if !idSwitchingIssues.isEmpty { throw ConfigurationError(issues: idSwitchingIssues) }
        self.configuration = configuration
        self.logger = logger
        engine = try StorageEngine.open(configuration, clock: clock)
        logger.log(.info, "storage opened", ["engine": engine.name, "location": engine.location])
        store = SQLStore(engine: engine, clock: clock)
        webhooks = try WebhookRuntime(
            configuration: configuration, outbox: store, clock: clock, random: random, logger: logger)
        changeFeed = webhooks.feed
        sessions = SessionService(
            repository: store,
            policy: SessionPolicy(
                absoluteLifetime: TimeInterval(configuration.sessions.absoluteLifetimeSeconds),
                idleTimeout: TimeInterval(configuration.sessions.idleTimeoutSeconds),
                rotationInterval: TimeInterval(configuration.sessions.rotationIntervalSeconds),
                methodLifetimes: [.bankid: Self.bankIDSessionLifetime(configuration)]),
            clock: clock, random: random)

        adminTokens = AdminTokenService(
            store: store, audit: store, clock: clock, random: random,
            environmentToken: configuration.adminToken)
        // A token from the environment wins and nothing is created, as before the tokens table.
        createdAdminToken =
            configuration.adminToken == nil
            ? try adminTokens.bootstrap(settings: store, legacyKey: AdminToken.settingKey) : nil

        let bankID =
            configuration.methods.bankid.enabled
            ? try BankIDRuntime(
                configuration: configuration, store: store, clock: clock, certificateClock: certificateClock,
                logger: logger) : nil
        self.bankID = bankID
        let store = store
        administration = AccountAdministration(
            store: store, clock: clock, random: random,
            identities: bankID.map { IdentityDirectory(store: store, hasher: $0.hasher) }, feed: changeFeed)

        let engine = engine
        let certificate = bankID?.certificate
        // Ready while the database answers and the BankID certificate can be used; a certificate
        // near its expiry is reported (and logged once a day) without taking the server out.
        let readiness: @Sendable () throws -> [String] = {
            try engine.checkHealth()
            guard let certificate else { return [] }
            guard certificate.health.isUsable(at: certificateClock.now()) else {
                throw BankIDError(.certificate, certificate.check() ?? "the BankID certificate is not usable")
            }
            return certificate.check().map { [$0] } ?? []
        }
        let writeAccessLog = configuration.logging.accessLog
        let accessLog: @Sendable (String) -> Void = { [logger] line in
            if writeAccessLog { logger.write(line: line.utf8) }
        }

        passkeys = PasskeyService(
            accounts: store, challenges: store, audit: store, logins: store, identities: store,
            sessions: sessions,
            policy: try Self.passkeyPolicy(configuration), clock: clock, random: random,
            // Shared through the database, so any instance can finish a login another began.
            challengeKey: try PasskeyService.sharedChallengeKey(settings: store, random: random),
            feed: changeFeed)
        let enrollmentService = EnrollmentService(
            store: store, passkeys: passkeys, sessions: sessions,
            recoveryPolicy: RecoveryPolicy(
                revokeOtherSessions: configuration.recovery.revokeOtherSessions,
                revokeOldPasskeys: configuration.recovery.revokeOldPasskeys),
            clock: clock, random: random, feed: changeFeed)
        enrollment = enrollmentService
        reviewLogin = ReviewLoginService(
            store: store, sessions: sessions, clock: clock, random: random,
            policy: try Self.reviewAccountPolicy(configuration))
        do {
            try reviewLogin.prepare()
        } catch let error as StorageError where error.code == .conflict {
            throw ConfigurationError(issues: [
                ConfigurationIssue(
                    .conflict, path: "reviewAccount.username",
                    message:
                        "names an existing account that is not the review account; the reviewer login must never reach a real account, so choose an unused username"
                )
            ])
        }
        // Recovery hands out a one-time enrollment token for a new passkey; the review account
        // stays a sandbox that never takes on a real person's identity.
        bankIDFlows = BankIDService(
            coordinator: bankID?.coordinator, identities: store, accounts: store, audit: store,
            sessions: sessions, policy: Self.bankIDPolicy(configuration), clock: clock, random: random,
            recoveryTokens: enrollmentService, sandbox: reviewLogin,
            content: Self.bankIDOrderContent(configuration, hasher: bankID?.hasher), feed: changeFeed,
            signals: passkeys.signals)
        if let summary = configuration.idSwitchingSummary {
            // Which features exchange a BankID identification for a passkey, and why they may.
            let features = bankIDFlows.policy.idSwitchingFeatures.map(\.rawValue)
            logger.log(
                .info, "bankid id switching",
                [
                    "features": features.isEmpty ? "none" : features.joined(separator: ","),
                    "because": Self.idSwitchingReason(configuration), "detail": summary,
                ])
        }

        // The support desk's phone check runs on the same coordinator as every other order, where
        // the ID-switching rule allows it.
        var phoneVerifications: BankIDPhoneVerificationService?
        if let bankID, bankIDFlows.policy.supportPhoneCheck {
            phoneVerifications = BankIDPhoneVerificationService(
                coordinator: bankID.coordinator, store: store,
                identities: IdentityDirectory(store: store, hasher: bankID.hasher), clock: clock,
                random: random)
        }
        self.phoneVerifications = phoneVerifications

        var publicRouter = Router()
        let transport = SessionTransport(
            cookieName: configuration.sessionCookieName, cookieSecure: configuration.cookieSecure,
            trustedOrigins: Set([configuration.publicOrigin] + configuration.http.cors.allowedOrigins))
        let recentAuthentication = RecentAuthentication(
            policy: ReauthenticationPolicy(
                window: TimeInterval(configuration.account.reauthenticationSeconds),
                passkey: configuration.methods.passkey.enabled,
                bankIDSign: bankID != nil && bankIDFlows.policy.sign),
            passkeys: store, identities: store, clock: clock)
        let access = AccountSessionService(
            sessions: sessions, users: store, bankID: bankID == nil ? nil : store,
            recentAuthentication: recentAuthentication, clock: clock, feed: changeFeed)
        PublicAPI(access: access, transport: transport, readiness: readiness).register(on: &publicRouter)
        AccountAPI(
            account: OwnAccountService(
                store: store, clock: clock, passkeyLogin: configuration.methods.passkey.enabled,
                feed: changeFeed),
            passkeys: passkeys,
            access: access, transport: transport
        ).register(on: &publicRouter)
        ForwardAuthAPI(access: access, transport: transport).register(on: &publicRouter)
        let accessTokens = try AccessTokenParts(
            configuration: configuration, store: store, access: access, transport: transport, clock: clock,
            random: random, logger: logger)
        accessTokens.register(on: &publicRouter)
        let bankIDResults = Tally<BankIDOutcome>()
        PasskeyAPI(
            registration: PasskeyRegistration(
                passkeys: passkeys, enrollment: enrollment,
                passkeyAfterBankID: bankIDFlows.policy.passkeyAfterBankID),
            passkeys: passkeys,
            access: access, transport: transport,
            wellKnown: WellKnownDocuments(
                appleAppIDs: configuration.wellKnown.appleAppIDs,
                androidApps: configuration.wellKnown.androidApps.map {
                    .init(package: $0.package, sha256Fingerprints: $0.sha256Fingerprints)
                },
                relatedOrigins: configuration.wellKnown.relatedOrigins),
            bankIDPolicy: bankIDFlows.policy
        ).register(on: &publicRouter)
        BankIDAPI(
            service: bankIDFlows, access: access, transport: transport,
            qrRenderer: { BankIDQRCode.svg($0) },
            onResult: { [bankIDResults] code in bankIDResults.record(code) }
        ).register(on: &publicRouter)
        ReviewAPI(service: reviewLogin, transport: transport).register(on: &publicRouter)
        WebPages.register(on: &publicRouter)
        // The simulator's user API only while BankID is on (configuration keeps it on loopback).
        bankID?.mountSimulator(on: &publicRouter)
        Self.registerOpenAPI(on: &publicRouter, title: "Portvakt public API")
        let metrics = ServerMetrics(
            publicRequests: HTTPMetrics(listener: "public", routes: publicRouter.routes), engine: engine,
            store: store, clock: clock, bankID: bankID, bankIDResults: bankIDResults, webhooks: webhooks,
            outbox: store)
        publicServer = try HTTPServer(
            configuration: Self.serverConfiguration(configuration, listener: configuration.listen.public),
            router: publicRouter, accessLog: accessLog, metrics: metrics.publicRequests)

        if configuration.admin.enabled {
            var adminRouter = Router()
            let effective = Array(configuration.effectiveJSON().utf8)
            let authenticator = AdminAuthenticator(tokens: adminTokens)
            AdminAPI(
                authenticator: authenticator, effectiveConfiguration: { effective }, readiness: readiness
            ).register(on: &adminRouter)
            AdminAccountsAPI(
                authenticator: authenticator, administration: administration, enrollment: enrollment,
                signInPage: configuration.publicURL
            ).register(on: &adminRouter)
            if let phoneVerifications {
                AdminBankIDAPI(authenticator: authenticator, verifications: phoneVerifications)
                    .register(on: &adminRouter)
            }
            IntrospectionAPI(
                authenticator: authenticator,
                introspection: SessionIntrospection(
                    access: access, touchesSession: configuration.introspection.touchesSession)
            ).register(on: &adminRouter)
            AdminWebhooksAPI(
                authenticator: authenticator, webhooks: webhooks.administration(store: store, clock: clock)
            )
            .register(on: &adminRouter)
            adminRouter.addAdmin(
                .GET, "/metrics", authenticator: authenticator,
                summary: "Prometheus metrics (text format 0.0.4)",
                contract: RouteContract(responses: [.media("text/plain", "The metrics")])
            ) { _, _ in
                HTTPResponse(
                    status: 200, headers: ["Content-Type": PrometheusText.contentType],
                    body: Array(try metrics.render().utf8))
            }
            Self.registerOpenAPI(
                on: &adminRouter, title: "Portvakt admin API", authenticator: authenticator)
            adminRoutes = adminRouter.routes
            let adminMetrics = HTTPMetrics(listener: "admin", routes: adminRouter.routes)
            metrics.setAdminRequests(adminMetrics)
            adminServer = try HTTPServer(
                configuration: Self.serverConfiguration(configuration, listener: configuration.listen.admin),
                router: adminRouter, accessLog: accessLog, metrics: adminMetrics)
        } else {
            adminServer = nil
            adminRoutes = []
        }

        // Hourly upkeep off the request threads: ended sessions are deleted a day after they end,
        // expired challenges at once. Instances sharing PostgreSQL would otherwise all purge the
        // same rows at the same hour, so each purge runs on one instance at a time (runAlone).
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "portvakt.maintenance"))
        timer.schedule(deadline: .now() + 60, repeating: 3600, leeway: .seconds(60))
        let sessions = sessions
        let passkeys = passkeys
        let bankIDFlows = bankIDFlows
        let coordinator = bankID?.coordinator
        let webhooks = webhooks
        let auditRetentionDays = configuration.audit.retentionDays
        timer.setEventHandler { [logger] in
            /// Runs one purge unless another instance is running it; logs a failure by its type only.
            func purge(_ job: String, failure: String, _ body: () throws -> Void) {
                do {
                    if try !engine.runAlone(job: job, body) {
                        logger.log(.debug, "maintenance job left to another instance", ["job": job])
                    }
                } catch {
                    logger.log(.error, failure, ["error": String(describing: type(of: error))])
                }
            }
            // Ended BankID orders past their retention, then the flows that pointed at them.
            purge("purge-bankid", failure: "BankID purge failed") {
                _ = try coordinator?.purge()
                _ = try bankIDFlows.purge()
                _ = try phoneVerifications?.purge()
            }
            purge("purge-sessions", failure: "session purge failed") {
                let purged = try sessions.purge()
                if purged > 0 { logger.log(.info, "purged ended sessions", ["count": String(purged)]) }
            }
            certificate?.check()
            purge("rotate-signing-keys", failure: "signing key upkeep failed") {
                try accessTokens.maintain(logger: logger)
            }
            // Audit events past `audit.retentionDays` (0 keeps them all), a deleted account's too.
            if auditRetentionDays > 0 {
                purge("purge-audit", failure: "audit purge failed") {
                    let cutoff = clock.now().addingTimeInterval(-Double(auditRetentionDays) * 86_400)
                    let purged = try store.purgeAuditEvents(before: cutoff)
                    if purged > 0 { logger.log(.info, "purged old audit events", ["count": String(purged)]) }
                }
            }
            purge("purge-challenges", failure: "challenge purge failed") {
                let purged = try passkeys.purgeExpiredChallenges()
                if purged > 0 { logger.log(.info, "purged expired challenges", ["count": String(purged)]) }
            }
            purge("purge-webhooks", failure: "webhook purge failed") {
                let done = try webhooks.maintain(store: store, now: clock.now())
                if done.failed + done.purged > 0 {
                    logger.log(
                        .info, "webhook upkeep",
                        ["gaveUp": String(done.failed), "purgedEvents": String(done.purged)])
                }
            }
        }
        maintenance = Locked(MaintenanceTimer(source: timer))
    }

    deinit {
        // A server built and never started (or never shut down) still ends its timer properly.
        maintenance.withLock { $0.cancel() }
    }

    /// The hourly maintenance timer. Dispatch created it suspended and traps when a suspended
    /// source is released, so cancelling also resumes it once.
    private struct MaintenanceTimer {
        let source: any DispatchSourceTimer
        var resumed = false

        mutating func resume() {
            guard !resumed else { return }
            resumed = true
            source.resume()
        }

        mutating func cancel() {
            source.cancel()
            resume()
        }
    }

    /// Starts listening; returns the bound ports (useful when the configuration says port 0).
    @discardableResult
    public func start() throws -> (public: Int, admin: Int?) {
        let publicPort = try publicServer.start()
        logger.log(
            .info, "listening",
            ["listener": "public", "address": "\(configuration.listen.public.host):\(publicPort)"])
        var adminPort: Int?
        if let adminServer {
            let port = try adminServer.start()
            adminPort = port
            logger.log(
                .info, "listening",
                ["listener": "admin", "address": "\(configuration.listen.admin.host):\(port)"])
        }
        maintenance.withLock { $0.resume() }
        webhooks.start()
        return (publicPort, adminPort)
    }

    /// Stops accepting connections, lets in-flight requests finish (up to `grace` seconds), then
    /// closes the database.
    public func shutdown(grace: TimeInterval = 10) {
        maintenance.withLock { $0.cancel() }
        publicServer.shutdown(grace: grace)
        adminServer?.shutdown(grace: grace)
        bankID?.stop()
        // Before the database closes: in-flight attempts are recorded and leases released.
        webhooks.stop()
        engine.close()
        logger.log(.info, "stopped")
        logger.flush()
    }

    private static func serverConfiguration(
        _ configuration: PortvaktConfiguration, listener: PortvaktConfiguration.Listener
    ) -> HTTPServerConfiguration {
        var server = HTTPServerConfiguration()
        server.host = listener.host
        server.port = listener.port
        server.threading = configuration.http.threading == .pool ? .workerPool : .threadPerConnection
        server.threads = configuration.http.threads
        server.connectionTimeoutSeconds = configuration.http.connectionTimeoutSeconds
        server.connectionLimit = configuration.http.connectionLimit
        server.perAddressConnectionLimit = configuration.http.perAddressConnectionLimit
        server.requestDeadlineSeconds = configuration.http.requestDeadlineSeconds
        server.maxBodyBytes = configuration.http.maxBodyBytes
        server.maxURIBytes = configuration.http.maxURIBytes
        server.maxHeaderBytes = configuration.http.maxHeaderBytes
        server.trustedProxies = configuration.http.trustedProxies
        server.maxTrackedClients = configuration.http.maxTrackedClients
        server.cors = CORSPolicy(
            allowedOrigins: configuration.http.cors.allowedOrigins,
            allowCredentials: configuration.http.cors.allowCredentials,
            maxAgeSeconds: configuration.http.cors.maxAgeSeconds,
            // A browser app holding a bearer token must be able to read its rotated one.
            exposedHeaders: CORSPolicy().exposedHeaders + [
                SessionTransport.rotatedTokenHeader, SessionTransport.rotatedExpiryHeader,
            ])
        server.rateLimits = configuration.rateLimits.mapValues {
            RateLimit(burst: $0.burst, perSecond: $0.perSecond)
        }
        return server
    }

    /// The relying party and passkey switches from the configuration. Related origins are accepted
    /// as ceremony origins too: that is what publishing them in /.well-known/webauthn asks for.
    static func passkeyPolicy(_ configuration: PortvaktConfiguration) throws -> PasskeyPolicy {
        let settings = configuration.relyingParty
        var relyingParty = RelyingParty(
            id: settings.id, name: settings.name,
            allowedOrigins: Set(
                settings.origins + settings.androidOrigins + configuration.wellKnown.relatedOrigins))
        relyingParty.allowedTopOrigins = Set(settings.topOrigins)
        relyingParty.userVerification = settings.userVerification
        relyingParty.attestationPolicy = settings.attestationPolicy
        relyingParty.counterPolicy = settings.counterPolicy
        relyingParty.allowedAlgorithms = settings.algorithms
        try relyingParty.validate()
        return PasskeyPolicy(
            relyingParty: relyingParty, attestation: settings.attestation == .direct ? .direct : .none,
            challengeLifetime: TimeInterval(settings.challengeLifetimeSeconds),
            enabled: configuration.methods.passkey.enabled,
            signupEnabled: configuration.methods.passkey.signup,
            bankIDLogin: configuration.methods.bankid.login)
    }

    /// BankID's journeys and their order settings from the configuration. Same-device orders
    /// return to the public URL's sign-in page, which polls the order.
    static func reviewAccountPolicy(_ configuration: PortvaktConfiguration) throws -> ReviewAccountPolicy? {
        let settings = configuration.reviewAccount
        guard settings.enabled, let username = settings.username, let code = settings.code else { return nil }
        do {
            return try ReviewAccountPolicy(username: username, displayName: settings.displayName, code: code)
        } catch {
            throw ConfigurationError(issues: [
                ConfigurationIssue(
                    .invalidValue,
                    path: error.code == .invalidUsername
                        ? "reviewAccount.username" : "reviewAccount.displayName",
                    message: error.message)
            ])
        }
    }

    static func bankIDPolicy(_ configuration: PortvaktConfiguration) -> BankIDPolicy {
        let methods = configuration.methods.bankid
        let flows = configuration.bankid.flows
        // Level by level, so a level added on either side is a compile error here.
        let riskCeiling: BankIDRiskLevel? =
            switch flows.riskCeiling {
            case nil: nil
            case .low?: .low
            case .moderate?: .moderate
            case .high?: .high
            }
        // The ID-switching features only where allowed (the checks refuse a journey that is on
        // without it; this keeps them off even so), the passkey offer only where it is on.
        let idSwitching = configuration.idSwitchingFeatures
        var policy = BankIDPolicy(
            login: methods.login, signup: methods.signup,
            recovery: methods.recovery && idSwitching.contains(.recovery),
            link: methods.link && idSwitching.contains(.link), sign: methods.sign,
            passkeyAfterBankID: idSwitching.contains(.passkeyAfterBankID), returnRisk: flows.returnRisk,
            riskCeiling: riskCeiling, stepUpLifetime: TimeInterval(flows.stepUpSeconds),
            returnURL: configuration.publicURL + "/")
        policy.keepsSignatures = flows.keepSignatures
        policy.supportPhoneCheck = idSwitching.contains(.supportPhoneCheck)
        return policy
    }

    /// The lifetime of sessions BankID opens: `bankid.sessionLifetimeSeconds` and
    /// `bankid.sessionIdleTimeoutSeconds`, or the general ones when not given.
    static func bankIDSessionLifetime(_ configuration: PortvaktConfiguration) -> SessionLifetime {
        let resolved = configuration.bankid.sessions.resolved(configuration.sessions)
        return SessionLifetime(absolute: TimeInterval(resolved.lifetime), idle: TimeInterval(resolved.idle))
    }

    /// The start-up log's word for why the ID-switching features are (not) on.
    static func idSwitchingReason(_ configuration: PortvaktConfiguration) -> String {
        switch configuration.idSwitchingGrant {
        case .simulator: "simulator"
        case .acknowledged: "bankid.idSwitching"
        case .none: "not acknowledged"
        }
    }

    /// What each BankID order carries, from `bankid.appIdentifiers`, `bankid.texts` and
    /// `bankid.requirements`. The device identifiers' key is derived from the current identity key
    /// (so it is a server secret that every instance shares); with BankID off there are no orders
    /// and a random key stands in.
    static func bankIDOrderContent(_ configuration: PortvaktConfiguration, hasher: IdentityHasher?)
        -> BankIDOrderContent
    {
        typealias Settings = PortvaktConfiguration.BankIDOrderSettings
        let settings = configuration.bankid.orders
        let intents: [Settings.Intent: BankIDOrderIntent] = [
            .login: .login, .signup: .signup, .link: .link, .recovery: .recovery, .sign: .sign,
        ]
        let name = configuration.relyingParty.name
        let defaults = BankIDOrderContent.defaultTexts(serviceName: name)
        var texts: [BankIDOrderIntent: BankIDOrderText] = [:]
        for (key, text) in settings.texts {
            guard let intent = intents[key], let fallback = defaults[intent] else { continue }
            texts[intent] = BankIDOrderText(
                swedish: text.swedish ?? fallback.swedish, english: text.english ?? fallback.english,
                format: text.format == .simpleMarkdownV1 ? .simpleMarkdownV1 : .plaintext)
        }
        var requirements: [BankIDOrderIntent: BankIDRequirement] = [:]
        for (key, requirement) in settings.requirements {
            guard let intent = intents[key] else { continue }
            requirements[intent] = BankIDRequirement(
                pinCode: requirement.pinCode, mrtd: requirement.mrtd,
                cardReader: requirement.cardReader.map { $0 == .class1 ? .class1 : .class2 },
                certificatePolicies: requirement.certificatePolicies)
        }
        let key =
            hasher?.derivedKey(purpose: "portvakt.bankid.device-identifier.v1")
            ?? SystemRandom().bytes(32)
        return BankIDOrderContent(
            serviceName: name, publicOrigin: configuration.publicOrigin,
            allowedOrigins: Set(configuration.http.cors.allowedOrigins), texts: texts,
            requirements: requirements, appIdentifiers: Set(settings.appIdentifiers), deviceKey: key)
    }

    /// Serves the router's own OpenAPI document, generated once, after every route (this one
    /// included) is in place.
    /// - Parameter authenticator: the admin listener's token check, run before answering.
    private static func registerOpenAPI(
        on router: inout Router, title: String, authenticator: AdminAuthenticator? = nil
    ) {
        let box = DocumentBox()
        let summary = "This API as an OpenAPI 3.1 document"
        let contract = RouteContract(responses: [.media("application/json", "The document")])
        let serve: @Sendable (HTTPRequest) throws -> HTTPResponse = { _ in
            HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: try box.bytes())
        }
        if let authenticator {
            router.addAdmin(
                .GET, "/openapi.json", authenticator: authenticator, summary: summary, contract: contract
            ) { request, _ in try serve(request) }
        } else {
            router.add(
                .GET, "/openapi.json", rateClass: .unlimited, summary: summary, contract: contract,
                handler: serve)
        }
        // The routes are final here (this one included); the document is written on first request,
        // so a server nobody asks for it never runs the generator or keeps its pages.
        let routes = router.routes
        box.setSource {
            try OpenAPIDocument.generate(
                title: title, version: PortvaktVersion.current, routes: routes,
                description: Self.documentDescription, everyRoute: Self.dependencyProblems)
        }
    }

    /// What a storage outage answers on any route (503, `Retry-After`): the temporary
    /// failures, by the same code the engine answers them with.
    private static let dependencyProblems = StorageError.Code.allCases.map { StorageError($0, "") }
        .filter(\.isTemporary).map { RouteContract.Problem(status: 503, code: $0.failureCode) }

    /// The answers no operation owns, for the document's readers.
    private static let documentDescription = """
        Every failure is an RFC 9457 problem with a stable `code` (Docs/api.md). Besides each \
        operation's own, a request can be refused before it reaches a route: 400 \
        `request.bad_framing`, `request.malformed_header` or `request.bad_host`, 431 \
        `request.header_fields_too_large`, 501 `request.transfer_coding_not_implemented` or \
        `request.method_not_implemented`, 404 `route.not_found`, 405 `route.method_not_allowed`.
        """
}

extension PortvaktServer {
    /// The public and admin listeners' HTTP servers (admin nil when off), for answering requests
    /// in process through the same pipelines the sockets use (`HTTPServer.respond(to:)`), whether
    /// or not `start()` was called: tests that need no socket never start them.
    public var httpServers: (public: HTTPServer, admin: HTTPServer?) { (publicServer, adminServer) }
}

/// Holds a document made on first use, by a source set after the route serving it was registered.
private final class DocumentBox: Sendable {
    typealias Source = @Sendable () throws -> [UInt8]
    private let state = Locked<(document: [UInt8]?, source: Source?)>((nil, nil))

    /// The document, made on the first call.
    /// - Throws: what the source throws (a type whose schema cannot be read: a fault, 500).
    func bytes() throws -> [UInt8] {
        try state.withLock { state in
            if let document = state.document { return document }
            let document = try state.source?() ?? []
            state.document = document
            return document
        }
    }

    func setSource(_ source: @escaping Source) { state.withLock { $0.source = source } }
}
