public import FoundationEssentials

/// A delivery this instance leased to send: the event's id and exact body, and what the
/// schedule needs.
public struct ClaimedDelivery: Sendable, Equatable {
    /// The delivery's id.
    public var id: String
    /// The event id, sent as `webhook-id`.
    public var eventID: String
    /// The endpoint's name.
    public var endpoint: String
    /// Attempts made before this one.
    public var attempts: Int
    /// After this instant a failure fails the delivery.
    public var giveUpAt: Date
    /// The body to sign and send.
    public var payload: [UInt8]

    /// Creates a claimed delivery.
    public init(
        id: String, eventID: String, endpoint: String, attempts: Int, giveUpAt: Date, payload: [UInt8]
    ) {
        self.id = id
        self.eventID = eventID
        self.endpoint = endpoint
        self.attempts = attempts
        self.giveUpAt = giveUpAt
        self.payload = payload
    }
}

/// How one attempt ended, as the outbox records it.
public struct DeliveryAttempt: Sendable, Equatable {
    /// What becomes of the delivery.
    public enum Outcome: Sendable, Equatable {
        /// A 2xx: done.
        case delivered
        /// A failure; the next attempt is due then.
        case retry(at: Date)
        /// A failure past the give-up time, or a 410: the delivery fails.
        case failed
    }

    /// When the attempt ended.
    public var at: Date
    /// The receiver's HTTP status, nil when none came.
    public var status: Int?
    /// The error class (`timed_out`, `connection_failed`, `tls_failed`, `status_5xx`, …), nil on success.
    public var error: String?
    /// What follows.
    public var outcome: Outcome

    /// Creates an attempt record.
    public init(at: Date, status: Int?, error: String?, outcome: Outcome) {
        self.at = at
        self.status = status
        self.error = error
        self.outcome = outcome
    }
}

/// The outbox as the dispatcher uses it; Storage implements it over the shared database, so
/// every instance claims from the same rows and a lease keeps each delivery with one instance.
public protocol WebhookOutbox: Sendable {
    /// Whether any of `endpoints` has a pending delivery due at `now` whose lease is free: a
    /// read, so an idle instance never takes the writer.
    func hasDueDeliveries(endpoints: [String], at now: Date) throws -> Bool
    /// Leases up to `limit` due deliveries of `endpoint` to `owner` until `leaseUntil`, oldest
    /// first; a delivery leased by another instance whose lease has not run out is never taken.
    func claimDeliveries(endpoint: String, owner: String, at now: Date, leaseUntil: Date, limit: Int) throws
        -> [ClaimedDelivery]
    /// Records an attempt and drops the lease, only while `owner` still holds it.
    /// - Returns: false when the lease was lost meanwhile; the result is then dropped.
    func completeDelivery(id: String, owner: String, attempt: DeliveryAttempt) throws -> Bool
    /// Drops every lease `owner` holds, so another instance may send those deliveries at once.
    /// - Returns: How many leases were dropped.
    @discardableResult
    func releaseDeliveries(owner: String) throws -> Int
}
