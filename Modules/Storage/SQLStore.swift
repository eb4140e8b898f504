import CryptoCore
public import FoundationEssentials
public import Kernel
public import SessionCore

/// Every store protocol over either engine, in one SQL dialect (see `SQLConnection`): every
/// write is one `write` transaction, every read runs through `read`. Both engines run this same
/// code, so they cannot drift apart; what differs is only how each keeps its types and runs a
/// transaction (`SQLiteDatabase`, `PostgreSQLDatabase`).
public final class SQLStore: Sendable {
    /// The database the stores run on.
    public let engine: StorageEngine
    private let clock: any WallClock

    /// The stores over `engine`; `clock` stamps settings' update times.
    public init(engine: StorageEngine, clock: any WallClock = SystemClock()) {
        self.engine = engine
        self.clock = clock
    }

    /// The stores over SQLite's file (the embedded default).
    public convenience init(database: SQLiteDatabase, clock: any WallClock = SystemClock()) {
        self.init(engine: .sqlite(database), clock: clock)
    }

    /// The stores over a PostgreSQL server, which several instances share.
    public convenience init(database: PostgreSQLDatabase, clock: any WallClock = SystemClock()) {
        self.init(engine: .postgresql(database), clock: clock)
    }

    static func user(_ row: any SQLRow) throws -> User {
        User(
            id: try row.string(0), username: try row.optionalString(1), displayName: try row.string(2),
            createdAt: try row.date(3), disabledAt: try row.optionalDate(4), userHandle: try row.blob(5))
    }

    static func insert(_ user: User, on connection: any SQLConnection) throws {
        try connection.execute(
            "INSERT INTO users (\(StoreSQL.userColumns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            [
                user.id, user.username, user.displayName, user.createdAt, user.disabledAt,
                user.userHandle,
            ])
    }

    fileprivate static func session(_ row: any SQLRow) throws -> Session {
        guard let kind = ClientKind(rawValue: try row.string(3)) else {
            // Only this code writes the column, so an unknown kind means the file was altered.
            throw StorageError(.corrupt, "a session has an unknown client kind")
        }
        guard let method = AuthMethod(rawValue: try row.string(4)) else {
            throw StorageError(.corrupt, "a session has an unknown authentication method")
        }
        return Session(
            id: try row.string(0), userID: try row.string(1), tokenHash: try row.blob(2), clientKind: kind,
            authMethod: method, createdAt: try row.date(5), lastSeenAt: try row.date(6),
            expiresAt: try row.date(7), revokedAt: try row.optionalDate(8),
            userAgent: try row.optionalString(9),
            ipAddress: try row.optionalString(10), authenticatedAt: try row.date(11))
    }

    static func insert(_ session: Session, on connection: any SQLConnection) throws {
        try connection.execute(
            "INSERT INTO sessions (\(StoreSQL.sessionColumns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            [
                session.id, session.userID, session.tokenHash, session.clientKind.rawValue,
                session.authMethod.rawValue, session.createdAt, session.lastSeenAt, session.expiresAt,
                session.revokedAt, session.userAgent, session.ipAddress, session.authenticatedAt,
            ])
    }

    /// Rows one purge transaction deletes at most.
    static let purgeChunk = 1000

    /// Runs `delete`, which removes at most about `purgeChunk` rows, each time in a transaction of
    /// its own, until it removes fewer; returns how many it removed in all.
    ///
    /// A purge runs on the maintenance thread, but through the same writer (and, on SQLite, the
    /// same group commit) as the requests: an hour of a busy server's used challenges is millions
    /// of rows, and deleting them in one transaction would keep every sign-in meanwhile waiting
    /// for it. In chunks, a commit waits for one chunk at most.
    func purgeInChunks(_ delete: (any SQLConnection) throws -> Int) throws -> Int {
        var total = 0
        while true {
            let deleted = try engine.write(delete)
            total += deleted
            if deleted < Self.purgeChunk { return total }
        }
    }
}

extension SQLStore: UserStore {
    public func insertUser(_ user: User, record: ChangeRecord) throws {
        try write(record) { try Self.insert(user, on: $0) }
    }

    public func user(id: String) throws -> User? {
        try engine.read { connection in
            try connection.queryFirst(
                "SELECT \(StoreSQL.userColumns) FROM users WHERE id = ?1", [id], Self.user)
        }
    }

    public func user(username: String) throws -> User? {
        try engine.read { connection in
            try connection.queryFirst(
                "SELECT \(StoreSQL.userColumns) FROM users WHERE username = ?1", [username], Self.user)
        }
    }

