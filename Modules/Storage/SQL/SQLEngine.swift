import FoundationEssentials
public import Kernel

/// One row of a result, on either engine. Columns are 0-based; reading a column as the wrong
/// kind, or NULL as a value, throws `storage.internal` (it is a mistake in the SQL).
protocol SQLRow {
    /// Whether column `column` is NULL.
    func isNull(_ column: Int32) -> Bool
    func int64(_ column: Int32) throws -> Int64
    func double(_ column: Int32) throws -> Double
    func string(_ column: Int32) throws -> String
    func blob(_ column: Int32) throws -> [UInt8]
    func bool(_ column: Int32) throws -> Bool
    func date(_ column: Int32) throws -> Date
    /// This row with column `offset` as its column 0: a joined query reads each table's columns
    /// with that table's own decoder, shifted past the columns before them.
    func shifted(by offset: Int32) -> Self
}

extension SQLRow {
    func optionalInt64(_ column: Int32) throws -> Int64? { isNull(column) ? nil : try int64(column) }
    func optionalString(_ column: Int32) throws -> String? { isNull(column) ? nil : try string(column) }
    func optionalBlob(_ column: Int32) throws -> [UInt8]? { isNull(column) ? nil : try blob(column) }
    func optionalDate(_ column: Int32) throws -> Date? { isNull(column) ? nil : try date(column) }
}

/// A connection the stores' SQL runs on, inside a write transaction or as a reader.
///
/// The stores write one dialect for both engines: parameters as `?1`, `?2`, … (PostgreSQL's
/// connection rewrites them to `$1`, `$2`, …), `RETURNING` instead of last-insert ids (except
/// through `insertReturningID`), `CASE` instead of SQLite's two-argument `max`, and nothing else
/// that only one engine knows.
protocol SQLConnection {
    /// Runs a statement that returns no rows.
    /// - Returns: How many rows it inserted, updated or deleted.
    @discardableResult
    func execute(_ sql: String, _ arguments: [any SQLBindable]) throws -> Int

    /// Runs a query and maps every row with `transform`.
    func query<T>(_ sql: String, _ arguments: [any SQLBindable], _ transform: (any SQLRow) throws -> T) throws
        -> [T]

    /// Runs a query and maps its first row, or returns nil when it has none.
    func queryFirst<T>(_ sql: String, _ arguments: [any SQLBindable], _ transform: (any SQLRow) throws -> T)
        throws
        -> T?

    /// Runs an INSERT of one row (without a RETURNING clause) into a table whose `id` column is
    /// its integer key, and returns the new row's `id`: PostgreSQL appends `RETURNING id`; SQLite
    /// reads the connection's last insert rowid, because its RETURNING first copies the result
    /// into a table of its own (about 25,000 instructions per insert, measured on the audit row
    /// every sign-in writes).
    func insertReturningID(_ sql: String, _ arguments: [any SQLBindable]) throws -> Int64
}

extension SQLConnection {
    @discardableResult
    func execute(_ sql: String) throws -> Int { try execute(sql, []) }

    func query<T>(_ sql: String, _ transform: (any SQLRow) throws -> T) throws -> [T] {
        try query(sql, [], transform)
    }

    func queryFirst<T>(_ sql: String, _ transform: (any SQLRow) throws -> T) throws -> T? {
        try queryFirst(sql, [], transform)
    }
}

/// An open database, on either engine: what a `SQLStore` runs its SQL on, and what the server
/// and the CLI do with the database as a whole (health, migrations, metrics, maintenance).
///
/// `write` gives the body a transaction that behaves as if write transactions ran one after
/// another (SQLite's single writer; PostgreSQL's SERIALIZABLE, retried on a serialization
/// failure), so a store may read, decide and write in one body. `read` sees the latest commit.
public enum StorageEngine: Sendable {
    case sqlite(SQLiteDatabase)
    case postgresql(PostgreSQLDatabase)

    /// "sqlite" or "postgresql", as `storage.engine` names it.
    public var name: String {
        switch self {
        case .sqlite: "sqlite"
        case .postgresql: "postgresql"
        }
    }

