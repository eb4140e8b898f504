import Kernel

/// Copies the WAL back into the database file on a thread and a connection of its own, so that no
/// request's COMMIT runs a checkpoint.
///
/// SQLite's automatic checkpoint runs inside the COMMIT that takes the WAL past 1000 frames: that
/// commit (and with group commit, every sign-in in its batch) also waited for a sync of the WAL,
/// the copy of every page the WAL changed and a sync of the database file. Here the writer's WAL
/// hook only counts frames and wakes this thread, which checkpoints PASSIVE: it takes no lock a
/// writer or reader needs, so commits carry on while it copies and syncs.
///
/// A passive checkpoint cannot restart the WAL while commits keep arriving: SQLite writes from
/// the start of the file again only when a write transaction begins with every frame copied.
/// Under constant load the file would then grow without end, so once it holds `limit` frames the
/// next pass runs while holding this process's writer: commits wait for that one pass (a copy of
/// only what arrived since the last pass, and the syncs), after which the next commit restarts
/// the WAL. Its size stays within about `limit` frames plus what one pass lets through. A reader
/// on an old snapshot (a backup) keeps any checkpoint from restarting the WAL while it lasts; then
/// the writer is held again only each time the WAL has doubled, and released after at most the
/// busy timeout of 50 ms.
///
/// Other processes on the same file (the `portvakt` commands) run their own; concurrent passes
/// are harmless (SQLite lets one run and the other reports busy). The final checkpoint, which
/// also removes the WAL, is still the writer's: the last connection to close does it.
final class Checkpointer: @unchecked Sendable {
    /// Frames not yet copied that start a pass: 4000 pages, about 16 MB at the default page size
    /// (four times SQLite's automatic threshold), so the WAL is held at up to about 64 MB. A
    /// login's pages recur from commit to commit (the newest leaf of each append-only B-tree), and
    /// a pass copies each page once however many frames it has: at 1000 the database file got
    /// 1.02 page writes and 0.02 syncs per login, at 4000 0.39 and 0.005, and the held passes,
    /// which make commits wait, come a quarter as often (Docs/performance.md).
    static let defaultThreshold = 4000

    private let connection: Connection
    private let writer: ConnectionPool
    private let threshold: Int
    private let limit: Int
    private let lock = ConditionLock()
    // Guarded by `lock`.
    /// The WAL's length in frames after the latest commit of this process.
    private var walFrames = 0
    /// How many of them the latest pass found copied into the database file.
    private var copied = 0
    private var stopping = false
    private var finished = false
    // Only the checkpointer's thread uses this.
    /// WAL frames from which a pass holds the writer: `limit`, or twice the length of the last
    /// held pass that could not restart the WAL (a long reader such as a backup), so that
    /// commits are not held again and again while that reader lasts.
    private var holdFrom: Int

    /// Opens the checkpointer's connection to `path` and starts its thread.
    /// - Parameters:
    ///   - writer: this process's writer, held during a pass once the WAL reaches `limit` frames.
    ///   - threshold: uncopied frames that start a pass.
    ///   - limit: WAL frames from which a pass holds the writer (at least `threshold`).
    ///   - openingTimeout: how long the first read may wait for a lock (the database's busy
    ///     timeout): another process opening a new file holds it while it sets the file up.
    init(path: String, writer: ConnectionPool, threshold: Int, limit: Int, openingTimeout: Int32) throws {
        connection = try Connection(path: path, flags: [.readWrite], busyTimeoutMilliseconds: openingTimeout)
        // A connection learns that the file is in WAL mode when it first reads it; until then
        // a checkpoint on it does nothing.
        _ = try connection.queryFirst("SELECT count(*) FROM sqlite_schema") { try $0.int64(0) }
        // From here only the restart waits (for readers, whose statements take microseconds);
        // briefly, since commits wait meanwhile. A passive checkpoint never calls the busy handler.
        connection.setBusyTimeout(milliseconds: 50)
        self.writer = writer
        self.threshold = max(1, threshold)
        self.limit = max(self.threshold, limit)
        holdFrom = self.limit
        Threads.start(name: "sqlite-checkpt") { [self] in run() }
    }

    /// Notes the WAL's length after a commit and wakes the thread when enough is uncopied. The
    /// writer's WAL hook calls it inside every COMMIT, so it does no more than that.
    func committed(walFrames frames: Int) {
        lock.lock()
        defer { lock.unlock() }
        // A WAL shorter than what was copied has been restarted: nothing of it is copied yet.
        if frames < copied { copied = 0 }
        walFrames = frames
        if frames - copied >= threshold { lock.broadcast() }
    }

    /// Stops the thread after the pass it may be running and closes its connection; returns
    /// once both are done. Safe to call more than once.
    func stop() {
        lock.lock()
        defer { lock.unlock() }
        stopping = true
        lock.broadcast()
        while !finished { lock.wait() }
    }

    private func run() {
        while let frames = nextPass() {
            let outcome: (walFrames: Int, checkpointed: Int)?
            let holds = frames >= holdFrom
            do {
                outcome = try pass(holdingWriter: holds)
            } catch let error where error.code == .closed {
                break
            } catch {
                // An I/O error: the writer's own commits report it; try again a little later.
                Threads.sleep(seconds: 0.1)
                continue
            }
            if holds {
                // Held in vain (a reader stayed on an old snapshot): the WAL cannot restart
                // until that reader ends, so hold the writer next only at twice the length.
                holdFrom = outcome == nil ? 2 * frames : limit
            } else if let outcome, outcome.walFrames < limit {
                // Restarted meanwhile (an idle moment let a passive pass copy everything).
                holdFrom = limit
            }
            let progressed = lock.withLocked { () -> Bool in
                guard let outcome else { return false }
                defer { copied = max(copied, outcome.checkpointed) }
                return outcome.checkpointed > copied
            }
            // Another process checkpointing, or a reader on an old snapshot holding frames back:
            // wait a moment rather than spin on passes that copy nothing.
            if !progressed { Threads.sleep(seconds: 0.01) }
        }
        connection.close()
        lock.withLocked {
            finished = true
            lock.broadcast()
        }
    }

    /// Waits until a pass is due and returns the WAL's length then, or nil once stopping.
    private func nextPass() -> Int? {
        lock.lock()
        defer { lock.unlock() }
        while !stopping && walFrames - copied < threshold { lock.wait() }
        return stopping ? nil : walFrames
    }

    /// One passive checkpoint; when `holdingWriter`, then a restart of the WAL while this
    /// process's writer is held.
    private func pass(holdingWriter: Bool) throws(StorageError) -> (walFrames: Int, checkpointed: Int)? {
        // Copy the bulk with commits still running, so that any that wait, wait only for the rest.
        let passive = try connection.checkpoint(.passive)
        guard holdingWriter else { return passive }
        do {
            // RESTART rather than PASSIVE: a reader that began before the last frame was copied
            // would otherwise keep the next commit from starting the WAL again.
            return try writer.withConnection { _ in try connection.checkpoint(.restart) }
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.internal, "the checkpoint failed")
        }
    }
}

extension ConditionLock {
    /// Runs `body` holding the lock.
    fileprivate func withLocked<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}
