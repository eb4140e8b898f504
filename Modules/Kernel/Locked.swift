import Glibc

/// A value shared between threads, reached only through `withLock`: the lock every product
/// module uses instead of the standard library's `Mutex`.
///
/// Why not `Mutex`: on Linux it is a priority-inheriting futex that spins before it sleeps and,
/// when contended, hands the lock straight to the waiter the kernel picks. On a machine with more
/// runnable threads than cores that waiter is often not running, so every thread that needs the
/// lock next waits for it to be scheduled (a lock convoy), and the spinning burns the time the
/// holder needed. Under 64 clients on 2 cores `Mutex._lockSlow` was 7.4% of the server's samples,
/// most of it on one rate-limit bucket that every request from one address shares
/// (Docs/performance.md, "Locks that do not convoy"). glibc's plain mutex sleeps at once and lets
/// whichever thread runs first take a released lock.
public final class Locked<State>: @unchecked Sendable {
    // @unchecked: `state` is only read or written between lock and unlock of `mutex`.
    // Not @inlinable (as `Mutex` is): an inlinable version with the state behind a pointer was
    // measured slower at 16 clients in every round (Docs/performance.md, "Locks that do not
    // convoy"), its specialised copies falling outside the release link's function order.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var state: State

    /// A lock around `state`.
    public init(_ state: sending State) {
        self.state = state
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the state while holding the lock, and returns what it returns.
    ///
    /// Not reentrant: calling `withLock` on the same lock inside `body` deadlocks.
    public func withLock<Value, Failure: Error>(
        _ body: (inout sending State) throws(Failure) -> sending Value
    ) throws(Failure) -> sending Value {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}
