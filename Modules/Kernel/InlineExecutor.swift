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
    /// The jobs made runnable on one draining thread, and whether that thread may block.
    private final class Scope {
        var jobs: [(job: UnownedJob, executor: UnownedTaskExecutor)] = []
        let mayBlock: Bool
        init(mayBlock: Bool) { self.mayBlock = mayBlock }
    }

    /// The draining thread's scope; nil on a thread outside `drain`.
    private static let scopeKey: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key left")
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
        guard currentScope == nil else {
            body()
            return
        }
        let scope = Scope(mayBlock: mayBlock)
        pthread_setspecific(scopeKey, Unmanaged.passUnretained(scope).toOpaque())
        defer { pthread_setspecific(scopeKey, nil) }
        body()
        while !scope.jobs.isEmpty {
            let jobs = scope.jobs
            scope.jobs.removeAll(keepingCapacity: true)
            for (job, executor) in jobs { job.runSynchronously(on: executor) }
        }
        withExtendedLifetime(scope) {}
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

    private static var currentScope: Scope? {
        guard let raw = pthread_getspecific(scopeKey) else { return nil }
        return Unmanaged<Scope>.fromOpaque(raw).takeUnretainedValue()
    }
}
