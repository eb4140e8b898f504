public import Kernel

/// What a change to an account writes beside itself, in its own transaction: the audit events
/// that record it and the webhook events (outbox entries) that tell the app's servers about it.
///
/// Every store call that changes an account takes one, so the change, its trail and its
/// notification commit together or not at all: no audit row for a change that rolled back, no
/// change without its audit row, and no webhook event lost between a commit and a second write.
public struct ChangeRecord: Sendable {
    /// The audit events, appended in order.
    public var audit: [AuditEvent]
    /// The webhook events, one row per event and one delivery per subscribed endpoint.
    public var outbox: [OutboxEntry]

    /// A change that records nothing (data the app's servers are not told about: a sandboxed
    /// account, the command line's bootstrap, a store test).
    public static let none = ChangeRecord()

    /// Creates a record.
    public init(audit: [AuditEvent] = [], outbox: [OutboxEntry] = []) {
        self.audit = audit
        self.outbox = outbox
    }

    /// Creates a record of one audit event and the outbox entries about it.
    public init(_ event: AuditEvent, outbox: [OutboxEntry] = []) {
        self.init(audit: [event], outbox: outbox)
    }
}

/// A change recorded only if it happened: the record is built from the change's outcome inside
/// the transaction, so what a conditional write did (how many sessions a disable revoked, which
/// ones) is what the audit and the webhook events say.
///
/// It runs inside the write, which PostgreSQL may retry: it must only build values (fresh event
/// ids are fine, the retried attempt left nothing behind).
public typealias ChangeRecording<Outcome> = (Outcome) -> ChangeRecord

extension SQLStore {
    /// Runs `change` in one write transaction and, in the same transaction, writes the record
    /// `recording` makes of its outcome.
    func write<Outcome>(
        recording: ChangeRecording<Outcome>, _ change: (any SQLConnection) throws -> Outcome
    ) throws -> Outcome {
        try engine.write { connection in
            let outcome = try change(connection)
            try Self.write(recording(outcome), on: connection)
            return outcome
        }
    }

    /// Runs `change` in one write transaction together with `record`.
    func write<Outcome>(_ record: ChangeRecord, _ change: (any SQLConnection) throws -> Outcome) throws
        -> Outcome
    {
        try write(recording: { _ in record }, change)
    }

    /// Appends `record`'s audit events and enqueues its outbox entries on `connection`.
    static func write(_ record: ChangeRecord, on connection: any SQLConnection) throws {
        for event in record.audit {
            try insert(event, details: AuditDetails.encode(event.details), on: connection)
        }
        if !record.outbox.isEmpty { try enqueue(record.outbox, on: connection) }
    }
}
