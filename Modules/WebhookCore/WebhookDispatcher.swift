import Dispatch
public import FoundationEssentials
public import Kernel

/// A configured receiver as the dispatcher sends to it.
public struct WebhookEndpoint: Sendable, Equatable {
    /// Its name, as stored with each delivery.
    public var name: String
    /// Where to.
    public var url: WebhookURL
    /// The signing secret.
    public var secret: WebhookSecret

    /// Creates an endpoint.
    public init(name: String, url: WebhookURL, secret: WebhookSecret) {
        self.name = name
        self.url = url
        self.secret = secret
    }
}

/// What the dispatcher reports of each attempt, for metrics.
public struct WebhookAttemptReport: Sendable, Equatable {
    /// The endpoint.
    public var endpoint: String
    /// The attempt's result class.
    public var result: WebhookResponse.Result
    /// How long it took, in seconds.
    public var duration: Double
    /// `delivered` or `failed` when the attempt ended the delivery; nil when it is retried.
    public var finalOutcome: String?
}

/// Delivers the outbox: one poller thread claims due deliveries with leases (so one instance at
/// a time sends each), the sender's threads POST them, and each result is recorded with the next
/// attempt's time or the delivery's end (Docs/webhooks.md).
///
/// The poller wakes every `pollInterval` seconds, or at once on `nudge()` (a local commit that
/// wrote entries, or a sender that finished). It first asks with a read whether anything is due,
/// so an idle instance never takes the writer, and claims only as many deliveries of an endpoint
/// as that endpoint has free slots, so one hanging receiver never holds every sender.
public final class WebhookDispatcher: Sendable {
    /// The settings the dispatcher runs with.
    public struct Settings: Sendable {
        /// The longest one attempt may take, in seconds.
        public var timeout: TimeInterval
        /// Deliveries of one endpoint in flight at once on this instance.
        public var maxInFlightPerEndpoint: Int
        /// Seconds between polls when nothing nudges.
        public var pollInterval: TimeInterval
        /// What the lease adds beyond the timeout, in seconds: a margin for clock skew between instances.
        public var leaseMargin: TimeInterval
        /// The `User-Agent` header.
        public var userAgent: String

        /// Creates settings.
        public init(
            timeout: TimeInterval, maxInFlightPerEndpoint: Int, pollInterval: TimeInterval = 1,
            leaseMargin: TimeInterval = 15, userAgent: String = "Portvakt"
        ) {
            self.timeout = timeout
            self.maxInFlightPerEndpoint = maxInFlightPerEndpoint
            self.pollInterval = pollInterval
            self.leaseMargin = leaseMargin
            self.userAgent = userAgent
        }
    }

    /// This process's lease owner, `ins_` + random.
    public let instanceID: String
    private let outbox: any WebhookOutbox
    private let sender: any WebhookSender
    private let endpoints: [WebhookEndpoint]
    private let schedule: RetrySchedule
    private let settings: Settings
    private let clock: any WallClock
    private let random: any RandomSource
    private let report: @Sendable (WebhookAttemptReport) -> Void
    private let log: @Sendable (String, [String: String]) -> Void
    private let wakeups = DispatchSemaphore(value: 0)
    private let state = Locked(State())

    private struct State {
        var started = false
        var stopped = false
        var pollerRunning = false
        var inFlight: [String: Int] = [:]
        /// A wake-up is signalled and not yet taken: more nudges add nothing.
        var wakePending = false
        var lastFailureLogged: Double = -.infinity
    }

