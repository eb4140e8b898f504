import FoundationEssentials
public import Kernel

/// A PostgreSQL database that several Portvakt instances share: a fixed pool of connections,
/// write transactions that behave as if they ran one at a time, and migrations that exactly one
/// of several instances starting at once applies.
///
/// Every write runs SERIALIZABLE. The stores read, decide and write in one transaction and were
/// written for SQLite's single writer; SERIALIZABLE gives them the same guarantee with writers on
/// many connections and many machines, at the price of a serialization failure now and then,
/// which the transaction retries (a bounded number of times) from the start. Reads run outside
/// any transaction and see the latest commit, as SQLite's readers do.
public final class PostgreSQLDatabase: Sendable {
    /// How the database is opened.
    public struct Configuration: Sendable {
        /// Where the server is and how to reach it.
        public var connection: PostgreSQLConfiguration
        /// How many connections the pool holds; every request that touches storage takes one for
        /// the length of one transaction or read.
        public var poolSize: Int
        /// How long a request waits for a free connection before `storage.timeout`.
        public var poolWaitTimeout: Duration
        /// How many times a write transaction runs at most when it keeps colliding with others.
        public var transactionAttempts: Int
        /// Whether opening applies missing migrations (the default); `false` for tools that only
        /// look, such as `portvakt migrate --status`.
        public var migrateOnOpen: Bool
        /// How long migrating may take, waiting for another instance's migration included: longer
        /// than a request's statement timeout, since a step may build an index on a large table.
        public var migrationTimeout: Duration

        public init(
            connection: PostgreSQLConfiguration, poolSize: Int = 10, poolWaitTimeout: Duration = .seconds(5),
            transactionAttempts: Int = 8, migrateOnOpen: Bool = true,
            migrationTimeout: Duration = .seconds(900)
        ) {
            self.connection = connection
            self.poolSize = poolSize
            self.poolWaitTimeout = poolWaitTimeout
            self.transactionAttempts = transactionAttempts
            self.migrateOnOpen = migrateOnOpen
            self.migrationTimeout = migrationTimeout
        }
    }

    /// The newest schema version this binary knows.
    public static var supportedSchemaVersion: Int { Migration.postgreSQL.last?.version ?? 0 }

    /// The advisory lock key that serialises migrations across instances (the bytes of
    /// "portvakt" read as a number, so no other application's key collides by accident).
    static let migrationLockKey: Int64 = 0x706f_7274_7661_6b74

    /// How it was opened.
    public let configuration: Configuration
    /// How long each `write` took from call to commit (waiting for a connection and retries
    /// included), for the metrics endpoint.
    public let writeLatency = LatencyHistogram()
    /// Where the server is, as `host:port`, for messages.
    public var endpoint: String { configuration.connection.endpoint }

    let pool: PostgreSQLConnectionPool
    private let migrations: [Migration]
    private let clock: any WallClock

    /// Connects the pool (every connection now, so a wrong address, password or server release is
    /// a start-up error), and migrates unless configured not to.
    /// - Throws: `storage.unavailable` naming host and port when the server cannot be reached,
    ///   `storage.unsupported_server` for a server older than PostgreSQL 13, `storage.migration`
    ///   when the database's schema is newer than this binary or a step fails.
    public convenience init(configuration: Configuration, clock: any WallClock = SystemClock()) throws {
        try self.init(configuration: configuration, clock: clock, migrations: Migration.postgreSQL)
    }

    /// Opens the database with an explicit migration list (tests add steps to it).
    init(configuration: Configuration, clock: any WallClock, migrations: [Migration]) throws {
        guard configuration.transactionAttempts >= 1 else {
            throw StorageError(.invalidArgument, "a transaction needs at least one attempt")
        }
        // Maintenance holds one connection for its lock while its work runs on another.
        guard configuration.poolSize >= 2 else {
            throw StorageError(.invalidArgument, "a PostgreSQL pool needs at least 2 connections")
        }
        try Migration.validate(migrations)
        self.configuration = configuration
        self.migrations = migrations
        self.clock = clock
        pool = try PostgreSQLConnectionPool(
            configuration: configuration.connection, size: configuration.poolSize,
            waitTimeout: configuration.poolWaitTimeout)
        do {
            if configuration.migrateOnOpen {
                _ = try migrate()
            } else {
                try checkWithoutWriting()
            }
        } catch {
            pool.close()
            throw error
        }
    }

    deinit { pool.close() }

    // MARK: Transactions

    /// Runs `body` in a SERIALIZABLE transaction on a pooled connection and commits it; rolls back
    /// when it throws. A serialization failure or deadlock runs `body` again from the start, up to
    /// `transactionAttempts` times, so `body` must do nothing but SQL.
    func write<T>(_ body: (PostgreSQLConnection) throws -> T) throws -> T {
        let start = LatencyHistogram.now()
        defer { writeLatency.record(nanoseconds: LatencyHistogram.now() &- start) }
        return try pool.transaction(.serializable, attempts: configuration.transactionAttempts, body)
    }

