import FoundationEssentials

/// Moves a deployment from SQLite to PostgreSQL: every row of a SQLite database into an empty
/// PostgreSQL database, in one PostgreSQL transaction, checked table by table before it commits.
///
/// Both schemas hold the same tables and columns; only the kinds differ (SQLite keeps times as
/// integer milliseconds since 1970 and flags as 0 or 1, PostgreSQL as `timestamptz` and
/// `boolean`). `tables` declares each column's kind once, so every table is copied by the same
/// code, and the copy refuses to run when either database has a table or a column that list
/// does not name: a later migration that forgets to extend it fails loudly instead of leaving
/// data behind.
public enum StorageCopy {
    /// How many rows of one table were copied.
    public struct CopiedTable: Sendable, Equatable {
        /// The table's name, as both schemas spell it.
        public let name: String
        /// The rows copied, which the target was checked to hold before the commit.
        public let rows: Int
    }

    /// How a column's value is kept on each engine, which decides how it is read from SQLite and
    /// bound for PostgreSQL.
    enum Kind {
        /// `TEXT` on both.
        case text
        /// `INTEGER` / `bigint`.
        case integer
        /// `BLOB` / `bytea`.
        case bytes
        /// `INTEGER` 0 or 1 / `boolean`.
        case flag
        /// `INTEGER` milliseconds since 1970 / `timestamptz`.
        case time
        /// `TEXT` checked by `json_valid` / `json`, bound as text for the server to parse.
        case json
    }

    /// One table: its name and columns with their kinds.
    struct Table {
        let name: String
        let columns: [(name: String, kind: Kind)]

        init(_ name: String, _ columns: KeyValuePairs<String, Kind>) {
            self.name = name
            self.columns = columns.map { (name: $0.key, kind: $0.value) }
        }

        var columnList: String { columns.map(\.name).joined(separator: ", ") }
    }

