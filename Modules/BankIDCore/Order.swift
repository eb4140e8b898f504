public import FoundationEssentials

/// Which endpoint started an order.
public enum BankIDOrderKind: String, Sendable, CaseIterable {
    /// /auth.
    case auth
    /// /sign.
    case sign
    /// /phone/auth.
    case phoneAuth
    /// /phone/sign.
    case phoneSign

    /// Whether the order is a signature, whose XML signature is kept in the result.
    public var isSignature: Bool { self == .sign || self == .phoneSign }
}

/// What the user started the order for (the public API's `intent`).
public enum BankIDOrderIntent: String, Sendable, CaseIterable, Codable {
    /// Sign in to an existing account.
    case login
    /// Create an account.
    case signup
    /// Get back into an account after losing every passkey.
    case recovery
    /// Link a BankID identity to the signed-in account.
    case link
    /// Sign a text while signed in (step-up).
    case sign
}

/// Where an order stands in Portvakt: BankID's three statuses and our own cancellation.
public enum BankIDOrderStatus: String, Sendable, CaseIterable {
    /// Waiting for the user.
    case pending
    /// Identified or signed; the result is kept for the retention window.
    case complete
    /// Ended without a result (BankID's failed).
    case failed
    /// Cancelled by Portvakt (the user aborted, or a new order superseded it).
    case cancelled

    /// Whether the order has ended: it is never collected again.
    public var isFinal: Bool { self != .pending }
}

/// A completed order's result as Portvakt keeps it: the person as a keyed digest, never the number.
public struct BankIDCompletion: Sendable, Equatable, Codable {
    /// The keyed digest of the personal number, under the current identity key.
    public var identity: IdentityDigest
    /// Its digests under the other configured keys, so an identity linked before a key rotation is
    /// still found (and can be re-keyed); nil in results stored before these were kept.
    public var previousKeyIdentities: [IdentityDigest]?
    /// The full name.
    public var name: String
    /// The given name.
    public var givenName: String
    /// The surname.
    public var surname: String
    /// The IP address of the device that completed the order, as BankID saw it.
    public var deviceIPAddress: String
    /// BankID's hardware identifier of that device, when sent.
    public var deviceUHI: String?
    /// When the user's BankID was issued.
    public var bankIdIssueDate: String?
    /// Whether the user scanned their ID document, when it was required.
    public var stepUpMRTD: Bool?
    /// BankID's risk assessment, when asked for.
    public var risk: String?
    /// The XML signature (base64), kept for signature orders only.
    public var signature: String?
    /// The OCSP response (base64), kept for signature orders only.
    public var ocspResponse: String?

    /// Creates a result.
    public init(
        identity: IdentityDigest, name: String, givenName: String, surname: String, deviceIPAddress: String,
        deviceUHI: String? = nil, bankIdIssueDate: String? = nil, stepUpMRTD: Bool? = nil,
        risk: String? = nil,
        signature: String? = nil, ocspResponse: String? = nil, previousKeyIdentities: [IdentityDigest]? = nil
    ) {
        self.identity = identity
        self.previousKeyIdentities = previousKeyIdentities
        self.name = name
        self.givenName = givenName
        self.surname = surname
        self.deviceIPAddress = deviceIPAddress
        self.deviceUHI = deviceUHI
        self.bankIdIssueDate = bankIdIssueDate
        self.stepUpMRTD = stepUpMRTD
        self.risk = risk
        self.signature = signature
        self.ocspResponse = ocspResponse
    }

    /// Builds the result from BankID's completionData: the personal number becomes a digest here
    /// and goes no further; the signature and OCSP response are kept only when `keepSignature`.
    public init(_ data: CompletionData, hasher: IdentityHasher, keepSignature: Bool) {
        self.init(
            identity: hasher.digest(data.user.personalNumber), name: data.user.name,
            givenName: data.user.givenName, surname: data.user.surname,
            deviceIPAddress: data.device.ipAddress,
            deviceUHI: data.device.uhi, bankIdIssueDate: data.bankIdIssueDate, stepUpMRTD: data.stepUp?.mrtd,
            risk: data.risk, signature: keepSignature ? data.signature : nil,
            ocspResponse: keepSignature ? data.ocspResponse : nil,
            previousKeyIdentities: hasher.candidates(data.user.personalNumber).filter {
                $0.keyID != hasher.currentKey.id
            })
    }
}

