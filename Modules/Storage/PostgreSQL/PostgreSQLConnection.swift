import CPQ
import FoundationEssentials
import Glibc

/// How a PostgreSQL transaction is isolated from concurrent ones.
enum PostgreSQLIsolationLevel: String, Sendable {
    /// Each statement sees what was committed before it began (PostgreSQL's default).
    case readCommitted = "READ COMMITTED"
    /// Every statement sees the snapshot taken at the transaction's first statement.
    case repeatableRead = "REPEATABLE READ"
    /// As if the transactions ran one after another; the server aborts one that would break that
    /// with a serialization failure, which `transaction` retries.
    case serializable = "SERIALIZABLE"
}

/// One PostgreSQL connection. It owns the `PGconn` and finishes it when closed or deinitialised,
/// and it prepares each statement once, under a name, the first time its SQL is run.
///
/// Every call waits for the server at most the statement timeout plus a grace: past that the
/// server or the network is gone, the connection is dropped and the call fails with
/// `storage.unavailable` instead of hanging. A connection is not thread-safe; it is
/// `@unchecked Sendable` because `PostgreSQLConnectionPool` hands it to one thread at a time.
final class PostgreSQLConnection: SQLConnection, @unchecked Sendable {
    /// The oldest server release Storage supports (`PQserverVersion` form).
    static let minimumServerVersion: Int32 = 130000

    /// Prepared statements kept per connection; bounded because a caller building SQL dynamically
    /// would otherwise fill the server's memory. Past it, SQL runs as the unnamed statement. The
    /// stores have somewhat over a hundred statements, and every one should stay prepared.
    static let statementCacheLimit = 256

    /// How many times `transaction` runs its body at most by default.
    static let defaultTransactionAttempts = 3

    /// How long past the statement timeout the client waits for an answer before it gives the
    /// connection up: the server cancels a statement at the timeout, so silence beyond this means
    /// the server or the network is gone.
    static let answerGrace: Duration = .seconds(2)

    /// A statement the server has parsed, and the parameter types it inferred.
    private struct PreparedStatement {
        /// The name it was prepared under; empty for the unnamed statement.
        let name: String
        let parameterTypes: [Oid]
    }

    /// Where the server is, as `host:port`, for messages.
    let endpoint: String
    /// The server's release, as `PQserverVersion` reports it (150004 for 15.4).
    let serverVersion: Int32
    /// The process id of the server backend serving this connection.
    let backendPID: Int32

    private var handle: OpaquePointer?
    private var statementTimeout: Duration
    private var statements: [String: PreparedStatement] = [:]
    private var nextStatementNumber = 1
    /// How many statements this connection has prepared (tests use it to prove reuse).
    private(set) var prepareCount = 0

    /// Connects, checks the server's release and sets the per-connection settings.
    /// - Throws: `storage.invalid_argument` for a bad configuration, `storage.unavailable` when the
    ///   server cannot be reached or refuses the login (the message names host and port and gives
    ///   libpq's reason), `storage.unsupported_server` for a server older than PostgreSQL 13.
    init(configuration: PostgreSQLConfiguration) throws(StorageError) {
        try configuration.validate()
        let handle = try Self.connect(configuration)
        self.handle = handle
        endpoint = configuration.endpoint
        statementTimeout = configuration.statementTimeout
        serverVersion = PQserverVersion(handle)
        backendPID = PQbackendPID(handle)
    }

    deinit { close() }

    /// Whether the connection can no longer be used: closed, or the session ended.
    var isBroken: Bool {
        guard let handle else { return true }
        return PQstatus(handle) != CONNECTION_OK
    }