    /// Every data table of the schema versions below (`sqliteSchemaVersion`,
    /// `postgreSQLSchemaVersion`), parents before the tables whose foreign keys point at them
    /// (users first).
    static let tables: [Table] = [
        Table(
            "users",
            [
                "id": .text, "username": .text, "display_name": .text, "created_at": .time,
                "disabled_at": .time, "user_handle": .bytes,
            ]),
        Table(
            "sessions",
            [
                "id": .text, "user_id": .text, "token_hash": .bytes, "client_kind": .text,
                "auth_method": .text, "created_at": .time, "last_seen_at": .time, "expires_at": .time,
                "revoked_at": .time, "user_agent": .text, "ip_address": .text, "authenticated_at": .time,
            ]),
        Table(
            "session_step_ups",
            [
                "session_id": .text, "signed_at": .time, "valid_until": .time, "user_visible_text": .text,
            ]),
        Table(
            "bankid_signatures",
            [
                "id": .text, "user_id": .text, "session_id": .text, "signed_at": .time,
                "user_visible_text": .text, "signature_sha256": .bytes, "signature": .text,
                "ocsp_response": .text, "bankid_issue_date": .text, "mrtd": .flag, "risk": .text,
            ]),
        Table(
            "passkeys",
            [
                "credential_id": .bytes, "user_id": .text, "public_key": .bytes, "algorithm": .integer,
                "sign_count": .integer, "aaguid": .text, "provider_name": .text, "transports": .json,
                "backup_eligible": .flag, "backup_state": .flag, "attestation_format": .text,
                "attestation_type": .text, "attestation_trusted": .flag, "name": .text, "created_at": .time,
                "last_used_at": .time,
            ]),
        Table(
            "enrollment_tokens",
            [
                "id": .text, "user_id": .text, "token_hash": .bytes, "purpose": .text, "created_by": .text,
                "created_at": .time, "expires_at": .time, "used_at": .time, "binding_hash": .bytes,
            ]),
        Table("enrollment_challenges", ["challenge_id": .text, "token_id": .text]),
        Table(
            "bankid_identities",
            ["user_id": .text, "key_id": .text, "digest": .bytes, "name": .text, "linked_at": .time]),
        Table(
            "bankid_flows",
            [
                "id_hash": .bytes, "order_ref": .text, "intent": .text, "same_device": .flag,
                "client_kind": .text, "binding_hash": .bytes, "user_id": .text, "session_id": .text,
                "return_nonce": .text, "user_visible_text": .text, "created_at": .time, "consumed_at": .time,
                "outcome": .text,
            ]),
        Table("review_accounts", ["user_id": .text, "created_at": .time]),
        Table(
            "webhook_events",
            ["id": .text, "type": .text, "occurred_at": .time, "payload": .text, "created_at": .time]),
        Table(
            "webhook_deliveries",
            [
                "id": .text, "event_id": .text, "endpoint": .text, "state": .text, "attempts": .integer,
                "next_attempt_at": .time, "give_up_at": .time, "lease_owner": .text, "lease_until": .time,
                "last_attempt_at": .time, "last_status": .integer, "last_error": .text, "delivered_at": .time,
                "created_at": .time,
            ]),
        Table(
            "bankid_phone_verifications",
            [
                "id": .text, "order_ref": .text, "kind": .text, "user_id": .text, "call_initiator": .text,
                "stated_key_id": .text, "stated_digest": .bytes, "started_by": .text,
                "started_by_token_id": .text, "created_at": .time, "finished_at": .time, "outcome": .text,
                "hint_code": .text, "signature_received": .flag,
            ]),
        // The tables below have no foreign keys.
        Table(
            "audit_events",
            [
                "id": .integer, "at": .time, "action": .text, "actor": .text, "user_id": .text,
                "request_id": .text, "ip_address": .text, "details": .json,
            ]),
        Table("settings", ["key": .text, "value": .bytes, "updated_at": .time]),
        Table(
            "challenges",
            [
                "id": .text, "challenge": .bytes, "purpose": .text, "user_id": .text, "username": .text,
                "display_name": .text, "user_handle": .bytes, "created_at": .time, "expires_at": .time,
                "conditional": .flag,
            ]),
        Table(
            "bankid_orders",
            [
                "order_ref": .text, "kind": .text, "intent": .text, "started_at": .time,
                "qr_start_token": .text, "qr_start_secret": .text, "auto_start_token": .text,
                "end_user_ip": .text, "status": .text, "hint_code": .text, "last_collected_at": .time,
                "finished_at": .time, "completion": .json, "lease_owner": .text, "lease_expires_at": .time,
                "collect_failed_at": .time,
            ]),
        Table(
            "admin_tokens",
            [
                "id": .text, "name": .text, "scope": .text, "token_hash": .bytes, "created_at": .time,
                "expires_at": .time, "revoked_at": .time,
            ]),
        Table("used_challenges", ["expires_at": .time, "challenge": .bytes]),
        Table(
            "signing_keys",
            [
                "kid": .text, "algorithm": .text, "public_key": .bytes, "sealed_private_key": .bytes,
                "kek_id": .text, "created_at": .time, "activates_at": .time, "retired_at": .time,
                "publish_until": .time,
            ]),
    ]

    /// The SQLite and PostgreSQL schema versions whose tables `tables` describes.
    static let sqliteSchemaVersion = 17
    static let postgreSQLSchemaVersion = 10

    /// At most this many parameters go in one multi-row INSERT (PostgreSQL allows 65535): large
    /// enough that a million audit events take a few thousand round trips, small enough that each
    /// statement stays quick to plan.
    static let parametersPerInsert = 4096