/// The timings of collecting: how often BankID is asked and how long answers are kept.
public struct BankIDOrderTiming: Sendable, Equatable {
    /// How long a pending answer serves every poller before BankID is asked again (BankID: 2 s).
    public var pollInterval: TimeInterval
    /// How long a complete result is kept after it arrived (BankID keeps it collectable 3 min).
    public var completeRetention: TimeInterval
    /// How long a failed or cancelled result is kept (BankID: 5 min).
    public var failedRetention: TimeInterval
    /// How long one instance may hold an order's collect lease; longer than a call's total timeout,
    /// so a lease only lapses when its holder died.
    public var leaseDuration: TimeInterval
    /// How long an order may stay pending before it is given up locally (BankID's own lifetime
    /// is not documented; orders are usually expired upstream after about 3 minutes).
    public var pendingLifetime: TimeInterval

    /// Creates timings with BankID's values: 2 s, 180 s, 300 s, a 30 s lease, 10 min pending.
    public init(
        pollInterval: TimeInterval = 2, completeRetention: TimeInterval = 180,
        failedRetention: TimeInterval = 300, leaseDuration: TimeInterval = 30,
        pendingLifetime: TimeInterval = 600
    ) {
        self.pollInterval = pollInterval
        self.completeRetention = completeRetention
        self.failedRetention = failedRetention
        self.leaseDuration = leaseDuration
        self.pendingLifetime = pendingLifetime
    }
}

/// What a poll should do, decided from the stored state and the time alone.
public enum CollectDecision: Sendable, Equatable {
    /// Answer with the stored state: it is final, or a pending answer fresher than the poll interval.
    case answer
    /// Ask BankID (single-flight: only the lease holder does).
    case collect
    /// The final result is past its retention window: it is gone.
    case expired
}

/// An order's state and its transitions, as a pure value: no I/O, no clock, tested on its own.
///
/// pending ──collect(pending)──▶ pending (hint, time of the answer)
/// pending ──collect(complete)─▶ complete ┐
/// pending ──collect(failed)───▶ failed   ├─ final: never changes, never collected again
/// pending ──cancel────────────▶ cancelled┘
public struct BankIDOrderState: Sendable, Equatable {
    /// Where the order stands.
    public var status: BankIDOrderStatus
    /// The last hint code BankID sent.
    public var hintCode: HintCode?
    /// When the last /collect answer arrived.
    public var lastCollectedAt: Date?
    /// When the order reached its final status.
    public var finishedAt: Date?
    /// The result, once complete.
    public var completion: BankIDCompletion?
    /// When the last /collect failed (BankID unreachable, erroring or timing out); nil once one
    /// is answered again. Kept with the order, so pollers on every instance see the outage.
    public var collectFailedAt: Date?

    /// Creates a state; a new order is `pending` with nothing collected.
    public init(
        status: BankIDOrderStatus = .pending, hintCode: HintCode? = nil, lastCollectedAt: Date? = nil,
        finishedAt: Date? = nil, completion: BankIDCompletion? = nil, collectFailedAt: Date? = nil
    ) {
        self.status = status
        self.hintCode = hintCode
        self.lastCollectedAt = lastCollectedAt
        self.finishedAt = finishedAt
        self.completion = completion
        self.collectFailedAt = collectFailedAt
    }

    /// What a poll at `now` should do.
    public func decision(now: Date, startedAt: Date, timing: BankIDOrderTiming) -> CollectDecision {
        if status.isFinal {
            let retention = status == .complete ? timing.completeRetention : timing.failedRetention
            return now.timeIntervalSince(finishedAt ?? startedAt) >= retention ? .expired : .answer
        }
        if now.timeIntervalSince(startedAt) >= timing.pendingLifetime { return .expired }
        if let lastCollectedAt, now.timeIntervalSince(lastCollectedAt) < timing.pollInterval {
            return .answer
        }
        return .collect
    }

    /// The state after a /collect answer that arrived at `at`. A final state is returned unchanged:
    /// a late answer (for example one crossing a cancellation) cannot reopen or rewrite it.
    /// An unknown status counts as pending, as BankID's guidance for new codes implies.
    public func applying(
        status newStatus: CollectStatus, hintCode: HintCode?, completion: BankIDCompletion?, at: Date
    ) -> BankIDOrderState {
        guard !status.isFinal else { return self }
        switch newStatus {
        case .pending, .unknown:
            return BankIDOrderState(status: .pending, hintCode: hintCode, lastCollectedAt: at)
        case .failed:
            return BankIDOrderState(status: .failed, hintCode: hintCode, lastCollectedAt: at, finishedAt: at)
        case .complete:
            return BankIDOrderState(
                status: .complete, hintCode: nil, lastCollectedAt: at, finishedAt: at, completion: completion)
        }
    }

    /// The state after a /collect that failed at `at` (BankID did not answer it): still pending,
    /// with its last hint, marked as failing. It counts as a collect for the poll interval, so
    /// pollers keep asking BankID every interval while it is down, not on every poll.
    public func failingCollect(at: Date) -> BankIDOrderState {
        guard !status.isFinal else { return self }
        return BankIDOrderState(status: status, hintCode: hintCode, lastCollectedAt: at, collectFailedAt: at)
    }

