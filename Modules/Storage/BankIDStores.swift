public import BankIDCore
public import FoundationEssentials
import Synchronization

extension SQLStore: BankIDOrderStore {

    fileprivate static func order(_ row: any SQLRow) throws -> BankIDOrder {
        guard let kind = BankIDOrderKind(rawValue: try row.string(1)),
            let intent = BankIDOrderIntent(rawValue: try row.string(2)),
            let status = BankIDOrderStatus(rawValue: try row.string(8))
        else {
            // The CHECK constraints allow only known values: anything else means the file was altered.
            throw StorageError(.corrupt, "a BankID order has an unknown kind, intent or status")
        }
        var completion: BankIDCompletion?
        if let text = try row.optionalString(12) {
            guard let decoded = try? JSONDecoder().decode(BankIDCompletion.self, from: Data(text.utf8)) else {
                throw StorageError(.corrupt, "a BankID order's stored result is not readable")
            }
            completion = decoded
        }
        return BankIDOrder(
            orderRef: try row.string(0), kind: kind, intent: intent, startedAt: try row.date(3),
            qrStartToken: try row.optionalString(4),
            qrStartSecret: try row.optionalString(5).map(QRStartSecret.init),
            autoStartToken: try row.optionalString(6), endUserIP: try row.optionalString(7),
            state: BankIDOrderState(
                status: status, hintCode: try row.optionalString(9).map(HintCode.init(rawValue:)),
                lastCollectedAt: try row.optionalDate(10), finishedAt: try row.optionalDate(11),
                completion: completion, collectFailedAt: try row.optionalDate(15)),
            leaseOwner: try row.optionalString(13), leaseExpiresAt: try row.optionalDate(14))
    }

    fileprivate static func completionJSON(_ completion: BankIDCompletion?) throws -> String? {
        guard let completion else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(completion) else {
            throw StorageError(.invalidArgument, "a BankID result could not be encoded as JSON")
        }
        return String(decoding: data, as: UTF8.self)
    }

    public func insertBankIDOrder(_ order: BankIDOrder) throws {
        let completion = try Self.completionJSON(order.state.completion)
        try engine.write { connection in
            try connection.execute(
                """
                INSERT INTO bankid_orders (\(StoreSQL.orderColumns))
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)
                """,
                [
                    order.orderRef, order.kind.rawValue, order.intent.rawValue, order.startedAt,
                    order.qrStartToken, order.qrStartSecret?.storageValue, order.autoStartToken,
                    order.endUserIP,
                    order.state.status.rawValue, order.state.hintCode?.rawValue, order.state.lastCollectedAt,
                    order.state.finishedAt, completion, order.leaseOwner, order.leaseExpiresAt,
                    order.state.collectFailedAt,
                ])
        }
    }

    public func bankIDOrder(orderRef: String) throws -> BankIDOrder? {
        try engine.read { connection in
            try connection.queryFirst(
                "SELECT \(StoreSQL.orderColumns) FROM bankid_orders WHERE order_ref = ?1", [orderRef],
                Self.order)
        }
    }

    public func acquireBankIDCollectLease(
        orderRef: String, owner: String, now: Date, until: Date, collectedBefore: Date
    ) throws -> BankIDLeaseOutcome? {
        // One conditional UPDATE under the write lock: of any number of instances racing for the
        // lease, exactly one sees its row change. The freshness condition is part of it, so an
        // instance that arrives just after another stored an answer does not collect again.
        try engine.write { connection in
            if let leased = try connection.queryFirst(
                """
                UPDATE bankid_orders SET lease_owner = ?2, lease_expires_at = ?3
                WHERE order_ref = ?1 AND status = 'pending'
                  AND (lease_owner IS NULL OR lease_expires_at <= ?4)
                  AND (last_collected_at IS NULL OR last_collected_at <= ?5)
                RETURNING \(StoreSQL.orderColumns)
                """, [orderRef, owner, until, now, collectedBefore], Self.order)
            {
                return .acquired(leased)
            }
            return try connection.queryFirst(
                "SELECT \(StoreSQL.orderColumns) FROM bankid_orders WHERE order_ref = ?1", [orderRef],
                Self.order
            ).map { .notAcquired($0) }
        }
    }

    public func updateBankIDOrder(orderRef: String, state: BankIDOrderState, releasingLeaseOf owner: String?)
        throws -> BankIDOrder?
    {
        let completion = try Self.completionJSON(state.completion)
        return try engine.write { connection in
            // Only a pending order changes: a final state is never rewritten by a late answer.
            try connection.execute(
                """
                UPDATE bankid_orders SET status = ?2, hint_code = ?3, last_collected_at = ?4,
                  finished_at = ?5, completion = ?6, collect_failed_at = ?7
                WHERE order_ref = ?1 AND status = 'pending'
                """,
                [
                    orderRef, state.status.rawValue, state.hintCode?.rawValue, state.lastCollectedAt,
                    state.finishedAt, completion, state.collectFailedAt,
                ])
            if let owner {
                try connection.execute(
                    """
                    UPDATE bankid_orders SET lease_owner = NULL, lease_expires_at = NULL
                    WHERE order_ref = ?1 AND lease_owner = ?2
                    """, [orderRef, owner])
            }
            return try connection.queryFirst(
                "SELECT \(StoreSQL.orderColumns) FROM bankid_orders WHERE order_ref = ?1", [orderRef],
                Self.order)
        }
    }

    public func purgeBankIDOrders(completedBefore: Date, endedBefore: Date, startedBefore: Date) throws -> Int
    {
        try engine.write { connection in
            let changed = try connection.execute(
                """
                DELETE FROM bankid_orders
                WHERE (status = 'complete' AND finished_at < ?1)
                   OR (status IN ('failed', 'cancelled') AND finished_at < ?2) OR started_at < ?3
                """, [completedBefore, endedBefore, startedBefore])
            return changed
        }
    }
}

/// The column lists and statements the stores above share.
extension StoreSQL {
    fileprivate static let orderColumns = """
        order_ref, kind, intent, started_at, qr_start_token, qr_start_secret, auto_start_token, \
        end_user_ip, status, hint_code, last_collected_at, finished_at, completion, lease_owner, \
        lease_expires_at, collect_failed_at
        """
}