    public func user(handle: [UInt8]) throws -> User? {
        try engine.read { connection in
            try connection.queryFirst(
                "SELECT \(StoreSQL.userColumns) FROM users WHERE user_handle = ?1", [handle], Self.user)
        }
    }

    public func updateUser(_ user: User, record: ChangeRecord) throws {
        try write(record) { connection in
            let changed = try connection.execute(
                "UPDATE users SET username = ?2, display_name = ?3, disabled_at = ?4 WHERE id = ?1",
                [user.id, user.username, user.displayName, user.disabledAt])
            guard changed > 0 else { throw StorageError(.notFound, "no such user") }
        }
    }

    public func deleteUser(id: String, record: ChangeRecord) throws -> Bool {
        // Everything that names the user goes with them through ON DELETE CASCADE (sessions and
        // their step-ups, passkeys, enrollment tokens, the BankID identity, flows, signatures and
        // phone verifications, the review listing), in the same transaction; their challenges
        // (an added passkey's, a re-authentication's) have no foreign key, a sign-up's precedes
        // its user, so they go by hand. The audit trail stays (`AuditRetentionStore`).
        try write(recording: { $0 ? record : .none }) { connection in
            let changed = try connection.execute("DELETE FROM users WHERE id = ?1", [id])
            guard changed > 0 else { return false }
            try connection.execute("DELETE FROM challenges WHERE user_id = ?1", [id])
            return true
        }
    }

    public func users(afterID: String?, limit: Int) throws -> [User] {
        // SQLite reads a negative LIMIT as "no limit"; a non-positive page is simply empty.
        guard limit > 0 else { return [] }
        // Two fixed statements rather than "?1 IS NULL OR id > ?1", which keeps SQLite from
        // seeking the primary key and would make every page a scan of the whole table.
        return try engine.read { connection in
            if let afterID {
                return try connection.query(
                    "SELECT \(StoreSQL.userColumns) FROM users WHERE id > ?1 ORDER BY id LIMIT ?2",
                    [afterID, limit], Self.user)
            }
            return try connection.query(
                "SELECT \(StoreSQL.userColumns) FROM users ORDER BY id LIMIT ?1", [limit], Self.user)
        }
    }

    public func userCount() throws -> Int {
        try engine.read { connection in
            Int(try connection.queryFirst("SELECT count(*) FROM users") { try $0.int64(0) } ?? 0)
        }
    }
}

extension SQLStore: SessionAccessStore {
    public func sessionWithOwner(tokenHash: [UInt8]) throws -> (session: Session, owner: User)? {
        // One statement, so one read transaction instead of two: a seek of the token hash's
        // index, then of the users' key for the owner (as `passkeyWithOwner` for the login).
        try engine.read { connection in
            try connection.queryFirst(StoreSQL.sessionWithOwnerSQL, [tokenHash]) { row in
                (
                    session: try Self.session(row),
                    owner: try Self.user(row.shifted(by: StoreSQL.sessionColumnCount))
                )
            }
        }
    }

    public func revokeSessions(
        ofUser userID: String, ids: [String]?, except exceptID: String?, at: Date,
        record: ChangeRecording<[String]>
    ) throws -> [String] {
        try write(recording: record) { connection in
            try Self.revokeSessions(ofUser: userID, ids: ids, except: exceptID, at: at, on: connection)
        }
    }

    /// `revokeSessions(ofUser:ids:except:at:record:)`'s statement on `connection`: the ids it
    /// revoked.
    static func revokeSessions(
        ofUser userID: String, ids: [String]?, except exceptID: String?, at: Date,
        on connection: any SQLConnection
    ) throws -> [String] {
        guard let ids else {
            // Live means not revoked and not past its absolute expiry at `at`, as in `sessions`. IS
            // DISTINCT FROM spares the kept one and, with none kept, none: NULL is distinct from
            // every id.
            return try connection.query(
                """
                UPDATE sessions SET revoked_at = ?3
                WHERE user_id = ?1 AND revoked_at IS NULL AND expires_at > ?3
                  AND id IS DISTINCT FROM ?2
                RETURNING id
                """, [userID, exceptID, at]
            ) { try $0.string(0) }
        }
        if ids.isEmpty { return [] }
        let placeholders = ids.indices.map { "?\($0 + 3)" }.joined(separator: ", ")
        return try connection.query(
            """
            UPDATE sessions SET revoked_at = ?2
            WHERE user_id = ?1 AND revoked_at IS NULL AND id IN (\(placeholders))
            RETURNING id
            """, [userID, at] + ids
        ) { try $0.string(0) }
    }
}

