import Dispatch
import Kernel

/// Group commit: write transactions that arrive while another is running are committed together,
/// each inside its own savepoint, in one `BEGIN IMMEDIATE … COMMIT` on the writer.
///
/// With one writer, concurrent sign-ins queue for it anyway; committing them as a batch pays the
/// transaction's fixed costs (file locks, the WAL header, pages every insert touches, such as the
/// last leaf of an append-only table) once per batch instead of once per sign-in. Each caller
/// still gets all-or-nothing for its own writes (its savepoint is rolled back when it throws)
/// and returns only after the COMMIT that made them durable.
///
/// A caller that waits (`write`) and finds no batch running leads: it runs its own job and
/// everything queued behind it. When it is done and more jobs have queued meanwhile, it hands the
/// lead to the oldest of them and returns, so no caller serves others for long. A caller that
/// suspends instead (`writeAsync`, from a thread that serves many connections) never leads: the
/// database's writer thread does, batch by batch, and resumes each such caller right after its
/// COMMIT, on itself (see `InlineExecutor`).
final class GroupCommit: Sendable {
    /// How many jobs one transaction takes at most, bounding the work a leader does.
    static let maximumBatch = 64

    /// One caller's transaction body, type-erased, and how its wait ends.
    private final class Job: @unchecked Sendable {
        /// Runs the body and keeps its outcome; only ever called by the current leader. Dropped
        /// by its owner once the leader is done with it (see `write`).
        private var body: ((Connection) -> Bool)?
        /// Whether the body threw (its own error is the outcome, its writes were undone).
        private(set) var threw = false
        /// Set by the leader before the job finishes: nil when committed, else why it failed.
        var failure: (any Error)?
        /// Set instead when this job's thread is to lead the next batch (a waiting caller's only).
        var leads = false
        /// How the caller learns the job finished: a waiting caller's semaphore, or a suspended
        /// caller's resumption.
        private let waiter: Waiter

        enum Waiter {
            case blocked(DispatchSemaphore)
            case suspended((Job) -> Void)
        }

        init(run: @escaping (Connection) -> Bool, waiter: Waiter) {
            body = run
            self.waiter = waiter
        }

        /// Whether the caller waits on its own thread, so that it can take the lead.
        var callerWaits: Bool {
            if case .blocked = waiter { true } else { false }
        }

        /// Runs the body once; false when it threw.
        func run(_ connection: Connection) -> Bool {
            let succeeded = body?(connection) ?? false
            threw = !succeeded
            return succeeded
        }

        /// Tells the caller that its job is done (or that it leads, when `leads` is set).
        func finish() {
            switch waiter {
            case .blocked(let semaphore): semaphore.signal()
            case .suspended(let resume): resume(self)
            }
        }

        /// Releases the body, which must not outlive the caller's `write`.
        func discardBody() { body = nil }
    }

    private struct State {
        var queue: [Job] = []
        var leading = false
        /// The writer thread was woken and has not yet looked at the queue.
        var writerWoken = false
        var writerStarted = false
        var closed = false
    }

    private let writer: ConnectionPool
    private let state = Locked(State())
    /// Wakes the writer thread, which leads for suspended callers.
    private let writerWake = DispatchSemaphore(value: 0)

    init(writer: ConnectionPool) { self.writer = writer }

    /// How many callers wait for a batch to take their job (the running batch's not counted).
    var queuedCount: Int { state.withLock { $0.queue.count } }

    /// Runs `body` in a write transaction, possibly shared with other callers' bodies, and
    /// returns its value once that transaction has committed.
    /// - Throws: what `body` throws (its writes undone), or the error that failed the shared
    ///   COMMIT (then nothing of the batch is written).
    func write<T>(_ body: (Connection) throws -> T) throws -> T {
        try withoutActuallyEscaping(body) { body in
            // The body is only called by the leader while this thread waits below, so letting
            // it escape into the job is safe.
            var outcome: Result<T, any Error>?
            let wake = DispatchSemaphore(value: 0)
            let job = Job(run: Self.recording(body) { outcome = $0 }, waiter: .blocked(wake))
            let leads = state.withLock { state -> Bool in
                state.queue.append(job)
                guard !state.leading else { return false }
                state.leading = true
                return true
            }
            if !leads {
                wake.wait()
                if job.leads { lead(own: job) }
            } else {
                lead(own: job)
            }
            // The leader has finished with the job (it signalled, or this thread was the leader);
            // the body must not outlive this call, whoever still holds the job.
            job.discardBody()
            if let failure = job.failure { throw failure }
            guard let outcome else { throw StorageError(.internal, "a write job finished without running") }
            return try outcome.get()
        }
    }

