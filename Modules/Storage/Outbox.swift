public import FoundationEssentials
public import Kernel

/// One change event as the outbox keeps it: the exact body that is signed and sent, and one
/// delivery for each endpoint that wants its type.
///
/// Built by `ChangeFeed` before the change's transaction starts, so a body that runs twice (a
/// PostgreSQL retry) writes the same rows; written by `SQLStore.enqueue(_:on:)` inside it.
public struct OutboxEntry: Sendable, Equatable {
    /// One endpoint's copy of the event.
    public struct Delivery: Sendable, Equatable {
        /// The delivery's own id (`whd_` + random), as the admin API names it.
        public var id: String
        /// The configured endpoint's name.
        public var endpoint: String

        /// Creates a delivery.
        public init(id: String, endpoint: String) {
            self.id = id
            self.endpoint = endpoint
        }
    }

    /// The event id (`evt_` + random): the `webhook-id` header, the same on every attempt.
    public var id: String
    /// The event's type.
    public var type: ChangeEventType
    /// When the change happened.
    public var occurredAt: Date
    /// The JSON body `{"type","timestamp","data"}`, byte for byte as it is signed and sent.
    public var payload: [UInt8]
    /// One delivery per endpoint that wants the type; never empty.
    public var deliveries: [Delivery]
    /// When the entry was made; the first attempt is due then.
    public var createdAt: Date
    /// After this instant a delivery still failing is marked failed.
    public var giveUpAt: Date

    /// Creates an entry.
    public init(
        id: String, type: ChangeEventType, occurredAt: Date, payload: [UInt8], deliveries: [Delivery],
        createdAt: Date, giveUpAt: Date
    ) {
        self.id = id
        self.type = type
        self.occurredAt = occurredAt
        self.payload = payload
        self.deliveries = deliveries
        self.createdAt = createdAt
        self.giveUpAt = giveUpAt
    }

    /// The endpoints the event goes to, in delivery order.
    public var endpoints: [String] { deliveries.map(\.endpoint) }
}

extension SQLStore {
    /// Writes each entry's event row and one pending delivery row per endpoint on `connection`,
    /// inside the caller's write transaction, so the events commit (or roll back) with the
    /// change they describe. Only SQL: safe in a body PostgreSQL may run twice.
    /// - Throws: `storage.conflict` when an event or delivery id exists already.
    static func enqueue(_ entries: [OutboxEntry], on connection: any SQLConnection) throws {
        for entry in entries {
            try connection.execute(
                "INSERT INTO webhook_events (id, type, occurred_at, payload, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                [
                    entry.id, entry.type.rawValue, entry.occurredAt,
                    String(decoding: entry.payload, as: UTF8.self),
                    entry.createdAt,
                ])
            for delivery in entry.deliveries {
                try connection.execute(
                    """
                    INSERT INTO webhook_deliveries (id, event_id, endpoint, state, attempts, next_attempt_at,
                        give_up_at, created_at)
                    VALUES (?1, ?2, ?3, 'pending', 0, ?4, ?5, ?4)
                    """,
                    [delivery.id, entry.id, delivery.endpoint, entry.createdAt, entry.giveUpAt])
            }
        }
    }

    /// Writes `entries` in a write transaction of their own: for events that accompany no other
    /// change, and for tests that feed the outbox directly.
    /// - Throws: `storage.conflict` when an id exists already; nothing is written then.
    public func enqueue(_ entries: [OutboxEntry]) throws {
        guard !entries.isEmpty else { return }
        try engine.write { try Self.enqueue(entries, on: $0) }
    }
}