    /// The open database as the operations both engines share.
    private var database: any EngineOperations {
        switch self {
        case .sqlite(let database): database
        case .postgresql(let database): database
        }
    }

    /// The newest schema version this binary knows for this engine.
    public var supportedSchemaVersion: Int { database.supportedSchemaVersion }

    /// The schema version the database is at.
    public var schemaVersion: Int {
        get throws { try database.schemaVersion }
    }

    /// Applies every migration the database lacks and returns them.
    @discardableResult
    public func migrate() throws -> [AppliedMigration] { try database.migrate() }

    /// The migrations recorded in the database, oldest first.
    public func appliedMigrations() throws -> [AppliedMigration] { try database.appliedMigrations() }

    /// A cheap read that proves the database answers, for `/health/ready`.
    public func checkHealth() throws { try database.checkHealth() }

    /// How long write transactions take from call to commit, for the metrics endpoint.
    public var writeLatency: LatencyHistogram { database.writeLatency }

    /// Runs `body` unless another instance sharing the database runs the job named `job` right
    /// now, so periodic maintenance runs on one instance at a time. SQLite's file has one
    /// server, so there it always runs.
    /// - Returns: false when another instance held the job and `body` did not run.
    public func runAlone(job: String, _ body: () throws -> Void) throws -> Bool {
        switch self {
        case .sqlite:
            try body()
            return true
        case .postgresql(let database): return try database.runAlone(job: job, body)
        }
    }

    /// Closes every connection; later calls throw `storage.closed`.
    public func close() { database.close() }

    /// Runs `body` in a write transaction and commits it; rolls back when it throws. The body
    /// may run more than once (PostgreSQL retries), so it must do nothing but SQL.
    @discardableResult
    func write<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        switch self {
        case .sqlite(let database): try database.write { try body($0) }
        case .postgresql(let database): try database.write { try body($0) }
        }
    }

    /// `write` for a caller that must not block its thread. SQLite suspends it until the group
    /// commit that includes it (`GroupCommit.writeAsync`); PostgreSQL's client library has no
    /// such wait, so there it is `write`, blocking as every other PostgreSQL call does.
    func writeAsync<T: Sendable>(_ body: @escaping @Sendable (any SQLConnection) throws -> T) async throws
        -> T
    {
        switch self {
        case .sqlite(let database): try await database.writeAsync { try body($0) }
        case .postgresql(let database): try database.write { try body($0) }
        }
    }

    /// Runs `body` on a connection outside any write transaction.
    func read<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        switch self {
        case .sqlite(let database): try database.read { try body($0) }
        case .postgresql(let database): try database.read { try body($0) }
        }
    }

    /// `read` for a short read of a few rows by key on a request's hot path; on SQLite it may
    /// run on the idle writer, whose page cache survives commits (`SQLiteDatabase.pointRead`).
    func pointRead<T>(_ body: (any SQLConnection) throws -> T) throws -> T {
        switch self {
        case .sqlite(let database): try database.pointRead { try body($0) }
        case .postgresql(let database): try database.read { try body($0) }
        }
    }
}

/// What the server and the CLI do with either engine's database as a whole; both classes have
/// these under the same names, so `StorageEngine` forwards them without a switch each.
protocol EngineOperations: Sendable {
    var supportedSchemaVersion: Int { get }
    var schemaVersion: Int { get throws }
    func migrate() throws -> [AppliedMigration]
    func appliedMigrations() throws -> [AppliedMigration]
    func checkHealth() throws
    var writeLatency: LatencyHistogram { get }
    func close()
}

extension SQLiteDatabase: EngineOperations {
    var supportedSchemaVersion: Int { Self.supportedSchemaVersion }
}

extension PostgreSQLDatabase: EngineOperations {
    var supportedSchemaVersion: Int { Self.supportedSchemaVersion }
}

/// The stores' SQL texts: column lists and statements that several queries share.
enum StoreSQL {}