extension SQLStore: SessionRepository {
    public func insertSession(_ session: Session) throws {
        try engine.write { try Self.insert(session, on: $0) }
    }

    public func session(tokenHash: [UInt8]) throws -> Session? {
        try engine.read { connection in
            try connection.queryFirst(
                "SELECT \(StoreSQL.sessionColumns) FROM sessions WHERE token_hash = ?1", [tokenHash],
                Self.session)
        }
    }

    public func session(id: String) throws -> Session? {
        try engine.read { connection in
            try connection.queryFirst(
                "SELECT \(StoreSQL.sessionColumns) FROM sessions WHERE id = ?1", [id], Self.session)
        }
    }

    public func touchSession(id: String, at: Date) throws {
        // Only forwards: touches racing from two requests must not move the activity time back.
        try engine.write { connection in
            try connection.execute(
                "UPDATE sessions SET last_seen_at = ?2 WHERE id = ?1 AND last_seen_at < ?2", [id, at])
        }
    }

    fileprivate static func revokeSession(id: String, at: Date, on connection: any SQLConnection) throws
        -> Bool
    {
        let changed = try connection.execute(
            "UPDATE sessions SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL", [id, at])
        return changed > 0
    }

    /// Records that `userID` proved presence at `at` in those of `sessionIDs` that are theirs and
    /// not revoked (a re-authentication, a BankID signature); true when any was. Only forwards:
    /// a late commit never moves the proof back.
    static func recordAuthentication(
        sessionIDs: [String], userID: String, at: Date, on connection: any SQLConnection
    ) throws -> Bool {
        if sessionIDs.isEmpty { return false }
        let placeholders = sessionIDs.indices.map { "?\($0 + 3)" }.joined(separator: ", ")
        let changed = try connection.execute(
            """
            UPDATE sessions SET authenticated_at = CASE WHEN authenticated_at > ?2 THEN authenticated_at ELSE ?2 END
            WHERE user_id = ?1 AND revoked_at IS NULL AND id IN (\(placeholders))
            """, [userID, at] + sessionIDs)
        return changed > 0
    }

    /// Ends the session a sign-in replaced (the one its request came with) and, when it did end it
    /// and someone subscribes, enqueues `outbox`'s events about it, made from the session's owner.
    static func endReplacedSession(
        _ id: String, at: Date, outbox: (@Sendable (String) -> [OutboxEntry])?,
        on connection: any SQLConnection
    ) throws {
        guard let outbox else {
            // Nobody subscribes: the sign-in's statement stays the plain one.
            _ = try revokeSession(id: id, at: at, on: connection)
            return
        }
        if let owner = try connection.queryFirst(
            "UPDATE sessions SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL RETURNING user_id",
            [id, at],
            { try $0.string(0) })
        {
            let entries = outbox(owner)
            if !entries.isEmpty { try enqueue(entries, on: connection) }
        }
    }

    public func sessions(userID: String, liveAt now: Date) throws -> [Session] {
        try engine.read { connection in
            try connection.query(
                """
                SELECT \(StoreSQL.sessionColumns) FROM sessions
                WHERE user_id = ?1 AND revoked_at IS NULL AND expires_at > ?2
                ORDER BY created_at DESC, id DESC
                """, [userID, now], Self.session)
        }
    }

    public func allSessions(userID: String) throws -> [Session] {
        try engine.read { connection in
            try connection.query(
                """
                SELECT \(StoreSQL.sessionColumns) FROM sessions WHERE user_id = ?1
                ORDER BY created_at DESC, id DESC
                """, [userID], Self.session)
        }
    }

    /// - Throws: `StorageError(.notFound)` when `oldID` does not exist, `.conflict` when it was
    ///   already revoked (another rotation won) or the replacement collides; nothing changes then.
    public func rotateSession(oldID: String, replacement: Session, at: Date) throws {
        try engine.write { connection in
            let changed = try connection.execute(
                "UPDATE sessions SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
                [oldID, at])
            if changed == 0 {
                // Tell the two failures apart only on the slow path.
                let exists =
                    try connection.queryFirst(
                        "SELECT 1 FROM sessions WHERE id = ?1", [oldID]
                    ) { _ in true } ?? false
                throw exists
                    ? StorageError(.conflict, "the session was already revoked")
                    : StorageError(.notFound, "no such session")
            }
            try Self.insert(replacement, on: connection)
        }
    }