    /// Copies every row of `source` into `target`, which must be migrated and hold no data.
    ///
    /// The target's tables are locked against other writers for the copy. Everything happens in
    /// one PostgreSQL transaction: the emptiness check, the inserts, a row count per table that
    /// must equal the rows read from SQLite, and the audit events' id sequence set past the
    /// highest copied id, so events written later continue the numbering. Any failure rolls all
    /// of it back, leaving the target as empty as it was. SQLite is read inside one read
    /// transaction, so the copy is one consistent snapshot even if a server still writes to the
    /// file (stop it first, or its later writes are not copied).
    /// - Returns: Each table with its row count, in copy order.
    /// - Throws: `storage.migration` when either database is not at the schema this copy knows,
    ///   `storage.conflict` when the target holds any row, `storage.internal` when a count after
    ///   the copy disagrees; errors from either engine name the table being copied.
    public static func copy(from source: SQLiteDatabase, to target: PostgreSQLDatabase) throws
        -> [CopiedTable]
    {
        try checkVersions(source: source, target: target)
        return try target.pool.transaction(.readCommitted, attempts: 1) { postgres in
            try checkTables(
                try postgres.query(postgreSQLColumnsSQL) { try $0.string(0) }, engine: "PostgreSQL")
            try postgres.exec(
                "LOCK TABLE \(tables.map(\.name).joined(separator: ", ")) IN SHARE ROW EXCLUSIVE MODE")
            try checkEmpty(postgres)
            return try source.read { sqlite in
                // One read transaction: every table from the same snapshot.
                try sqlite.exec("BEGIN")
                defer { try? sqlite.exec("COMMIT") }
                try checkTables(try sqlite.query(sqliteColumnsSQL) { try $0.string(0) }, engine: "SQLite")
                var copied: [CopiedTable] = []
                for table in tables {
                    do {
                        let rows = try copy(table, from: sqlite, to: postgres)
                        try verify(table, rows: rows, sqlite: sqlite, postgres: postgres)
                        copied.append(CopiedTable(name: table.name, rows: rows))
                    } catch let error as StorageError {
                        throw StorageError(error.code, "copying \(table.name): \(error.message)")
                    }
                }
                // The next id after the highest copied one (1 when there were none).
                _ = try postgres.queryFirst(
                    "SELECT setval(pg_get_serial_sequence('audit_events', 'id'), coalesce(max(id), 0) + 1, false) FROM audit_events"
                ) { try $0.int64(0) }
                return copied
            }
        }
    }

    /// Both databases must be at the schema versions `tables` was written for.
    private static func checkVersions(source: SQLiteDatabase, target: PostgreSQLDatabase) throws {
        // A release that adds a migration must extend `tables` and these versions with it.
        guard SQLiteDatabase.supportedSchemaVersion == sqliteSchemaVersion,
            PostgreSQLDatabase.supportedSchemaVersion == postgreSQLSchemaVersion
        else {
            throw StorageError(
                .internal,
                "storage copy knows SQLite schema \(sqliteSchemaVersion) and PostgreSQL schema \(postgreSQLSchemaVersion), but this Portvakt migrates to \(SQLiteDatabase.supportedSchemaVersion) and \(PostgreSQLDatabase.supportedSchemaVersion)"
            )
        }
        let sqliteVersion = try source.schemaVersion
        guard sqliteVersion == sqliteSchemaVersion else {
            throw StorageError(
                .migration,
                "the SQLite database is at schema version \(sqliteVersion); storage copy reads version \(sqliteSchemaVersion): run `portvakt migrate` on it first"
            )
        }
        let postgresVersion = try target.schemaVersion
        guard postgresVersion == postgreSQLSchemaVersion else {
            throw StorageError(
                .migration,
                "the PostgreSQL database is at schema version \(postgresVersion); storage copy writes version \(postgreSQLSchemaVersion)"
            )
        }
    }

    /// Every data column of the SQLite database, as `table.column`.
    private static let sqliteColumnsSQL = """
        SELECT m.name || '.' || c.name FROM sqlite_schema AS m, pragma_table_info(m.name) AS c
        WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name <> 'schema_migrations'
        """

    /// Every data column of the PostgreSQL database (its current schema), as `table.column`.
    private static let postgreSQLColumnsSQL = """
        SELECT (table_name || '.' || column_name)::text FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name <> 'schema_migrations'
        """

