public import FoundationEssentials
public import Kernel
public import WebhookCore

/// The outbox as administrators and the server's upkeep see it. Each method is atomic on its own.
public protocol WebhookDeliveryStore: Sendable {
    /// Deliveries matching `filter`, newest first, after `after` (exclusive); at most `limit`.
    func webhookDeliveries(_ filter: WebhookDeliveryFilter, after: WebhookDeliveryKey?, limit: Int) throws
        -> [WebhookDelivery]
    /// The delivery with this id; nil when none.
    func webhookDelivery(id: String) throws -> WebhookDelivery?
    /// Makes the delivery pending and due at `now`, retried until `giveUpAt`, keeping its attempts
    /// and its event id; a lease held right now stays, so no second attempt overlaps it.
    /// `audit`, when given, is appended in the same transaction if the delivery exists.
    /// - Returns: false when no such delivery exists.
    func redeliverWebhook(id: String, at now: Date, giveUpAt: Date, audit: AuditEvent?) throws -> Bool
    /// Fails pending deliveries past their give-up time whose lease is free (their endpoint may be
    /// gone from every instance's configuration); returns how many.
    func failExpiredWebhookDeliveries(at now: Date) throws -> Int
    /// Deletes events made before `cutoff` that have no pending delivery, with their deliveries.
    func purgeWebhookEvents(createdBefore cutoff: Date) throws -> Int
    /// Pending deliveries, and the creation time of the oldest (for the metrics gauges).
    func pendingWebhookDeliveries() throws -> (count: Int, oldest: Date?)
}

extension SQLStore: WebhookDeliveryStore {
    private static let deliveryColumns = """
        d.id, d.event_id, e.type, d.endpoint, d.state, d.attempts, d.last_status, d.last_error, \
        d.last_attempt_at, d.next_attempt_at, d.delivered_at, d.created_at, d.give_up_at, e.payload
        """

    fileprivate static func delivery(_ row: any SQLRow) throws -> WebhookDelivery {
        guard let state = WebhookDeliveryState(rawValue: try row.string(4)) else {
            throw StorageError(.corrupt, "a webhook delivery has an unknown state")
        }
        return WebhookDelivery(
            id: try row.string(0), eventID: try row.string(1),
            type: ChangeEventType(rawValue: try row.string(2)),
            endpoint: try row.string(3), state: state, attempts: Int(try row.int64(5)),
            lastStatus: try row.optionalInt64(6).map { Int($0) }, lastError: try row.optionalString(7),
            lastAttemptAt: try row.optionalDate(8), nextAttemptAt: state == .pending ? try row.date(9) : nil,
            deliveredAt: try row.optionalDate(10), createdAt: try row.date(11), giveUpAt: try row.date(12),
            payload: Array(try row.string(13).utf8))
    }

    public func webhookDeliveries(_ filter: WebhookDeliveryFilter, after: WebhookDeliveryKey?, limit: Int)
        throws
        -> [WebhookDelivery]
    {
        guard limit > 0 else { return [] }
        // Only the filters given become conditions (PostgreSQL cannot type a parameter that is
        // only ever compared with NULL); each keeps its own parameter number.
        var conditions: [String] = []
        if filter.state != nil { conditions.append("d.state = ?1") }
        if filter.endpoint != nil { conditions.append("d.endpoint = ?2") }
        if filter.type != nil { conditions.append("e.type = ?3") }
        if after != nil { conditions.append("(d.created_at < ?4 OR (d.created_at = ?4 AND d.id < ?5))") }
        let arguments: [any SQLBindable] = [
            filter.state?.rawValue ?? "", filter.endpoint ?? "", filter.type?.rawValue ?? "",
            after?.createdAt ?? Date(timeIntervalSince1970: 0), after?.id ?? "", limit,
        ]
        let used = [
            filter.state != nil, filter.endpoint != nil, filter.type != nil, after != nil, after != nil, true,
        ]
        // Unused parameters are left out and the rest renumbered, as PostgreSQL requires every
        // parameter to appear in the text.
        var sql = """
            SELECT \(Self.deliveryColumns)
            FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
            \(conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND "))
            ORDER BY d.created_at DESC, d.id DESC LIMIT ?6
            """
        var bound: [any SQLBindable] = []
        for index in (0..<6) where used[index] {
            bound.append(arguments[index])
            sql = sql.replacingEvery("?\(index + 1)", with: "?#\(bound.count)")
        }
        sql = sql.replacingEvery("?#", with: "?")
        return try engine.read { connection in
            try connection.query(sql, bound, Self.delivery)
        }
    }

    public func webhookDelivery(id: String) throws -> WebhookDelivery? {
        try engine.read { connection in
            try connection.queryFirst(
                """
                SELECT \(Self.deliveryColumns)
                FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id WHERE d.id = ?1
                """, [id], Self.delivery)
        }
    }

    public func redeliverWebhook(id: String, at now: Date, giveUpAt: Date, audit: AuditEvent?) throws -> Bool
    {
        let details = audit.map { AuditDetails.encode($0.details) }
        return try engine.write { connection in
            let found =
                try connection.execute(
                    """
                    UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = ?2,
                        give_up_at = CASE WHEN give_up_at > ?3 THEN give_up_at ELSE ?3 END, delivered_at = NULL
                    WHERE id = ?1
                    """, [id, now, giveUpAt]) > 0
            if found, let audit, let details { _ = try Self.insert(audit, details: details, on: connection) }
            return found
        }
    }