    public func rotateSession(oldID: String, replacement: Session, oldExpiresAt: Date) throws -> Bool {
        try engine.write { connection in
            // The condition is the once-only gate: a rotation that lost the race finds the
            // expiry already brought forward and changes nothing.
            let changed = try connection.execute(
                "UPDATE sessions SET expires_at = ?2 WHERE id = ?1 AND revoked_at IS NULL AND expires_at > ?2",
                [oldID, oldExpiresAt])
            guard changed > 0 else { return false }
            try Self.insert(replacement, on: connection)
            return true
        }
    }

    public func purgeSessions(endedBefore cutoff: Date) throws -> Int {
        // A session ends at the earlier of its expiry and its revocation. No index finds ended
        // sessions, so the table is walked in key order, one window of `purgeChunk` sessions per
        // transaction, deleting the ended ones in it: each transaction reads a bounded number of
        // rows however many have ended, and all of them together read the table once, as the
        // single DELETE did.
        var purged = 0
        var after: String?
        while true {
            let step = try engine.write { connection -> (deleted: Int, last: String?) in
                let window = after == nil ? "" : "WHERE id > ?1"
                let bound: [any SQLBindable] = after.map { [$0] } ?? []
                let last = try connection.queryFirst(
                    """
                    SELECT max(id) FROM (SELECT id FROM sessions \(window)
                    ORDER BY id LIMIT \(Self.purgeChunk)) AS w
                    """, bound
                ) { try $0.optionalString(0) }
                guard let last = last ?? nil else { return (0, nil) }
                let deleted = try connection.execute(
                    """
                    DELETE FROM sessions WHERE \(after == nil ? "" : "id > ?3 AND ")id <= ?2
                    AND (expires_at < ?1 OR (revoked_at IS NOT NULL AND revoked_at < ?1))
                    """, [cutoff, last] + bound)
                return (deleted, last)
            }
            purged += step.deleted
            guard let last = step.last else { return purged }
            after = last
        }
    }
}

extension SQLStore: AuditStore {
    public func appendAudit(_ event: AuditEvent) throws -> Int64 {
        let details = AuditDetails.encode(event.details)
        return try engine.write { try Self.insert(event, details: details, on: $0) }
    }

    /// Appends `event` with its details already encoded (outside the write lock) and returns its id:
    /// every store that audits inside its own transaction writes the row through here.
    @discardableResult
    static func insert(_ event: AuditEvent, details: String, on connection: any SQLConnection)
        throws
        -> Int64
    {
        try connection.insertReturningID(
            """
            INSERT INTO audit_events (at, action, actor, user_id, request_id, ip_address, details)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
            """,
            [
                event.at, event.action, event.actor, event.userID, event.requestID,
                event.ipAddress, details,
            ])
    }

    public func auditEvents(userID: String?, beforeID: Int64?, limit: Int) throws -> [AuditEvent] {
        // The admin search with only the user filter: one query builder for the audit trail.
        try searchAudit(AuditQuery(userID: userID), beforeID: beforeID, limit: limit)
    }
}

extension SQLStore: SettingsStore {
    public func setting(_ key: String) throws -> [UInt8]? {
        try engine.read { connection in
            try connection.queryFirst("SELECT value FROM settings WHERE key = ?1", [key]) {
                try $0.blob(0)
            }
        }
    }

    public func setSetting(_ key: String, value: [UInt8]) throws {
        let now = clock.now()
        try engine.write { connection in
            try connection.execute(
                """
                INSERT INTO settings (key, value, updated_at) VALUES (?1, ?2, ?3)
                ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
                """, [key, value, now])
        }
    }

    public func insertSettingIfAbsent(_ key: String, value: [UInt8]) throws -> Bool {
        let now = clock.now()
        return try engine.write { connection in
            let changed = try connection.execute(
                "INSERT INTO settings (key, value, updated_at) VALUES (?1, ?2, ?3) ON CONFLICT (key) DO NOTHING",
                [key, value, now])
            return changed > 0
        }
    }
}

/// The JSON form of audit details: a flat object with sorted keys, so equal details store equal text.
enum AuditDetails {
    static func encode(_ details: [String: String]) -> String {
        var writer = JSONWriter()
        writer.object { object in
            // Sorted by UTF-8 bytes, as SQLite would compare the keys.
            for key in details.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                object.member(key, details[key] ?? "")
            }
        }
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    static func decode(_ text: String) throws -> [String: String] {
        guard let details = try? JSONDecoder().decode([String: String].self, from: Data(text.utf8))
        else {
            throw StorageError(.corrupt, "stored audit details are not a JSON object of strings")
        }
        return details
    }
}

