import Foundation
import TestSupport
import Testing

@testable import Storage

/// The VFS that hands a commit's WAL frames to the file in one write (WALWriteBatching): fewer
/// writes, and the file as SQLite would have left it the moment each call returns.
@Suite("SQLite WAL write batching")
struct WALWriteBatchingTests {
    let directory: TemporaryDirectory

    init() throws { directory = try TemporaryDirectory() }

    var path: String { directory.path("batched.sqlite") }

    /// A connection in WAL mode on `path` with a table of blobs.
    func open(synchronous: String = "NORMAL", cachePages: Int? = nil) throws -> Connection {
        let connection = try Connection(
            path: path, flags: [.readWrite, .create], busyTimeoutMilliseconds: 1000)
        _ = try connection.queryFirst("PRAGMA journal_mode = WAL") { try $0.string(0) }
        try connection.exec("PRAGMA synchronous = \(synchronous)")
        if let cachePages { try connection.exec("PRAGMA cache_size = \(cachePages)") }
        try connection.exec("CREATE TABLE IF NOT EXISTS blobs (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        return connection
    }

    /// Inserts rows `range`, each a 1,000-byte blob filled with its id's low byte.
    func insert(_ range: ClosedRange<Int>, on connection: Connection) throws {
        for id in range {
            try connection.execute(
                "INSERT INTO blobs (id, body) VALUES (?1, ?2)",
                [id, [UInt8](repeating: UInt8(id & 0xFF), count: 1000)])
        }
    }

    /// What a process that crashed right now would leave: the database and its WAL copied aside
    /// (no shared-memory index, so SQLite rebuilds it from the WAL's frames and their
    /// checksums), opened, and asked for the rows' count, the blobs' byte sum and an integrity
    /// check.
    func afterCrash() throws -> (rows: Int64, byteSum: Int64, integrity: String) {
        let copy = directory.path("copy-\(UUID().uuidString).sqlite")
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        if FileManager.default.fileExists(atPath: path + "-wal") {
            try FileManager.default.copyItem(atPath: path + "-wal", toPath: copy + "-wal")
        }
        let connection = try Connection(path: copy, flags: [.readWrite], busyTimeoutMilliseconds: 1000)
        defer { connection.close() }
        let figures = try connection.queryFirst(
            "SELECT count(*), coalesce(sum(length(body) * (id % 256)), 0) FROM blobs"
        ) { (try $0.int64(0), try $0.int64(1)) }
        let integrity = try connection.queryFirst("PRAGMA integrity_check") { try $0.string(0) }
        return (figures?.0 ?? -1, figures?.1 ?? -1, integrity ?? "")
    }

    /// The byte sum `afterCrash` reports for rows `range`.
    static func byteSum(_ range: ClosedRange<Int>) -> Int64 {
        range.reduce(0) { $0 + Int64(1000 * ($1 % 256)) }
    }

    @Test(
        "a commit of many pages reaches the WAL in two writes, and is on file, whole, when COMMIT returns",
        arguments: ["NORMAL", "FULL"])
    func commitIsBatchedAndOnFile(synchronous: String) throws {
        let connection = try open(synchronous: synchronous)
        defer { connection.close() }
        try insert(1...1, on: connection)
        let before = try #require(connection.walWriteCounts, "the WAL is open and batched")
        try connection.exec("BEGIN IMMEDIATE")
        try insert(2...100, on: connection)
        try connection.exec("COMMIT")
        let after = try #require(connection.walWriteCounts)
        let received = after.received - before.received
        // About 25 pages of blobs (under the buffer's 120 KiB) and the B-tree's interior pages:
        // two writes each from SQLite.
        #expect(received > 40, "SQLite wrote \(received) times")
        #expect(after.issued - before.issued == 2, "the frames and the commit frame's header, then its page")
        // Another connection, and a crash, see exactly the committed rows.
        let other = try Connection(path: path, flags: [.readWrite], busyTimeoutMilliseconds: 1000)
        defer { other.close() }
        #expect(try other.queryFirst("SELECT count(*) FROM blobs") { try $0.int64(0) } == 100)
        let crashed = try afterCrash()
        #expect(crashed.rows == 100)
        #expect(crashed.byteSum == Self.byteSum(1...100))
        #expect(crashed.integrity == "ok")
    }

    @Test("a transaction larger than its cache reads back the pages it spilled, before and after a rollback")
    func spilledPagesReadBack() throws {
        // A cache of 10 pages: the transaction's pages go to the WAL (not committing) long before
        // it ends, and reading them again must find them in the file.
        let connection = try open(cachePages: 10)
        defer { connection.close() }
        try insert(1...10, on: connection)
        try connection.exec("BEGIN IMMEDIATE")
        try insert(11...400, on: connection)
        let inside = try connection.queryFirst("SELECT count(*), sum(length(body)) FROM blobs") {
            (try $0.int64(0), try $0.int64(1))
        }
        #expect(inside?.0 == 400)
        #expect(inside?.1 == 400_000)
        try connection.exec("ROLLBACK")
        #expect(try connection.queryFirst("SELECT count(*) FROM blobs") { try $0.int64(0) } == 10)
        // The next transaction writes over the rolled-back frames; the file stays whole.
        try insert(11...20, on: connection)
        let crashed = try afterCrash()
        #expect(crashed.rows == 20)
        #expect(crashed.byteSum == Self.byteSum(1...20))
        #expect(crashed.integrity == "ok")
    }

    @Test("pages spilled and then changed again in the same transaction commit whole")
    func spilledPagesRewritten() throws {
        // Changing a page already spilled rewrites its frame in place, and the commit then
        // rewrites the checksums of every frame after it: writes behind the end of the log.
        let connection = try open(cachePages: 10)
        defer { connection.close() }
        try connection.exec("BEGIN IMMEDIATE")
        try insert(1...300, on: connection)
        try connection.execute("UPDATE blobs SET body = zeroblob(2000) WHERE id % 3 = 0")
        try connection.exec("COMMIT")
        let crashed = try afterCrash()
        #expect(crashed.rows == 300)
        var grown: Int64 = 0
        for id in stride(from: 3, through: 300, by: 3) { grown += Int64(1000 * (id % 256)) }
        #expect(crashed.byteSum == Self.byteSum(1...300) + grown, "every third blob grew to 2,000 bytes")
        #expect(crashed.integrity == "ok")
    }

    @Test("after a checkpoint restarts the WAL, commits are batched from its start again")
    func batchedAfterRestart() throws {
        let connection = try open()
        defer { connection.close() }
        try insert(1...100, on: connection)
        #expect(try connection.checkpoint(.restart) != nil)
        let before = try #require(connection.walWriteCounts)
        try connection.exec("BEGIN IMMEDIATE")
        try insert(101...200, on: connection)
        try connection.exec("COMMIT")
        let after = try #require(connection.walWriteCounts)
        #expect(after.received - before.received > 40)
        // Plus the new log's header, which SQLite syncs on its own before the first frame.
        #expect(after.issued - before.issued == 3)
        let crashed = try afterCrash()
        #expect(crashed.rows == 200)
        #expect(crashed.byteSum == Self.byteSum(1...200))
        #expect(crashed.integrity == "ok")
    }
}
