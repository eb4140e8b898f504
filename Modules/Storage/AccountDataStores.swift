public import FoundationEssentials
public import Kernel
public import SessionCore

/// The listings a user's data export needs beyond what the other stores offer: every stored row
/// of theirs, not only the live ones. Each method is atomic on its own.
public protocol AccountDataStore: Sendable {
    /// Every session of `userID` still stored (live, revoked or expired, until the purge removes
    /// it), newest first.
    func allSessions(userID: String) throws -> [Session]
    /// Every enrollment token issued for `userID` (used, expired or not), oldest first.
    func enrollmentTokens(userID: String) throws -> [EnrollmentTokenRecord]
    /// Every BankID phone verification of `userID`'s account still stored, oldest first.
    func bankIDPhoneVerifications(userID: String) throws -> [BankIDPhoneVerification]
    /// Every audit event about `userID`, oldest first.
    func allAuditEvents(userID: String) throws -> [AuditEvent]
}

/// The audit trail's retention (`audit.retentionDays`).
public protocol AuditRetentionStore: Sendable {
    /// Deletes the audit events older than `cutoff` that precede, in id order, every younger one;
    /// the newest event always stays, so the ids of later events keep growing. Returns how many.
    func purgeAuditEvents(before cutoff: Date) throws -> Int
}

extension SQLStore: AccountDataStore {
    public func allAuditEvents(userID: String) throws -> [AuditEvent] {
        try engine.read { connection in
            try connection.query(
                "SELECT \(StoreSQL.auditColumns) FROM audit_events WHERE user_id = ?1 ORDER BY id", [userID],
                Self.auditEvent)
        }
    }
}

extension SQLStore: AuditRetentionStore {
    public func purgeAuditEvents(before cutoff: Date) throws -> Int {
        // Ids follow time (each event is appended at its own time), so the old events are the
        // front of the key: everything before the first young one, read from the front, which
        // touches only rows about to go (no index on `at`, which every audited write would pay
        // for). With no young event, everything but the newest goes: max(id) + 1 must stay above
        // every id handed out, or a cursor of the admin API could meet a reused id.
        try purgeInChunks { connection in
            try connection.execute(
                """
                DELETE FROM audit_events WHERE id IN (
                  SELECT id FROM audit_events WHERE id < coalesce(
                    (SELECT id FROM audit_events WHERE at >= ?1 ORDER BY id LIMIT 1),
                    (SELECT max(id) FROM audit_events))
                  ORDER BY id LIMIT \(Self.purgeChunk))
                """, [cutoff])
        }
    }
}
