import CryptoCore
public import FoundationEssentials
public import Kernel
import Synchronization

/// An order as callers see it: no QR secret, no lease, no personal number.
public struct BankIDOrderSnapshot: Sendable, Equatable {
    /// BankID's reference.
    public var orderRef: String
    /// The endpoint that started it.
    public var kind: BankIDOrderKind
    /// What it was started for.
    public var intent: BankIDOrderIntent
    /// When the start response arrived.
    public var startedAt: Date
    /// The user's IP address at start.
    public var endUserIP: String?
    /// Where it stands.
    public var status: BankIDOrderStatus
    /// BankID's last hint.
    public var hintCode: HintCode?
    /// The result, once complete.
    public var completion: BankIDCompletion?
    /// Whether the last /collect failed: BankID is not answering for this order right now.
    public var collectFailing: Bool

    init(_ order: BankIDOrder) {
        orderRef = order.orderRef
        kind = order.kind
        intent = order.intent
        startedAt = order.startedAt
        endUserIP = order.endUserIP
        status = order.state.status
        hintCode = order.state.hintCode
        completion = order.state.completion
        collectFailing = order.state.collectFailedAt != nil
    }

    /// The message to show the user now; nil once complete.
    public func message(_ context: MessageContext) -> RecommendedMessage? {
        switch status {
        case .complete: nil
        // A waiting user must see that BankID is not answering, not "start the app" (RFA5: an
        // internal error, try again), until a collect is answered again.
        case .pending where collectFailing: .rfa5
        case .pending: RecommendedMessage.forPending(hintCode, context: context)
        case .failed, .cancelled: RecommendedMessage.forFailed(hintCode, context: context)
        }
    }
}

/// A started order as its starter sees it: what the client needs, never the QR secret.
public struct BankIDStartedOrder: Sendable, Equatable {
    /// BankID's reference.
    public var orderRef: String
    /// The token for the same-device launch link; nil for phone orders.
    public var autoStartToken: String?
    /// The animated QR code's data at t = 0; nil for phone orders.
    public var qrData: String?
    /// When the start response arrived.
    public var startedAt: Date
}

/// Starts, collects and cancels orders so that however many callers poll one order, and however
/// many instances share the database, BankID sees at most one /collect per order per poll
/// interval, none after the order ended, and a late or repeated poll gets the kept final answer.
///
/// Two layers keep collects single: in this process, concurrent pollers of one order await one
/// task; across processes, that task first takes the order's lease row in the store, which only
/// one instance can hold, and only when the last answer is older than the poll interval.
public final class BankIDCollectCoordinator: Sendable {
    private let client: BankIDClient
    private let store: any BankIDOrderStore
    private let hasher: IdentityHasher
    private let clock: any WallClock
    /// This instance's name in lease rows.
    public let instanceID: String
    /// Poll interval, retention and lease timings.
    public let timing: BankIDOrderTiming
    private let inFlight = Locked<[String: Task<Result<BankIDOrderSnapshot, BankIDError>, Never>]>([:])
    private let collects = Atomic<Int>(0)
    /// Where collect rounds run (see `sharedCollect`): two threads shared by every coordinator
    /// in the process ("bankid-poll-0" and "-1": Linux keeps 15 bytes of a thread's name).
    private static let collectExecutor = OffPoolExecutor(name: "bankid-poll", threads: 2)

    /// Creates a coordinator.
    /// - Parameters:
    ///   - client: the BankID client.
    ///   - store: where orders live (shared by every instance).
    ///   - hasher: turns the completing user's personal number into the digest kept.
    ///   - clock: the wall clock (QR time, poll interval, retention).
    ///   - instanceID: a name unique among instances sharing the store (random by default).
    ///   - timing: poll interval, retention windows and lease length.
    public init(
        client: BankIDClient, store: any BankIDOrderStore, hasher: IdentityHasher,
        clock: any WallClock = SystemClock(), instanceID: String = UUID().uuidString,
        timing: BankIDOrderTiming = BankIDOrderTiming()
    ) {
        self.client = client
        self.store = store
        self.hasher = hasher
        self.clock = clock
        self.instanceID = instanceID
        self.timing = timing
    }

    /// Collect rounds' jobs waiting for one of their two threads, across every coordinator in the
    /// process (for /metrics).
    public static var collectJobsQueued: Int { collectExecutor.queuedCount }

    /// How many /collect calls this instance has sent (for metrics and tests).
    public var upstreamCollectCount: Int { collects.load(ordering: .relaxed) }

    // MARK: Start

