public import FoundationEssentials

/// Where a webhook delivery stands. The outbox's rows as the admin API shows them live here,
/// in the shared vocabulary, so the API reads them without importing Storage.
public enum WebhookDeliveryState: String, Sendable, CaseIterable {
    /// Waiting for its next attempt (or being sent right now, under a lease).
    case pending
    /// A receiver answered 2xx.
    case delivered
    /// Given up: past its give-up time, or the receiver answered 410.
    case failed
}

/// One delivery as the admin API shows it.
public struct WebhookDelivery: Sendable, Equatable {
    /// The delivery's id (`whd_…`).
    public var id: String
    /// The event's id, the `webhook-id` every attempt carries.
    public var eventID: String
    /// The event's type.
    public var type: ChangeEventType
    /// The endpoint's name.
    public var endpoint: String
    /// Where it stands.
    public var state: WebhookDeliveryState
    /// Attempts made.
    public var attempts: Int
    /// The last attempt's HTTP status, when one came.
    public var lastStatus: Int?
    /// The last failure's class (`status_5xx`, `timed_out`, …), never a body.
    public var lastError: String?
    /// When the last attempt ended.
    public var lastAttemptAt: Date?
    /// When the next attempt is due; nil once delivered or failed.
    public var nextAttemptAt: Date?
    /// When a receiver took it.
    public var deliveredAt: Date?
    /// When it was written (with its change).
    public var createdAt: Date
    /// When retrying stops.
    public var giveUpAt: Date
    /// The exact body sent (ids only).
    public var payload: [UInt8]

    /// Creates a record.
    public init(
        id: String, eventID: String, type: ChangeEventType, endpoint: String, state: WebhookDeliveryState,
        attempts: Int, lastStatus: Int?, lastError: String?, lastAttemptAt: Date?, nextAttemptAt: Date?,
        deliveredAt: Date?, createdAt: Date, giveUpAt: Date, payload: [UInt8]
    ) {
        self.id = id
        self.eventID = eventID
        self.type = type
        self.endpoint = endpoint
        self.state = state
        self.attempts = attempts
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.lastAttemptAt = lastAttemptAt
        self.nextAttemptAt = nextAttemptAt
        self.deliveredAt = deliveredAt
        self.createdAt = createdAt
        self.giveUpAt = giveUpAt
        self.payload = payload
    }
}

/// Which deliveries a listing shows; nil fields do not filter.
public struct WebhookDeliveryFilter: Sendable, Equatable {
    public var state: WebhookDeliveryState?
    public var endpoint: String?
    public var type: ChangeEventType?

    /// Creates a filter.
    public init(state: WebhookDeliveryState? = nil, endpoint: String? = nil, type: ChangeEventType? = nil) {
        self.state = state
        self.endpoint = endpoint
        self.type = type
    }
}

/// The key a delivery listing is ordered by, newest first: its creation time, then its id.
public struct WebhookDeliveryKey: Sendable, Equatable {
    public var createdAt: Date
    public var id: String

    /// Creates a key.
    public init(createdAt: Date, id: String) {
        self.createdAt = createdAt
        self.id = id
    }
}
