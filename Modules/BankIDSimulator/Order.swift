public import FoundationEssentials

/// What an RP started: the four order endpoints.
public enum OrderKind: String, Sendable, Hashable {
    case auth, sign, phoneAuth, phoneSign

    /// Phone orders are answered over the phone (no QR, no autostart token).
    var isPhone: Bool { self == .phoneAuth || self == .phoneSign }
}

/// The validated fields of an order request the simulation acts on.
public struct OrderRequest: Sendable, Hashable {
    /// Which endpoint.
    public var kind: OrderKind
    /// endUserIp (auth and sign).
    public var endUserIp: String?
    /// Who must complete it: requirement.personalNumber, or the phone order's personalNumber.
    public var personalNumber: String?
    /// userVisibleData, still base64.
    public var userVisibleData: String?
    /// userVisibleDataFormat.
    public var userVisibleDataFormat: String?
    /// requirement.mrtd: the user must scan an ID document first (then completionData has stepUp).
    public var mrtd: Bool
    /// requirement.risk: the highest risk the RP accepts ("low" or "moderate").
    public var acceptedRisk: String?
    /// returnRisk: completionData carries the assessed risk.
    public var returnRisk: Bool
    /// callInitiator of a phone order.
    public var callInitiator: String?
    /// returnUrl: where the app sends the user when the order is finished (same device).
    public var returnUrl: String?

    /// Creates a request description.
    public init(
        kind: OrderKind, endUserIp: String? = nil, personalNumber: String? = nil,
        userVisibleData: String? = nil,
        userVisibleDataFormat: String? = nil, mrtd: Bool = false, acceptedRisk: String? = nil,
        returnRisk: Bool = false, callInitiator: String? = nil, returnUrl: String? = nil
    ) {
        self.kind = kind
        self.endUserIp = endUserIp
        self.personalNumber = personalNumber
        self.userVisibleData = userVisibleData
        self.userVisibleDataFormat = userVisibleDataFormat
        self.mrtd = mrtd
        self.acceptedRisk = acceptedRisk
        self.returnRisk = returnRisk
        self.callInitiator = callInitiator
        self.returnUrl = returnUrl
    }
}

/// What the simulated user does in the app.
public enum UserAction: String, Sendable, Hashable, CaseIterable {
    /// Identify or sign (the default): the person's configured outcome decides what happens.
    case approve
    /// Press cancel in the app: failed, userCancel.
    case cancel
    /// Enter a wrong security code: pending userSign, certificateErr after the limit.
    case wrongCode
    /// Decline the call (phone orders: userDeclinedCall) or the order (others: userCancel).
    case decline
    /// Open the app on the order without going further: pending started (userCallConfirm by phone).
    case start
    /// Reach the identification step: pending userMrtd when an ID document is required and not yet
    /// scanned, else userSign.
    case open
}

/// How an approval by a given person ends, by configuration or the control endpoint.
public enum Outcome: String, Sendable, Hashable, CaseIterable, Codable {
    case complete, userCancel, certificateErr, startFailed, expiredTransaction, transactionRiskBlocked
}

/// Where an order is: pending with a hint, or final.
public enum OrderPhase: Sendable, Hashable {
    /// Nobody has opened it yet.
    case waiting
    /// Pending with a hint after the user's app picked it up (started, userSign, userMrtd, userCallConfirm).
    case inApp(hint: String)
    /// Final: failed with a hint code.
    case failed(hint: String)
    /// Final: complete.
    case complete

    /// True for complete and failed.
    public var isFinal: Bool {
        switch self {
        case .waiting, .inApp: false
        case .failed, .complete: true
        }
    }
}

/// The timing rules of the simulation, all in seconds.
public struct OrderTiming: Sendable, Hashable {
    /// How long an order waits for a scan or an opened autostart link before startFailed.
    public var startWindow: TimeInterval = 30
    /// How long an order lives before expiredTransaction.
    public var lifetime: TimeInterval = 180
    /// After this long without contact, a pending order's hint turns from outstandingTransaction to noClient.
    public var noClientAfter: TimeInterval = 10
    /// How long a completed order can be collected.
    public var completedRetention: TimeInterval = 180
    /// How long a failed order can be collected.
    public var failedRetention: TimeInterval = 300
    /// Wrong security codes before certificateErr.
    public var wrongCodeLimit = 3
    /// How many seconds old a QR code's time may be and still scan (the app's tolerance).
    public var qrMaxAge = 2