    /// Whether a transaction is open (also one that failed and awaits its ROLLBACK).
    var isInTransaction: Bool {
        guard let handle else { return false }
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    /// Whether TLS protects the connection.
    var usesTLS: Bool {
        guard let handle else { return false }
        return PQsslInUse(handle) == 1
    }

    /// How many prepared statements the cache holds now.
    var cachedStatementCount: Int { statements.count }

    /// Runs a statement that returns no rows, with `arguments` bound to `$1`, `$2`, ….
    /// - Returns: The rows it inserted, updated or deleted.
    @discardableResult
    func execute(_ sql: String, _ arguments: [any SQLBindable] = []) throws(StorageError) -> Int {
        try run(sql, arguments).affectedRows
    }

    /// Runs a query and maps every row with `transform`.
    func query<T>(
        _ sql: String, _ arguments: [any SQLBindable] = [], _ transform: (any SQLRow) throws -> T
    ) throws -> [T] {
        try run(sql, arguments).rows.map(transform)
    }

    /// Runs a query and maps its first row, or returns nil when it has none.
    func queryFirst<T>(
        _ sql: String, _ arguments: [any SQLBindable] = [], _ transform: (any SQLRow) throws -> T
    ) throws -> T? {
        try run(sql, arguments).rows.first.map(transform)
    }

    /// Runs an INSERT of one row with `RETURNING id` appended and returns that id.
    func insertReturningID(_ sql: String, _ arguments: [any SQLBindable]) throws -> Int64 {
        guard let id = try queryFirst(sql + " RETURNING id", arguments, { try $0.int64(0) }) else {
            throw StorageError(.internal, "an insert that returns its id inserted no row")
        }
        return id
    }

    /// Runs SQL without parameters and without preparing it (BEGIN, COMMIT, SET, DDL); it may hold
    /// several statements.
    /// - Returns: The last statement's command tag.
    @discardableResult
    func exec(_ sql: String) throws(StorageError) -> String {
        let handle = try liveHandle()
        guard PQsendQuery(handle, sql) == 1 else { throw lost("could not send a statement") }
        return try awaitResult(context: "statement failed").commandStatus
    }

    /// Runs `body` with the statement timeout set to `timeout` on this connection, on the server
    /// and for how long the client waits for an answer, then sets it back: for the rare work that
    /// may rightly take longer than a request's statement (a migration, waiting for another
    /// instance's).
    func withStatementTimeout<T>(_ timeout: Duration, _ body: () throws -> T) throws -> T {
        let previous = statementTimeout
        try exec("SET statement_timeout = \(timeout.milliseconds)")
        statementTimeout = timeout
        defer {
            statementTimeout = previous
            _ = try? exec("SET statement_timeout = \(previous.milliseconds)")
        }
        return try body()
    }

    /// Runs `body` in a transaction and commits it; rolls back when `body` throws.
    ///
    /// A serialization failure or deadlock (`storage.serialization_failure`), from any statement
    /// or from the COMMIT, rolls back and runs `body` again, at most `attempts` times in all, after
    /// a short random pause that keeps two colliding transactions from colliding again. `body` must
    /// therefore do nothing outside the database that cannot be repeated.
    /// - Throws: What `body` throws, the last serialization failure when every attempt failed, or
    ///   `storage.internal` when a transaction is already open (they do not nest) or `body`
    ///   swallowed an error that aborted the transaction.
    func transaction<T>(
        _ isolation: PostgreSQLIsolationLevel = .readCommitted,
        attempts: Int = PostgreSQLConnection.defaultTransactionAttempts,
        _ body: (PostgreSQLConnection) throws -> T
    ) throws -> T {
        guard !isInTransaction else {
            throw StorageError(.internal, "a PostgreSQL transaction is already open on this connection")
        }
        var attempt = 1
        while true {
            do {
                try exec("BEGIN ISOLATION LEVEL \(isolation.rawValue)")
                let value = try body(self)
                try commit()
                return value
            } catch let error as StorageError where error.code.isRetryable && attempt < attempts {
                rollBack()
                // Up to 5 ms more per attempt, so the retries spread out instead of meeting again.
                usleep(UInt32.random(in: 0...UInt32(attempt * 5_000)))
                attempt += 1
            } catch {
                rollBack()
                throw error
            }
        }
    }

    /// Whether the connection looks usable before it is handed out: still connected, and the
    /// server has not closed it meanwhile (a terminated backend leaves its goodbye and an
    /// end-of-file on the socket, which a zero-timeout poll sees without a round trip).
    func isUsableWhileIdle() -> Bool {
        guard let handle, PQstatus(handle) == CONNECTION_OK, !isInTransaction else { return false }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        // Something arrived on an idle connection: read it. The goodbye and the end-of-file may
        // take two reads, and a read of the end-of-file is what marks the connection bad.
        var reads = 0
        while reads < 8, poll(&descriptor, 1, 0) > 0 {
            guard PQconsumeInput(handle) == 1, PQstatus(handle) == CONNECTION_OK else { return false }
            reads += 1
        }
        return true
    }

    /// Forgets the prepared statements and finishes the connection. Safe to call twice.
    func close() {
        statements.removeAll()
        guard let handle else { return }
        PQfinish(handle)
        self.handle = nil
    }

    /// The release a `PQserverVersion` number stands for: "12.15" for 120015, "9.6.24" for 90624.
    static func versionName(_ version: Int32) -> String {
        if version >= 100000 { return "\(version / 10000).\(version % 10000)" }
        return "\(version / 10000).\(version / 100 % 100).\(version % 100)"
    }

    /// Refuses a server older than PostgreSQL 13, naming its release.
    static func checkServerVersion(_ version: Int32, endpoint: String) throws(StorageError) {
        guard version >= minimumServerVersion else {
            throw StorageError(
                .unsupportedServer,
                "PostgreSQL \(versionName(version)) at \(endpoint) is older than 13, the oldest release Storage supports"
            )
        }
    }

    // MARK: - Connecting

    /// Opens a `PGconn` and checks it; on any failure the handle is finished before the throw.
    private static func connect(_ configuration: PostgreSQLConfiguration) throws(StorageError)
        -> OpaquePointer
    {
        let parameters = configuration.connectionParameters
        // libpq wants two NULL-terminated arrays of C strings; strdup copies live until the call ends.
        let keywords = parameters.map { strdup($0.0) } + [nil]
        let values = parameters.map { strdup($0.1) } + [nil]
        defer {
            for pointer in keywords + values { free(pointer) }
        }
        let handle = keywords.map { $0.map { UnsafePointer($0) } }.withUnsafeBufferPointer { keywordList in
            values.map { $0.map { UnsafePointer($0) } }.withUnsafeBufferPointer { valueList in
                PQconnectdbParams(keywordList.baseAddress, valueList.baseAddress, 0)
            }
        }
        guard let handle else { throw StorageError(.internal, "libpq could not allocate a connection") }
        guard PQstatus(handle) == CONNECTION_OK else {
            // libpq's reason names the host and port it tried and why it failed (refused, timed out,
            // password authentication failed, certificate verify failed); it never holds the password.
            let reason = PostgreSQLErrorMapping.connectionMessage(handle)
            PQfinish(handle)
            throw StorageError(
                .unavailable,
                "could not connect to PostgreSQL at \(configuration.endpoint) as \(configuration.user) "
                    + "(database \(configuration.database)): \(reason)")
        }
        // Notices (a ROLLBACK outside a transaction, say) would go to stderr by default; Storage
        // reports what matters through errors and keeps the server's chatter out of the logs.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        do {
            try checkServerVersion(PQserverVersion(handle), endpoint: configuration.endpoint)
        } catch {
            PQfinish(handle)
            throw error
        }
        return handle
    }

