public import BankIDCore
public import CryptoCore
public import Foundation
public import Kernel
public import SessionCore
public import Storage

/// BankID's journeys as a deployment offers them, and how their orders are run.
public struct BankIDPolicy: Sendable {
    /// BankID login to a linked account.
    public var login: Bool
    /// BankID-first sign-up.
    public var signup: Bool
    /// Recovery (not served yet: its orders are refused as unsupported).
    public var recovery: Bool
    /// Linking an identity to the signed-in account.
    public var link: Bool
    /// Step-up signatures.
    public var sign: Bool
    /// Ask BankID for its risk assessment.
    public var returnRisk: Bool
    /// The highest risk accepted ("low", "moderate", "high"); nil accepts any.
    public var riskCeiling: String?
    /// How long a signature keeps the session stepped up.
    public var stepUpLifetime: TimeInterval
    /// The page BankID returns to after a web client's same-device order (a `nonce` parameter is
    /// added; the result is delivered only to a poll that presents it).
    public var returnURL: String

    /// Creates a policy; every journey on, no risk ceiling, 600 s step-up.
    public init(
        login: Bool = true, signup: Bool = true, recovery: Bool = true, link: Bool = true, sign: Bool = true,
        returnRisk: Bool = false, riskCeiling: String? = nil, stepUpLifetime: TimeInterval = 600,
        returnURL: String = "http://localhost:8080/"
    ) {
        self.login = login
        self.signup = signup
        self.recovery = recovery
        self.link = link
        self.sign = sign
        self.returnRisk = returnRisk
        self.riskCeiling = riskCeiling
        self.stepUpLifetime = stepUpLifetime
        self.returnURL = returnURL
    }

    /// Whether the journey for `intent` is on.
    public func allows(_ intent: BankIDOrderIntent) -> Bool {
        switch intent {
        case .login: login
        case .signup: signup
        case .recovery: recovery
        case .link: link
        case .sign: sign
        }
    }
}

/// Which device the user runs BankID on.
public enum BankIDDevice: String, Sendable, CaseIterable {
    /// This device: the app is launched with the autostart token.
    case same
    /// Another device: the user scans the animated QR code.
    case other
}

/// Who is asking about an order: the binding an order is tied to.
public struct BankIDRequester: Sendable {
    /// The request's live session and its user, when signed in.
    public var session: Session?
    /// The user of that session.
    public var user: User?
    /// The value of the client's binding cookie (or header), when it sent one.
    public var binding: String?

    /// Creates a requester.
    public init(session: Session? = nil, user: User? = nil, binding: String? = nil) {
        self.session = session
        self.user = user
        self.binding = binding
    }

    /// The bindings this requester can show, as stored: its session's and its binding value's.
    var bindingHashes: [[UInt8]] {
        var hashes: [[UInt8]] = []
        if let session { hashes.append(BankIDService.bindingHash(session: session.id)) }
        if let binding { hashes.append(BankIDService.bindingHash(client: binding)) }
        return hashes
    }

    /// Whether this requester shows the binding stored as `hash` (compared in constant time).
    func isBound(to hash: [UInt8]) -> Bool {
        bindingHashes.contains { ConstantTime.equals($0, hash) }
    }
}

/// A started order as the client sees it.
public struct StartedBankIDFlow: Sendable {
    /// Our own order id: the capability for polling and cancelling.
    public let orderID: String
    /// The token for the same-device launch link.
    public let autoStartToken: String?
    /// The universal link that opens the BankID app on this device.
    public let launchURL: String?
    /// The QR data at t = 0 (another device).
    public let qrData: String?
    /// A new client binding to hand to the client (cookie or body); nil when the request had one
    /// or was signed in.
    public let newBinding: String?
}