extension SQLStore: AccountStore {

    fileprivate static func passkey(_ row: any SQLRow) throws -> StoredPasskey {
        guard let signCount = UInt32(exactly: try row.int64(4)) else {
            // The CHECK constraint keeps it in range, so anything else means the file was altered.
            throw StorageError(.corrupt, "a passkey has a sign count out of range")
        }
        return StoredPasskey(
            credentialID: try row.blob(0), userID: try row.string(1), publicKey: try row.blob(2),
            algorithm: Int(try row.int64(3)), signCount: signCount, aaguid: try row.string(5),
            providerName: try row.optionalString(6), transports: try Transports.decode(try row.string(7)),
            backupEligible: try row.bool(8), backupState: try row.bool(9),
            attestationFormat: try row.string(10), attestationType: try row.string(11),
            attestationTrusted: try row.bool(12), name: try row.string(13), createdAt: try row.date(14),
            lastUsedAt: try row.optionalDate(15))
    }

    /// Inserts a passkey inside a caller's transaction (sign-up, enrollment-token redemption).
    static func insert(_ passkey: StoredPasskey, on connection: any SQLConnection) throws {
        try connection.execute(
            """
            INSERT INTO passkeys (\(StoreSQL.passkeyColumns))
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)
            """,
            [
                passkey.credentialID, passkey.userID, passkey.publicKey, passkey.algorithm,
                Int64(passkey.signCount), passkey.aaguid, passkey.providerName,
                Transports.encode(passkey.transports), passkey.backupEligible,
                passkey.backupState, passkey.attestationFormat, passkey.attestationType,
                passkey.attestationTrusted, passkey.name, passkey.createdAt, passkey.lastUsedAt,
            ])
    }

    public func insertPasskey(_ passkey: StoredPasskey, record: ChangeRecord) throws {
        try write(record) { try Self.insert(passkey, on: $0) }
    }

    public func passkey(credentialID: [UInt8]) throws -> StoredPasskey? {
        // One seek of the primary key's index, through a cached statement; its callers (the
        // registration's duplicate check, a rename, the admin API) write next, so it reads on the
        // writer's warm cache when it can.
        try engine.pointRead { connection in
            try connection.queryFirst(
                "SELECT \(StoreSQL.passkeyColumns) FROM passkeys WHERE credential_id = ?1",
                [credentialID], Self.passkey)
        }
    }

    public func passkeyWithOwner(credentialID: [UInt8]) throws -> (passkey: StoredPasskey, owner: User)? {
        // One statement, so one read transaction (one WAL read lock, one check of the page cache)
        // instead of two: a seek of the passkeys' key, then of the users' key for the owner.
        try engine.pointRead { connection in
            try connection.queryFirst(StoreSQL.passkeyWithOwnerSQL, [credentialID]) { row in
                (
                    passkey: try Self.passkey(row),
                    owner: try Self.user(row.shifted(by: StoreSQL.passkeyColumnCount))
                )
            }
        }
    }

    public func passkeys(userID: String) throws -> [StoredPasskey] {
        // The (user_id, created_at) index yields them in order; the credential id breaks ties.
        try engine.read { connection in
            try connection.query(
                """
                SELECT \(StoreSQL.passkeyColumns) FROM passkeys WHERE user_id = ?1
                ORDER BY created_at, credential_id
                """, [userID], Self.passkey)
        }
    }

    public func credentialIDs(userID: String) throws -> [[UInt8]] {
        try engine.pointRead { try Self.credentialIDs(userID: userID, on: $0) }
    }

    /// The credential ids of the user's passkeys, in `passkeys(userID:)`'s order.
    static func credentialIDs(userID: String, on connection: any SQLConnection) throws -> [[UInt8]] {
        try connection.query(
            "SELECT credential_id FROM passkeys WHERE user_id = ?1 ORDER BY created_at, credential_id",
            [userID]
        ) { try $0.blob(0) }
    }

    public func passkeyCount(userID: String) throws -> Int {
        try engine.read { connection in
            Int(
                try connection.queryFirst(
                    "SELECT count(*) FROM passkeys WHERE user_id = ?1", [userID]
                ) { try $0.int64(0) } ?? 0)
        }
    }

    public func renamePasskey(credentialID: [UInt8], userID: String, name: String) throws -> Bool {
        // The owner is part of the key, so nobody renames another user's passkey.
        try engine.write { connection in
            let changed = try connection.execute(
                "UPDATE passkeys SET name = ?3 WHERE credential_id = ?1 AND user_id = ?2",
                [credentialID, userID, name])
            return changed > 0
        }
    }

