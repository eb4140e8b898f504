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
/// The caller that finds no batch running leads: it runs its own job and everything queued
/// behind it. When it is done and more jobs have queued meanwhile, it hands the lead to the
/// oldest of them and returns, so no caller serves others for long.
final class GroupCommit: Sendable {
    /// How many jobs one transaction takes at most, bounding the work a leader does.
    static let maximumBatch = 64

    /// One caller's transaction body, type-erased, and how its wait ended.
    private final class Job: @unchecked Sendable {
        /// Runs the body and keeps its outcome; only ever called by the current leader. Dropped
        /// by its owner once the leader is done with it (see `write`).
        private var body: ((Connection) -> Bool)?
        /// Whether the body threw (its own error is the outcome, its writes were undone).
        private(set) var threw = false
        /// Set by the leader before `wake`: nil when committed, else why the job failed.
        var failure: (any Error)?
        /// Set instead when this job's thread is to lead the next batch.
        var leads = false
        let wake = DispatchSemaphore(value: 0)

        init(run: @escaping (Connection) -> Bool) { body = run }

        /// Runs the body once; false when it threw.
        func run(_ connection: Connection) -> Bool {
            let succeeded = body?(connection) ?? false
            threw = !succeeded
            return succeeded
        }

        /// Releases the body, which must not outlive the caller's `write`.
        func discardBody() { body = nil }
    }

    private struct State {
        var queue: [Job] = []
        var leading = false
    }

    private let writer: ConnectionPool
    private let state = Locked(State())

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
            let job = Job { connection in
                do {
                    outcome = .success(try body(connection))
                    return true
                } catch {
                    outcome = .failure(error)
                    return false
                }
            }
            let leads = state.withLock { state -> Bool in
                state.queue.append(job)
                guard !state.leading else { return false }
                state.leading = true
                return true
            }
            if !leads {
                job.wake.wait()
                if job.leads { lead() }
            } else {
                lead()
            }
            // The leader has finished with the job (it signalled, or this thread was the leader);
            // the body must not outlive this call, whoever still holds the job.
            job.discardBody()
            if let failure = job.failure { throw failure }
            guard let outcome else { throw StorageError(.internal, "a write job finished without running") }
            return try outcome.get()
        }
    }

    /// Runs one batch from the front of the queue (the leader's own job first), then passes the
    /// lead on or gives it up.
    private func lead() {
        let batch = state.withLock { state -> [Job] in
            let count = min(state.queue.count, Self.maximumBatch)
            defer { state.queue.removeFirst(count) }
            return Array(state.queue.prefix(count))
        }
        commit(batch)
        let next = state.withLock { state -> Job? in
            guard let first = state.queue.first else {
                state.leading = false
                return nil
            }
            return first
        }
        // Wake the others only after choosing the next leader, so they never see a stale state.
        if let next {
            next.leads = true
            next.wake.signal()
        }
        for job in batch where job !== batch.first { job.wake.signal() }
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
