import CSQLite
import CryptoCore
import FoundationEssentials
import Glibc
public import Kernel

/// A SQLite database file in WAL mode: one writer connection, a pool of readers that run in
/// parallel with it, and the schema migrated when it opens.
///
/// Every call blocks its thread while it waits for a connection and while SQLite works, which
/// suits the HTTP server's own worker threads.
public final class SQLiteDatabase: Sendable {
    /// How SQLite makes commits durable.
    public enum Synchronous: String, Sendable, CaseIterable {
        /// In WAL mode a commit survives a crash of Portvakt but may be lost in a power failure;
        /// the database itself stays consistent. SQLite's recommendation for WAL.
        case normal = "NORMAL"
        /// Every commit is synced to disk before it returns: durable through power loss, slower.
        case full = "FULL"
    }

    /// How the database is opened. Every field has a safe default.
    public struct Configuration: Sendable, Equatable {
        /// How long a connection waits for a lock held by another process before `.busy`, in ms.
        public var busyTimeoutMilliseconds: Int
        /// Durability of commits.
        public var synchronous: Synchronous
        /// How many read connections to keep (at least 1).
        public var readerCount: Int
        /// Whether opening applies pending migrations. `portvakt migrate` turns it off so that
        /// `migrate()` can report what it applied.
        public var migrateOnOpen: Bool

        /// Creates a configuration; the defaults suit a single server.
        public init(
            busyTimeoutMilliseconds: Int = 5000, synchronous: Synchronous = .normal,
            readerCount: Int = 4, migrateOnOpen: Bool = true
        ) {
            self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
            self.synchronous = synchronous
            self.readerCount = readerCount
            self.migrateOnOpen = migrateOnOpen
        }
    }

    /// The newest schema version this binary knows.
    public static var supportedSchemaVersion: Int { Migration.sqlite.last?.version ?? 0 }

    /// The database file.
    public let path: String
    /// How it was opened.
    public let configuration: Configuration

    private let writer: ConnectionPool
    private let readers: ConnectionPool
    private let groupCommit: GroupCommit
    private let checkpointer: Checkpointer
    /// How long each `write` took from call to commit (queueing behind the writer included), for
    /// the metrics endpoint.
    public let writeLatency = LatencyHistogram()
    private let migrations: [Migration]
    private let clock: any WallClock

    /// Opens (creating if needed) the database at `path` and migrates it unless configured not to.
    ///
    /// Missing directories are created with mode 0700 and a new file with mode 0600: the file
    /// holds session token hashes.
    /// - Throws: `StorageError` with `.invalidArgument` for an empty path or a bad configuration,
    ///   `.migration` when the file's schema is newer than this binary, `.corrupt` when it is not
    ///   a database, or `.io`.
    public convenience init(
        path: String, configuration: Configuration = Configuration(),
        clock: any WallClock = SystemClock()
    ) throws {
        try self.init(
            path: path, configuration: configuration, clock: clock, migrations: Migration.sqlite)
    }

    /// Opens the database with an explicit migration list (tests add steps to it) and WAL length
    /// at which a background checkpoint starts (tests shorten it; see `Checkpointer`).
    init(
        path: String, configuration: Configuration, clock: any WallClock, migrations: [Migration],
        checkpointFrames: Int = Checkpointer.defaultThreshold
    ) throws {
        guard !path.isEmpty, path != ":memory:" else {
            // A pool of connections needs a shared file; ":memory:" would give each its own database.
            throw StorageError(.invalidArgument, "the database needs a file path")
        }
        guard configuration.readerCount >= 1 else {
            throw StorageError(.invalidArgument, "the reader count must be at least 1")
        }
        guard (0...Int(Int32.max)).contains(configuration.busyTimeoutMilliseconds) else {
            throw StorageError(.invalidArgument, "the busy timeout must be between 0 and 2^31-1 ms")
        }
        try Migration.validate(migrations)
        self.path = path
        self.configuration = configuration
        self.migrations = migrations
        self.clock = clock

        try Self.createFile(at: path)
        let timeout = Int32(configuration.busyTimeoutMilliseconds)

        // The writer first: it switches the file to WAL and creates the schema readers rely on.
        // Both steps may meet another process doing the same on a new file (see `settling`);
        // together they get the busy timeout, as one statement would.
        let settleBy = ContinuousClock.now + .milliseconds(configuration.busyTimeoutMilliseconds)
        let writerConnection = try Connection(
            path: path, flags: [.readWrite, .create], busyTimeoutMilliseconds: timeout)
        try Self.settling(until: settleBy) { try Self.switchToWAL(writerConnection) }
        try Self.prepareWriter(writerConnection, synchronous: configuration.synchronous)
        try Self.settling(until: settleBy) {
            try Self.immediateTransaction(on: writerConnection) {
                try Self.bootstrap($0, knowing: migrations)
            }
        }
        writer = ConnectionPool([writerConnection])
        groupCommit = GroupCommit(writer: writer)

        var readerConnections: [Connection] = []
        for _ in 0..<configuration.readerCount {
            let reader = try Connection(
                path: path, flags: [.readWrite], busyTimeoutMilliseconds: timeout)
            try Self.prepareReader(reader)
            readerConnections.append(reader)
        }
        readers = ConnectionPool(readerConnections)

        // Last, so that nothing above can fail with its thread running (from here on a failure
        // reaches deinit, which stops it). The hook replaces SQLite's automatic checkpoint.
        let checkpointer = try Checkpointer(
            path: path, writer: writer, threshold: checkpointFrames, limit: 4 * checkpointFrames,
            openingTimeout: timeout)
        self.checkpointer = checkpointer
        writerConnection.onWALCommit { checkpointer.committed(walFrames: $0) }

        if configuration.migrateOnOpen { _ = try migrate() }
    }

