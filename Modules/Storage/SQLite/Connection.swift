import CSQLite
import Glibc

/// One SQLite connection. It owns the `sqlite3` handle and its prepared statements and frees them
/// when closed or deinitialised.
///
/// A connection is not thread-safe by itself (it is opened with `SQLITE_OPEN_NOMUTEX`); it is
/// `@unchecked Sendable` because `ConnectionPool` hands it to exactly one thread at a time.
final class Connection: SQLConnection, @unchecked Sendable {
    /// How a connection is opened.
    struct OpenFlags: OptionSet, Sendable {
        let rawValue: Int32
        /// Open for reading and writing.
        static let readWrite = OpenFlags(rawValue: SQLITE_OPEN_READWRITE)
        /// Create the file when it is missing.
        static let create = OpenFlags(rawValue: SQLITE_OPEN_CREATE)
        /// Open read-only.
        static let readOnly = OpenFlags(rawValue: SQLITE_OPEN_READONLY)
    }

    /// Statements kept for reuse; bounded because a runaway caller building SQL dynamically would
    /// otherwise grow it forever.
    static let statementCacheLimit = 64

    private var handle: OpaquePointer?
    private var cache: [SQLText: Statement] = [:]
    /// How many times this connection compiled SQL with `sqlite3_prepare_v3` (tests use it to
    /// prove statements are reused).
    private(set) var prepareCount = 0
    /// What the WAL hook calls; kept here, so that it lives exactly as long as the handle that
    /// points at it.
    private var walHook: WALHook?
    /// Set while `readingOnly` runs: statements that would write are refused, as `query_only`
    /// refuses them on a reader (see `SQLiteDatabase.pointRead`, which borrows the writer).
    private var refusesWrites = false

    /// Process-wide settings, applied once before SQLite initialises (at the first open or VFS
    /// lookup; `sqlite3_config` refuses them afterwards): memory statistics off. Nothing reads
    /// them, and keeping them takes one process-wide mutex around every allocation SQLite makes
    /// (about 140 per sign-in), from every thread.
    private static let processSettings: Void = {
        _ = csqlite_config_memstatus(0)
    }()

    /// Opens the database at `path`.
    /// - Throws: `StorageError` translated from SQLite's open result.
    init(path: String, flags: OpenFlags, busyTimeoutMilliseconds: Int32) throws(StorageError) {
        Self.processSettings
        var db: OpaquePointer?
        // NOMUTEX: the pool serialises use, so SQLite's per-call mutex would be pure overhead.
        // EXRESCODE: extended codes let the wrapper tell a UNIQUE failure from a foreign-key one.
        // The VFS batches the WAL's writes per commit (WALWriteBatching); the default one if
        // SQLite had none to wrap.
        let rc = sqlite3_open_v2(
            path, &db, flags.rawValue | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
            WALWriteBatching.registered)
        // SQLite hands back a handle even when opening fails; it must be closed either way.
        handle = db
        guard rc == SQLITE_OK, db != nil else {
            let error = Connection.error(rc, db, context: "could not open the database")
            close()
            throw error
        }
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
    }

    deinit { close() }

    /// How long a statement waits for a lock another connection holds before it fails as busy.
    func setBusyTimeout(milliseconds: Int32) {
        sqlite3_busy_timeout(rawHandle, milliseconds)
    }

    /// The raw handle; only the wrapper types in this folder touch it.
    var rawHandle: OpaquePointer {
        guard let handle else { preconditionFailure("use of a closed SQLite connection") }
        return handle
    }

    /// Whether the connection is open.
    var isOpen: Bool { handle != nil }

    /// Rows changed by the most recent INSERT, UPDATE or DELETE.
    var changes: Int { Int(sqlite3_changes64(rawHandle)) }

