import Glibc

/// A task executor that runs a task's jobs on the thread that made them runnable, when that
/// thread is inside `drain`; a job made runnable anywhere else goes to `fallback`.
///
/// It lets a request be handed between threads only where it must wait. An HTTP worker that
/// starts a request's task inside `drain` runs the handler at once, on itself, up to the handler's
/// first await; the SQLite writer that commits a batch inside `drain` runs each resumed handler's
/// rest (building its answer) on itself, right after the COMMIT. A sign-in on a worker pool is
/// thus handed over twice (to the writer, back to the worker to send), however many requests
/// share the worker, instead of waking a thread per request. A continuation resumed on a thread
/// outside `drain` (libcurl's, for a BankID call) runs on `fallback`'s threads, as it would on an
/// `OffPoolExecutor` alone.
///
/// `drain` also says whether the thread may block (see `currentThreadMayBlock`): code that can
/// either suspend or wait (a write that can join a group commit either way) waits on a thread
/// that may, where suspending would only add a hand-over.
public final class InlineExecutor: TaskExecutor {
    /// A thread's drain: the jobs made runnable on it, and whether it may block. One per thread,
    /// made by its first `drain` and kept until the thread ends, so a worker that drains once per
    /// request allocates neither the scope nor its arrays again.
    private final class Scope {
        typealias Job = (job: UnownedJob, executor: UnownedTaskExecutor)
        /// Whether the thread is inside `drain` now.
        var draining = false
        var mayBlock = true
        /// The jobs made runnable since the last round began.
        var jobs: [Job] = []
        /// The round being run: swapped with `jobs`, so both keep their capacity.
        var running: [Job] = []
    }

    /// The thread's scope, released when the thread ends; nil before its first `drain`.
    private static let scopeKey: pthread_key_t = {
        var key = pthread_key_t()
        let released: @convention(c) (UnsafeMutableRawPointer?) -> Void = { raw in
            if let raw { Unmanaged<Scope>.fromOpaque(raw).release() }
        }
        precondition(pthread_key_create(&key, released) == 0, "no thread-specific key left")
        return key
    }()

    /// Where jobs made runnable outside `drain` run.
    public let fallback: OffPoolExecutor

    public init(fallback: OffPoolExecutor) { self.fallback = fallback }

    public func enqueue(_ job: consuming ExecutorJob) {
        if let scope = Self.currentScope {
            scope.jobs.append((UnownedJob(job), asUnownedTaskExecutor()))
        } else {
            fallback.enqueue(job)
        }
    }

    /// Runs `body` with this thread collecting what every `InlineExecutor` is given, then runs
    /// those jobs here, and the jobs they make runnable, until none is left. Nested calls on one
    /// thread leave the running to the outermost.
    /// - Parameter mayBlock: whether code run here may wait for others (a connection's own
    ///   thread, the writer) or must not (a worker serving many connections).
    public static func drain(mayBlock: Bool, _ body: () -> Void) {
        let scope = threadScope
        guard !scope.draining else {
            body()
            return
        }
        scope.draining = true
        scope.mayBlock = mayBlock
        defer { scope.draining = false }
        body()
        while !scope.jobs.isEmpty {
            swap(&scope.jobs, &scope.running)
            for (job, executor) in scope.running { job.runSynchronously(on: executor) }
            scope.running.removeAll(keepingCapacity: true)
        }
    }

    /// False only inside a `drain(mayBlock: false)`: everywhere else (any thread of ours outside
    /// a drain, such as an `OffPoolExecutor`'s) waiting is what the code did before it could
    /// suspend.
    public static var currentThreadMayBlock: Bool { currentScope?.mayBlock ?? true }

    /// Thrown by code that is about to wait for others (a commit) where `currentThreadMayBlock` is
    /// false, before it has changed anything: the HTTP engine then runs the whole request handler
    /// again on a thread that may wait. For waits too rare to move the whole route off the worker.
    public struct WouldBlock: Error {
        public init() {}
    }

    /// The scope of a thread inside `drain`; nil on any other.
    private static var currentScope: Scope? {
        guard let raw = pthread_getspecific(scopeKey) else { return nil }
        let scope = Unmanaged<Scope>.fromOpaque(raw).takeUnretainedValue()
        return scope.draining ? scope : nil
    }

    /// This thread's scope, made on its first call.
    private static var threadScope: Scope {
        if let raw = pthread_getspecific(scopeKey) {
            return Unmanaged<Scope>.fromOpaque(raw).takeUnretainedValue()
        }
        let scope = Scope()
        pthread_setspecific(scopeKey, Unmanaged.passRetained(scope).toOpaque())
        return scope
    }
}