    /// The defaults above.
    public init() {}
}

/// One order as a pure state machine: every transition takes the time as an argument and does no I/O.
public struct Order: Sendable {
    /// The order's reference (a UUID, as BankID's).
    public let orderRef: String
    /// What was asked for.
    public let request: OrderRequest
    /// The QR start token (nil for phone orders).
    public let qrStartToken: String?
    /// The QR start secret (nil for phone orders). Secret: never logged.
    public let qrStartSecret: String?
    /// The autostart token (nil for phone orders).
    public let autoStartToken: String?
    /// When /auth, /sign or /phone/… answered; QR time counts from here.
    public let createdAt: Date
    /// Where it is.
    public private(set) var phase: OrderPhase = .waiting
    /// When it became final.
    public private(set) var finishedAt: Date?
    /// True once a collect has returned the final state (a second collect is refused).
    public private(set) var finalCollected = false
    /// The person who opened it in the app.
    public private(set) var person: TestPerson?
    /// The IP address the app used.
    public private(set) var deviceIP: String?
    /// Collects so far (for auto-complete).
    public private(set) var collects = 0
    /// When every collect of this order arrived, the final one included: what a test counts to
    /// see that the servers sharing an order collect it at most once per poll interval.
    public private(set) var collectTimes: [Date] = []
    /// Wrong codes so far.
    public private(set) var wrongCodes = 0
    /// The ID document was scanned (mrtd step done).
    public private(set) var mrtdDone = false

    /// Creates a waiting order.
    public init(
        orderRef: String, request: OrderRequest, qrStartToken: String?, qrStartSecret: String?,
        autoStartToken: String?, createdAt: Date
    ) {
        self.orderRef = orderRef
        self.request = request
        self.qrStartToken = qrStartToken
        self.qrStartSecret = qrStartSecret
        self.autoStartToken = autoStartToken
        self.createdAt = createdAt
    }

    /// The person this order is bound to for alreadyInProgress: the one required, else the one who opened it.
    public var boundPersonalNumber: String? { request.personalNumber ?? person?.personalNumber }

    /// Applies what time alone does: startFailed after the start window without contact, and
    /// expiredTransaction after the lifetime. Idempotent.
    public mutating func advance(to now: Date, timing: OrderTiming) {
        guard !phase.isFinal else { return }
        let age = now.timeIntervalSince(createdAt)
        // Phone orders have no QR or link to open: only their lifetime runs out.
        if phase == .waiting, !request.kind.isPhone, age >= timing.startWindow,
            timing.startWindow < timing.lifetime
        {
            finish(.failed(hint: "startFailed"), at: createdAt.addingTimeInterval(timing.startWindow))
        } else if age >= timing.lifetime {
            finish(.failed(hint: "expiredTransaction"), at: createdAt.addingTimeInterval(timing.lifetime))
        }
    }

    /// True when the order is past its retention and must be forgotten.
    public func isExpired(at now: Date, timing: OrderTiming) -> Bool {
        guard let finishedAt else { return false }
        let retention = phase == .complete ? timing.completedRetention : timing.failedRetention
        return now.timeIntervalSince(finishedAt) >= retention
    }

    /// The answer to one collect.
    public enum CollectAnswer: Sendable, Hashable {
        /// Pending with a hint code.
        case pending(hint: String)
        /// Failed with a hint code.
        case failed(hint: String)
        /// Complete: the person and the app's IP are on the order.
        case complete
        /// invalidParameters: a collect after the final state was already collected.
        case alreadyCollected
    }

