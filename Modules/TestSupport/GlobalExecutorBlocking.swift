import Dispatch

/// Runs `body` while tasks on Swift's global executor block their threads, as a synchronous caller
/// of SQLite or a socket does, each until `body` returns or 5 s have passed: for a test that
/// something keeps going whatever else in the process holds those threads. Sixteen of them: more
/// than the pool has on this machine, even after libdispatch's monitor has added the one thread a
/// second it adds while every worker is blocked.
public func whileGlobalExecutorBlocked<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
    let release = DispatchSemaphore(value: 0)
    let blockers = 16
    for _ in 0..<blockers { Task.detached { _ = release.wait(timeout: .now() + 5) } }
    defer { for _ in 0..<blockers { release.signal() } }
    return try body()
}