/// What a completed order did.
public struct BankIDFlowResult: Sendable {
    /// The result code: `bankid.signed_in`, `bankid.no_account`, `bankid.account_created`,
    /// `bankid.linked`, `bankid.already_linked`, `bankid.identity_linked_elsewhere`,
    /// `bankid.account_has_identity`, `bankid.signed`, `bankid.identity_mismatch`,
    /// `bankid.risk_refused`, `account.disabled`, or `bankid.result_delivered` for every poll after
    /// the one that received the result.
    public let code: String
    /// The account concerned, when it may be shown to this client.
    public let user: User?
    /// The session opened (login, sign-up), delivered once.
    public let session: IssuedSession?
    /// Where that session's token goes.
    public let clientKind: ClientKind
    /// The account has no passkey on this device yet: offer to add one.
    public let suggestPasskey: Bool
    /// Until when the session is stepped up (sign).
    public let steppedUpUntil: Date?
    /// Whether BankID sign-up is available (with `bankid.no_account`).
    public let signupAvailable: Bool
    /// Recovery: the one-time enrollment token for a new passkey (`bankid.recovery_verified`),
    /// delivered once; POST /v1/passkeys/registration/initialize takes it.
    public var enrollmentToken: String? = nil
}

/// Where an order stands for its client.
public struct BankIDFlowStatus: Sendable {
    /// pending, complete, failed or cancelled.
    public let status: BankIDOrderStatus
    /// BankID's last hint code.
    public let hintCode: String?
    /// The message to show; nil once complete.
    public let message: RecommendedMessage?
    /// The QR data for this second, while pending on another device.
    public let qrData: String?
    /// The result, once complete.
    public let result: BankIDFlowResult?
    /// Complete, but held until the client polls with the nonce from the returnUrl (a web
    /// client's same-device order); `status` says pending meanwhile.
    public var awaitingReturn = false
}

/// BankID login, sign-up, linking and step-up: the use cases behind /v1/bankid/orders.
///
/// The client never sees BankID's orderRef: it gets our own random order id (256 bits), stored
/// only as its SHA-256 and bound to the client that started it (its session, or a binding
/// cookie). A completed order's result is applied once: the store's conditional update consumes
/// it in the same transaction that opens the session, so two polls racing after completion give
/// one session. Every step is audited, without personal numbers.
public struct BankIDService: Sendable {
    /// Nil when BankID is switched off: then every route answers `method_disabled`.
    let coordinator: BankIDCollectCoordinator?
    let identities: any BankIDIdentityStore
    let accounts: any AccountStore
    let audit: any AuditStore
    let sessions: SessionService
    /// The policy in force.
    public let policy: BankIDPolicy
    let clock: any WallClock
    let random: any RandomSource
    /// Issues the enrollment token a recovery hands out (EnrollmentService, purpose "recovery"),
    /// good only for the client bound by `bindingHash` (the order's); nil when recovery is not
    /// wired, which refuses recovery orders.
    public var recoveryTokens:
        (@Sendable (_ userID: String, _ bindingHash: [UInt8], _ context: ClientContext) throws -> String)?
    /// Whether an account is the sandboxed review account, which may not link an identity
    /// (ReviewLoginService); nil when there is none.
    public var isSandboxed: (@Sendable (_ userID: String) -> Bool)?

    /// The longest text a step-up may ask the user to sign, in characters.
    public static let maximumSignTextLength = 4_000

    /// Creates the service.
    public init(
        coordinator: BankIDCollectCoordinator?, identities: any BankIDIdentityStore,
        accounts: any AccountStore,
        audit: any AuditStore, sessions: SessionService, policy: BankIDPolicy, clock: any WallClock,
        random: any RandomSource
    ) {
        self.coordinator = coordinator
        self.identities = identities
        self.accounts = accounts
        self.audit = audit
        self.sessions = sessions
        self.policy = policy
        self.clock = clock
        self.random = random
    }

    // MARK: Start

