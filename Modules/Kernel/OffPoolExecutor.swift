/// A task executor on threads of its own, for tasks that must make progress whatever Swift's
/// global executor is doing. On Linux that executor's threads are dispatch's shared pool, about as
/// wide as the machine has cores (2 here); code that blocks a thread there (a synchronous SQLite
/// call, a caller waiting on a semaphore) holds one of them, and a task queued behind such callers
/// waits until they are done. A task started with `Task(executorPreference:)` on one of these runs
/// here instead, and so do its continuations after every await.
///
/// Meant for tasks that are mostly awaiting (a BankID call) with short synchronous stretches: the
/// threads are few and fixed, and a job that blocks one holds it.
public final class OffPoolExecutor: TaskExecutor {
    private let threads: WorkerThreads<Void>

    /// Starts `threads` threads named `name-0`, `name-1`, ….
    public init(name: String, threads: Int) {
        self.threads = WorkerThreads(name: name, threads: threads, makeWorker: {})
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        let accepted = threads.submit { _ in job.runSynchronously(on: executor) }
        // The threads are never stopped (the executors live as long as the process), and the
        // queue has no bound.
        precondition(accepted, "an OffPoolExecutor refused a job")
    }
}
