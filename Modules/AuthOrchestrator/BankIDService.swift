public import BankIDCore
import CryptoCore
public import FoundationEssentials
public import Kernel
public import SessionCore
public import Storage

/// The BankID orders behind /v1/bankid/orders: start, status and cancel, shared by the five
/// journeys, each of which keeps its rules in its own file — `BankIDLoginJourney`,
/// `BankIDSignupJourney`, `BankIDLinkJourney`, `BankIDSignJourney` (step-up) and
/// `BankIDRecoveryJourney`.
///
/// The client never sees BankID's orderRef: it gets our own random order id (256 bits), stored
/// only as its SHA-256 and bound to the client that started it (its session, or a binding
/// cookie). A completed order's result is applied once: the store's conditional update consumes
/// it in the same transaction that applies the journey's changes, so two polls racing after
/// completion give one session. Every step is audited, without personal numbers, and an event
/// that cannot be recorded fails the request (`bankid.unavailable`) instead of passing silently.
public struct BankIDService: Sendable {
    /// Nil when BankID is switched off: then every route answers `method_disabled`.
    let coordinator: BankIDCollectCoordinator?
    let identities: any BankIDIdentityStore
    let audit: any AuditStore
    /// The policy in force.
    public let policy: BankIDPolicy
    /// What each order carries: texts, requirements, device data (BankIDOrderContent.swift).
    public let content: BankIDOrderContent
    let clock: any WallClock
    let random: any RandomSource
    let ledger: BankIDLedger
    let login: BankIDLoginJourney
    let signup: BankIDSignupJourney
    let link: BankIDLinkJourney
    let sign: BankIDSignJourney
    let recovery: BankIDRecoveryJourney
    /// Builds the Signal API data of a result that opens a session; nil leaves it out.
    let signals: PasskeySignalBuilder?

    /// The longest text a step-up may ask the user to sign, in characters.
    public static let maximumSignTextLength = BankIDSignJourney.maximumTextLength

    /// Creates the service with every collaborator its journeys need.
    /// - Parameters:
    ///   - coordinator: runs the orders at BankID; nil when BankID is switched off.
    ///   - recoveryTokens: issues a recovery's enrollment token (`EnrollmentService`); nil
    ///     refuses recovery orders as `bankid.intent_not_supported`.
    ///   - sandbox: tells the accounts that may not link an identity (`ReviewLoginService`);
    ///     nil when there are none.
    ///   - content: the texts, requirements and device data each order carries.
    ///   - signals: builds the Signal API data of a result that opens a session (the account's
    ///     passkeys and names), so the password manager matches the account BankID signed in to.
    public init(
        coordinator: BankIDCollectCoordinator?, identities: any BankIDIdentityStore, accounts: any UserStore,
        audit: any AuditStore, sessions: SessionService, policy: BankIDPolicy, clock: any WallClock,
        random: any RandomSource, recoveryTokens: (any BankIDRecoveryTokenIssuer)?,
        sandbox: (any BankIDSandbox)?, content: BankIDOrderContent, feed: ChangeFeed = .off,
        signals: PasskeySignalBuilder? = nil
    ) {
        self.coordinator = coordinator
        self.signals = signals
        self.identities = identities
        self.audit = audit
        self.policy = policy
        self.content = content
        self.clock = clock
        self.random = random
        let ledger = BankIDLedger(identities: identities, feed: feed)
        self.ledger = ledger
        let login = BankIDLoginJourney(
            accounts: accounts, sessions: sessions, ledger: ledger, signupAvailable: policy.signup,
            suggestsPasskey: policy.passkeyAfterBankID)
        self.login = login
        signup = BankIDSignupJourney(
            accounts: accounts, sessions: sessions, random: random, ledger: ledger, login: login,
            loginAllowed: policy.login)
        link = BankIDLinkJourney(accounts: accounts, identities: identities, sandbox: sandbox, ledger: ledger)
        sign = BankIDSignJourney(
            accounts: accounts, ledger: ledger, stepUpLifetime: policy.stepUpLifetime,
            keepsSignatures: policy.keepsSignatures)
        recovery = BankIDRecoveryJourney(
            accounts: accounts, tokens: recoveryTokens, ledger: ledger, signupAvailable: policy.signup)
    }