    public func failExpiredWebhookDeliveries(at now: Date) throws -> Int {
        try engine.write { connection in
            try connection.execute(
                """
                UPDATE webhook_deliveries SET state = 'failed',
                    last_error = CASE WHEN last_error IS NULL THEN 'gave_up' ELSE last_error END,
                    lease_owner = NULL, lease_until = NULL
                WHERE state = 'pending' AND give_up_at <= ?1 AND (lease_until IS NULL OR lease_until <= ?1)
                """, [now])
        }
    }

    public func purgeWebhookEvents(createdBefore cutoff: Date) throws -> Int {
        try purgeInChunks { connection in
            try connection.execute(
                """
                DELETE FROM webhook_events WHERE id IN (
                    SELECT e.id FROM webhook_events e WHERE e.created_at < ?1
                      AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.state = 'pending')
                    LIMIT ?2)
                """, [cutoff, Self.purgeChunk])
        }
    }

    public func pendingWebhookDeliveries() throws -> (count: Int, oldest: Date?) {
        try engine.read { connection in
            try connection.queryFirst(
                "SELECT count(*), min(created_at) FROM webhook_deliveries WHERE state = 'pending'"
            ) { row in (Int(try row.int64(0)), try row.optionalDate(1)) } ?? (0, nil)
        }
    }
}

extension SQLStore: WebhookOutbox {
    public func hasDueDeliveries(endpoints: [String], at now: Date) throws -> Bool {
        guard !endpoints.isEmpty else { return false }
        let list = (0..<endpoints.count).map { "?\($0 + 2)" }.joined(separator: ", ")
        return try engine.read { connection in
            try connection.queryFirst(
                """
                SELECT 1 FROM webhook_deliveries
                WHERE state = 'pending' AND endpoint IN (\(list)) AND next_attempt_at <= ?1
                  AND (lease_until IS NULL OR lease_until <= ?1)
                LIMIT 1
                """, [now] + endpoints.map { $0 as any SQLBindable }
            ) { _ in true } ?? false
        }
    }

    public func claimDeliveries(endpoint: String, owner: String, at now: Date, leaseUntil: Date, limit: Int)
        throws -> [ClaimedDelivery]
    {
        guard limit > 0 else { return [] }
        return try engine.write { connection in
            // The inner SELECT picks the due rows; the outer condition is checked again on each
            // row as it is updated, so of two racing claims only one takes a row (SQLite's single
            // writer; on PostgreSQL the loser's SERIALIZABLE transaction is retried and then
            // sees the lease).
            let claimed = try connection.query(
                """
                UPDATE webhook_deliveries SET lease_owner = ?1, lease_until = ?2
                WHERE id IN (SELECT id FROM webhook_deliveries
                             WHERE state = 'pending' AND endpoint = ?3 AND next_attempt_at <= ?4
                               AND (lease_until IS NULL OR lease_until <= ?4)
                             ORDER BY next_attempt_at, id LIMIT ?5)
                  AND (lease_until IS NULL OR lease_until <= ?4)
                RETURNING id, event_id, attempts, give_up_at, next_attempt_at
                """, [owner, leaseUntil, endpoint, now, limit]
            ) { row in
                (
                    id: try row.string(0), eventID: try row.string(1), attempts: Int(try row.int64(2)),
                    giveUpAt: try row.date(3), due: try row.date(4)
                )
            }
            return try claimed.sorted { ($0.due, $0.id) < ($1.due, $1.id) }.map { claim in
                let payload = try connection.queryFirst(
                    "SELECT payload FROM webhook_events WHERE id = ?1", [claim.eventID]
                ) { try $0.string(0) }
                guard let payload else { throw StorageError(.corrupt, "a webhook delivery has no event") }
                return ClaimedDelivery(
                    id: claim.id, eventID: claim.eventID, endpoint: endpoint, attempts: claim.attempts,
                    giveUpAt: claim.giveUpAt, payload: Array(payload.utf8))
            }
        }
    }

    public func completeDelivery(id: String, owner: String, attempt: DeliveryAttempt) throws -> Bool {
        let state: WebhookDeliveryState
        var next = attempt.at
        var deliveredAt: Date?
        switch attempt.outcome {
        case .delivered:
            state = .delivered
            deliveredAt = attempt.at
        case .retry(let at):
            state = .pending
            next = at
        case .failed:
            state = .failed
        }
        return try engine.write { connection in
            try connection.execute(
                """
                UPDATE webhook_deliveries SET state = ?3, attempts = attempts + 1, last_attempt_at = ?4,
                    last_status = ?5, last_error = ?6, next_attempt_at = ?7, delivered_at = ?8,
                    lease_owner = NULL, lease_until = NULL
                WHERE id = ?1 AND lease_owner = ?2
                """,
                [id, owner, state.rawValue, attempt.at, attempt.status, attempt.error, next, deliveredAt]) > 0
        }
    }

    @discardableResult
    public func releaseDeliveries(owner: String) throws -> Int {
        try engine.write { connection in
            try connection.execute(
                "UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = ?1",
                [owner])
        }
    }
}