    deinit { close() }

    // MARK: Transactions

    /// Runs `body` in a `BEGIN IMMEDIATE … COMMIT` transaction on the writer, rolling back when
    /// it throws. Writers queue behind each other; readers are not blocked.
    ///
    /// IMMEDIATE takes the write lock up front, so a transaction never fails half-way with
    /// SQLITE_BUSY when it upgrades from reading to writing. Do not nest `write` calls.
    ///
    /// Transactions that arrive while another runs are committed together (see `GroupCommit`):
    /// `body` may share its transaction with other callers' bodies, but its own writes are all
    /// or nothing, and it returns only after the COMMIT.
    func write<T>(_ body: (Connection) throws -> T) throws -> T {
        let start = LatencyHistogram.now()
        defer { writeLatency.record(nanoseconds: LatencyHistogram.now() &- start) }
        return try groupCommit.write(body)
    }

    /// `write` for a caller that must not block its thread: suspended until its batch committed
    /// when on a thread that may not block, `write` otherwise (see `GroupCommit.writeAsync`).
    func writeAsync<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        let start = LatencyHistogram.now()
        defer { writeLatency.record(nanoseconds: LatencyHistogram.now() &- start) }
        return try await groupCommit.writeAsync(body)
    }

    /// Write transactions waiting for the running batch to finish (see `GroupCommit`).
    var queuedWrites: Int { groupCommit.queuedCount }

    /// `BEGIN IMMEDIATE`, `body`, `COMMIT`; `ROLLBACK` when anything throws.
    private static func immediateTransaction<T>(
        on connection: Connection, _ body: (Connection) throws -> T
    ) throws -> T {
        // Through the statement cache, like everything else: these three run on every write.
        try connection.execute("BEGIN IMMEDIATE")
        do {
            let value = try body(connection)
            try connection.execute("COMMIT")
            return value
        } catch {
            // COMMIT itself may have failed and left the transaction open; either way undo it.
            if connection.isInTransaction { _ = try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    /// Runs `body` on a reader connection. Readers are `query_only`, so a stray write fails
    /// with `.readOnly`. Each statement sees the latest commit; wrap several in a transaction
    /// on the connection when they must see the same snapshot.
    func read<T>(_ body: (Connection) throws -> T) throws -> T {
        try readers.withConnection(body)
    }

    /// Runs `body`, a short read of a few rows by key (a sign-in's passkey and owner), on the
    /// writer's connection when no write holds it, else on a reader, as `read` does.
    ///
    /// Why the writer: in WAL mode a connection drops its whole page cache whenever another
    /// connection has committed since its last read, so on a busy server every reader reads
    /// each page it needs anew from the file (about 13 `pread`s per login, measured with
    /// `strace -c`); the writer's own commits leave its cache valid. Borrowing it only when it
    /// is idle never makes a read wait for a write, and the borrowed connection refuses any
    /// statement that would write (`Connection.readingOnly`), as the readers' `query_only`
    /// does. Only short reads may come here: a write waits for the read to end.
    func pointRead<T>(_ body: (Connection) throws -> T) throws -> T {
        if let value = try writer.withConnectionIfIdle({ try $0.readingOnly(body) }) { return value }
        return try readers.withConnection(body)
    }

    // MARK: Migrations

    /// Applies every migration the database lacks, each in its own transaction, and returns them.
    /// - Throws: `StorageError(.migration)` when a step fails (that step is rolled back) or the
    ///   database is newer than this binary.
    @discardableResult
    public func migrate() throws -> [AppliedMigration] {
        var applied: [AppliedMigration] = []
        for migration in migrations {
            let record = try write { connection -> AppliedMigration? in
                // Read the version inside the write lock: another process may have migrated.
                let current = try Self.currentVersion(connection)
                guard current < migration.version else { return nil }
                do throws(StorageError) {
                    try connection.exec(migration.sql)
                } catch {
                    throw StorageError(
                        .migration,
                        "migration \(migration.version) (\(migration.name)) failed: \(error.message)",
                        sqliteResultCode: error.sqliteResultCode)
                }
                let now = clock.now().storagePrecision
                try connection.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, ?2, ?3)",
                    [migration.version, migration.name, now])
                return AppliedMigration(
                    version: migration.version, name: migration.name, appliedAt: now)
            }
            if let record { applied.append(record) }
        }
        return applied
    }

    /// The schema version the database is at (0 before the first migration).
    public var schemaVersion: Int {
        get throws { try read { try Self.currentVersion($0) } }
    }

    /// The migrations recorded in the database, oldest first.
    public func appliedMigrations() throws -> [AppliedMigration] {
        try read { connection in
            try connection.query(
                "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
            ) { row in
                try AppliedMigration(
                    version: Int(row.int64(0)), name: row.string(1), appliedAt: row.date(2))
            }
        }
    }

    // MARK: Operations

    /// A cheap read that proves the file is open and the schema readable, for `/health/ready`.
    public func checkHealth() throws {
        _ = try schemaVersion
    }

    /// SQLite's full consistency check: "ok" when the file is sound, otherwise its findings, one
    /// per line. It reads every page, so run it from operations tooling, not per request.
    public func integrityCheck() throws -> String {
        try read { connection in
            try connection.query("PRAGMA integrity_check") { try $0.string(0) }.joined(separator: "\n")
        }
    }

    /// Writes a consistent copy of the database to a new file at `destination` (mode 0600) with
    /// `VACUUM INTO`, while reads and writes carry on.
    /// - Throws: `StorageError(.conflict)` when `destination` already exists (a backup never
    ///   overwrites), `.io` when it cannot be written.
    public func backup(to destination: String) throws {
        guard !destination.isEmpty else {
            throw StorageError(.invalidArgument, "the backup needs a file path")
        }
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw StorageError(.conflict, "the backup destination already exists")
        }
        // Create the file ourselves so it is 0600 from the start; VACUUM INTO accepts an empty file.
        // O_EXCL also closes the race with anything creating the same path meanwhile.
        try Self.createFile(at: destination, exclusive: true)
        do {
            // A short-lived connection of its own: VACUUM INTO only reads this database (so
            // writers carry on), but the pooled readers are query_only, which refuses it because it
            // writes the other file. Holding a reader slot meanwhile keeps backups within the
            // connection budget and makes a backup after close() fail with `.closed`.
            try read { _ in
                let connection = try Connection(
                    path: path, flags: [.readWrite],
                    busyTimeoutMilliseconds: Int32(configuration.busyTimeoutMilliseconds))
                defer { connection.close() }
                try Self.configureCommon(connection)
                try connection.execute("VACUUM INTO ?1", [destination])
            }
        } catch {
            try? FileManager.default.removeItem(atPath: destination)
            throw error
        }
    }

    /// Closes every connection. Calls in flight finish; later calls throw `StorageError(.closed)`.
    public func close() {
        // The checkpointer and the readers first, so the writer is last out and can checkpoint and
        // remove the WAL files.
        checkpointer.stop()
        readers.close()
        writer.close()
        groupCommit.close()
    }

    // MARK: Opening

    /// Switches the file to WAL (a no-op once it is: journal_mode persists in the file).
    private static func switchToWAL(_ connection: Connection) throws {
        // The pragma reports the mode actually in force.
        let mode = try connection.queryFirst("PRAGMA journal_mode = WAL") { try $0.string(0) }
        guard mode?.lowercased() == "wal" else {
            throw StorageError(.io, "the database could not be switched to WAL mode")
        }
    }

    /// Runs `body` again while it fails with `.busy` and `deadline` has not passed.
    ///
    /// Needed for the first steps on a file other processes may be opening at the same moment:
    /// SQLite does not call the busy handler when waiting could deadlock, that is when a
    /// connection holding a read lock asks for the write lock another connection holds. Two
    /// `PRAGMA journal_mode = WAL` on a new file are exactly that (each reads the header, then
    /// writes it), so one of two processes started together failed at once with "database is
    /// locked" although the busy timeout was 5 s. SQLite's remedy is to let go of the read lock
    /// and start again, which a failed statement in autocommit mode has already done.
    ///
    /// A retry rather than an exclusive lock file around first-time setup: SQLite's own locks
    /// already order every opener, including the sqlite3 shell, `portvakt storage` and an older
    /// release during an upgrade, which a Portvakt-only lock file would not; and it adds no file
    /// beside the database to back up, clean up or trust on a network file system. A BUSY after
    /// the busy handler waited its full timeout arrives after `deadline`, so it is not retried:
    /// the bound stays the configured timeout (plus at most one more wait of it).
    private static func settling<T>(until deadline: ContinuousClock.Instant, _ body: () throws -> T)
        throws -> T
    {
        while true {
            do {
                return try body()
            } catch let error as StorageError where error.code == .busy && ContinuousClock.now < deadline {
                // A few milliseconds, jittered so that racing processes fall out of step.
                Threads.sleep(seconds: Double.random(in: 0.001...0.005))
            }
        }
    }

    /// Settings the writer needs before anything else runs on it.
    private static func prepareWriter(_ connection: Connection, synchronous: Synchronous)
        throws
    {
        try connection.exec("PRAGMA synchronous = \(synchronous.rawValue)")
        try configureCommon(connection)
    }

    /// Settings every reader needs.
    private static func prepareReader(_ connection: Connection) throws {
        try configureCommon(connection)
        // Read-write at the file level (so WAL works without a pre-existing -shm file) but
        // refusing writes at the SQL level.
        try connection.exec("PRAGMA query_only = ON")
    }

    /// Foreign keys (per connection, off by SQLite's default) and defensive mode.
    private static func configureCommon(_ connection: Connection) throws {
        guard try connection.configure(option: SQLITE_DBCONFIG_ENABLE_FKEY, value: 1) == 1 else {
            throw StorageError(.internal, "SQLite refused to enable foreign keys")
        }
        // Defensive mode stops SQL from corrupting the file on purpose (writable_schema and kin).
        _ = try connection.configure(option: SQLITE_DBCONFIG_DEFENSIVE, value: 1)
        // Statement journals (the savepoints of group commit) and sorts stay in memory: they are
        // small, and a temporary file per batch costs an open, a truncate and an unlink.
        try connection.exec("PRAGMA temp_store = MEMORY")
    }

    /// Creates the bookkeeping table and refuses a database newer than `migrations`, or one whose
    /// recorded history disagrees with this binary's. Runs in a write transaction, so another
    /// process migrating the same file at the same moment is waited for, not half-seen.
    private static func bootstrap(_ connection: Connection, knowing migrations: [Migration]) throws {
        try connection.exec(Migration.sqliteBookkeeping)
        try Migration.checkHistory(on: connection, knowing: migrations)
    }

    /// The highest recorded version, or 0.
    private static func currentVersion(_ connection: Connection) throws -> Int {
        Int(
            try connection.queryFirst("SELECT coalesce(max(version), 0) FROM schema_migrations") {
                try $0.int64(0)
            } ?? 0)
    }

    /// Creates the parent directories (0700) and, when missing, the file itself (0600).
    /// An existing file is left as it is unless `exclusive`, which makes it an error.
    private static func createFile(at path: String, exclusive: Bool = false) throws {
        let directory = path.parentPath
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700])
            } catch {
                // Another process starting at the same moment may have created it meanwhile.
                var isDirectory = false
                guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory),
                    isDirectory
                else { throw StorageError(.io, "could not create the database directory") }
            }
        }
        // O_EXCL so an existing file keeps its contents and mode; SQLite would otherwise create
        // it with the umask's mode, typically world-readable.
        let descriptor = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let number = errno
            if number == EEXIST {
                if exclusive {
                    throw StorageError(.conflict, "the backup destination already exists")
                }
                return
            }
            throw StorageError(
                .io, "could not create the file: \(String(cString: strerror(number)))")
        }
        Glibc.close(descriptor)
    }
}
