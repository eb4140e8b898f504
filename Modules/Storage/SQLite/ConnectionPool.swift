import Dispatch
import Kernel

/// A fixed set of connections handed out one thread at a time.
///
/// The writer is a pool of one, which is what serialises writes; the readers are a pool of
/// several, so reads proceed in parallel with each other and, thanks to WAL, with the writer.
final class ConnectionPool: Sendable {
    private struct State {
        var idle: [Connection]
        var closed = false
    }

    private let state: Locked<State>
    /// Counts idle connections, so a caller waits without spinning when all are busy.
    private let available: DispatchSemaphore

    /// libdispatch's DISPATCH_TIME_NOW (a time of 0): a wait that only tries. `.now()` is a
    /// point in time instead, so a wait on a busy pool with it goes to a futex wait with an
    /// expired deadline, which still puts the thread to sleep until its timer fires: a context
    /// switch each time a sign-in finds the writer busy (0.3–0.4 per login at 16 clients, 0.35 at
    /// 64: Benchmarks/switches.sh).
    private static let immediately = DispatchTime(uptimeNanoseconds: 0)

    /// Creates a pool owning `connections`.
    init(_ connections: [Connection]) {
        state = Locked(State(idle: connections))
        available = DispatchSemaphore(value: connections.count)
    }

    /// Runs `body` with a connection nobody else is using, waiting for one if all are busy.
    ///
    /// Blocking: call it from a thread that may wait (not from a cooperative-pool task holding
    /// other work up), and never from inside another `withConnection` on the same pool, which
    /// would wait for itself.
    /// - Throws: `StorageError(.closed)` once the pool is closed, or whatever `body` throws.
    func withConnection<T>(_ body: (Connection) throws -> T) throws -> T {
        available.wait()
        guard let connection = checkOut() else { throw StorageError(.closed, "the database is closed") }
        defer { checkIn(connection) }
        return try body(connection)
    }

    /// Runs `body` with an idle connection if there is one right now; returns nil, without
    /// waiting and without running `body`, when every connection is busy or the pool is closed.
    ///
    /// A caller already waiting in `withConnection` keeps precedence: the semaphore hands a
    /// returned connection to a waiter before a try like this one can take it.
    func withConnectionIfIdle<T>(_ body: (Connection) throws -> T) throws -> T? {
        guard available.wait(timeout: Self.immediately) == .success, let connection = checkOut() else {
            return nil
        }
        defer { checkIn(connection) }
        return try body(connection)
    }

    /// Closes idle connections now and busy ones when they come back; later calls throw `.closed`.
    func close() {
        let idle = state.withLock { state -> [Connection] in
            state.closed = true
            defer { state.idle.removeAll() }
            return state.idle
        }
        for connection in idle { connection.close() }
        available.signal()
    }

    /// Takes an idle connection once the semaphore granted one; nil when the pool is closed, after
    /// passing the wake-up on, so every waiter learns it is.
    private func checkOut() -> Connection? {
        let connection = state.withLock { state -> Connection? in
            state.closed ? nil : state.idle.popLast()
        }
        if connection == nil { available.signal() }
        return connection
    }

    private func checkIn(_ connection: Connection) {
        let closed = state.withLock { state -> Bool in
            if !state.closed { state.idle.append(connection) }
            return state.closed
        }
        if closed { connection.close() }
        available.signal()
    }
}
