import Foundation
import Kernel
import TestSupport
import Testing

@testable import Storage

/// The C wrapper: statement caching, bindings and result-code translation.
@Suite("SQLite connection")
struct ConnectionTests {
    let directory: TemporaryDirectory
    let connection: Connection

    init() throws {
        directory = try TemporaryDirectory()
        connection = try Connection(
            path: directory.path("wrapper.sqlite"), flags: [.readWrite, .create],
            busyTimeoutMilliseconds: 100)
        try connection.exec(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, text TEXT, bytes BLOB, real REAL)")
    }

    @Test("a statement is prepared once and reused with fresh bindings each time")
    func statementReuse() throws {
        for id in 1...10 {
            try connection.execute("INSERT INTO t (id, text) VALUES (?1, ?2)", [id, "row \(id)"])
        }
        for id in 1...10 {
            let text = try connection.queryFirst("SELECT text FROM t WHERE id = ?1", [id]) {
                try $0.string(0)
            }
            #expect(text == "row \(id)")
        }
        #expect(connection.prepareCount == 2)
        #expect(connection.cachedStatementCount == 2)
    }

    @Test("a statement nested inside the same SQL gets its own copy")
    func nestedSameSQL() throws {
        for id in 1...3 { try connection.execute("INSERT INTO t (id) VALUES (?1)", [id]) }
        let sql = "SELECT id FROM t WHERE id >= ?1 ORDER BY id"
        let pairs = try connection.query(sql, [1]) { outer in
            (try outer.int64(0), try connection.query(sql, [try outer.int64(0)]) { try $0.int64(0) }.count)
        }
        #expect(pairs.map(\.0) == [1, 2, 3])
        #expect(pairs.map(\.1) == [3, 2, 1])
        #expect(connection.cachedStatementCount == 2, "the INSERT and one copy of the SELECT")
    }

    @Test("texts that hash alike (same length, same last 64 bytes) still get their own statements")
    func cacheKeysCompareWholeText() throws {
        try connection.execute("INSERT INTO t (id, text) VALUES (1, 'one'), (2, 'two')")
        let ending = String(repeating: " ", count: 64)
        // Same length and the same last 64 bytes: only the first bytes differ.
        let one = "SELECT text FROM t WHERE id = 1" + ending
        let two = "SELECT text FROM t WHERE id = 2" + ending
        #expect(SQLText(one).hashValue == SQLText(two).hashValue)
        #expect(SQLText(one) != SQLText(two))
        for _ in 0..<3 {
            #expect(try connection.queryFirst(one) { try $0.string(0) } == "one")
            #expect(try connection.queryFirst(two) { try $0.string(0) } == "two")
        }
        // Equal text built at run time (other storage) finds the cached statement.
        let rebuilt = ["SELECT text FROM t WHERE id = ", "1", ending].joined()
        let before = connection.prepareCount
        #expect(try connection.queryFirst(rebuilt) { try $0.string(0) } == "one")
        #expect(connection.prepareCount == before)
    }

    @Test("the statement cache stays within its limit")
    func cacheLimit() throws {
        for index in 0..<(Connection.statementCacheLimit + 10) {
            _ = try connection.queryFirst("SELECT \(index)") { try $0.int64(0) }
        }
        #expect(connection.cachedStatementCount == Connection.statementCacheLimit)
    }

    @Test("values of every storage class round-trip, and empty text or bytes are not NULL")
    func bindingsRoundTrip() throws {
        let rows: [(Int, String?, [UInt8]?, Double?)] = [
            (1, "Ålund 🔑 \u{0}nul", [0, 255, 7], 1.5),
            (2, "", [], -0.25),
            (3, nil, nil, nil),
        ]
        for row in rows {
            try connection.execute(
                "INSERT INTO t (id, text, bytes, real) VALUES (?1, ?2, ?3, ?4)",
                [row.0, row.1, row.2, row.3])
        }
        let read = try connection.query(
            "SELECT text, bytes, real, typeof(text), typeof(bytes) FROM t ORDER BY id"
        ) {
            (
                try $0.optionalString(0), try $0.optionalBlob(1), $0.isNull(2) ? nil : try $0.double(2),
                try $0.string(3), try $0.string(4)
            )
        }
        #expect(read.map(\.0) == rows.map(\.1))
        #expect(read.map(\.1) == rows.map(\.2))
        #expect(read.map(\.2) == rows.map(\.3))
        #expect(read[1].3 == "text" && read[1].4 == "blob", "empty values keep their type")
        #expect(read[2].3 == "null" && read[2].4 == "null")
    }

    @Test("dates round-trip through integer milliseconds")
    func dates() throws {
        let instant = Date(timeIntervalSince1970: 1_790_000_000.987)
        try connection.execute(
            "INSERT INTO t (id, real) VALUES (?1, ?2)", [1, instant.millisecondsSince1970])
        let stored = try connection.queryFirst("SELECT real FROM t WHERE id = 1") { try $0.int64(0) }
        #expect(stored == 1_790_000_000_987)
        #expect(Date(millisecondsSince1970: 1_790_000_000_987) == instant.storagePrecision)
        #expect(Date.distantFuture.millisecondsSince1970 > 0, "far dates are storable")
    }

    @Test("a wrong number of arguments is refused before anything runs")
    func argumentCount() throws {
        #expect(throws: StorageError(.internal, "")) {
            try connection.execute("INSERT INTO t (id, text) VALUES (?1, ?2)", [1])
        }
        #expect(try connection.queryFirst("SELECT count(*) FROM t") { try $0.int64(0) } == 0)
    }

    @Test("SQLite result codes map to stable storage codes")
    func resultCodes() throws {
        #expect(Connection.storageCode(for: 2067) == .conflict)  // SQLITE_CONSTRAINT_UNIQUE
        #expect(Connection.storageCode(for: 1555) == .conflict)  // SQLITE_CONSTRAINT_PRIMARYKEY
        #expect(Connection.storageCode(for: 787) == .constraint)  // SQLITE_CONSTRAINT_FOREIGNKEY
        #expect(Connection.storageCode(for: 1299) == .constraint)  // SQLITE_CONSTRAINT_NOTNULL
        #expect(Connection.storageCode(for: 5) == .busy)
        #expect(Connection.storageCode(for: 517) == .busy)  // SQLITE_BUSY_SNAPSHOT
        #expect(Connection.storageCode(for: 11) == .corrupt)
        #expect(Connection.storageCode(for: 26) == .corrupt)  // SQLITE_NOTADB
        #expect(Connection.storageCode(for: 10) == .io)
        #expect(Connection.storageCode(for: 13) == .io)  // SQLITE_FULL
        #expect(Connection.storageCode(for: 8) == .readOnly)
        #expect(Connection.storageCode(for: 1) == .internal)
    }

    @Test(
        "a syntax error is an internal error carrying SQLite's code, not the statement's literals")
    func syntaxError() throws {
        do {
            try connection.exec("SELEC 'hunter2'")
            Issue.record("bad SQL ran")
        } catch {
            #expect(error.code == .internal)
            #expect(error.sqliteResultCode == 1)
            #expect(!error.message.contains("hunter2"))
        }
    }

    @Test("errors are equal when their codes are")
    func errorEquality() {
        #expect(
            StorageError(.conflict, "one") == StorageError(.conflict, "two", sqliteResultCode: 2067)
        )
        #expect(StorageError(.conflict, "one") != StorageError(.notFound, "one"))
        #expect(StorageError(.busy, "locked").description == "storage.busy: locked")
    }
}