    public func deletePasskey(credentialID: [UInt8], userID: String, record: ChangeRecord) throws -> Bool {
        try write(recording: { $0 ? record : .none }) { connection in
            let changed = try connection.execute(
                "DELETE FROM passkeys WHERE credential_id = ?1 AND user_id = ?2",
                [credentialID, userID])
            return changed > 0
        }
    }

    public func deletePasskeyUnlessLast(credentialID: [UInt8], userID: String, record: ChangeRecord) throws
        -> PasskeyDeletion
    {
        // One statement decides and deletes; the write lock makes the count and the delete one
        // step, so racing deletions of a user's last two passkeys cannot both succeed.
        try write(recording: { $0 == .deleted ? record : .none }) { connection in
            let changed = try connection.execute(
                """
                DELETE FROM passkeys WHERE credential_id = ?1 AND user_id = ?2
                  AND (SELECT count(*) FROM passkeys WHERE user_id = ?2) > 1
                """, [credentialID, userID])
            if changed > 0 { return .deleted }
            // Tell the two refusals apart only on the slow path.
            let owned =
                try connection.queryFirst(
                    "SELECT 1 FROM passkeys WHERE credential_id = ?1 AND user_id = ?2",
                    [credentialID, userID]
                ) { _ in true } ?? false
            return owned ? .lastPasskey : .notFound
        }
    }

    public func recordPasskeyUse(
        credentialID: [UInt8], signCount: UInt32, backupState: Bool, at: Date
    ) throws {
        try engine.write { connection in
            try Self.recordPasskeyUse(
                credentialID: credentialID, signCount: signCount, backupState: backupState, at: at,
                on: connection)
        }
    }

    fileprivate static func recordPasskeyUse(
        credentialID: [UInt8], signCount: UInt32, backupState: Bool, at: Date,
        on connection: any SQLConnection
    ) throws {
        // Only forwards: racing logins with one passkey must not move the counter or the time
        // back. CASE, because SQLite's two-argument max() is PostgreSQL's GREATEST().
        let changed = try connection.execute(
            """
            UPDATE passkeys SET
              sign_count = CASE WHEN sign_count > ?2 THEN sign_count ELSE ?2 END,
              backup_state = ?3,
              last_used_at = CASE WHEN last_used_at > ?4 THEN last_used_at ELSE ?4 END
            WHERE credential_id = ?1
            """, [credentialID, Int64(signCount), backupState, at])
        guard changed > 0 else { throw StorageError(.notFound, "no such passkey") }
    }

    public func createUser(
        _ user: User, firstPasskey: StoredPasskey, session: Session?, record: ChangeRecord
    ) throws {
        guard firstPasskey.userID == user.id, session.map({ $0.userID == user.id }) ?? true else {
            throw StorageError(.invalidArgument, "the first passkey and session must belong to the new user")
        }
        // One transaction: when the passkey is refused, the user is rolled back with it.
        try write(record) { connection in
            try Self.insert(user, on: connection)
            try Self.insert(firstPasskey, on: connection)
            if let session { try Self.insert(session, on: connection) }
        }
    }
}

extension SQLStore: ChallengeStore {

    fileprivate static func challenge(_ row: any SQLRow) throws -> StoredChallenge {
        guard let purpose = ChallengePurpose(rawValue: try row.string(2)) else {
            // The CHECK constraint allows only the known purposes.
            throw StorageError(.corrupt, "a challenge has an unknown purpose")
        }
        return StoredChallenge(
            id: try row.string(0), challenge: try row.blob(1), purpose: purpose,
            userID: try row.optionalString(3), username: try row.optionalString(4),
            displayName: try row.optionalString(5), userHandle: try row.optionalBlob(6),
            createdAt: try row.date(7), expiresAt: try row.date(8), conditional: try row.bool(9))
    }

    public func insertChallenge(_ challenge: StoredChallenge) throws {
        try engine.write { connection in
            try connection.execute(
                """
                INSERT INTO challenges (\(StoreSQL.challengeColumns))
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                """,
                [
                    challenge.id, challenge.challenge, challenge.purpose.rawValue,
                    challenge.userID, challenge.username, challenge.displayName,
                    challenge.userHandle, challenge.createdAt, challenge.expiresAt, challenge.conditional,
                ])
        }
    }

    public func consumeChallenge(id: String, purpose: ChallengePurpose, at now: Date) throws
        -> StoredChallenge?
    {
        try engine.write { try Self.consumeChallenge(id: id, purpose: purpose, at: now, on: $0) }
    }