    /// Runs `body` on a pooled connection outside any transaction: each statement sees the latest
    /// commit.
    func read<T>(_ body: (PostgreSQLConnection) throws -> T) throws -> T {
        try pool.withConnection(body)
    }

    // MARK: Migrations

    /// Applies every migration the database lacks, each in its own transaction, and returns them.
    ///
    /// Under a session advisory lock: of several instances starting at once, one migrates and the
    /// others wait, then find nothing left to do. The lock ends with the session, so an instance
    /// killed mid-migration does not leave it held (its open step is rolled back by the server).
    /// - Throws: `StorageError(.migration)` when a step fails (that step is rolled back) or the
    ///   database is newer than this binary.
    @discardableResult
    public func migrate() throws -> [AppliedMigration] {
        try withMigrationLock { connection in
            try Migration.checkHistory(on: connection, knowing: migrations)
            var applied: [AppliedMigration] = []
            for migration in migrations where migration.version > (try Self.currentVersion(connection)) {
                let now = clock.now().storagePrecision
                try connection.transaction(.readCommitted, attempts: 1) { connection in
                    do throws(StorageError) {
                        try connection.exec(migration.sql)
                    } catch {
                        throw StorageError(
                            .migration,
                            "migration \(migration.version) (\(migration.name)) failed: \(error.message)")
                    }
                    try connection.execute(
                        "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
                        [migration.version, migration.name, now])
                }
                applied.append(
                    AppliedMigration(version: migration.version, name: migration.name, appliedAt: now))
            }
            return applied
        }
    }

    /// The schema version the database is at (0 before the first migration).
    public var schemaVersion: Int {
        get throws {
            try read { connection in
                try Self.isMigrated(connection) ? try Self.currentVersion(connection) : 0
            }
        }
    }

    /// The migrations recorded in the database, oldest first.
    public func appliedMigrations() throws -> [AppliedMigration] {
        try read { connection in
            guard try Self.isMigrated(connection) else { return [] }
            return try connection.query(
                "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
            ) {
                AppliedMigration(
                    version: Int(try $0.int64(0)), name: try $0.string(1), appliedAt: try $0.date(2))
            }
        }
    }

    /// Runs `body` on one connection holding the migration lock, with the bookkeeping table made.
    /// Waiting for the lock and the steps themselves get the migration timeout, not a request's.
    private func withMigrationLock<T>(_ body: (PostgreSQLConnection) throws -> T) throws -> T {
        try pool.withConnection { connection in
            try connection.withStatementTimeout(configuration.migrationTimeout) {
                try connection.execute("SELECT pg_advisory_lock($1)", [Self.migrationLockKey])
                defer {
                    _ = try? connection.execute("SELECT pg_advisory_unlock($1)", [Self.migrationLockKey])
                }
                try connection.exec(Migration.postgreSQLBookkeeping)
                return try body(connection)
            }
        }
    }

    /// Refuses a schema this binary does not know, writing nothing (a standby accepts it): with no
    /// bookkeeping table yet the database is simply unmigrated.
    private func checkWithoutWriting() throws {
        try read { connection in
            if try Self.isMigrated(connection) {
                try Migration.checkHistory(on: connection, knowing: migrations)
            }
        }
    }

    /// Whether the bookkeeping table exists (a database never migrated has none).
    private static func isMigrated(_ connection: PostgreSQLConnection) throws -> Bool {
        try connection.queryFirst("SELECT to_regclass('schema_migrations') IS NOT NULL") { try $0.bool(0) }
            == true
    }

    private static func currentVersion(_ connection: PostgreSQLConnection) throws -> Int {
        Int(
            try connection.queryFirst("SELECT coalesce(max(version), 0)::bigint FROM schema_migrations") {
                try $0.int64(0)
            } ?? 0)
    }

    // MARK: Operations

    /// A cheap read that proves the server answers and the schema is readable, for `/health/ready`.
    public func checkHealth() throws {
        _ = try schemaVersion
    }

    /// Runs `body` only when no other instance is running the job named `job` right now: the
    /// caller holds a session advisory lock on one pooled connection while `body` runs on others
    /// (so the pool needs at least two). The lock ends with the session, so an instance that dies
    /// mid-job frees it.
    /// - Returns: false when another instance held the job, so `body` did not run.
    func runAlone(job: String, _ body: () throws -> Void) throws -> Bool {
        try pool.withConnection { connection in
            let key: [any SQLBindable] = [Int64(Self.migrationLockKey >> 32), job]
            let acquired = try connection.queryFirst("SELECT pg_try_advisory_lock($1, hashtext($2))", key) {
                try $0.bool(0)
            }
            guard acquired == true else { return false }
            defer { _ = try? connection.execute("SELECT pg_advisory_unlock($1, hashtext($2))", key) }
            try body()
            return true
        }
    }

    /// Closes every connection. Calls in flight finish; later calls throw `StorageError(.closed)`.
    public func close() {
        pool.close()
    }
}