    /// Starts an order for `intent` on `device`.
    /// - Parameters:
    ///   - userVisibleText: the text to sign (sign only).
    ///   - clientKind: where a session the order opens goes.
    ///   - requester: the client; link and sign need its session.
    ///   - context: request id and client IP (BankID's endUserIp).
    /// - Throws: `AuthError`.
    public func start(
        intent: BankIDOrderIntent, device: BankIDDevice, userVisibleText: String?, clientKind: ClientKind,
        requester: BankIDRequester, context: ClientContext
    ) async throws(AuthError) -> StartedBankIDFlow {
        guard policy.allows(intent) else {
            throw AuthError(.methodDisabled, "BankID \(intent.rawValue) is not enabled here")
        }
        if intent == .recovery, recoveryTokens == nil {
            throw AuthError(.intentNotSupported, "BankID recovery is not available here")
        }
        let signedIn: (Session, User)?
        if let session = requester.session, let user = requester.user {
            signedIn = (session, user)
        } else {
            signedIn = nil
        }
        if intent == .link || intent == .sign, signedIn == nil {
            throw AuthError(.signInRequired, "linking and signing need a signed-in session")
        }
        if intent == .link, let user = signedIn?.1, isSandboxed?(user.id) == true {
            throw AuthError(.sandboxed, "the review account cannot be linked to a BankID identity")
        }
        var text: String?
        if intent == .sign {
            let trimmed = userVisibleText?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            guard !trimmed.isEmpty, trimmed.count <= Self.maximumSignTextLength else {
                throw AuthError(
                    .bankIDInvalidRequest,
                    "userVisibleData: 1 to \(Self.maximumSignTextLength) characters are required to sign")
            }
            text = trimmed
        } else if userVisibleText != nil {
            throw AuthError(.bankIDInvalidRequest, "userVisibleData: only a sign order shows a text")
        }
        guard let endUserIP = context.ipAddress else {
            throw AuthError(.bankIDInvalidRequest, "the client address is unknown")
        }

        // The binding: the session when signed in, else the client's binding value (a new one
        // when it has none).
        var newBinding: String?
        let bindingHash: [UInt8]
        if let (session, _) = signedIn {
            bindingHash = Self.bindingHash(session: session.id)
        } else {
            let offered = requester.binding.flatMap { Self.acceptableBinding($0) }
            let binding: String
            if let offered { binding = offered } else { binding = try random.secureToken(32) }
            if binding != requester.binding { newBinding = binding }
            bindingHash = Self.bindingHash(client: binding)
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
            nonceHash = Self.nonceHash(value)
            returnURL = Self.appendingNonce(value, to: policy.returnURL)
        }
        let request = BankIDStartRequest(
            endUserIP: endUserIP, userVisibleData: text, returnURL: returnURL,
            returnRisk: policy.returnRisk ? true : nil)
        let coordinator = try running()
        let started: BankIDStartedOrder
        do {
            started = try await coordinator.start(intent == .sign ? .sign : .auth, request, intent: intent)
        } catch {
            try? record(
                .bankIDOrderFailedToStart, userID: signedIn?.1.id, context: context,
                details: ["intent": intent.rawValue, "code": error.code.rawValue])
            throw Self.flowError(error)
        }
        let flow = BankIDFlow(
            idHash: Digest.sha256(orderID), orderRef: started.orderRef, intent: intent,
            sameDevice: device == .same, clientKind: clientKind, bindingHash: bindingHash,
            userID: signedIn?.1.id, sessionID: signedIn?.0.id, returnNonce: nonceHash, userVisibleText: text,
            createdAt: clock.now())
        do {
            try identities.insertBankIDFlow(flow)
            try record(
                .bankIDOrderStarted, userID: signedIn?.1.id, context: context,
                details: ["intent": intent.rawValue, "device": device.rawValue])
        } catch {
            throw AuthError(
                .bankIDUnavailable, "the order could not be stored", userMessage: .rfa22, underlying: error)
        }
        let launchURL = device == .same ? started.autoStartToken.map(Self.launchURL) : nil
        return StartedBankIDFlow(
            orderID: orderID, autoStartToken: device == .same ? started.autoStartToken : nil,
            launchURL: launchURL, qrData: device == .other ? started.qrData : nil, newBinding: newBinding)
    }

