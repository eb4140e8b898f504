import CSQLite
import Dispatch
import Foundation
import Synchronization

/// Copies the write-ahead log back into the database file on a thread of its own.
///
/// SQLite's automatic checkpoint runs inside the COMMIT that crosses the threshold: that one
/// commit copies about a thousand pages and syncs the file while it holds the write lock, and
/// every writer queued behind it waits (a latency spike every few thousand sign-ins). Here the
/// writer's WAL hook only notes the log's size; once it passes `thresholdFrames` this thread runs
/// a PASSIVE checkpoint on its own connection, which never blocks the writer or the readers.
final class Checkpointer: Sendable {
    private struct State {
        var requested = false
        var stopped = false
        var completed = 0
    }

    private let connection: Connection
    private let thresholdFrames: Int32
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Opens the checkpoint connection and starts its thread; call `attach(to:)` for the writer.
    init(path: String, busyTimeoutMilliseconds: Int32, thresholdFrames: Int) throws {
        connection = try Connection(
            path: path, flags: [.readWrite], busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        self.thresholdFrames = Int32(clamping: max(1, thresholdFrames))
        let thread = Thread { [self] in run() }
        thread.name = "sqlite-checkpoint"
        thread.start()
    }

    /// How many background checkpoints have run (for tests and metrics).
    var completedCount: Int { state.withLock { $0.completed } }

    /// Replaces the writer's automatic checkpoint with this one.
    ///
    /// The hook holds an unretained pointer: the database keeps the checkpointer alive for as long
    /// as the writer connection is open, and closes the writer before stopping it.
    func attach(to writer: Connection) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        // Installing a WAL hook turns SQLite's own autocheckpoint off for this connection.
        sqlite3_wal_hook(
            writer.rawHandle,
            { context, _, _, frames in
                if let context {
                    Unmanaged<Checkpointer>.fromOpaque(context).takeUnretainedValue().logGrew(to: frames)
                }
                return SQLITE_OK
            }, context)
    }

    /// Called by SQLite on the writer after each commit, with the log's size in frames.
    private func logGrew(to frames: Int32) {
        guard frames >= thresholdFrames else { return }
        let shouldWake = state.withLock { state -> Bool in
            guard !state.requested, !state.stopped else { return false }
            state.requested = true
            return true
        }
        if shouldWake { wake.signal() }
    }

    /// Stops the thread after any checkpoint in progress and closes the connection.
    func stop() {
        let wasRunning = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard wasRunning else { return }
        wake.signal()
        finished.wait()
        connection.close()
    }

    private func run() {
        while true {
            wake.wait()
            let stop = state.withLock { state -> Bool in
                state.requested = false
                return state.stopped
            }
            if stop { break }
            // PASSIVE copies every frame no reader still needs and gives up on the rest; the next
            // request finishes the job. Failures (a busy checkpoint lock held by another process)
            // are retried then too.
            var logFrames: Int32 = 0
            var copied: Int32 = 0
            let rc = sqlite3_wal_checkpoint_v2(
                connection.rawHandle, nil, SQLITE_CHECKPOINT_PASSIVE, &logFrames, &copied)
            if rc == SQLITE_OK { state.withLock { $0.completed += 1 } }
        }
        finished.signal()
    }
}