    /// The journey that owns orders of `intent`.
    func journey(_ intent: BankIDOrderIntent) -> any BankIDJourney {
        switch intent {
        case .login: login
        case .signup: signup
        case .link: link
        case .sign: sign
        case .recovery: recovery
        }
    }

    // MARK: Start

    /// Starts an order for `intent` on `device`.
    /// - Parameters:
    ///   - userVisibleText: the text to sign (sign only).
    ///   - clientKind: where a session the order opens goes.
    ///   - requester: the client; link and sign need its session.
    ///   - context: request id, client IP (BankID's endUserIp) and User-Agent (a web order's).
    ///   - details: the language, the page's origin and device cookie or the app's details, and a
    ///     signature's hidden data (BankIDOrderContent.swift says what each order carries).
    /// - Throws: `AuthError` (`bankid.app_not_allowed` for a native order without an allowed
    ///   app identifier, `bankid.invalid_request` for device data or hidden data BankID would refuse).
    public func start(
        intent: BankIDOrderIntent, device: BankIDDevice, userVisibleText: String?, clientKind: ClientKind,
        requester: BankIDRequester, context: ClientContext, details: BankIDStartDetails = BankIDStartDetails()
    ) async throws(AuthError) -> StartedBankIDFlow {
        guard policy.allows(intent) else {
            throw AuthError(.methodDisabled, "BankID \(intent.rawValue) is not enabled here")
        }
        let journey = journey(intent)
        let text = try journey.admit(requester, userVisibleText: userVisibleText)
        // The order's content: checked before anything is stored or sent. A sign shows the
        // API's text in either language; the other intents the configured one.
        let nonVisible = try Self.nonVisibleData(details.userNonVisibleData, intent: intent)
        let (app, web, newDeviceCookie) = try deviceInfo(clientKind, details: details, context: context)
        let shown = text.map { BankIDOrderText(swedish: $0, english: $0) } ?? content.texts[intent]
        guard let endUserIP = context.ipAddress else {
            throw AuthError(.bankIDInvalidRequest, "the client address is unknown")
        }
        let signedIn = requester.signedIn

        // The binding: the session when signed in, else the client's binding value (a new one
        // when it has none).
        var newBinding: String?
        let bindingHash: [UInt8]
        if let (session, _) = signedIn {
            bindingHash = BankIDBinding.hash(session: session.id)
        } else {
            let offered = requester.binding.flatMap(BankIDBinding.acceptable)
            let binding: String
            if let offered { binding = offered } else { binding = try random.secureToken(32) }
            if binding != requester.binding { newBinding = binding }
            bindingHash = BankIDBinding.hash(client: binding)
        }
        let orderID = try random.secureToken(32)
        // A web page on this device gets BankID's return with a nonce, and only a poll carrying
        // it receives the result: an autostart link forwarded to someone else completes on their
        // device and their browser, never for the client that started it. A native app has no
        // page to return to (BankID's advice for apps: no returnUrl); its order stays bound to
        // its binding value, and the completing device's address is compared and audited.
        var nonceHash: String?
        var returnURL: String?
        if device == .same, clientKind == .web {
            let value = try random.secureToken(16)
            nonceHash = BankIDReturnNonce.hash(value)
            returnURL = BankIDReturnNonce.url(policy.returnURL, nonce: value)
        }
        // Plain text is BankID's default rendering: only Markdown names its format.
        let request = BankIDStartRequest(
            endUserIP: endUserIP, requirement: content.requirements[intent],
            userVisibleData: shown?.text(details.language),
            userVisibleDataFormat: shown?.format == .simpleMarkdownV1 ? .simpleMarkdownV1 : nil,
            userNonVisibleData: nonVisible, returnURL: returnURL,
            returnRisk: policy.returnRisk ? true : nil, app: app, web: web)
        let coordinator = try running()
        let started: BankIDStartedOrder
        do {
            started = try await coordinator.start(journey.orderKind, request, intent: intent)
        } catch {
            try record(
                .bankIDOrderFailedToStart, userID: signedIn?.user.id, context: context,
                details: ["intent": intent.rawValue, "code": error.code.rawValue])
            throw Self.flowError(error)
        }
        let flow = BankIDFlow(
            idHash: Digest.sha256(orderID), orderRef: started.orderRef, intent: intent,
            sameDevice: device == .same, clientKind: clientKind, bindingHash: bindingHash,
            userID: signedIn?.user.id, sessionID: signedIn?.session.id, returnNonce: nonceHash,
            userVisibleText: text, createdAt: clock.now())
        do {
            try identities.insertBankIDFlow(flow)
        } catch {
            throw AuthError(
                .bankIDUnavailable, "the order could not be stored", userMessage: .rfa22, underlying: error)
        }
        try record(
            .bankIDOrderStarted, userID: signedIn?.user.id, context: context,
            details: ["intent": intent.rawValue, "device": device.rawValue])
        let launchURL = device == .same ? started.autoStartToken.map(Self.launchURL) : nil
        return StartedBankIDFlow(
            orderID: orderID, autoStartToken: device == .same ? started.autoStartToken : nil,
            launchURL: launchURL, qrData: device == .other ? started.qrData : nil, newBinding: newBinding,
            newDeviceCookie: newDeviceCookie)
    }