    // MARK: - Statements

    /// Prepares (or finds) `sql`, binds `arguments` and runs it, asking for binary results.
    private func run(_ sql: String, _ arguments: [any SQLBindable]) throws(StorageError)
        -> PostgreSQLResult
    {
        let statement = try prepared(sql)
        guard arguments.count == statement.parameterTypes.count else {
            throw StorageError(
                .internal,
                "a statement expects \(statement.parameterTypes.count) parameters but got \(arguments.count)")
        }
        var encoded: [EncodedParameter?] = []
        encoded.reserveCapacity(arguments.count)
        for (offset, argument) in arguments.enumerated() {
            encoded.append(
                try argument.sqlValue.encoded(
                    as: statement.parameterTypes[offset], parameter: offset + 1))
        }
        let handle = try liveHandle()
        // One buffer for every value, so each pointer stays valid for the whole call. The extra
        // byte at the end gives an empty value (an empty bytea) a non-NULL pointer: libpq reads a
        // NULL pointer as SQL NULL.
        var buffer: [UInt8] = []
        buffer.reserveCapacity(encoded.reduce(1) { $0 + ($1?.bytes.count ?? 0) })
        for parameter in encoded { buffer += parameter?.bytes ?? [] }
        buffer.append(0)
        let lengths = encoded.map { Int32($0?.bytes.count ?? 0) }
        let formats = encoded.map { $0?.format ?? 0 }
        let sent = buffer.withUnsafeBufferPointer { bytes -> Int32 in
            var offset = 0
            let pointers = encoded.map { parameter -> UnsafePointer<CChar>? in
                guard let parameter else { return nil }
                defer { offset += parameter.bytes.count }
                return UnsafeRawPointer(bytes.baseAddress! + offset).assumingMemoryBound(to: CChar.self)
            }
            return PQsendQueryPrepared(
                handle, statement.name, Int32(encoded.count), pointers, lengths, formats, 1)
        }
        guard sent == 1 else { throw lost("could not send a statement") }
        return try awaitResult(context: "statement failed")
    }

    /// The prepared statement for `sql`, parsed and described on first use on this connection.
    private func prepared(_ sql: String) throws(StorageError) -> PreparedStatement {
        if let statement = statements[sql] { return statement }
        let handle = try liveHandle()
        let cached = statements.count < Self.statementCacheLimit
        // The name is ours, never derived from the SQL; past the limit the unnamed statement is
        // reused, which the server replaces on every prepare and never accumulates.
        let name = cached ? "portvakt_\(nextStatementNumber)" : ""
        guard PQsendPrepare(handle, name, Self.numberedParameters(sql), 0, nil) == 1 else {
            throw lost("could not prepare a statement")
        }
        _ = try awaitResult(context: "could not prepare a statement")
        // The server infers each parameter's type from the SQL; binding encodes values to match.
        guard PQsendDescribePrepared(handle, name) == 1 else { throw lost("could not describe a statement") }
        let statement = PreparedStatement(
            name: name,
            parameterTypes: try awaitResult(context: "could not describe a statement").parameterTypes)
        prepareCount += 1
        if cached {
            statements[sql] = statement
            nextStatementNumber += 1
        }
        return statement
    }