    /// Starts an /auth or /sign order and stores it.
    /// - Parameters:
    ///   - kind: `.auth` or `.sign`.
    ///   - request: the request (validated before it is sent).
    ///   - intent: what the order is for.
    ///   - superseding: an earlier order of the same client to cancel first, if any.
    /// - Returns: the autostart token and the first QR data; the QR secret stays in the store.
    public func start(
        _ kind: BankIDOrderKind, _ request: BankIDStartRequest, intent: BankIDOrderIntent,
        superseding: String? = nil
    ) async throws(BankIDError) -> BankIDStartedOrder {
        precondition(kind == .auth || kind == .sign, "phone orders start with startPhone")
        if let superseding { try await cancelSuperseded(superseding) }
        let response = kind == .auth ? try await client.auth(request) : try await client.sign(request)
        // t = 0 of the QR code is when the response arrived, not when the request left.
        let startedAt = clock.now()
        let order = BankIDOrder(
            orderRef: response.orderRef, kind: kind, intent: intent, startedAt: startedAt,
            qrStartToken: response.qrStartToken, qrStartSecret: response.qrStartSecret,
            autoStartToken: response.autoStartToken, endUserIP: request.endUserIP)
        try insert(order)
        return BankIDStartedOrder(
            orderRef: order.orderRef, autoStartToken: response.autoStartToken,
            qrData: BankIDQRCode.data(
                token: response.qrStartToken, secret: response.qrStartSecret, elapsedSeconds: 0),
            startedAt: startedAt)
    }

    /// Starts a /phone/auth or /phone/sign order and stores it.
    public func startPhone(
        _ kind: BankIDOrderKind, _ request: BankIDPhoneRequest, intent: BankIDOrderIntent,
        superseding: String? = nil
    ) async throws(BankIDError) -> BankIDStartedOrder {
        precondition(kind == .phoneAuth || kind == .phoneSign, "web orders start with start")
        if let superseding { try await cancelSuperseded(superseding) }
        let response =
            kind == .phoneAuth ? try await client.phoneAuth(request) : try await client.phoneSign(request)
        let order = BankIDOrder(
            orderRef: response.orderRef, kind: kind, intent: intent, startedAt: clock.now())
        try insert(order)
        return BankIDStartedOrder(
            orderRef: order.orderRef, autoStartToken: nil, qrData: nil, startedAt: order.startedAt)
    }

    /// The animated QR data for this second; nil for phone orders and orders that have ended.
    public func qrData(orderRef: String) throws(BankIDError) -> String? {
        guard let order = try load(orderRef) else { throw BankIDError(.orderNotFound, "no such order") }
        guard order.state.status == .pending, let token = order.qrStartToken, let secret = order.qrStartSecret
        else { return nil }
        return BankIDQRCode.data(token: token, secret: secret, startedAt: order.startedAt, now: clock.now())
    }

    // MARK: Poll

    /// Where the order stands: from the store when the answer is final or fresh, otherwise from
    /// one /collect shared with every concurrent poller.
    /// - Throws: `orderNotFound`, `orderExpired` (past retention), or the collect's error.
    public func poll(orderRef: String) async throws(BankIDError) -> BankIDOrderSnapshot {
        guard let order = try load(orderRef) else { throw BankIDError(.orderNotFound, "no such order") }
        switch order.state.decision(now: clock.now(), startedAt: order.startedAt, timing: timing) {
        case .answer: return BankIDOrderSnapshot(order)
        case .expired: throw BankIDError(.orderExpired, "the order's result is no longer kept")
        case .collect: break
        }
        return try await sharedCollect(orderRef).value.get()
    }

    /// Where the order stands, answered at once from the store: when a collect is due it is
    /// started in the background (shared with every other poller), and its answer is what the
    /// next call sees. For request threads that must never wait on BankID (a synchronous HTTP
    /// handler): the client polls every 2 s anyway, so the answer is at most one poll behind.
    /// - Throws: `orderNotFound`, `orderExpired`.
    public func snapshot(orderRef: String) throws(BankIDError) -> BankIDOrderSnapshot {
        guard let order = try load(orderRef) else { throw BankIDError(.orderNotFound, "no such order") }
        switch order.state.decision(now: clock.now(), startedAt: order.startedAt, timing: timing) {
        case .answer: break
        case .expired: throw BankIDError(.orderExpired, "the order's result is no longer kept")
        case .collect: _ = sharedCollect(orderRef)
        }
        return BankIDOrderSnapshot(order)
    }

    /// The collect round in flight for the order, started when there is none.
    private func sharedCollect(_ orderRef: String) -> Task<Result<BankIDOrderSnapshot, BankIDError>, Never> {
        inFlight.withLock { tasks in
            if let running = tasks[orderRef] { return running }
            // Off Swift's global executor: `snapshot` starts this round from request threads that
            // never wait for it, so nothing would notice it waiting behind blocked threads there.
            let task = Task(executorPreference: Self.collectExecutor) { await self.collectOnce(orderRef) }
            tasks[orderRef] = task
            return task
        }
    }

    /// One collect round: take the lease, ask BankID, store the answer (releasing the lease).
    private func collectOnce(_ orderRef: String) async -> Result<BankIDOrderSnapshot, BankIDError> {
        // Leave the in-process table only after the answer is stored: a poller arriving later reads
        // the fresh answer from the store instead of starting another round.
        defer { _ = inFlight.withLock { $0.removeValue(forKey: orderRef) } }
        do throws(BankIDError) {
            return .success(try await collectRound(orderRef))
        } catch {
            return .failure(error)
        }
    }

