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
    private let name: String
    private let threadCount: Int
    /// Started by the first job, so a process that never uses the executor (no BankID) never has
    /// its threads, and asking for `queuedCount` (a /metrics scrape) starts nothing.
    private let threads = Locked<WorkerThreads<Void>?>(nil)

    /// An executor whose `threads` threads, named `name-0`, `name-1`, …, start with its first job.
    public init(name: String, threads: Int) {
        self.name = name
        threadCount = threads
    }

    /// Jobs waiting for one of the threads (a task's start or its resumption after an await).
    public var queuedCount: Int { threads.withLock { $0?.queuedCount ?? 0 } }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        let pool = threads.withLock { threads in
            if let threads { return threads }
            let started = WorkerThreads<Void>(name: name, threads: threadCount, makeWorker: {})
            threads = started
            return started
        }
        let accepted = pool.submit { _ in job.runSynchronously(on: executor) }
        // The threads are never stopped (the executors live as long as the process), and the
        // queue has no bound.
        precondition(accepted, "an OffPoolExecutor refused a job")
    }
}