    /// `sql` with SQLite's numbered parameters (`?1`, `?2`, …), in which the stores write their
    /// one dialect, spelled as PostgreSQL's `$1`, `$2`, …; quoted text and identifiers are left
    /// alone, and SQL already written with `$n` passes through unchanged.
    static func numberedParameters(_ sql: String) -> String {
        var output = ""
        output.reserveCapacity(sql.utf8.count)
        var quote: Character?
        var previous: Character?
        for character in sql {
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "'" || character == "\"" {
                quote = character
            } else if previous == "?", character.isASCII, character.isNumber {
                output.removeLast()
                output.append("$")
            }
            output.append(character)
            previous = character
        }
        return output
    }

    // MARK: - Results

    /// Collects the results of the command just sent and returns the first, waiting at most the
    /// statement timeout plus the grace.
    ///
    /// Every result is read even after an error, so the connection is ready for the next command.
    private func awaitResult(context: String) throws(StorageError) -> PostgreSQLResult {
        let handle = try liveHandle()
        let deadline = ContinuousClock.now + statementTimeout + Self.answerGrace
        var first: PostgreSQLResult?
        var failure: StorageError?
        while true {
            while PQisBusy(handle) == 1 {
                try waitForInput(handle, until: deadline)
                guard PQconsumeInput(handle) == 1 else { throw lost(context) }
            }
            guard let raw = PQgetResult(handle) else { break }
            let result = PostgreSQLResult(raw)
            if !result.succeeded, failure == nil { failure = error(from: result, context: context) }
            if first == nil { first = result }
        }
        if let failure {
            // A session the server ended (or a socket that died) is not used again.
            if failure.code == .unavailable || isBroken { close() }
            throw failure
        }
        guard let first else { throw lost(context) }
        return first
    }

    /// The error for a failed result; one without a SQLSTATE on a dropped connection is a loss.
    private func error(from result: PostgreSQLResult, context: String) -> StorageError {
        if result.errorField(cpq_diag_sqlstate()) == nil, isBroken { return lost(context) }
        if result.status != PGRES_FATAL_ERROR, result.status != PGRES_NONFATAL_ERROR {
            // COPY, an empty query or a response libpq could not parse: none is something Storage sends.
            return StorageError(.internal, "\(context): unexpected result status \(result.status.rawValue)")
        }
        return PostgreSQLErrorMapping.error(from: result, context: context, endpoint: endpoint)
    }

    /// Blocks until the socket has input or `deadline` passes; then the connection is dropped.
    private func waitForInput(_ handle: OpaquePointer, until deadline: ContinuousClock.Instant)
        throws(StorageError)
    {
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        while true {
            let remaining = (deadline - ContinuousClock.now).milliseconds
            let ready = remaining > 0 ? poll(&descriptor, 1, Int32(clamping: remaining + 1)) : 0
            if ready > 0 { return }
            if ready < 0, errno == EINTR { continue }
            close()
            throw StorageError(
                .unavailable,
                "no answer from PostgreSQL at \(endpoint) within the statement timeout; the connection was dropped"
            )
        }
    }

    /// COMMIT, refusing a transaction the server had already aborted (it would answer ROLLBACK).
    private func commit() throws(StorageError) {
        guard let handle, PQtransactionStatus(handle) != PQTRANS_INERROR else {
            throw StorageError(
                .internal,
                "the transaction was aborted by an error the body did not pass on; it was rolled back")
        }
        let tag = try exec("COMMIT")
        guard tag == "COMMIT" else {
            throw StorageError(.internal, "the server answered \(tag) to COMMIT; nothing was written")
        }
    }

    /// Rolls back an open transaction; a broken connection has none left to roll back.
    private func rollBack() {
        guard !isBroken, isInTransaction else { return }
        // When even ROLLBACK fails the connection is broken, which the pool notices.
        _ = try? exec("ROLLBACK")
    }

    /// The handle, or `storage.unavailable` once the connection was dropped.
    private func liveHandle() throws(StorageError) -> OpaquePointer {
        guard let handle else {
            throw StorageError(.unavailable, "the connection to PostgreSQL at \(endpoint) was dropped")
        }
        return handle
    }

    /// The error for a connection that broke mid-command; libpq's message says how.
    private func lost(_ context: String) -> StorageError {
        let reason = PostgreSQLErrorMapping.connectionMessage(handle)
        guard isBroken else {
            // libpq refused the command on a working connection: a misuse of the wrapper.
            return StorageError(.internal, "\(context): \(reason)")
        }
        close()
        return StorageError(
            .unavailable, "\(context): lost the connection to PostgreSQL at \(endpoint): \(reason)")
    }
}