    /// The rowid of the most recent successful INSERT.
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(rawHandle) }

    /// Whether a transaction is open (SQLite is outside autocommit mode).
    var isInTransaction: Bool { sqlite3_get_autocommit(rawHandle) == 0 }

    /// The writes SQLite made to this connection's WAL and the writes that reached the file since
    /// the WAL was opened, or nil while it is not open (tests use it to prove frames are batched).
    var walWriteCounts: (received: Int, issued: Int)? { WALWriteBatching.counts(of: rawHandle) }

    /// How many statements the cache holds now.
    var cachedStatementCount: Int { cache.count }

    /// Sets an integer `sqlite3_db_config` option and returns the value SQLite reports back.
    func configure(option: Int32, value: Int32) throws(StorageError) -> Int32 {
        var result: Int32 = -1
        let rc = csqlite_db_config_int(rawHandle, option, value, &result)
        guard rc == SQLITE_OK else {
            throw failure(rc, context: "could not configure the connection")
        }
        return result
    }

    /// Calls `body` after every commit on this connection with the number of frames the WAL then
    /// holds, in place of SQLite's automatic checkpoint (which the hook replaces).
    ///
    /// SQLite calls it inside the statement that committed, after the commit and after the write
    /// lock is released, on the committing thread: `body` must be quick and must not use this
    /// connection.
    func onWALCommit(_ body: @escaping (Int) -> Void) {
        let hook = WALHook(body)
        walHook = hook
        sqlite3_wal_hook(
            rawHandle,
            { context, _, _, frames in
                Unmanaged<WALHook>.fromOpaque(context!).takeUnretainedValue().body(Int(frames))
                return SQLITE_OK
            }, Unmanaged.passUnretained(hook).toOpaque())
    }

    /// How `checkpoint` may wait.
    enum CheckpointMode {
        /// Copy what can be copied without waiting for any lock: writers and readers carry on.
        case passive
        /// Wait (busy handler) for the write lock and for readers, copy every frame, then wait
        /// until no reader uses the WAL and start it again from its beginning.
        case restart

        var rawValue: Int32 { self == .passive ? SQLITE_CHECKPOINT_PASSIVE : SQLITE_CHECKPOINT_RESTART }
    }

    /// Copies the WAL into the database file (`sqlite3_wal_checkpoint_v2`).
    /// - Returns: The frames in the WAL and how many of them are now in the database file, or nil
    ///   when a lock it needed stayed busy (another checkpoint, a writer or a reader).
    func checkpoint(_ mode: CheckpointMode) throws(StorageError) -> (walFrames: Int, checkpointed: Int)? {
        var walFrames: Int32 = 0
        var checkpointed: Int32 = 0
        let rc = sqlite3_wal_checkpoint_v2(rawHandle, nil, mode.rawValue, &walFrames, &checkpointed)
        if rc == SQLITE_BUSY { return nil }
        guard rc == SQLITE_OK else { throw failure(rc, context: "the checkpoint failed") }
        return (Int(walFrames), Int(checkpointed))
    }

    /// Runs one or more SQL statements that take no parameters (pragmas, DDL, BEGIN/COMMIT).
    /// The SQL is not cached: these run rarely, and DDL would invalidate cached plans anyway.
    func exec(_ sql: String) throws(StorageError) {
        // Raw SQL is pragmas and DDL, never a read: refused while borrowed for one.
        guard !refusesWrites else { throw StorageError(.readOnly, "a read tried to run raw SQL") }
        var errorMessage: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(rawHandle, sql, nil, nil, &errorMessage)
        // sqlite3_exec allocates the message; free it whether or not we use it.
        let text = errorMessage.map { String(cString: $0) }
        sqlite3_free(errorMessage)
        guard rc == SQLITE_OK else {
            throw Connection.error(rc, handle, context: "statement failed", detail: text)
        }
    }

    /// Runs `body` with the cached statement for `sql` (compiling it on first use), then resets it
    /// and clears its bindings so no value outlives the call.
    ///
    /// One cache lookup per use: the statement stays in the cache, marked in use, rather than
    /// being taken out and put back (three hashes of the SQL text per use showed in the login
    /// profile, Docs/performance.md).
    func withStatement<T>(_ sql: String, _ body: (Statement) throws -> T) throws -> T {
        let key = SQLText(sql)
        let statement: Statement
        let compiled: Bool
        // A statement in use (a nested use of the same SQL, mid-iteration) is left alone: the
        // nested use compiles its own copy, which is not kept.
        if let cached = cache[key], !cached.inUse {
            statement = cached
            compiled = false
        } else {
            statement = try prepare(sql)
            compiled = true
        }
        if refusesWrites, sqlite3_stmt_readonly(statement.rawHandle) == 0 {
            // A statement compiled just now is not cached yet: its deinit finalises it.
            throw StorageError(.readOnly, "a read tried to change the database")
        }
        statement.inUse = true
        defer {
            statement.reset()
            statement.inUse = false
            if compiled, cache[key] == nil, cache.count < Connection.statementCacheLimit {
                cache[key] = statement
            }
        }
        return try body(statement)
    }

    /// Runs `body` with every statement that would write refused with `.readOnly` (checked with
    /// `sqlite3_stmt_readonly`, which counts `BEGIN` and `COMMIT` as reading but `BEGIN
    /// IMMEDIATE` as writing), and ends any transaction `body` left open, so a connection that
    /// writes can lend itself to a read and be handed back exactly as it was.
    func readingOnly<T>(_ body: (Connection) throws -> T) throws -> T {
        refusesWrites = true
        defer {
            refusesWrites = false
            if isInTransaction { _ = try? execute("ROLLBACK") }
        }
        return try body(self)
    }

    /// Runs a statement that returns no rows, with `arguments` bound to `?1`, `?2`, ….
    /// - Returns: How many rows it inserted, updated or deleted.
    @discardableResult
    func execute(_ sql: String, _ arguments: [any SQLBindable] = []) throws -> Int {
        try withStatement(sql) { statement in
            try statement.bind(arguments)
            while try statement.step() {}
            return changes
        }
    }

    /// Runs an INSERT of one row and returns its rowid (the table's `id`, its INTEGER PRIMARY KEY).
    func insertReturningID(_ sql: String, _ arguments: [any SQLBindable]) throws -> Int64 {
        guard try execute(sql, arguments) == 1 else {
            throw StorageError(.internal, "an insert that returns its id inserted no row")
        }
        // This connection's own last insert: no other thread uses it meanwhile.
        return sqlite3_last_insert_rowid(rawHandle)
    }

    /// Runs a query and maps every row with `transform`.
    func query<T>(
        _ sql: String, _ arguments: [any SQLBindable] = [], _ transform: (any SQLRow) throws -> T
    ) throws -> [T] {
        try withStatement(sql) { statement in
            try statement.bind(arguments)
            var rows: [T] = []
            while try statement.step() {
                rows.append(try transform(Row(statement: statement.rawHandle)))
            }
            return rows
        }
    }

    /// Runs a query and maps its first row, or returns nil when it has none.
    func queryFirst<T>(
        _ sql: String, _ arguments: [any SQLBindable] = [], _ transform: (any SQLRow) throws -> T
    ) throws -> T? {
        try withStatement(sql) { statement in
            try statement.bind(arguments)
            guard try statement.step() else { return nil }
            return try transform(Row(statement: statement.rawHandle))
        }
    }

    /// Finalises every cached statement and closes the handle. Safe to call twice.
    func close() {
        for statement in cache.values { statement.finalize() }
        cache.removeAll()
        guard let handle else { return }
        // Every statement this connection made is finalised above or by its own deinit, so
        // sqlite3_close cannot report SQLITE_BUSY; close_v2 is the belt to those braces.
        sqlite3_close_v2(handle)
        self.handle = nil
        walHook = nil
    }

    /// Compiles `sql`; the statement is marked persistent because the cache keeps it.
    private func prepare(_ sql: String) throws(StorageError) -> Statement {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(
            rawHandle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            throw failure(rc, context: "could not prepare a statement")
        }
        prepareCount += 1
        return Statement(handle: statement, connection: rawHandle)
    }

    /// The error for `rc` on this connection.
    func failure(_ rc: Int32, context: String, file: String = #fileID, line: Int = #line)
        -> StorageError
    {
        Connection.error(rc, handle, context: context, file: file, line: line)
    }

    /// Translates a SQLite result code into a `StorageError`.
    ///
    /// SQLite's own messages name tables, columns and constraints but never bound values, so they
    /// are safe to keep; the SQL text is left out because it is noise in an operator's log.
    static func error(
        _ rc: Int32, _ db: OpaquePointer?, context: String, detail: String? = nil,
        file: String = #fileID, line: Int = #line
    ) -> StorageError {
        let extended = db.map { sqlite3_extended_errcode($0) } ?? rc
        // Prefer the code we were handed: the connection's last error may be from another call.
        let code = (rc & 0xff) == (extended & 0xff) ? extended : rc
        let sqliteMessage = detail ?? db.map { String(cString: sqlite3_errmsg($0)) }
        let message = sqliteMessage.map { "\(context): \($0)" } ?? context
        return StorageError(
            storageCode(for: code), message, sqliteResultCode: code, file: file, line: line)
    }

    // Extended codes are macros built with shifts, which Swift does not import; these are their
    // values from sqlite3.h (part of SQLite's stable ABI).
    private static let constraintPrimaryKey: Int32 = SQLITE_CONSTRAINT | (6 << 8)
    private static let constraintUnique: Int32 = SQLITE_CONSTRAINT | (8 << 8)
    private static let constraintRowID: Int32 = SQLITE_CONSTRAINT | (10 << 8)

    /// The stable code for a SQLite (extended) result code.
    static func storageCode(for rc: Int32) -> StorageError.Code {
        switch rc {
        // Unique and primary-key failures are a duplicate, which callers treat as a conflict;
        // the other constraint kinds (NOT NULL, CHECK, foreign key) point at invalid data.
        case constraintUnique, constraintPrimaryKey, constraintRowID:
            return .conflict
        default:
            break
        }
        switch rc & 0xff {
        case SQLITE_CONSTRAINT: return .constraint
        case SQLITE_BUSY, SQLITE_LOCKED: return .busy
        case SQLITE_CORRUPT, SQLITE_NOTADB: return .corrupt
        case SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_FULL, SQLITE_PERM, SQLITE_PROTOCOL: return .io
        case SQLITE_READONLY: return .readOnly
        default: return .internal
        }
    }
}