    /// The state after Portvakt cancels the order at `at`; nil when it has already ended.
    public func cancelling(at: Date) -> BankIDOrderState? {
        guard !status.isFinal else { return nil }
        return BankIDOrderState(
            status: .cancelled, hintCode: .cancelled, lastCollectedAt: lastCollectedAt, finishedAt: at)
    }

    /// The state after BankID refused to collect the order as unknown (invalidParameters): it
    /// has ended upstream, so it is failed here and never asked about again.
    public func abandoning(at: Date) -> BankIDOrderState? {
        guard !status.isFinal else { return nil }
        return BankIDOrderState(
            status: .failed, hintCode: hintCode, lastCollectedAt: lastCollectedAt, finishedAt: at)
    }
}

/// An order as stored: what started it, the QR material, and its state.
public struct BankIDOrder: Sendable, Equatable {
    /// BankID's reference (the key; never shown to clients, who get Portvakt's own order id).
    public var orderRef: String
    /// The endpoint that started it.
    public var kind: BankIDOrderKind
    /// What it was started for.
    public var intent: BankIDOrderIntent
    /// When the start response arrived: t = 0 of the animated QR code.
    public var startedAt: Date
    /// The public half of the QR code (nil for phone orders).
    public var qrStartToken: String?
    /// The secret half of the QR code (nil for phone orders); redacted when printed.
    public var qrStartSecret: QRStartSecret?
    /// The token for the same-device launch link (nil for phone orders).
    public var autoStartToken: String?
    /// The user's IP address at start, to compare with the completing device's.
    public var endUserIP: String?
    /// Where it stands.
    public var state: BankIDOrderState
    /// The instance collecting it right now, if any.
    public var leaseOwner: String?
    /// When that instance's lease lapses.
    public var leaseExpiresAt: Date?

    /// Creates an order.
    public init(
        orderRef: String, kind: BankIDOrderKind, intent: BankIDOrderIntent, startedAt: Date,
        qrStartToken: String? = nil, qrStartSecret: QRStartSecret? = nil, autoStartToken: String? = nil,
        endUserIP: String? = nil, state: BankIDOrderState = BankIDOrderState(), leaseOwner: String? = nil,
        leaseExpiresAt: Date? = nil
    ) {
        self.orderRef = orderRef
        self.kind = kind
        self.intent = intent
        self.startedAt = startedAt
        self.qrStartToken = qrStartToken
        self.qrStartSecret = qrStartSecret
        self.autoStartToken = autoStartToken
        self.endUserIP = endUserIP
        self.state = state
        self.leaseOwner = leaseOwner
        self.leaseExpiresAt = leaseExpiresAt
    }
}

/// What ``BankIDOrderStore/acquireBankIDCollectLease(orderRef:owner:now:until:collectedBefore:)`` found.
public enum BankIDLeaseOutcome: Sendable, Equatable {
    /// This instance holds the lease and must collect, then store the answer (which releases it).
    case acquired(BankIDOrder)
    /// No collect is due from this instance: another holds a live lease, the last answer is
    /// fresh, or the order has ended. The order as stored.
    case notAcquired(BankIDOrder)
}

/// The persistence the collect coordinator needs, shared by every instance. Storage implements it
/// over SQLite (and in memory); each method is atomic on its own.
public protocol BankIDOrderStore: Sendable {
    /// Stores a newly started order.
    /// - Throws: a conflict when the orderRef exists.
    func insertBankIDOrder(_ order: BankIDOrder) throws
    /// The order with this reference; nil when none.
    func bankIDOrder(orderRef: String) throws -> BankIDOrder?
    /// Takes the order's collect lease for `owner` until `until`, atomically, when the order is
    /// pending, nobody else holds a live lease at `now`, and it was last collected at or before
    /// `collectedBefore` (or never). This is what makes instances sharing a database coalesce.
    /// - Returns: nil when there is no such order.
    func acquireBankIDCollectLease(
        orderRef: String, owner: String, now: Date, until: Date, collectedBefore: Date
    ) throws -> BankIDLeaseOutcome?
    /// Replaces the order's state when it is still pending (a final state is never overwritten), and
    /// releases the lease when `releasingLeaseOf` holds it. Returns the order as stored afterwards;
    /// nil when there is no such order.
    func updateBankIDOrder(orderRef: String, state: BankIDOrderState, releasingLeaseOf owner: String?) throws
        -> BankIDOrder?
    /// Deletes complete orders that finished before `completedBefore`, failed and cancelled ones
    /// that finished before `endedBefore`, and any order started before `startedBefore`; returns how many.
    func purgeBankIDOrders(completedBefore: Date, endedBefore: Date, startedBefore: Date) throws -> Int
}
