import Foundation
import Kernel
import TestSupport
import Testing

@testable import Storage

/// The outbox's write side on each engine: an entry becomes one event row with its exact body and
/// one pending delivery per endpoint, and a conflicting entry writes nothing.
@Suite("Outbox: enqueue")
struct OutboxEnqueueTests {
    static let at = Date(timeIntervalSince1970: 1_767_225_600)

    static func entry(_ id: String, endpoints: [String]) -> OutboxEntry {
        OutboxEntry(
            id: id, type: .userDeleted, occurredAt: at,
            payload: Array(
                #"{"type":"user.deleted","timestamp":"2026-01-01T00:00:00.000Z","data":{"userId":"u1"}}"#.utf8
            ),
            deliveries: endpoints.map { .init(id: "whd_\(id)_\($0)", endpoint: $0) },
            createdAt: at.addingTimeInterval(1),
            giveUpAt: at.addingTimeInterval(86_401))
    }

    @Test(
        "one event row with the exact body, one pending delivery per endpoint", arguments: TestEngine.tested)
    func roundTrip(engine: TestEngine) throws {
        let fixture = try TestStore(engine)
        let entry = Self.entry("evt_1", endpoints: ["app", "audit-sink"])
        try fixture.store.enqueue([entry])
        let events = try fixture.engine.read { connection in
            try connection.query("SELECT id, type, occurred_at, payload, created_at FROM webhook_events") {
                row in
                [
                    try row.string(0), try row.string(1), "\(try row.date(2))", try row.string(3),
                    "\(try row.date(4))",
                ]
            }
        }
        #expect(
            events == [
                [
                    "evt_1", "user.deleted", "\(Self.at)", String(decoding: entry.payload, as: UTF8.self),
                    "\(entry.createdAt)",
                ]
            ])
        let deliveries = try fixture.engine.read { connection in
            try connection.query(
                """
                SELECT id, event_id, endpoint, state, attempts, next_attempt_at, give_up_at, lease_owner, created_at
                FROM webhook_deliveries ORDER BY id
                """
            ) { row in
                [
                    try row.string(0), try row.string(1), try row.string(2), try row.string(3),
                    "\(try row.int64(4))",
                    "\(try row.date(5))", "\(try row.date(6))", "\(row.isNull(7))", "\(try row.date(8))",
                ]
            }
        }
        let due = "\(entry.createdAt)"
        #expect(
            deliveries == [
                ["whd_evt_1_app", "evt_1", "app", "pending", "0", due, "\(entry.giveUpAt)", "true", due],
                [
                    "whd_evt_1_audit-sink", "evt_1", "audit-sink", "pending", "0", due, "\(entry.giveUpAt)",
                    "true", due,
                ],
            ])
    }

    @Test(
        "an id that exists already is a conflict and leaves none of the batch behind",
        arguments: TestEngine.tested)
    func conflictWritesNothing(engine: TestEngine) throws {
        let fixture = try TestStore(engine)
        try fixture.store.enqueue([Self.entry("evt_1", endpoints: ["app"])])
        #expect(throws: StorageError(.conflict, "")) {
            try fixture.store.enqueue([
                Self.entry("evt_2", endpoints: ["app"]), Self.entry("evt_1", endpoints: ["app"]),
            ])
        }
        let count = try fixture.engine.read {
            try $0.queryFirst("SELECT count(*) FROM webhook_deliveries") { try $0.int64(0) }
        }
        #expect(count == 1)
    }
}
