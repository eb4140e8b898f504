import Dispatch
import Kernel

/// Runs async code the way an HTTP worker of a pool runs a handler: started on the calling thread
/// inside `InlineExecutor.drain(mayBlock: false)`, so a write that can suspend does (SQLite's
/// writer thread then commits it and runs the rest), and the calling thread waits for the result.
public enum SuspendingCaller {
    private static let executor = InlineExecutor(fallback: OffPoolExecutor(name: "test-inline", threads: 2))

    /// A task that did not finish within 30 s.
    public struct NeverResumed: Error {}

    /// `body`'s value or error, once its task has finished.
    /// - Throws: what `body` throws; `NeverResumed` when it has not finished after 30 s.
    public static func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let result = Locked<Result<T, any Error>?>(nil)
        InlineExecutor.drain(mayBlock: false) {
            Task(executorPreference: executor) {
                let outcome: Result<T, any Error>
                do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
                result.withLock { $0 = outcome }
                done.signal()
            }
        }
        // Bounded, so a continuation never resumed fails the test instead of hanging the run.
        guard done.wait(timeout: .now() + 30) == .success else { throw NeverResumed() }
        return try result.withLock { $0! }.get()
    }
}