    // MARK: Status

    /// Where the order stands, answered without waiting on BankID (a due collect runs in the
    /// background; the client's next poll sees it). A completed order's result is applied by the
    /// first poll that sees it, and only by that one.
    /// - Parameter returnNonce: the `nonce` BankID's return carried (a web client's same-device
    ///   order delivers its result only with it).
    /// - Throws: `AuthError` (`bankid.order_not_found` for another client's order,
    ///   `bankid.return_mismatch` for a nonce that is not the order's).
    public func status(
        orderID: String, requester: BankIDRequester, returnNonce: String? = nil, context: ClientContext
    ) throws(AuthError) -> BankIDFlowStatus {
        let coordinator = try running()
        let flow = try ownedFlow(orderID, requester: requester)
        if let returnNonce, !Self.nonceMatches(returnNonce, flow.returnNonce) {
            try? record(
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
            qrData = try? coordinator.qrData(orderRef: flow.orderRef)
        }
        var result: BankIDFlowResult?
        if snapshot.status == .complete, flow.consumedAt == nil, flow.returnNonce != nil, returnNonce == nil {
            // Complete in the app, but the result waits for the browser BankID returns to.
            return BankIDFlowStatus(
                status: .pending, hintCode: nil, message: nil, qrData: nil, result: nil, awaitingReturn: true)
        }
        if snapshot.status == .complete, let completion = snapshot.completion {
            result = try complete(flow, snapshot: snapshot, completion: completion, context: context)
        } else if snapshot.status == .failed, flow.consumedAt == nil {
            // A failed login, sign-up, link or signature is audited once, by the poll that sees it.
            let event = event(
                .bankIDOrderFailed, userID: flow.userID, context: context,
                details: [
                    "intent": flow.intent.rawValue, "hintCode": snapshot.hintCode?.rawValue ?? "unknown",
                ])
            _ = try? identities.commitBankIDCompletion(
                BankIDCompletionRecord(
                    flowIDHash: flow.idHash, outcome: "bankid.failed", at: clock.now(), events: [event]))
        }
        // Before the first collect answers there is no hint yet: the order is outstanding.
        let message =
            snapshot.status == .pending && snapshot.hintCode == nil
            ? RecommendedMessage.forPending(.outstandingTransaction, context: messageContext)
            : snapshot.message(messageContext)
        return BankIDFlowStatus(
            status: snapshot.status, hintCode: snapshot.hintCode?.rawValue, message: message, qrData: qrData,
            result: result)
    }

    // MARK: Cancel

    /// Cancels the client's order (BankID is told; a finished order is left as it is).
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
        try? record(
            .bankIDOrderCancelled, userID: flow.userID, context: context,
            details: ["intent": flow.intent.rawValue])
    }

    /// Deletes flows older than `age` (their orders are long purged); run it with the coordinator's purge.
    @discardableResult
    public func purge(olderThan age: TimeInterval = 3_600) throws -> Int {
        try identities.purgeBankIDFlows(createdBefore: clock.now().addingTimeInterval(-age))
    }

    // MARK: Completion