    /// The order's `app` or `web` (never both), and a new device cookie for a browser without one.
    ///
    /// A web order names the page's domain (its origin when that is ours or an allowed one), the
    /// User-Agent cut to BankID's field limit, and the keyed hash of the browser's device cookie.
    /// Without a User-Agent there is nothing true to say about the browser, and `web` is left
    /// out. A native order must name an allowed app identifier and describe its device; its
    /// device identifier, too, reaches BankID only as the keyed hash.
    private func deviceInfo(_ clientKind: ClientKind, details: BankIDStartDetails, context: ClientContext)
        throws(AuthError) -> (BankIDAppInfo?, BankIDWebInfo?, String?)
    {
        switch clientKind {
        case .native:
            guard let given = details.app, let identifier = given.appIdentifier else {
                throw AuthError(
                    .bankIDAppNotAllowed,
                    "appIdentifier: a native order names its app (bankid.appIdentifiers)")
            }
            guard content.appIdentifiers.contains(identifier) else {
                throw AuthError(
                    .bankIDAppNotAllowed, "appIdentifier: this app is not among bankid.appIdentifiers")
            }
            var fields: [String] = []
            for (name, value) in [
                ("deviceOS", given.deviceOS), ("deviceModelName", given.deviceModelName),
                ("deviceIdentifier", given.deviceIdentifier),
            ] {
                guard let value else {
                    throw AuthError(.bankIDInvalidRequest, "\(name): required for a native order")
                }
                if let problem = BankIDValidation.deviceFieldProblem(value) {
                    throw AuthError(.bankIDInvalidRequest, "\(name): \(problem)")
                }
                fields.append(value)
            }
            let app = BankIDAppInfo(
                appIdentifier: identifier, deviceOS: fields[0], deviceModelName: fields[1],
                deviceIdentifier: content.deviceIdentifier(fields[2]))
            return (app, nil, nil)
        case .web:
            if let app = details.app, !app.isEmpty {
                throw AuthError(
                    .bankIDInvalidRequest,
                    "appIdentifier: app details are for client native; a web order sends none")
            }
            var cookie = details.deviceCookie.flatMap(BankIDBinding.acceptable)
            var newCookie: String?
            if cookie == nil {
                let made = try random.secureToken(32)
                cookie = made
                newCookie = made
            }
            let agent = BankIDValidation.truncated(
                String(
                    String.UnicodeScalarView(
                        (context.userAgent ?? "").unicodeScalars.filter {
                            $0.properties.generalCategory != .control
                        })),
                toBytes: BankIDValidation.deviceFieldLimit
            ).trimmingWhitespace()
            guard !agent.isEmpty, let cookie else { return (nil, nil, newCookie) }
            let web = BankIDWebInfo(
                referringDomain: content.referringDomain(origin: details.origin), userAgent: agent,
                deviceIdentifier: content.deviceIdentifier(cookie))
            return (nil, web, newCookie)
        }
    }