    fileprivate static func consumeChallenge(
        id: String, purpose: ChallengePurpose, at now: Date, on connection: any SQLConnection
    ) throws -> StoredChallenge? {
        // DELETE … RETURNING removes and reads in one statement under the write lock, so of two
        // racing consumers exactly one gets the row. It goes whatever its purpose or expiry: a
        // challenge is good for one attempt (see ChallengeStore).
        let consumed = try connection.queryFirst(
            "DELETE FROM challenges WHERE id = ?1 RETURNING \(StoreSQL.challengeColumns)", [id], challenge)
        return consumed.flatMap { Self.accepts($0, purpose: purpose, at: now) ? $0 : nil }
    }

    /// Whether `challenge` is still good for `purpose` at `now`.
    private static func accepts(_ challenge: StoredChallenge, purpose: ChallengePurpose, at now: Date) -> Bool
    {
        challenge.purpose == purpose && challenge.expiresAt > now.storagePrecision
    }

    public func challenge(id: String, purpose: ChallengePurpose, at now: Date) throws -> StoredChallenge? {
        let found = try engine.read { connection in
            try connection.queryFirst(
                "SELECT \(StoreSQL.challengeColumns) FROM challenges WHERE id = ?1", [id], Self.challenge)
        }
        return found.flatMap { Self.accepts($0, purpose: purpose, at: now) ? $0 : nil }
    }

    public func purgeChallenges(expiredBefore now: Date) throws -> Int {
        // The expires_at index (the key, for used sealed ones) finds them; <= matches what
        // consumeChallenge and useSealedChallenge refuse as expired.
        let stored = try purgeInChunks { connection in
            try connection.execute(
                """
                DELETE FROM challenges WHERE id IN
                (SELECT id FROM challenges WHERE expires_at <= ?1 LIMIT \(Self.purgeChunk))
                """, [now])
        }
        // A range from the front of the key: up to the expiry of the chunk's last row (all of
        // them when fewer are left), so ties at that expiry go in the same chunk.
        let used = try purgeInChunks { connection in
            try connection.execute(
                """
                DELETE FROM used_challenges WHERE expires_at <= ?1 AND expires_at <= coalesce(
                (SELECT expires_at FROM used_challenges WHERE expires_at <= ?1
                ORDER BY expires_at LIMIT 1 OFFSET \(Self.purgeChunk - 1)), ?1)
                """, [now])
        }
        return stored + used
    }

    public func useSealedChallenge(_ challenge: [UInt8], expiresAt: Date, at now: Date) throws -> Bool {
        try engine.write {
            try Self.useSealedChallenge(challenge, expiresAt: expiresAt, at: now, on: $0)
        }
    }

