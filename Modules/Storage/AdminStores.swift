public import FoundationEssentials
public import Kernel
import Synchronization

/// An admin API token as stored: never the secret, only its SHA-256.
public struct AdminTokenRecord: Sendable, Equatable {
    /// Random, public identifier (shown in lists, usable to revoke).
    public var id: String
    /// The operator's name for it; unique, and what audit events name.
    public var name: String
    /// What it may do.
    public var scope: AdminScope
    /// SHA-256 of the secret token.
    public var tokenHash: [UInt8]
    /// When it was created.
    public var createdAt: Date
    /// The first instant it is no longer accepted; nil for no expiry.
    public var expiresAt: Date?
    /// When it was revoked, if it was.
    public var revokedAt: Date?

    /// Creates a record.
    public init(
        id: String, name: String, scope: AdminScope, tokenHash: [UInt8], createdAt: Date,
        expiresAt: Date? = nil, revokedAt: Date? = nil
    ) {
        self.id = id
        self.name = name
        self.scope = scope
        self.tokenHash = tokenHash
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
    }
}

/// Admin API tokens. Every method is atomic on its own; dates are kept to the millisecond.
public protocol AdminTokenStore: Sendable {
    /// Stores a new token.
    /// - Throws: `StorageError(.conflict)` when the id, the name or the hash is taken.
    func insertAdminToken(_ token: AdminTokenRecord) throws
    /// The token whose secret hashes to `hash`, revoked or expired ones included; nil when none.
    func adminToken(hash: [UInt8]) throws -> AdminTokenRecord?
    /// Every token, oldest first.
    func adminTokens() throws -> [AdminTokenRecord]
    /// Marks the token revoked; false when there is no such token or it already was.
    func revokeAdminToken(id: String, at: Date) throws -> Bool
}

/// The reads and writes only administration needs over users, sessions and the audit trail.
public protocol AdministrationStore: Sendable {
    /// Up to `limit` users with ids after `afterID`, ordered by id's bytes, that match `search`
    /// when given: the exact id, or a case-insensitive (ASCII) substring of the username or the
    /// display name.
    func searchUsers(_ search: String?, afterID: String?, limit: Int) throws -> [User]
    /// Sets or clears the user's disabled time and, when disabling, revokes every live session
    /// of theirs in the same transaction, with the record `recording` makes of the revoked
    /// sessions' ids (none when enabling); returns how many sessions were revoked.
    /// - Throws: `StorageError(.notFound)` when there is no such user; nothing is written then.
    func setUserDisabled(id: String, at: Date?, now: Date, record: ChangeRecording<[String]>) throws -> Int
    /// Up to `limit` events matching `query` with ids below `beforeID` (when given), newest first.
    func searchAudit(_ query: AuditQuery, beforeID: Int64?, limit: Int) throws -> [AuditEvent]
    /// How many sessions are live at `now` (not revoked, not past their absolute expiry).
    func liveSessionCount(at now: Date) throws -> Int
}

extension SQLStore: AdminTokenStore {

    fileprivate static func adminToken(_ row: any SQLRow) throws -> AdminTokenRecord {
        guard let scope = AdminScope(rawValue: try row.string(2)) else {
            throw StorageError(.corrupt, "an admin token has an unknown scope")
        }
        return AdminTokenRecord(
            id: try row.string(0), name: try row.string(1), scope: scope, tokenHash: try row.blob(3),
            createdAt: try row.date(4), expiresAt: try row.optionalDate(5), revokedAt: try row.optionalDate(6)
        )
    }

    public func insertAdminToken(_ token: AdminTokenRecord) throws {
        try engine.write { connection in
            try connection.execute(
                "INSERT INTO admin_tokens (\(StoreSQL.adminTokenColumns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                [
                    token.id, token.name, token.scope.rawValue, token.tokenHash, token.createdAt,
                    token.expiresAt, token.revokedAt,
                ])
        }
    }

    public func adminToken(hash: [UInt8]) throws -> AdminTokenRecord? {
        try engine.read { connection in
            try connection.queryFirst(
                "SELECT \(StoreSQL.adminTokenColumns) FROM admin_tokens WHERE token_hash = ?1", [hash],
                Self.adminToken)
        }
    }

    public func adminTokens() throws -> [AdminTokenRecord] {
        try engine.read { connection in
            try connection.query(
                "SELECT \(StoreSQL.adminTokenColumns) FROM admin_tokens ORDER BY created_at, id", [],
                Self.adminToken)
        }
    }

    public func revokeAdminToken(id: String, at: Date) throws -> Bool {
        try engine.write { connection in
            let changed = try connection.execute(
                "UPDATE admin_tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL", [id, at])
            return changed > 0
        }
    }
}