    /// Collects: counts the call, applies auto-complete after `autoCompleteAfter` pending collects,
    /// and marks a final answer as delivered.
    public mutating func collect(
        at now: Date, timing: OrderTiming, autoCompleteAfter: Int?, defaultPerson: TestPerson
    ) -> CollectAnswer {
        advance(to: now, timing: timing)
        collectTimes.append(now)
        if !phase.isFinal {
            collects += 1
            if let autoCompleteAfter, collects > autoCompleteAfter {
                let person = person ?? defaultPerson
                self.person = person
                if deviceIP == nil { deviceIP = request.endUserIp ?? "127.0.0.1" }
                if request.mrtd { mrtdDone = true }
                finish(.complete, at: now)
            }
        }
        switch phase {
        case .waiting:
            let quiet = now.timeIntervalSince(createdAt) >= timing.noClientAfter && !request.kind.isPhone
            return .pending(hint: quiet ? "noClient" : "outstandingTransaction")
        case .inApp(let hint):
            return .pending(hint: hint)
        case .failed(let hint):
            if finalCollected { return .alreadyCollected }
            finalCollected = true
            return .failed(hint: hint)
        case .complete:
            if finalCollected { return .alreadyCollected }
            finalCollected = true
            return .complete
        }
    }

    /// The RP cancels: failed, cancelled. False when the order is already final (BankID answers
    /// invalidParameters to a second cancel).
    public mutating func cancel(at now: Date, timing: OrderTiming) -> Bool {
        advance(to: now, timing: timing)
        guard !phase.isFinal else { return false }
        finish(.failed(hint: "cancelled"), at: now)
        return true
    }

    /// Why a user action was refused.
    public enum ActionRefusal: String, Sendable, Hashable, Error {
        /// The order is no longer pending (failed, complete, cancelled).
        case notPending
        /// Another person already opened this order.
        case otherPerson
        /// The order requires a different personal number.
        case wrongPerson
    }

    /// The user acts in the app as `person` from `ip`, with the person's configured `outcome` for approvals.
    public mutating func act(
        _ action: UserAction, as person: TestPerson, from ip: String, outcome: Outcome, at now: Date,
        timing: OrderTiming
    ) -> ActionRefusal? {
        advance(to: now, timing: timing)
        guard !phase.isFinal else { return .notPending }
        if let current = self.person, current.personalNumber != person.personalNumber { return .otherPerson }
        if let required = request.personalNumber, required != person.personalNumber { return .wrongPerson }
        self.person = person
        deviceIP = ip
        if phase == .waiting {
            // The configured outcomes that happen as the app starts, before any choice.
            switch outcome {
            case .startFailed:
                finish(.failed(hint: "startFailed"), at: now)
                return nil
            case .expiredTransaction:
                finish(.failed(hint: "expiredTransaction"), at: now)
                return nil
            default: break
            }
        }
        switch action {
        case .start:
            phase = .inApp(hint: request.kind.isPhone ? "userCallConfirm" : "started")
        case .open:
            if request.mrtd && !mrtdDone {
                if phase == .inApp(hint: "userMrtd") {
                    mrtdDone = true
                    phase = .inApp(hint: "userSign")
                } else {
                    phase = .inApp(hint: "userMrtd")
                }
            } else {
                phase = .inApp(hint: "userSign")
            }
        case .cancel:
            finish(.failed(hint: "userCancel"), at: now)
        case .decline:
            finish(.failed(hint: request.kind.isPhone ? "userDeclinedCall" : "userCancel"), at: now)
        case .wrongCode:
            wrongCodes += 1
            if wrongCodes >= timing.wrongCodeLimit {
                finish(.failed(hint: "certificateErr"), at: now)
            } else {
                phase = .inApp(hint: "userSign")
            }
        case .approve:
            approve(as: person, outcome: outcome, at: now)
        }
        return nil
    }

    private mutating func approve(as person: TestPerson, outcome: Outcome, at now: Date) {
        let riskTooHigh =
            switch request.acceptedRisk {
            case "low": person.risk != "low"
            case "moderate": person.risk == "high"
            default: false
            }
        switch outcome {
        case .complete where riskTooHigh, .transactionRiskBlocked:
            finish(.failed(hint: "transactionRiskBlocked"), at: now)
        case .complete:
            if request.mrtd { mrtdDone = true }
            finish(.complete, at: now)
        case .userCancel:
            finish(.failed(hint: "userCancel"), at: now)
        case .certificateErr:
            finish(.failed(hint: "certificateErr"), at: now)
        case .startFailed:
            finish(.failed(hint: "startFailed"), at: now)
        case .expiredTransaction:
            finish(.failed(hint: "expiredTransaction"), at: now)
        }
    }

    private mutating func finish(_ final: OrderPhase, at instant: Date) {
        phase = final
        finishedAt = instant
    }
}