    /// Records the use inside a caller's transaction; false when used before or expired.
    fileprivate static func useSealedChallenge(
        _ challenge: [UInt8], expiresAt: Date, at now: Date, on connection: any SQLConnection
    ) throws -> Bool {
        guard expiresAt.storagePrecision > now.storagePrecision else { return false }
        // The primary key decides under the write lock: of racing uses exactly one inserts.
        let changed = try connection.execute(
            "INSERT INTO used_challenges (expires_at, challenge) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            [expiresAt, challenge])
        return changed > 0
    }

    public func challengeCount() throws -> Int {
        try engine.read { connection in
            Int(try connection.queryFirst("SELECT count(*) FROM challenges") { try $0.int64(0) } ?? 0)
        }
    }
}

/// The JSON form of a passkey's transports: a compact array of strings.
enum Transports {
    static func encode(_ transports: [String]) -> String {
        var writer = JSONWriter()
        writer.array { array in
            for transport in transports { array.string(transport) }
        }
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    static func decode(_ text: String) throws -> [String] {
        // Read on every login: transports are short plain tokens ("internal", "hybrid"), so the
        // form this store writes for them is parsed directly; anything else (escapes) goes
        // through Foundation's decoder.
        if let plain = plainStrings(text) { return plain }
        guard let transports = try? JSONDecoder().decode([String].self, from: Data(text.utf8))
        else {
            throw StorageError(.corrupt, "stored passkey transports are not a JSON array of strings")
        }
        return transports
    }

    /// `["a","b"]` exactly as `encode` writes strings without escapes; nil for anything else.
    private static func plainStrings(_ text: String) -> [String]? {
        var utf8 = Substring(text).utf8
        guard utf8.first == UInt8(ascii: "["), utf8.last == UInt8(ascii: "]") else { return nil }
        utf8 = utf8.dropFirst().dropLast()
        if utf8.isEmpty { return [] }
        var values: [String] = []
        for element in utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            guard element.count >= 2, element.first == UInt8(ascii: "\""), element.last == UInt8(ascii: "\"")
            else { return nil }
            let inner = element.dropFirst().dropLast()
            guard
                !inner.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") })
            else { return nil }
            values.append(String(decoding: inner, as: UTF8.self))
        }
        return values
    }
}

extension SQLStore: PasskeyLoginStore {
    public func commitPasskeyLogin(_ record: PasskeyLoginRecord) async throws -> [[UInt8]]? {
        // Encoded before taking the write lock: the writer does only SQL.
        let details = AuditDetails.encode(record.event.details)
        return try await engine.writeAsync { connection in
            switch record.challenge {
            case .stored(let id):
                guard try Self.consumeChallenge(id: id, purpose: .login, at: record.at, on: connection) != nil
                else { return nil }
            case .sealed(let challenge, let expiresAt):
                guard
                    try Self.useSealedChallenge(
                        challenge, expiresAt: expiresAt, at: record.at, on: connection)
                else { return nil }
            }
            try Self.recordPasskeyUse(
                credentialID: record.credentialID, signCount: record.signCount,
                backupState: record.backupState, at: record.at, on: connection)
            try Self.insert(record.session, on: connection)
            if let replaced = record.replacedSessionID {
                try Self.endReplacedSession(
                    replaced, at: record.at, outbox: record.replacedSessionOutbox, on: connection)
            }
            _ = try Self.insert(record.event, details: details, on: connection)
            // A range of one index that holds the ids (migration 17): cheaper here than a read
            // transaction of its own after the commit (its locks, a connection from the pool).
            return try Self.credentialIDs(userID: record.session.userID, on: connection)
        }
    }
}

extension SQLStore {
    public func commitPasskeyReauthentication(_ record: PasskeyReauthenticationRecord) throws -> Bool {
        let details = AuditDetails.encode(record.event.details)
        return try engine.write { connection in
            guard
                try Self.recordAuthentication(
                    sessionIDs: record.sessionIDs, userID: record.userID, at: record.at, on: connection)
            else { return false }
            // A throw here rolls the proof back with it.
            try Self.recordPasskeyUse(
                credentialID: record.credentialID, signCount: record.signCount,
                backupState: record.backupState, at: record.at, on: connection)
            _ = try Self.insert(record.event, details: details, on: connection)
            return true
        }
    }
}

/// The column lists and statements the stores above share.
extension StoreSQL {
    static let userColumns =
        "id, username, display_name, created_at, disabled_at, user_handle"

    fileprivate static let sessionColumns = """
        id, user_id, token_hash, client_kind, auth_method, created_at, last_seen_at, expires_at, \
        revoked_at, user_agent, ip_address, authenticated_at
        """

    static let passkeyColumns = """
        credential_id, user_id, public_key, algorithm, sign_count, aaguid, provider_name, \
        transports, backup_eligible, backup_state, attestation_format, attestation_type, \
        attestation_trusted, name, created_at, last_used_at
        """

    /// `columns`, each qualified by `table` (for a JOIN).
    private static func qualified(_ columns: String, _ table: String) -> String {
        columns.split(separator: ",").map { "\(table).\($0.trimmingWhitespace())" }
            .joined(separator: ", ")
    }

    /// The passkey's columns, then its owner's, each qualified by its table.
    fileprivate static let passkeyWithOwnerSQL = """
        SELECT \(qualified(passkeyColumns, "p")), \(qualified(userColumns, "u"))
        FROM passkeys AS p JOIN users AS u ON u.id = p.user_id WHERE p.credential_id = ?1
        """

    /// How many columns `passkeyColumns` names.
    fileprivate static let passkeyColumnCount = Int32(passkeyColumns.split(separator: ",").count)

    /// The session's columns, then its owner's, each qualified by its table.
    fileprivate static let sessionWithOwnerSQL = """
        SELECT \(qualified(sessionColumns, "s")), \(qualified(userColumns, "u"))
        FROM sessions AS s JOIN users AS u ON u.id = s.user_id WHERE s.token_hash = ?1
        """

    /// How many columns `sessionColumns` names.
    fileprivate static let sessionColumnCount = Int32(sessionColumns.split(separator: ",").count)

    fileprivate static let challengeColumns = """
        id, challenge, purpose, user_id, username, display_name, user_handle, created_at, expires_at,
        conditional
        """
}