    /// `write` for a caller that must not wait: on a thread that may not block (see
    /// `InlineExecutor.currentThreadMayBlock`), the caller's task is suspended until the COMMIT
    /// and resumed by the writer thread; on any other thread this is `write`, which leads or
    /// waits as the thread always did.
    /// - Throws: as `write`; `StorageError(.closed)` once the database is closed.
    func writeAsync<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        guard !InlineExecutor.currentThreadMayBlock else { return try write(body) }
        let outcome = Outcome<T>()
        return try await withCheckedThrowingContinuation { continuation in
            let job = Job(
                run: Self.recording(body) { outcome.value = $0 },
                waiter: .suspended { job in
                    job.discardBody()
                    if let failure = job.failure {
                        continuation.resume(throwing: failure)
                    } else {
                        continuation.resume(
                            with: outcome.value
                                ?? .failure(StorageError(.internal, "a write job finished without running")))
                    }
                })
            let (accepted, wake, start) = state.withLock { state -> (Bool, Bool, Bool) in
                guard !state.closed else { return (false, false, false) }
                state.queue.append(job)
                let start = !state.writerStarted
                state.writerStarted = true
                return (true, wakeWriterIfIdle(&state), start)
            }
            guard accepted else {
                job.failure = StorageError(.closed, "the database is closed")
                job.finish()
                return
            }
            if start { Threads.start(name: "sqlite-writer", stackSize: 512 * 1024) { [self] in runWriter() } }
            if wake { writerWake.signal() }
        }
    }

    /// Stops the writer thread once the queue is empty; later `writeAsync` calls throw
    /// `storage.closed`. Called after the writer's connections are closed, so what is still
    /// queued fails with that error rather than being written.
    func close() {
        let wake = state.withLock { state -> Bool in
            state.closed = true
            return state.writerStarted
        }
        if wake { writerWake.signal() }
    }

    /// A job's body: runs `body`, hands its value or error to `keep`, and says whether it
    /// succeeded (a job that threw has its writes undone).
    private static func recording<T>(
        _ body: @escaping (Connection) throws -> T, _ keep: @escaping (Result<T, any Error>) -> Void
    ) -> (Connection) -> Bool {
        { connection in
            do {
                keep(.success(try body(connection)))
                return true
            } catch {
                keep(.failure(error))
                return false
            }
        }
    }

    /// Where a suspended caller's result waits between its body and its resumption.
    private final class Outcome<T>: @unchecked Sendable {
        // @unchecked: set by the leader while it runs the body, read by the resumption after.
        var value: Result<T, any Error>?
    }

    /// Whether to wake the writer thread for a queued suspended caller: not while someone leads
    /// (the leader's hand-over wakes it) nor while it is already woken.
    private func wakeWriterIfIdle(_ state: inout State) -> Bool {
        guard !state.leading, !state.writerWoken else { return false }
        state.writerWoken = true
        return true
    }

    /// The writer thread: leads one batch at a time while suspended callers' jobs are queued and
    /// nobody else leads, resuming each batch's callers right after its COMMIT. The lead is given
    /// up between batches, so a resumed handler that writes again (on this thread, which may
    /// block) leads its own write instead of waiting for this thread.
    private func runWriter() {
        while true {
            writerWake.wait()
            var more = true
            while more {
                InlineExecutor.drain(mayBlock: true) { more = leadOneBatch() }
            }
            if state.withLock({ $0.closed && $0.queue.isEmpty }) { return }
        }
    }

    /// One batch led by the writer thread; false when there was nothing to lead.
    private func leadOneBatch() -> Bool {
        let batch = state.withLock { state -> [Job] in
            state.writerWoken = false
            guard !state.leading, !state.queue.isEmpty else { return [] }
            state.leading = true
            return takeBatch(&state)
        }
        guard !batch.isEmpty else { return false }
        commit(batch)
        handOff(after: batch, own: nil)
        return true
    }

    /// Runs one batch, the waiting leader's own job first and then the oldest queued ones, then
    /// passes the lead on or gives it up. Its own job need not be at the front: suspended callers'
    /// jobs queue while nobody leads (the writer thread takes them in turn), and a leader whose
    /// own job were left out of its batch would return without it having run.
    private func lead(own: Job) {
        let batch = state.withLock { state -> [Job] in
            guard let index = state.queue.firstIndex(where: { $0 === own }) else { return takeBatch(&state) }
            state.queue.remove(at: index)
            let others = min(state.queue.count, Self.maximumBatch - 1)
            defer { state.queue.removeFirst(others) }
            return [own] + state.queue.prefix(others)
        }
        commit(batch)
        handOff(after: batch, own: own)
    }

    private func takeBatch(_ state: inout State) -> [Job] {
        let count = min(state.queue.count, Self.maximumBatch)
        defer { state.queue.removeFirst(count) }
        return Array(state.queue.prefix(count))
    }

    /// After a batch: the lead goes to the oldest queued caller that waits on its own thread,
    /// wherever it is in the queue (it leads the suspended jobs ahead of it too); with none, it is
    /// given up, and the suspended callers left queued wake the writer thread. A waiting caller
    /// must never be left to a writer thread that could itself be that caller (a resumed handler
    /// that writes again), so waiting callers always get the lead. Then every caller of the batch
    /// but the leader's own learns its outcome.
    private func handOff(after batch: [Job], own: Job?) {
        let (next, wake) = state.withLock { state -> (Job?, Bool) in
            guard !state.queue.isEmpty else {
                state.leading = false
                return (nil, false)
            }
            if let waiting = state.queue.first(where: \.callerWaits) { return (waiting, false) }
            state.leading = false
            return (nil, wakeWriterIfIdle(&state))
        }
        // Wake the others only after choosing the next leader, so they never see a stale state.
        if let next {
            next.leads = true
            next.finish()
        }
        if wake { writerWake.signal() }
        for job in batch where job !== own { job.finish() }
    }

    /// Runs `batch` in one transaction: each job in a savepoint (none when it is alone), one
    /// COMMIT for all.
    private func commit(_ batch: [Job]) {
        do {
            try writer.withConnection { connection in
                do {
                    try connection.execute("BEGIN IMMEDIATE")
                    var succeeded: [Job] = []
                    if batch.count == 1 {
                        if batch[0].run(connection) { succeeded.append(batch[0]) }
                    } else {
                        for job in batch { try run(job, on: connection, succeeded: &succeeded) }
                    }
                    if succeeded.isEmpty {
                        // Nothing to keep (a lone job threw): undo rather than commit.
                        if connection.isInTransaction { try connection.execute("ROLLBACK") }
                    } else {
                        try connection.execute("COMMIT")
                    }
                } catch {
                    // COMMIT or a savepoint statement failed: the whole batch is undone.
                    if connection.isInTransaction { _ = try? connection.execute("ROLLBACK") }
                    throw error
                }
            }
        } catch {
            // Nothing of the batch was written (or the writer is closed): every job that had
            // succeeded, or had not run, fails with the cause.
            for job in batch where job.failure == nil && !job.threw { job.failure = error }
        }
    }

    /// Runs one job of a shared batch inside its own savepoint.
    private func run(_ job: Job, on connection: Connection, succeeded: inout [Job]) throws {
        try connection.execute("SAVEPOINT job")
        if job.run(connection) {
            try connection.execute("RELEASE job")
            succeeded.append(job)
            return
        }
        guard connection.isInTransaction else {
            // Some errors (a full disk, an I/O error) make SQLite roll back the whole transaction:
            // the jobs that succeeded before this one were undone with it.
            let undone = StorageError(.io, "the shared transaction was rolled back by an earlier failure")
            for earlier in succeeded { earlier.failure = undone }
            succeeded.removeAll()
            try connection.execute("BEGIN IMMEDIATE")
            return
        }
        try connection.execute("ROLLBACK TO job")
        try connection.execute("RELEASE job")
    }
}