    /// A signature's hidden data, checked against BankID's limit; refused on identifications.
    static func nonVisibleData(_ text: String?, intent: BankIDOrderIntent) throws(AuthError) -> String? {
        guard let text else { return nil }
        guard intent == .sign else {
            throw AuthError(.bankIDInvalidRequest, "userNonVisibleData: only a sign order carries it")
        }
        guard !text.isEmpty, !text.contains("\0"),
            BankIDValidation.base64Length(text) <= BankIDValidation.userNonVisibleDataLimit
        else {
            throw AuthError(
                .bankIDInvalidRequest,
                "userNonVisibleData: 1 to \(BankIDValidation.userNonVisibleDataLimit) characters after base64, no NUL"
            )
        }
        return text
    }

    // MARK: Status

    /// Where the order stands, answered without waiting on BankID (a due collect runs in the
    /// background; the client's next poll sees it). A completed order's result is applied by the
    /// first poll that sees it, and only by that one.
    /// - Parameter returnNonce: the `nonce` BankID's return carried (a web client's same-device
    ///   order delivers its result only with it).
    /// - Throws: `AuthError` (`bankid.order_not_found` for another client's order,
    ///   `bankid.return_mismatch` for a nonce that is not the order's, `bankid.unavailable` when
    ///   the store fails, an audit write included).
    public func status(
        orderID: String, requester: BankIDRequester, returnNonce: String? = nil, context: ClientContext
    ) throws(AuthError) -> BankIDFlowStatus {
        let coordinator = try running()
        let flow = try ownedFlow(orderID, requester: requester)
        if let returnNonce, !BankIDReturnNonce.matches(returnNonce, flow.returnNonce) {
            try record(
                .bankIDReturnMismatch, userID: flow.userID, context: context,
                details: ["intent": flow.intent.rawValue])
            throw AuthError(.returnMismatch, "the nonce is not this order's")
        }
        let snapshot: BankIDOrderSnapshot
        do {
            snapshot = try coordinator.snapshot(orderRef: flow.orderRef)
        } catch {
            throw Self.flowError(error)
        }
        let messageContext = MessageContext(
            autoStartAttempted: flow.sameDevice, usesQRCode: !flow.sameDevice, device: .desktop)
        var qrData: String?
        if snapshot.status == .pending, !flow.sameDevice {
            // Only the picture: an order that ended since the snapshot simply shows none.
            qrData = try? coordinator.qrData(orderRef: flow.orderRef)
        }
        if snapshot.status == .complete, flow.consumedAt == nil, flow.returnNonce != nil, returnNonce == nil {
            return .awaitingReturn
        }
        var result: BankIDFlowResult?
        if snapshot.status == .complete, let completion = snapshot.completion {
            result = try complete(flow, snapshot: snapshot, completion: completion, context: context)
            // A sign-in or sign-up: the account's passkeys and names, read when delivered. A read
            // that fails leaves them out; the result stands.
            if let signals, result?.session != nil, let user = result?.user {
                result?.signals = try? signals.acceptedCredentials(user, withDetails: true)
            }
        } else if snapshot.status == .failed, flow.consumedAt == nil {
            try recordFailure(flow, hintCode: snapshot.hintCode, context: context)
        }
        // Before the first collect answers there is no hint yet: the order is outstanding (unless
        // the collects are failing, which the snapshot's message says).
        let message =
            snapshot.status == .pending && snapshot.hintCode == nil && !snapshot.collectFailing
            ? RecommendedMessage.forPending(.outstandingTransaction, context: messageContext)
            : snapshot.message(messageContext)
        return BankIDFlowStatus(
            status: snapshot.status, hintCode: snapshot.hintCode?.rawValue, message: message, qrData: qrData,
            result: result)
    }

