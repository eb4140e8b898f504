public import Foundation
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
    /// of theirs in the same transaction; returns how many sessions were revoked.
    /// - Throws: `StorageError(.notFound)` when there is no such user.
    func setUserDisabled(id: String, at: Date?, now: Date) throws -> Int
    /// Up to `limit` events matching `query` with ids below `beforeID` (when given), newest first.
    func searchAudit(_ query: AuditQuery, beforeID: Int64?, limit: Int) throws -> [AuditEvent]
    /// How many sessions are live at `now` (not revoked, not past their absolute expiry).
    func liveSessionCount(at now: Date) throws -> Int
}

extension SQLiteStore: AdminTokenStore {
    fileprivate static let adminTokenColumns =
        "id, name, scope, token_hash, created_at, expires_at, revoked_at"

    fileprivate static func adminToken(_ row: Row) throws -> AdminTokenRecord {
        guard let scope = AdminScope(rawValue: row.string(2)) else {
            throw StorageError(.corrupt, "an admin token has an unknown scope")
        }
        return AdminTokenRecord(
            id: row.string(0), name: row.string(1), scope: scope, tokenHash: row.blob(3),
            createdAt: row.date(4), expiresAt: row.optionalDate(5), revokedAt: row.optionalDate(6))
    }

    public func insertAdminToken(_ token: AdminTokenRecord) throws {
        try database.write { connection in
            try connection.execute(
                "INSERT INTO admin_tokens (\(Self.adminTokenColumns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                [
                    token.id, token.name, token.scope.rawValue, token.tokenHash, token.createdAt,
                    token.expiresAt, token.revokedAt,
                ])
        }
    }

    public func adminToken(hash: [UInt8]) throws -> AdminTokenRecord? {
        try database.read { connection in
            try connection.queryFirst(
                "SELECT \(Self.adminTokenColumns) FROM admin_tokens WHERE token_hash = ?1", [hash],
                Self.adminToken)
        }
    }

    public func adminTokens() throws -> [AdminTokenRecord] {
        try database.read { connection in
            try connection.query(
                "SELECT \(Self.adminTokenColumns) FROM admin_tokens ORDER BY created_at, id", [],
                Self.adminToken)
        }
    }

    public func revokeAdminToken(id: String, at: Date) throws -> Bool {
        try database.write { connection in
            try connection.execute(
                "UPDATE admin_tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL", [id, at])
            return connection.changes > 0
        }
    }
}

extension SQLiteStore: AdministrationStore {
    public func searchUsers(_ search: String?, afterID: String?, limit: Int) throws -> [User] {
        guard let search, !search.isEmpty else { return try users(afterID: afterID, limit: limit) }
        guard limit > 0 else { return [] }
        // LIKE with the pattern's own wildcards escaped, so a search for "a_b" means that text.
        let escaped = search.replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: "%", with: "\\%").replacingOccurrences(of: "_", with: "\\_")
        let pattern = "%\(escaped)%"
        return try database.read { connection in
            try connection.query(
                """
                SELECT id, username, display_name, created_at, disabled_at, user_handle FROM users
                WHERE id > ?1 AND (id = ?2 OR username LIKE ?3 ESCAPE '\\' OR display_name LIKE ?3 ESCAPE '\\')
                ORDER BY id LIMIT ?4
                """, [afterID ?? "", search, pattern, limit]
            ) { row in
                User(
                    id: row.string(0), username: row.optionalString(1), displayName: row.string(2),
                    createdAt: row.date(3), disabledAt: row.optionalDate(4), userHandle: row.blob(5))
            }
        }
    }

    public func setUserDisabled(id: String, at: Date?, now: Date) throws -> Int {
        try database.write { connection in
            try connection.execute("UPDATE users SET disabled_at = ?2 WHERE id = ?1", [id, at])
            guard connection.changes > 0 else { throw StorageError(.notFound, "no such user") }
            guard at != nil else { return 0 }
            try connection.execute(
                """
                UPDATE sessions SET revoked_at = ?2
                WHERE user_id = ?1 AND revoked_at IS NULL AND expires_at > ?2
                """, [id, now])
            return connection.changes
        }
    }

    public func searchAudit(_ query: AuditQuery, beforeID: Int64?, limit: Int) throws -> [AuditEvent] {
        guard limit > 0 else { return [] }
        // Only the filters given become conditions, so SQLite can pick the index for the one
        // that narrows most (user_id or action, each paired with id).
        var conditions: [String] = []
        var arguments: [any SQLiteBindable] = []
        func add(_ condition: String, _ value: any SQLiteBindable) {
            arguments.append(value)
            conditions.append(condition.replacingOccurrences(of: "?", with: "?\(arguments.count)"))
        }
        if let userID = query.userID { add("user_id = ?", userID) }
        if let action = query.action { add("action = ?", action) }
        if let from = query.from { add("at >= ?", from) }
        if let until = query.until { add("at < ?", until) }
        if let beforeID { add("id < ?", beforeID) }
        arguments.append(limit)
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let sql = """
            SELECT id, at, action, actor, user_id, request_id, ip_address, details FROM audit_events
            \(filter) ORDER BY id DESC LIMIT ?\(arguments.count)
            """
        return try database.read { connection in
            try connection.query(sql, arguments) { row in
                AuditEvent(
                    id: row.int64(0), at: row.date(1), action: AuditAction(rawValue: row.string(2)),
                    actor: try AuditActor.stored(row.string(3)),
                    userID: row.optionalString(4), requestID: row.optionalString(5),
                    ipAddress: row.optionalString(6), details: try AuditDetails.decode(row.string(7)))
            }
        }
    }

    public func liveSessionCount(at now: Date) throws -> Int {
        try database.read { connection in
            Int(
                try connection.queryFirst(
                    "SELECT count(*) FROM sessions WHERE revoked_at IS NULL AND expires_at > ?1", [now]
                ) { $0.int64(0) } ?? 0)
        }
    }
}

/// Admin tokens in memory, with `SQLiteStore`'s semantics (unique id, name and hash), for tests.
public final class MemoryAdminTokenStore: AdminTokenStore {
    private let tokens = Mutex<[AdminTokenRecord]>([])

    /// Creates an empty store.
    public init() {}

    public func insertAdminToken(_ token: AdminTokenRecord) throws {
        try tokens.withLock { tokens throws(StorageError) in
            guard
                !tokens.contains(where: {
                    $0.id == token.id || $0.name == token.name || $0.tokenHash == token.tokenHash
                })
            else { throw StorageError(.conflict, "an admin token with this id, name or hash exists") }
            tokens.append(token.normalised)
        }
    }

    public func adminToken(hash: [UInt8]) throws -> AdminTokenRecord? {
        tokens.withLock { $0.first { $0.tokenHash == hash } }
    }

    public func adminTokens() throws -> [AdminTokenRecord] {
        tokens.withLock { $0 }
    }

    public func revokeAdminToken(id: String, at: Date) throws -> Bool {
        tokens.withLock { tokens in
            guard let index = tokens.firstIndex(where: { $0.id == id && $0.revokedAt == nil }) else {
                return false
            }
            tokens[index].revokedAt = at.storagePrecision
            return true
        }
    }
}

extension AdminTokenRecord {
    /// Times cut to the millisecond, as SQLite keeps them.
    fileprivate var normalised: AdminTokenRecord {
        var copy = self
        copy.createdAt = createdAt.storagePrecision
        copy.expiresAt = expiresAt?.storagePrecision
        copy.revokedAt = revokedAt?.storagePrecision
        return copy
    }
}