    /// Creates a dispatcher; nothing runs until `start()`.
    /// - Parameters:
    ///   - report: Called after every attempt (metrics).
    ///   - log: Called with a message and fields for failures of the outbox itself.
    public init(
        outbox: any WebhookOutbox, sender: any WebhookSender, endpoints: [WebhookEndpoint],
        schedule: RetrySchedule,
        settings: Settings, clock: any WallClock, random: any RandomSource,
        report: @escaping @Sendable (WebhookAttemptReport) -> Void = { _ in },
        log: @escaping @Sendable (String, [String: String]) -> Void = { _, _ in }
    ) {
        self.outbox = outbox
        self.sender = sender
        self.endpoints = endpoints
        self.schedule = schedule
        self.settings = settings
        self.clock = clock
        self.random = random
        self.report = report
        self.log = log
        let bytes = (try? random.bytes(12)) ?? SystemRandom().bytes(12)
        instanceID = "ins_" + bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// Starts the poller thread (once).
    public func start() {
        let go = state.withLock { state -> Bool in
            guard !state.started else { return false }
            state.started = true
            state.pollerRunning = true
            return true
        }
        guard go else { return }
        Threads.start(name: "webhook-poll") { [self] in poll() }
    }

    /// Wakes the poller now: something may be due.
    public func nudge() {
        // A burst of commits wakes the poller once, not once per commit.
        let signal = state.withLock { state in
            defer { state.wakePending = true }
            return !state.wakePending
        }
        if signal { wakeups.signal() }
    }

    /// Deliveries in flight on this instance (for tests and shutdown).
    public var inFlight: Int { state.withLock { $0.inFlight.values.reduce(0, +) } }

    /// Stops claiming, waits up to `grace` seconds for attempts in flight to be recorded, then
    /// drops this instance's remaining leases so another instance may send those at once.
    public func stop(grace: TimeInterval) {
        state.withLock { $0.stopped = true }
        wakeups.signal()
        Threads.wait(atMost: grace) {
            state.withLock { !$0.pollerRunning && $0.inFlight.values.allSatisfy { $0 == 0 } }
        }
        do {
            try outbox.releaseDeliveries(owner: instanceID)
        } catch {
            log("webhook leases not released at shutdown", ["error": String(describing: type(of: error))])
        }
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    private func poll() {
        defer { state.withLock { $0.pollerRunning = false } }
        while !isStopped {
            pollOnce()
            _ = wakeups.wait(timeout: .now() + .milliseconds(Int(settings.pollInterval * 1000)))
            state.withLock { $0.wakePending = false }
        }
    }

    /// One round: claim what is due for every endpoint with a free slot and hand it to the sender.
    func pollOnce() {
        let free = state.withLock { state in
            endpoints.compactMap { endpoint -> (WebhookEndpoint, Int)? in
                let slots = settings.maxInFlightPerEndpoint - state.inFlight[endpoint.name, default: 0]
                return slots > 0 ? (endpoint, slots) : nil
            }
        }
        guard !free.isEmpty else { return }
        do {
            let now = clock.now()
            guard try outbox.hasDueDeliveries(endpoints: free.map(\.0.name), at: now) else { return }
            for (endpoint, slots) in free {
                guard !isStopped else { return }
                let leaseUntil = now.addingTimeInterval(settings.timeout + settings.leaseMargin)
                let leaseDeadline = Monotonic.seconds() + settings.timeout + settings.leaseMargin
                let claimed = try outbox.claimDeliveries(
                    endpoint: endpoint.name, owner: instanceID, at: now, leaseUntil: leaseUntil, limit: slots)
                for delivery in claimed { dispatch(delivery, to: endpoint, leaseDeadline: leaseDeadline) }
            }
        } catch {
            // A database that is down for a while would log every second; once a minute is enough.
            let now = Monotonic.seconds()
            let shouldLog = state.withLock { state in
                guard now - state.lastFailureLogged >= 60 else { return false }
                state.lastFailureLogged = now
                return true
            }
            if shouldLog { log("webhook poll failed", ["error": String(describing: error)]) }
        }
    }

    private func dispatch(_ delivery: ClaimedDelivery, to endpoint: WebhookEndpoint, leaseDeadline: Double) {
        state.withLock { $0.inFlight[endpoint.name, default: 0] += 1 }
        let accepted = sender.submit { [self] poster in
            attempt(delivery, to: endpoint, leaseDeadline: leaseDeadline, poster: poster)
            finished(endpoint.name)
        }
        // A stopped sender: the lease runs out (or shutdown releases it) and the delivery waits.
        if !accepted { finished(endpoint.name) }
    }

    private func finished(_ endpoint: String) {
        state.withLock { $0.inFlight[endpoint, default: 1] -= 1 }
        nudge()
    }

    /// One attempt on a sender thread: signed now, sent, and recorded while the lease holds.
    private func attempt(
        _ delivery: ClaimedDelivery, to endpoint: WebhookEndpoint, leaseDeadline: Double,
        poster: any WebhookPoster
    ) {
        // The lease must outlast the attempt: one that waited in the queue too long is left to
        // expire rather than risk a second instance sending the same delivery alongside.
        guard Monotonic.seconds() + settings.timeout <= leaseDeadline, !isStopped else { return }
        let start = clock.now()
        let attempts = delivery.attempts + 1
        let timestamp = Int64(start.timeIntervalSince1970.rounded(.down))
        let request = WebhookRequest(
            url: endpoint.url,
            headers: [
                ("Content-Type", "application/json"), ("User-Agent", settings.userAgent),
                ("webhook-id", delivery.eventID), ("webhook-timestamp", String(timestamp)),
                (
                    "webhook-signature",
                    WebhookSignature.sign(
                        id: delivery.eventID, timestamp: timestamp, body: delivery.payload,
                        secret: endpoint.secret)
                ),
            ],
            body: delivery.payload)
        let response = poster.post(request)
        let end = clock.now()
        let outcome: DeliveryAttempt.Outcome
        if response.result == .success {
            outcome = .delivered
        } else {
            switch schedule.decide(
                afterAttempts: attempts, status: response.status, retryAfter: response.retryAfter, now: end,
                giveUpAt: delivery.giveUpAt, jitter: RetrySchedule.draw(random))
            {
            case .retry(let next): outcome = .retry(at: next)
            case .giveUp: outcome = .failed
            }
        }
        let record = DeliveryAttempt(
            at: end, status: response.status, error: response.errorClass, outcome: outcome)
        var final: String?
        do {
            if try outbox.completeDelivery(id: delivery.id, owner: instanceID, attempt: record) {
                switch outcome {
                case .delivered: final = "delivered"
                case .failed: final = "failed"
                case .retry: final = nil
                }
            }
        } catch {
            // The lease runs out and the delivery is sent again: at least once, never lost.
            log("webhook result not recorded", ["delivery": delivery.id, "error": String(describing: error)])
        }
        report(
            WebhookAttemptReport(
                endpoint: endpoint.name, result: response.result, duration: response.duration,
                finalOutcome: final))
    }
}
