import Dispatch
import Kernel

/// A fixed number of PostgreSQL connections, handed out one thread at a time.
///
/// The pool has `size` slots. A slot holds an idle connection, a connection in use, or nothing:
/// a connection that broke (the server ended the session, the socket died, a statement got no
/// answer) is finished when it comes back, and its slot is reconnected by the next caller that
/// needs it. So the pool recovers by itself when the server is back, without a restart, and never
/// hands a broken connection out again. While the server stays unreachable, a failed connect is
/// not retried for `reconnectDelay`; callers meanwhile get that failure at once instead of each
/// waiting out a connect timeout.
///
/// A caller waits at most `waitTimeout` for a free slot (then `storage.timeout`), plus at most the
/// connect timeout when it has to reconnect one: nothing waits without a bound.
final class PostgreSQLConnectionPool: Sendable {
    private struct State {
        var idle: [PostgreSQLConnection]
        /// Slots with no connection, to be connected on demand.
        var vacant = 0
        var closed = false
        /// The last failed connect, which is repeated to callers until `reconnectDelay` has passed.
        var lastConnectFailure: (at: ContinuousClock.Instant, error: StorageError)?
        /// Connections opened since the pool was made, the first `size` included.
        var connectCount = 0
    }

    /// Opens one connection; a seam only so tests can make a reconnect fail on demand.
    typealias Connector = @Sendable (PostgreSQLConfiguration) throws(StorageError) -> PostgreSQLConnection

    let configuration: PostgreSQLConfiguration
    /// How many connections the pool holds at most.
    let size: Int
    private let waitTimeout: Duration
    private let reconnectDelay: Duration
    private let connect: Connector
    private let state: Locked<State>
    /// Counts free slots (idle or vacant), so callers wait without spinning.
    private let available: DispatchSemaphore

    /// Opens `size` connections now, so a wrong address, password or server release is an error
    /// at start-up rather than at the first request.
    /// - Throws: `storage.invalid_argument` for a size below 1 or a negative wait, or what the first
    ///   failing connection throws (every connection opened before it is closed).
    init(
        configuration: PostgreSQLConfiguration, size: Int, waitTimeout: Duration,
        reconnectDelay: Duration = .seconds(1),
        connect: @escaping Connector = { configuration throws(StorageError) in
            try PostgreSQLConnection(configuration: configuration)
        }
    ) throws(StorageError) {
        guard size >= 1, waitTimeout >= .zero, reconnectDelay >= .zero else {
            throw StorageError(
                .invalidArgument, "a PostgreSQL pool needs at least one connection and non-negative timeouts")
        }
        var connections: [PostgreSQLConnection] = []
        for _ in 0..<size {
            do {
                connections.append(try connect(configuration))
            } catch {
                for connection in connections { connection.close() }
                throw error
            }
        }
        self.configuration = configuration
        self.size = size
        self.waitTimeout = waitTimeout
        self.reconnectDelay = reconnectDelay
        self.connect = connect
        state = Locked(State(idle: connections, connectCount: size))
        available = DispatchSemaphore(value: size)
    }

    /// How many connections the pool has opened in all (tests use it to see a reconnect).
    var connectCount: Int { state.withLock { $0.connectCount } }

    /// Runs `body` with a connection nobody else is using.
    ///
    /// Blocking, like the SQLite pool: call it from a thread that may wait, never from inside
    /// another `withConnection` on the same pool.
    /// - Throws: `storage.timeout` when no slot is free within the wait timeout,
    ///   `storage.unavailable` when the slot's connection cannot be reopened, `storage.closed` once
    ///   the pool is closed, or what `body` throws.
    func withConnection<T>(_ body: (PostgreSQLConnection) throws -> T) throws -> T {
        guard available.wait(timeout: .now() + waitTimeout.dispatchInterval) == .success else {
            throw StorageError(
                .timeout,
                "no PostgreSQL connection became free within \(waitTimeout.milliseconds) ms (pool of \(size))"
            )
        }
        let connection: PostgreSQLConnection
        do {
            connection = try checkOut()
        } catch {
            // The slot stays free for the next caller (or, once closed, wakes the next waiter).
            available.signal()
            throw error
        }
        defer { checkIn(connection) }
        return try body(connection)
    }

    /// Runs `body` in a transaction on a pooled connection; see `PostgreSQLConnection.transaction`.
    func transaction<T>(
        _ isolation: PostgreSQLIsolationLevel = .readCommitted,
        attempts: Int = PostgreSQLConnection.defaultTransactionAttempts,
        _ body: (PostgreSQLConnection) throws -> T
    ) throws -> T {
        try withConnection { connection in try connection.transaction(isolation, attempts: attempts, body) }
    }

    /// Closes idle connections now and busy ones when they come back; later calls throw `.closed`.
    func close() {
        let idle = state.withLock { state -> [PostgreSQLConnection] in
            state.closed = true
            defer { state.idle.removeAll() }
            return state.idle
        }
        for connection in idle { connection.close() }
        available.signal()
    }

    /// A usable connection for a caller holding a free slot: an idle one that is still alive, or
    /// a new one in a vacant slot.
    private func checkOut() throws(StorageError) -> PostgreSQLConnection {
        while true {
            let idle = try state.withLock { state throws(StorageError) -> PostgreSQLConnection? in
                guard !state.closed else { throw StorageError(.closed, "the database is closed") }
                if let connection = state.idle.popLast() { return connection }
                if let failure = state.lastConnectFailure, ContinuousClock.now < failure.at + reconnectDelay {
                    throw failure.error
                }
                state.vacant -= 1
                return nil
            }
            guard let idle else { return try reconnect() }
            if idle.isUsableWhileIdle() { return idle }
            // The server ended this session while it sat idle: drop it and fill the slot anew.
            idle.close()
            state.withLock { $0.vacant += 1 }
        }
    }

    /// Opens a connection for a vacant slot the caller took; on failure the slot stays vacant.
    private func reconnect() throws(StorageError) -> PostgreSQLConnection {
        do {
            let connection = try connect(configuration)
            state.withLock { state in
                state.connectCount += 1
                state.lastConnectFailure = nil
            }
            return connection
        } catch {
            state.withLock { state in
                state.vacant += 1
                state.lastConnectFailure = (ContinuousClock.now, error)
            }
            throw error
        }
    }

    private func checkIn(_ connection: PostgreSQLConnection) {
        // A body that left a transaction open (it must not) gets it rolled back here, so the next
        // caller starts clean; if even that fails the connection is dropped.
        if connection.isInTransaction, !connection.isBroken { _ = try? connection.exec("ROLLBACK") }
        let keep = !connection.isBroken && !connection.isInTransaction
        let closed = state.withLock { state -> Bool in
            if state.closed { return true }
            if keep { state.idle.append(connection) } else { state.vacant += 1 }
            return false
        }
        if closed || !keep { connection.close() }
        available.signal()
    }
}

extension Duration {
    /// This duration for Dispatch, to the nanosecond.
    var dispatchInterval: DispatchTimeInterval {
        let parts = components
        let nanoseconds = parts.seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !nanoseconds.overflow, nanoseconds.partialValue < Int64(Int.max) else { return .never }
        return .nanoseconds(Int(nanoseconds.partialValue + parts.attoseconds / 1_000_000_000))
    }
}