    /// Refuses a database with a data table or column that `tables` does not describe, or that
    /// lacks one it does; `columns` are the database's own, as `table.column`.
    private static func checkTables(_ columns: [String], engine: String) throws {
        let found = Set(columns)
        let declared = Set(tables.flatMap { table in table.columns.map { "\(table.name).\($0.name)" } })
        let unknown = found.subtracting(declared).sorted()
        let missing = declared.subtracting(found).sorted()
        guard unknown.isEmpty, missing.isEmpty else {
            var problems: [String] = []
            if !unknown.isEmpty {
                problems.append("has \(unknown.joined(separator: ", ")), which storage copy does not know")
            }
            if !missing.isEmpty { problems.append("lacks \(missing.joined(separator: ", "))") }
            throw StorageError(.migration, "the \(engine) schema \(problems.joined(separator: " and "))")
        }
    }

    /// Refuses a target holding any row in any data table, naming each such table and its count.
    private static func checkEmpty(_ postgres: PostgreSQLConnection) throws {
        var occupied: [String] = []
        for table in tables {
            let count = try postgres.queryFirst("SELECT count(*) FROM \(table.name)") { try $0.int64(0) } ?? 0
            if count > 0 { occupied.append("\(table.name): \(count)") }
        }
        guard occupied.isEmpty else {
            throw StorageError(
                .conflict,
                "the PostgreSQL database already holds data (\(occupied.joined(separator: ", "))); storage copy only fills an empty database"
            )
        }
    }

    /// Streams `table` from SQLite into PostgreSQL in multi-row INSERTs.
    /// - Returns: How many rows were read (and inserted).
    private static func copy(_ table: Table, from sqlite: Connection, to postgres: PostgreSQLConnection)
        throws
        -> Int
    {
        let width = table.columns.count
        let rowsPerInsert = max(1, parametersPerInsert / width)
        var batch: [SQLValue] = []
        batch.reserveCapacity(rowsPerInsert * width)
        var rows = 0
        func flush() throws {
            guard !batch.isEmpty else { return }
            let count = batch.count / width
            let tuples = (0..<count).map { row in
                "(" + (1...width).map { "$\(row * width + $0)" }.joined(separator: ", ") + ")"
            }
            let inserted = try postgres.execute(
                "INSERT INTO \(table.name) (\(table.columnList)) VALUES \(tuples.joined(separator: ", "))",
                batch)
            guard inserted == count else {
                throw StorageError(.internal, "PostgreSQL took \(inserted) of \(count) rows")
            }
            batch.removeAll(keepingCapacity: true)
        }
        try sqlite.withStatement("SELECT \(table.columnList) FROM \(table.name)") { statement in
            while try statement.step() {
                let row = Row(statement: statement.rawHandle)
                for (index, column) in table.columns.enumerated() {
                    batch.append(try value(row, Int32(index), column.kind, column: column.name))
                }
                rows += 1
                if batch.count >= rowsPerInsert * width { try flush() }
            }
        }
        try flush()
        return rows
    }

    /// Column `index` of a SQLite row as the value PostgreSQL's column of `kind` takes.
    private static func value(_ row: Row, _ index: Int32, _ kind: Kind, column: String) throws -> SQLValue {
        if row.isNull(index) { return .null }
        switch kind {
        case .text, .json: return .text(row.string(index))
        case .integer: return .integer(row.int64(index))
        case .bytes: return .bytes(row.blob(index))
        case .time: return .date(row.date(index))
        case .flag:
            let number = row.int64(index)
            // The CHECK constraints keep flags to 0 and 1; anything else was not written by Portvakt.
            guard number == 0 || number == 1 else {
                throw StorageError(.corrupt, "column \(column) holds \(number), not a flag (0 or 1)")
            }
            return .bool(number == 1)
        }
    }

    /// The target must now hold exactly the rows read, and as many as SQLite's snapshot has.
    private static func verify(_ table: Table, rows: Int, sqlite: Connection, postgres: PostgreSQLConnection)
        throws
    {
        let expected = try sqlite.queryFirst("SELECT count(*) FROM \(table.name)") { try $0.int64(0) } ?? -1
        let actual = try postgres.queryFirst("SELECT count(*) FROM \(table.name)") { try $0.int64(0) } ?? -1
        guard expected == rows, actual == rows else {
            throw StorageError(
                .internal,
                "SQLite has \(expected) rows and PostgreSQL \(actual) after copying \(rows); nothing was committed"
            )
        }
    }
}