    private func complete(
        _ flow: BankIDFlow, snapshot: BankIDOrderSnapshot, completion: BankIDCompletion,
        context: ClientContext
    ) throws(AuthError) -> BankIDFlowResult {
        if flow.consumedAt != nil { return delivered(flow) }
        let now = clock.now()
        var events: [AuditEvent] = []
        var details = ["intent": flow.intent.rawValue, "device": flow.sameDevice ? "same" : "other"]
        if let risk = completion.risk { details["risk"] = risk }
        // Same device: the app should complete from the address the order was started from.
        if flow.sameDevice, let started = snapshot.endUserIP, started != completion.deviceIPAddress {
            events.append(
                event(
                    .bankIDIPMismatch, userID: flow.userID, context: context,
                    details: [
                        "intent": flow.intent.rawValue, "endUserIp": started,
                        "deviceIp": completion.deviceIPAddress,
                    ]))
        }
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
            if let ceiling = policy.riskCeiling, flow.intent != .sign,
                Self.riskRank(completion.risk) > Self.riskRank(ceiling)
            {
                events.append(
                    event(.bankIDRiskRefused, userID: linked?.userID, context: context, details: details))
                return try commit(flow, outcome: "bankid.risk_refused", at: now, events: events)
            }
            switch flow.intent {
            case .login:
                return try login(
                    flow, linked: linked, completion: completion, details: details, events: events,
                    context: context)
            case .signup:
                return try signup(
                    flow, linked: linked, completion: completion, details: details, events: events,
                    context: context)
            case .link:
                return try link(
                    flow, linked: linked, completion: completion, details: details, events: events,
                    context: context)
            case .sign:
                return try sign(
                    flow, linked: linked, completion: completion, details: details, events: events,
                    context: context)
            case .recovery:
                return try recover(flow, linked: linked, details: details, events: events, context: context)
            }
        } catch let error as AuthError {
            throw error
        } catch {
            throw AuthError(
                .bankIDUnavailable, "the result could not be stored", userMessage: .rfa22, underlying: error)
        }
    }

    private func login(
        _ flow: BankIDFlow, linked: LinkedIdentity?, completion: BankIDCompletion, details: [String: String],
        events: [AuditEvent], context: ClientContext
    ) throws -> BankIDFlowResult {
        let now = clock.now()
        var events = events
        guard let linked, let user = try accounts.user(id: linked.userID) else {
            events.append(event(.bankIDLoginNoAccount, userID: nil, context: context, details: details))
            return try commit(flow, outcome: "bankid.no_account", at: now, events: events)
        }
        return try openSession(
            for: user, flow: flow, outcome: "bankid.signed_in", details: details, events: events,
            context: context)
    }

    private func signup(
        _ flow: BankIDFlow, linked: LinkedIdentity?, completion: BankIDCompletion, details: [String: String],
        events: [AuditEvent], context: ClientContext
    ) throws -> BankIDFlowResult {
        // The person already has an account: they proved who they are, so this is a login when
        // logins are on, and never a second account.
        if let linked, let user = try accounts.user(id: linked.userID) {
            guard policy.login else {
                var events = events
                events.append(
                    event(.bankIDSignupExisting, userID: user.id, context: context, details: details))
                return try commit(flow, outcome: "bankid.account_exists", at: clock.now(), events: events)
            }
            return try openSession(
                for: user, flow: flow, outcome: "bankid.signed_in", details: details, events: events,
                context: context)
        }
        let now = clock.now()
        let name = String(completion.name.prefix(128))
        let user = User(
            id: try random.secureToken(16), username: nil, displayName: name.isEmpty ? "BankID user" : name,
            createdAt: now,
            userHandle: try random.secureBytes(User.handleByteCount))
        let issued = try sessions.prepare(
            userID: user.id, clientKind: flow.clientKind, authMethod: .bankid, userAgent: context.userAgent,
            ipAddress: context.ipAddress)
        var events = events
        var signupDetails = details
        signupDetails["sessionId"] = issued.session.id
        events.append(event(.bankIDSignup, userID: user.id, context: context, details: signupDetails))
        let record = BankIDCompletionRecord(
            flowIDHash: flow.idHash, outcome: "bankid.account_created", at: now, newUser: user,
            link: LinkedIdentity(userID: user.id, digest: completion.identity, name: name, linkedAt: now),
            session: issued.session, events: events)
        guard try commitRecord(record) else { return try delivered(reloaded(flow)) }
        return BankIDFlowResult(
            code: "bankid.account_created", user: user, session: issued, clientKind: flow.clientKind,
            suggestPasskey: true, steppedUpUntil: nil, signupAvailable: policy.signup)
    }

    private func link(
        _ flow: BankIDFlow, linked: LinkedIdentity?, completion: BankIDCompletion, details: [String: String],
        events: [AuditEvent], context: ClientContext
    ) throws -> BankIDFlowResult {
        let now = clock.now()
        guard let userID = flow.userID, let user = try accounts.user(id: userID) else {
            return try commit(flow, outcome: "bankid.sign_in_required", at: now, events: events)
        }
        var events = events
        if let linked {
            let outcome =
                linked.userID == userID ? "bankid.already_linked" : "bankid.identity_linked_elsewhere"
            events.append(
                event(
                    outcome == "bankid.already_linked" ? .bankIDLinkRepeated : .bankIDLinkRefused,
                    userID: userID, context: context, details: details))
            return try commit(flow, outcome: outcome, at: now, user: user, events: events)
        }
        if try identities.linkedIdentity(userID: userID) != nil {
            events.append(event(.bankIDLinkRefused, userID: userID, context: context, details: details))
            return try commit(
                flow, outcome: "bankid.account_has_identity", at: now, user: user, events: events)
        }
        events.append(event(.bankIDLinked, userID: userID, context: context, details: details))
        let record = BankIDCompletionRecord(
            flowIDHash: flow.idHash, outcome: "bankid.linked", at: now,
            link: LinkedIdentity(
                userID: userID, digest: completion.identity, name: String(completion.name.prefix(128)),
                linkedAt: now),
            events: events)
        do {
            guard try commitRecord(record) else { return try delivered(reloaded(flow)) }
        } catch let error as StorageError where error.code == .conflict {
            // Linked elsewhere between the check and the commit.
            return try commit(
                flow, outcome: "bankid.identity_linked_elsewhere", at: now, user: user,
                events: [event(.bankIDLinkRefused, userID: userID, context: context, details: details)])
        }
        return BankIDFlowResult(
            code: "bankid.linked", user: user, session: nil, clientKind: flow.clientKind,
            suggestPasskey: false,
            steppedUpUntil: nil, signupAvailable: policy.signup)
    }

    private func sign(
        _ flow: BankIDFlow, linked: LinkedIdentity?, completion: BankIDCompletion, details: [String: String],
        events: [AuditEvent], context: ClientContext
    ) throws -> BankIDFlowResult {
        let now = clock.now()
        var events = events
        guard let userID = flow.userID, let sessionID = flow.sessionID, let text = flow.userVisibleText,
            let user = try accounts.user(id: userID)
        else { return try commit(flow, outcome: "bankid.sign_in_required", at: now, events: events) }
        // A step-up proves the account's own person signed: the signer must be the linked identity.
        guard let linked, linked.userID == userID else {
            events.append(event(.bankIDSignRefused, userID: userID, context: context, details: details))
            return try commit(flow, outcome: "bankid.identity_mismatch", at: now, user: user, events: events)
        }
        let until = now.addingTimeInterval(policy.stepUpLifetime)
        var signDetails = details
        // The audit keeps digests: the text may be long and the signature names the signer.
        signDetails["sessionId"] = sessionID
        signDetails["textSha256"] = Hex.encode(Digest.sha256(text))
        if let signature = completion.signature {
            signDetails["signatureSha256"] = Hex.encode(Digest.sha256(signature))
        }
        signDetails["steppedUpUntil"] = UTCTimestamp.string(until)
        events.append(event(.bankIDStepUp, userID: userID, context: context, details: signDetails))
        let record = BankIDCompletionRecord(
            flowIDHash: flow.idHash, outcome: "bankid.signed", at: now,
            stepUp: SessionStepUp(
                sessionID: sessionID, signedAt: now, validUntil: until, userVisibleText: text,
                signature: completion.signature, ocspResponse: completion.ocspResponse),
            events: events)
        guard try commitRecord(record) else { return try delivered(reloaded(flow)) }
        return BankIDFlowResult(
            code: "bankid.signed", user: user, session: nil, clientKind: flow.clientKind,
            suggestPasskey: false,
            steppedUpUntil: until, signupAvailable: policy.signup)
    }

    /// Opens a BankID session for `user` (login), replacing the one the order was started from.
    private func openSession(
        for user: User, flow: BankIDFlow, outcome: String, details: [String: String], events: [AuditEvent],
        context: ClientContext
    ) throws -> BankIDFlowResult {
        let now = clock.now()
        var events = events
        guard user.disabledAt == nil else {
            events.append(
                event(
                    .bankIDLoginFailed, userID: user.id, context: context,
                    details: details.merging(["code": "account.disabled"]) { $1 }))
            return try commit(flow, outcome: "account.disabled", at: now, events: events)
        }
        let issued = try sessions.prepare(
            userID: user.id, clientKind: flow.clientKind, authMethod: .bankid, userAgent: context.userAgent,
            ipAddress: context.ipAddress)
        var loginDetails = details
        loginDetails["sessionId"] = issued.session.id
        events.append(event(.bankIDLogin, userID: user.id, context: context, details: loginDetails))
        let record = BankIDCompletionRecord(
            flowIDHash: flow.idHash, outcome: outcome, at: now, session: issued.session,
            replacedSessionID: flow.sessionID, events: events)
        guard try commitRecord(record) else { return try delivered(reloaded(flow)) }
        // BankID was the way in because no passkey was at hand here: offer to add one on this device.
        return BankIDFlowResult(
            code: outcome, user: user, session: issued, clientKind: flow.clientKind, suggestPasskey: true,
            steppedUpUntil: nil, signupAvailable: policy.signup)
    }

    /// Consumes the completion with an outcome that changes nothing else.
    /// Recovery: the person proved who they are, so their account gets a one-time, short-lived
    /// enrollment token for a new passkey, handed only to the client bound to this order. What the
    /// new passkey revokes (other sessions, older passkeys) is the recovery policy's, applied when
    /// the token is used.
    private func recover(
        _ flow: BankIDFlow, linked: LinkedIdentity?, details: [String: String], events: [AuditEvent],
        context: ClientContext
    ) throws -> BankIDFlowResult {
        let now = clock.now()
        var events = events
        guard let linked, let user = try accounts.user(id: linked.userID), let recoveryTokens else {
            events.append(
                event(.bankIDRecoveryNoAccount, userID: nil, context: context, details: details))
            return try commit(flow, outcome: "bankid.no_account", at: now, events: events)
        }
        guard user.disabledAt == nil else {
            events.append(
                event(
                    .bankIDRecoveryFailed, userID: user.id, context: context,
                    details: details.merging(["code": "account.disabled"]) { $1 }))
            return try commit(flow, outcome: "account.disabled", at: now, events: events)
        }
        // Issued before the commit: if another poll consumed the completion meanwhile, this token
        // is never delivered and simply expires unused.
        let token = try recoveryTokens(user.id, flow.bindingHash, context)
        events.append(event(.bankIDRecoveryVerified, userID: user.id, context: context, details: details))
        var result = try commit(
            flow, outcome: "bankid.recovery_verified", at: now, user: user, events: events)
        if result.code == "bankid.recovery_verified" { result.enrollmentToken = token }
        return result
    }

    private func commit(
        _ flow: BankIDFlow, outcome: String, at: Date, user: User? = nil, events: [AuditEvent]
    ) throws -> BankIDFlowResult {
        let record = BankIDCompletionRecord(flowIDHash: flow.idHash, outcome: outcome, at: at, events: events)
        guard try commitRecord(record) else { return try delivered(reloaded(flow)) }
        return BankIDFlowResult(
            code: outcome, user: user, session: nil, clientKind: flow.clientKind, suggestPasskey: false,
            steppedUpUntil: nil, signupAvailable: policy.signup && outcome == "bankid.no_account")
    }

    private func commitRecord(_ record: BankIDCompletionRecord) throws -> Bool {
        try identities.commitBankIDCompletion(record)
    }

    /// The answer to every poll after the one that received the result: what happened, never
    /// the session again.
    private func delivered(_ flow: BankIDFlow) -> BankIDFlowResult {
        BankIDFlowResult(
            code: "bankid.result_delivered", user: nil, session: nil, clientKind: flow.clientKind,
            suggestPasskey: false, steppedUpUntil: nil, signupAvailable: false)
    }

    private func reloaded(_ flow: BankIDFlow) throws -> BankIDFlow {
        try identities.bankIDFlow(idHash: flow.idHash) ?? flow
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

    static func bindingHash(session id: String) -> [UInt8] { Digest.sha256("portvakt.bankid.session:" + id) }
    static func bindingHash(client value: String) -> [UInt8] {
        Digest.sha256("portvakt.bankid.client:" + value)
    }

    /// A client's binding value when it looks like one we issued (43 base64url characters).
    static func acceptableBinding(_ value: String) -> String? {
        value.utf8.count == 43
            && value.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                    true
                default: false
                }
            } ? value : nil
    }

    /// The universal link for the same-device start. In v6 the returnUrl travels in the /auth
    /// call (with its nonce), so the link itself says `redirect=null`.
    static func launchURL(autoStartToken: String) -> String {
        "https://app.bankid.com/?autostarttoken=\(autoStartToken)&redirect=null"
    }

    static func appendingNonce(_ nonce: String, to url: String) -> String {
        url + (url.contains("?") ? "&" : "?") + "nonce=" + nonce
    }

    /// The returnUrl nonce as stored: its SHA-256, like every other capability.
    static func nonceHash(_ nonce: String) -> String {
        Base64URL.encode(Digest.sha256("portvakt.bankid.return:" + nonce))
    }

    /// Whether `presented` is the nonce stored as `stored` (false when the order has none).
    static func nonceMatches(_ presented: String, _ stored: String?) -> Bool {
        guard let stored else { return false }
        return ConstantTime.equals(Array(nonceHash(presented).utf8), Array(stored.utf8))
    }

    static func riskRank(_ risk: String?) -> Int {
        switch risk {
        case "low": 0
        case "moderate": 1
        case "high": 2
        // Asked for and missing, or a level BankID added later: treat as above every ceiling.
        default: 3
        }
    }

    static func flowError(_ error: BankIDError) -> AuthError {
        switch error.code {
        case .orderNotFound: AuthError(.orderNotFound, "no such order", underlying: error)
        case .orderExpired:
            AuthError(.orderExpired, "the order's result is no longer kept", underlying: error)
        case .alreadyInProgress:
            AuthError(
                .alreadyInProgress, "an order for this person is already running", userMessage: .rfa4,
                underlying: error)
        case .invalidEndUserIP, .invalidUserVisibleData, .invalidReturnURL:
            AuthError(.bankIDInvalidRequest, error.message, underlying: error)
        default:
            AuthError(
                .bankIDUnavailable, "BankID could not be reached or refused the call",
                userMessage: error.recommendedMessage,
                underlying: error)
        }
    }

    private func record(
        _ action: AuditAction, userID: String?, context: ClientContext, details: [String: String]
    )
        throws
    {
        _ = try audit.appendAudit(event(action, userID: userID, context: context, details: details))
    }

    private func event(
        _ action: AuditAction, userID: String?, context: ClientContext, details: [String: String]
    )
        -> AuditEvent
    {
        AuditEvent(action, userID: userID, context: context, details: details, at: clock.now())
    }
}