    // MARK: Cancel

    /// Cancels the client's order (BankID is told; a finished order is left as it is).
    /// - Throws: `AuthError`; `bankid.unavailable` when the cancellation cannot be audited.
    public func cancel(orderID: String, requester: BankIDRequester, context: ClientContext)
        async throws(AuthError)
    {
        let coordinator = try running()
        let flow = try ownedFlow(orderID, requester: requester)
        do {
            try await coordinator.cancel(orderRef: flow.orderRef)
        } catch  where error.code == .orderNotFound || error.code == .orderExpired {
            throw AuthError(.orderNotFound, "no such order")
        } catch {
            throw Self.flowError(error)
        }
        // After BankID was told: the trail says what happened, never what was only attempted.
        try record(
            .bankIDOrderCancelled, userID: flow.userID, context: context,
            details: ["intent": flow.intent.rawValue])
    }

    /// Deletes flows older than `age` (their orders are long purged); run it with the coordinator's purge.
    @discardableResult
    public func purge(olderThan age: TimeInterval = 3_600) throws -> Int {
        try identities.purgeBankIDFlows(createdBefore: clock.now().addingTimeInterval(-age))
    }

    // MARK: Completion

    /// Applies a completed order through its journey, once: the address comparison, the identity
    /// under every key, and the risk ceiling come first, for every journey alike.
    private func complete(
        _ flow: BankIDFlow, snapshot: BankIDOrderSnapshot, completion: BankIDCompletion,
        context: ClientContext
    ) throws(AuthError) -> BankIDFlowResult {
        if flow.consumedAt != nil { return .delivered(clientKind: flow.clientKind) }
        let journey = journey(flow.intent)
        var details = ["intent": flow.intent.rawValue, "device": flow.sameDevice ? "same" : "other"]
        if let risk = completion.risk { details["risk"] = risk }
        do {
            // Under every configured key: an identity linked before a key rotation is found, and
            // moved to the current key so the old key can be retired.
            var linked = try identities.linkedIdentity(
                matching: [completion.identity] + (completion.previousKeyIdentities ?? []))
            if var found = linked, found.digest != completion.identity {
                try identities.rekeyLinkedIdentity(userID: found.userID, to: completion.identity)
                found.digest = completion.identity
                linked = found
            }
            var order = BankIDCompletedOrder(
                flow: flow, completion: completion, linked: linked, details: details, context: context,
                now: clock.now())
            // Same device: the app should complete from the address the order was started from.
            if flow.sameDevice, let started = snapshot.endUserIP, started != completion.deviceIPAddress {
                order.record(
                    .bankIDIPMismatch, userID: flow.userID,
                    details: [
                        "intent": flow.intent.rawValue, "endUserIp": started,
                        "deviceIp": completion.deviceIPAddress,
                    ])
            }
            if journey.checksRisk, !policy.admitsRisk(completion.risk) {
                order.record(.bankIDRiskRefused, userID: linked?.userID)
                return try ledger.commit(.unchanged(.riskRefused, clientKind: flow.clientKind), for: order)
            }
            return try journey.complete(order)
        } catch let error as AuthError {
            throw error
        } catch {
            throw AuthError(
                .bankIDUnavailable, "the result could not be stored", userMessage: .rfa22, underlying: error)
        }
    }