extension SQLStore: AdministrationStore {
    public func searchUsers(_ search: String?, afterID: String?, limit: Int) throws -> [User] {
        guard let search, !search.isEmpty else { return try users(afterID: afterID, limit: limit) }
        guard limit > 0 else { return [] }
        // LIKE with the pattern's own wildcards escaped, so a search for "a_b" means that text,
        // on lower() of both sides: SQLite's LIKE ignores ASCII case and PostgreSQL's does not,
        // while lower() folds only ASCII on both (SQLite's built-in, PostgreSQL's on the "C"
        // collation these columns have).
        let escaped = search.lowercasedASCII().replacingEvery("\\", with: "\\\\")
            .replacingEvery("%", with: "\\%").replacingEvery("_", with: "\\_")
        let pattern = "%\(escaped)%"
        return try engine.read { connection in
            try connection.query(
                """
                SELECT \(StoreSQL.userColumns) FROM users
                WHERE id > ?1
                  AND (id = ?2 OR lower(username) LIKE ?3 ESCAPE '\\' OR lower(display_name) LIKE ?3 ESCAPE '\\')
                ORDER BY id LIMIT ?4
                """, [afterID ?? "", search, pattern, limit], Self.user)
        }
    }

    public func setUserDisabled(id: String, at: Date?, now: Date, record: ChangeRecording<[String]>) throws
        -> Int
    {
        try write(recording: record) { connection in
            let changed = try connection.execute("UPDATE users SET disabled_at = ?2 WHERE id = ?1", [id, at])
            guard changed > 0 else { throw StorageError(.notFound, "no such user") }
            guard at != nil else { return [] }
            return try Self.revokeSessions(ofUser: id, ids: nil, except: nil, at: now, on: connection)
        }.count
    }

    public func searchAudit(_ query: AuditQuery, beforeID: Int64?, limit: Int) throws -> [AuditEvent] {
        guard limit > 0 else { return [] }
        // Only the filters given become conditions, so SQLite can pick the index for the one
        // that narrows most (user_id or action, each paired with id).
        var conditions: [String] = []
        var arguments: [any SQLBindable] = []
        func add(_ condition: String, _ value: any SQLBindable) {
            arguments.append(value)
            conditions.append(condition.replacingEvery("?", with: "?\(arguments.count)"))
        }
        if let userID = query.userID { add("user_id = ?", userID) }
        if let action = query.action { add("action = ?", action) }
        if let from = query.from { add("at >= ?", from) }
        if let until = query.until { add("at < ?", until) }
        if let beforeID { add("id < ?", beforeID) }
        arguments.append(limit)
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let sql = """
            SELECT \(StoreSQL.auditColumns) FROM audit_events
            \(filter) ORDER BY id DESC LIMIT ?\(arguments.count)
            """
        return try engine.read { connection in try connection.query(sql, arguments, Self.auditEvent) }
    }

    /// An audit event from a row of `StoreSQL.auditColumns`.
    static func auditEvent(_ row: any SQLRow) throws -> AuditEvent {
        AuditEvent(
            id: try row.int64(0), at: try row.date(1),
            action: AuditAction(rawValue: try row.string(2)),
            actor: try AuditActor.stored(try row.string(3)),
            userID: try row.optionalString(4), requestID: try row.optionalString(5),
            ipAddress: try row.optionalString(6), details: try AuditDetails.decode(try row.string(7)))
    }

    public func liveSessionCount(at now: Date) throws -> Int {
        try engine.read { connection in
            Int(
                try connection.queryFirst(
                    "SELECT count(*) FROM sessions WHERE revoked_at IS NULL AND expires_at > ?1", [now]
                ) { try $0.int64(0) } ?? 0)
        }
    }
}

/// The column lists and statements the stores above share.
extension StoreSQL {
    /// An audit event's columns, in `SQLStore.auditEvent`'s order.
    static let auditColumns = "id, at, action, actor, user_id, request_id, ip_address, details"

    fileprivate static let adminTokenColumns =
        "id, name, scope, token_hash, created_at, expires_at, revoked_at"
}