    private func collectRound(_ orderRef: String) async throws(BankIDError) -> BankIDOrderSnapshot {
        let now = clock.now()
        let outcome = try storage {
            try store.acquireBankIDCollectLease(
                orderRef: orderRef, owner: instanceID, now: now,
                until: now.addingTimeInterval(timing.leaseDuration),
                collectedBefore: now.addingTimeInterval(-timing.pollInterval))
        }
        let order: BankIDOrder
        switch outcome {
        case nil: throw BankIDError(.orderNotFound, "no such order")
        case .notAcquired(let current)?:
            // Another instance is collecting, or just did: its answer (or the previous one) serves.
            if current.state.decision(now: now, startedAt: current.startedAt, timing: timing) == .expired {
                throw BankIDError(.orderExpired, "the order's result is no longer kept")
            }
            return BankIDOrderSnapshot(current)
        case .acquired(let leased)?: order = leased
        }

        collects.add(1, ordering: .relaxed)
        let response: BankIDCollectResponse
        do {
            response = try await client.collect(orderRef: orderRef)
        } catch {
            // BankID no longer knows the order: it ended upstream, so never ask again. Any other
            // failure leaves it pending and marked failing, which every poller then sees.
            let state =
                error.code == .invalidParameters
                ? order.state.abandoning(at: clock.now()) ?? order.state
                : order.state.failingCollect(at: clock.now())
            _ = try? store.updateBankIDOrder(orderRef: orderRef, state: state, releasingLeaseOf: instanceID)
            throw error
        }
        let completion = response.completionData.map {
            BankIDCompletion($0, hasher: hasher, keepSignature: order.kind.isSignature)
        }
        let state = order.state.applying(
            status: response.status, hintCode: response.hintCode, completion: completion, at: clock.now())
        guard
            let stored = try storage({
                try store.updateBankIDOrder(orderRef: orderRef, state: state, releasingLeaseOf: instanceID)
            })
        else { throw BankIDError(.orderNotFound, "the order was deleted while it was collected") }
        return BankIDOrderSnapshot(stored)
    }

    // MARK: Cancel

    /// Why Portvakt cancels an order.
    public enum CancelReason: String, Sendable {
        /// The user aborted in the client.
        case userAborted
        /// The same client started a new order.
        case superseded
    }

    /// Cancels a pending order: marks it cancelled first (so no further collect is sent), then
    /// sends /cancel. An order that has already ended is left as it is.
    /// - Returns: the order as stored afterwards.
    @discardableResult
    public func cancel(orderRef: String, reason: CancelReason = .userAborted) async throws(BankIDError)
        -> BankIDOrderSnapshot
    {
        guard let order = try load(orderRef) else { throw BankIDError(.orderNotFound, "no such order") }
        guard let cancelled = order.state.cancelling(at: clock.now()) else {
            return BankIDOrderSnapshot(order)
        }
        let stored = try storage {
            try store.updateBankIDOrder(orderRef: orderRef, state: cancelled, releasingLeaseOf: nil)
        }
        do {
            try await client.cancel(orderRef: orderRef)
        } catch  where error.code == .invalidParameters {
            // BankID had already ended the order: it is over either way.
        }
        return BankIDOrderSnapshot(stored ?? order)
    }

    private func cancelSuperseded(_ orderRef: String) async throws(BankIDError) {
        do {
            try await cancel(orderRef: orderRef, reason: .superseded)
        } catch  where error.code == .orderNotFound {
            // Already purged: nothing to supersede.
        }
    }

    // MARK: Maintenance

    /// Deletes orders whose final result is past its retention window, and orders pending
    /// past their lifetime; returns how many. Run it now and then (e.g. every minute).
    public func purge() throws(BankIDError) -> Int {
        let now = clock.now()
        return try storage {
            try store.purgeBankIDOrders(
                completedBefore: now.addingTimeInterval(-timing.completeRetention),
                endedBefore: now.addingTimeInterval(-timing.failedRetention),
                startedBefore: now.addingTimeInterval(-timing.pendingLifetime - timing.failedRetention))
        }
    }

    // MARK: Store access

    private func load(_ orderRef: String) throws(BankIDError) -> BankIDOrder? {
        try storage { try store.bankIDOrder(orderRef: orderRef) }
    }

    private func insert(_ order: BankIDOrder) throws(BankIDError) {
        try storage { try store.insertBankIDOrder(order) }
    }

    /// Runs a store call, reporting its failure as `storage` (the store's own error is the cause in logs).
    private func storage<T>(_ body: () throws -> T) throws(BankIDError) -> T {
        do {
            return try body()
        } catch {
            throw BankIDError(.storage, "the order store failed: \(error)")
        }
    }
}