    /// Consumes a failed order's flow and audits the failure, once, by the poll that sees it.
    private func recordFailure(_ flow: BankIDFlow, hintCode: HintCode?, context: ClientContext)
        throws(AuthError)
    {
        let now = clock.now()
        let event = AuditEvent(
            .bankIDOrderFailed, userID: flow.userID, context: context,
            details: ["intent": flow.intent.rawValue, "hintCode": hintCode?.rawValue ?? "unknown"], at: now)
        do {
            // False when another poll consumed it first: then that poll recorded it.
            _ = try identities.commitBankIDCompletion(
                BankIDCompletionRecord(
                    flowIDHash: flow.idHash, outcome: BankIDOutcome.failed.rawValue, at: now, events: [event])
            )
        } catch {
            throw AuthError(
                .bankIDUnavailable, "the failed order could not be recorded", userMessage: .rfa22,
                underlying: error)
        }
    }

    // MARK: Helpers

    /// The coordinator, or `method_disabled` when BankID is switched off.
    private func running() throws(AuthError) -> BankIDCollectCoordinator {
        guard let coordinator else { throw AuthError(.methodDisabled, "BankID is not enabled here") }
        return coordinator
    }

    /// The caller's flow: one whose binding is the request's session or binding value. Anything
    /// else (unknown, purged, another client's) is the same `order_not_found`.
    private func ownedFlow(_ orderID: String, requester: BankIDRequester) throws(AuthError)
        -> BankIDFlow
    {
        let flow: BankIDFlow?
        do {
            flow = try identities.bankIDFlow(idHash: Digest.sha256(orderID))
        } catch {
            throw AuthError(
                .bankIDUnavailable, "the order store failed", userMessage: .rfa22, underlying: error)
        }
        guard let flow, requester.isBound(to: flow.bindingHash) else {
            throw AuthError(.orderNotFound, "no such order")
        }
        return flow
    }

    /// Appends a security event. One that cannot be recorded fails the request: none of these
    /// (a start, a failed start, a wrong return nonce, a cancellation) locks anyone out when it
    /// fails, so nothing is let through unrecorded.
    private func record(
        _ action: AuditAction, userID: String?, context: ClientContext, details: [String: String]
    ) throws(AuthError) {
        do {
            _ = try audit.appendAudit(
                AuditEvent(action, userID: userID, context: context, details: details, at: clock.now()))
        } catch {
            throw AuthError(
                .bankIDUnavailable, "the audit trail could not be written", userMessage: .rfa22,
                underlying: error)
        }
    }

    /// The universal link for the same-device start. In v6 the returnUrl travels in the /auth
    /// call (with its nonce), so the link itself says `redirect=null`.
    static func launchURL(autoStartToken: String) -> String {
        "https://app.bankid.com/?autostarttoken=\(autoStartToken)&redirect=null"
    }

    /// BankIDCore's error as the use case's: the codes a client acts on kept apart, everything
    /// else `bankid.unavailable` with BankID's recommended message.
    static func flowError(_ error: BankIDError) -> AuthError {
        switch error.code {
        case .orderNotFound: AuthError(.orderNotFound, "no such order", underlying: error)
        case .orderExpired:
            AuthError(.orderExpired, "the order's result is no longer kept", underlying: error)
        case .alreadyInProgress:
            AuthError(
                .alreadyInProgress, "an order for this person is already running", userMessage: .rfa4,
                underlying: error)
        case .invalidEndUserIP, .invalidUserVisibleData, .invalidReturnURL, .invalidUserNonVisibleData,
            .invalidDeviceInfo, .conflictingDeviceInfo:
            AuthError(.bankIDInvalidRequest, error.message, underlying: error)
        default:
            AuthError(
                .bankIDUnavailable, "BankID could not be reached or refused the call",
                userMessage: error.recommendedMessage,
                underlying: error)
        }
    }
}
