/// A task executor on threads of its own, for tasks that must make progress whatever else in the
/// process blocks the threads of Swift's global executor. On Linux those are dispatch's shared
/// pool, as many as the machine has cores, to which libdispatch adds one thread a second while
/// all are blocked: code that blocks one (a synchronous SQLite call, a caller waiting on a
/// semaphore) holds it, and a task queued behind such callers waits until they are done. A task
/// started with `Task(executorPreference:)` on one of these runs here instead, and so do its
/// continuations after an await (a libcurl call resumed from its own thread), with two
/// exceptions: code isolated to an actor runs on that actor's executor, and `Task.sleep`'s
/// wake-up is a job on the global executor first.
///
/// Meant for tasks that are mostly awaiting (a BankID call) with short synchronous stretches: the
/// threads are few and fixed, and a job that blocks one holds it.
public final class OffPoolExecutor: TaskExecutor {
    private let threads: WorkerThreads<Void>

    /// Starts `threads` threads named `name-0`, `name-1`, ….
    public init(name: String, threads: Int) {
        self.threads = WorkerThreads(name: name, threads: threads, makeWorker: {})
    }

    /// Jobs waiting for one of the threads (a task's start or its resumption after an await).
    public var queuedCount: Int { threads.queuedCount }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        let accepted = threads.submit { _ in job.runSynchronously(on: executor) }
        // The threads are never stopped (the executors live as long as the process), and the
        // queue has no bound.
        precondition(accepted, "an OffPoolExecutor refused a job")
    }
}
