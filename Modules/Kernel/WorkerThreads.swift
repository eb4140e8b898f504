/// A fixed set of threads, each with a worker of its own (a libcurl handle: one kept-alive
/// connection per thread), serving one queue of jobs in order. The callers' threads only queue:
/// a slow job holds one of these threads, never a request's.
public final class WorkerThreads<Worker>: @unchecked Sendable {
    /// A job, run on one of the threads with that thread's worker.
    public typealias Job = (Worker) -> Void

    // Guarded by `condition`.
    private let condition = ConditionLock()
    private var jobs: [Job] = []
    private var head = 0
    private var stopped = false
    /// Threads waiting for a job: a job for one of them does not count as queued.
    private var idle = 0
    /// Threads that have not exited yet.
    private var running: Int
    private let maximumQueued: Int?

    /// Starts `threads` threads named `name-0`, `name-1`, …, each making its worker on itself.
    /// - Parameter maximumQueued: jobs that may wait beyond the idle threads; nil for no bound.
    public init(
        name: String, threads: Int, maximumQueued: Int? = nil, makeWorker: @escaping @Sendable () -> Worker
    ) {
        self.maximumQueued = maximumQueued
        running = threads
        for index in 0..<threads {
            Threads.start(name: "\(name)-\(index)", stackSize: 512 * 1024) { [self] in run(makeWorker()) }
        }
    }

    /// How many jobs wait for a thread.
    public var queuedCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return jobs.count - head
    }

    /// Queues `job`; false when the queue is full or the threads are stopping (it never runs).
    public func submit(_ job: @escaping Job) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopped, maximumQueued.map({ jobs.count - head < $0 + idle }) ?? true else { return false }
        jobs.append(job)
        condition.signal()
        return true
    }

    /// Takes no more jobs; the threads exit once the queued ones are done.
    public func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    /// `stop()`, then waits at most `grace` seconds for every thread to exit.
    public func stop(grace: Double) {
        stop()
        Threads.wait(atMost: grace) {
            condition.lock()
            defer { condition.unlock() }
            return running == 0
        }
    }

    private func run(_ worker: Worker) {
        while true {
            condition.lock()
            idle += 1
            while head == jobs.count, !stopped { condition.wait() }
            idle -= 1
            if head == jobs.count {  // stopped and drained
                running -= 1
                condition.unlock()
                return
            }
            let job = jobs[head]
            head += 1
            // Compact now and then so the array does not grow forever.
            if head > 64, head * 2 > jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            condition.unlock()
            job(worker)
        }
    }
}