/// The closure a connection's WAL hook calls, in a class so that SQLite can hold a pointer to it.
private final class WALHook {
    let body: (Int) -> Void
    init(_ body: @escaping (Int) -> Void) { self.body = body }
}

/// SQL text as a statement cache key: equal exactly when the UTF-8 bytes are, hashed from the
/// length and the last 64 bytes only. The cache's texts are a few hundred bytes of mostly fixed
/// SQL that differ most towards their ends (the WHERE clause), and every statement a request runs
/// looks its text up; SipHash over every byte cost about 2% of a login's instructions. Texts that
/// share a length and an ending cost a comparison each, never a wrong statement.
struct SQLText: Hashable {
    let sql: String

    init(_ sql: String) { self.sql = sql }

    static func == (lhs: SQLText, rhs: SQLText) -> Bool {
        let fast = lhs.sql.utf8.withContiguousStorageIfAvailable { left in
            rhs.sql.utf8.withContiguousStorageIfAvailable { right in
                guard left.count == right.count else { return false }
                guard let l = left.baseAddress, let r = right.baseAddress, l != r else { return true }
                return memcmp(l, r, left.count) == 0
            }
        }
        if let fast = fast ?? nil { return fast }
        return lhs.sql.utf8.elementsEqual(rhs.sql.utf8)
    }

    func hash(into hasher: inout Hasher) {
        let hashed: Void? = sql.utf8.withContiguousStorageIfAvailable { bytes in
            hasher.combine(bytes.count)
            hasher.combine(bytes: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes.suffix(64))))
        }
        if hashed == nil {
            let bytes = Array(sql.utf8)
            hasher.combine(bytes.count)
            bytes.suffix(64).withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }
}
