import CryptoCore
import Foundation
import Glibc
import Kernel
import TestSupport
import Testing

@testable import Storage

/// The libpq wrapper against a real server: connecting, prepared statements, values, errors.
@Suite(
    "PostgreSQL connection",
    .enabled(if: PostgreSQLTestServer.isEnabled, PostgreSQLTestServer.disabledReason))
struct PostgreSQLConnectionTests {
    @Test("connects over verify-full TLS to PostgreSQL 13 or newer, with its name and statement timeout set")
    func connects() throws {
        let connection = try PostgreSQLTestServer.connect(statementTimeout: .milliseconds(1500))
        #expect(connection.serverVersion >= 130000)
        #expect(connection.usesTLS, "make test's URL asks for sslmode=verify-full")
        let settings = try connection.queryFirst(
            "SELECT current_setting('application_name'), current_setting('statement_timeout'), pg_backend_pid()"
        ) { try ($0.string(0), $0.string(1), $0.int64(2)) }
        #expect(settings?.0 == "portvakt-tests")
        #expect(settings?.1 == "1500ms")
        #expect(settings?.2 == Int64(connection.backendPID))
    }

    @Test("a statement is prepared once per connection, under a name, and reused with new parameters")
    func statementReuse() throws {
        let connection = try PostgreSQLTestServer.connect()
        let table = PostgreSQLTestServer.uniqueTableName()
        try connection.exec("CREATE TABLE \(table) (id int8 PRIMARY KEY, label text)")
        defer { _ = try? connection.exec("DROP TABLE \(table)") }
        for id in 1...10 {
            try connection.execute("INSERT INTO \(table) (id, label) VALUES ($1, $2)", [id, "row \(id)"])
        }
        for id in 1...10 {
            let label = try connection.queryFirst("SELECT label FROM \(table) WHERE id = $1", [id]) {
                try $0.string(0)
            }
            #expect(label == "row \(id)")
        }
        #expect(connection.prepareCount == 2)
        #expect(connection.cachedStatementCount == 2)
        // The server holds them as named prepared statements of this session.
        let names = try connection.query(
            "SELECT name FROM pg_prepared_statements WHERE statement LIKE $1 ORDER BY name", ["%\(table)%"]
        ) { try $0.string(0) }
        #expect(names.count == 2)
        #expect(names.allSatisfy { $0.hasPrefix("portvakt_") })
    }

    @Test("past the cache limit statements still run, as the unnamed statement")
    func cacheLimit() throws {
        let connection = try PostgreSQLTestServer.connect()
        for index in 0..<(PostgreSQLConnection.statementCacheLimit + 6) {
            let value = try connection.queryFirst("SELECT \(index)::int8 + $1", [1]) { try $0.int64(0) }
            #expect(value == Int64(index + 1))
        }
        #expect(connection.cachedStatementCount == PostgreSQLConnection.statementCacheLimit)
        let named = try connection.queryFirst("SELECT count(*) FROM pg_prepared_statements") {
            try $0.int64(0)
        }
        #expect(named == Int64(PostgreSQLConnection.statementCacheLimit))
    }

    @Test("every value kind round-trips, NULLs stay NULL, empty text and bytes stay empty")
    func valuesRoundTrip() throws {
        let connection = try PostgreSQLTestServer.connect()
        let table = PostgreSQLTestServer.uniqueTableName()
        try connection.exec(
            """
            CREATE TABLE \(table) (id int4 PRIMARY KEY, t text, i int8, d float8, b bytea, f bool,
                                   at timestamptz, small int2)
            """)
        defer { _ = try? connection.exec("DROP TABLE \(table)") }
        let instant = Date(timeIntervalSince1970: 1_714_567_890.123_456)
        let beforeEpoch = Date(timeIntervalSince1970: -0.0015)
        let rows: [[SQLValue]] = [
            [
                .integer(1), .text("Ålund 🔑 'quoted' \\ back"), .integer(.max), .double(1.5),
                .bytes([0, 0, 255, 0]),
                .bool(true), .date(instant), .integer(-32768),
            ],
            [
                .integer(2), .text(""), .integer(.min), .double(-0.0), .bytes([]), .bool(false),
                .date(beforeEpoch), .integer(32767),
            ],
            [.integer(3), .null, .null, .null, .null, .null, .null, .null],
            [
                .integer(4), .text("x"), .integer(0), .double(.infinity), .bytes(Array(0...255)), .bool(true),
                .date(Date(timeIntervalSince1970: 0)), .integer(0),
            ],
        ]
        for row in rows {
            try connection.execute(
                "INSERT INTO \(table) (id, t, i, d, b, f, at, small) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                row)
        }
        let read = try connection.query("SELECT id, t, i, d, b, f, at, small FROM \(table) ORDER BY id") {
            row in
            try (0..<8).map { try (row as! PostgreSQLRow).value(Int32($0)) }
        }
        var expected = rows
        // Dates come back to the millisecond, rounded like Date.millisecondsSince1970 rounds them.
        expected[0][6] = .date(instant.storagePrecision)
        expected[1][6] = .date(beforeEpoch.storagePrecision)
        #expect(read == expected)
        #expect(instant.storagePrecision.millisecondsSince1970 == 1_714_567_890_123)
        // The empty values are really empty, not NULL, on the server too.
        let empties = try connection.queryFirst(
            "SELECT t IS NULL, b IS NULL, length(b) FROM \(table) WHERE id = 2"
        ) { try ($0.bool(0), $0.bool(1), $0.int64(2)) }
        #expect(empties?.0 == false && empties?.1 == false && empties?.2 == 0)
        let zeroes = try connection.queryFirst("SELECT length(b) FROM \(table) WHERE id = 1") {
            try $0.int64(0)
        }
        #expect(zeroes == 4, "bytea keeps its zero bytes")
        let optional = try connection.queryFirst("SELECT t, b, at FROM \(table) WHERE id = 3") {
            try ($0.optionalString(0), $0.optionalBlob(1), $0.optionalDate(2))
        }
        #expect(optional?.0 == nil && optional?.1 == nil && optional?.2 == nil)
    }

    @Test("NaN and a date's exact millisecond survive, and Swift values bind without wrapping")
    func swiftValuesBind() throws {
        let connection = try PostgreSQLTestServer.connect()
        let date = Date(millisecondsSince1970: 1_700_000_000_999)
        let values = try connection.queryFirst(
            "SELECT $1::float8, $2::timestamptz, $3::bytea, $4::bool, $5::text, $6::int8",
            [Double.nan, date, [UInt8]([1, 0, 2]), true, "text", Int64(-7)]
        ) { row in
            (
                try row.double(0), try row.date(1), try row.blob(2), try row.bool(3), try row.string(4),
                try row.int64(5)
            )
        }
        #expect(values?.0.isNaN == true)
        #expect(values?.1 == date)
        #expect(values?.2 == [1, 0, 2])
        #expect(values?.3 == true && values?.4 == "text" && values?.5 == -7)
        // Microseconds the server computed itself are rounded to the nearest millisecond.
        let later = try connection.queryFirst(
            "SELECT $1::timestamptz + interval '400 microseconds', $1::timestamptz + interval '600 microseconds'",
            [date]
        ) { try ($0.date(0), $0.date(1)) }
        #expect(later?.0 == Date(millisecondsSince1970: 1_700_000_000_999))
        #expect(later?.1 == Date(millisecondsSince1970: 1_700_000_001_000))
    }

    @Test("text goes as text, so the server converts it for jsonb, uuid and numeric parameters")
    func textParameters() throws {
        let connection = try PostgreSQLTestServer.connect()
        let values = try connection.queryFirst(
            "SELECT ($1::jsonb ->> 'a'), $2::uuid::text, ($3::numeric * 2)::text, $4::numeric::text",
            [#"{"a": "ok"}"#, "0E984725-C51C-4BF4-9960-E1C80E27ABA0", "1.25", 42]
        ) { try ($0.string(0), $0.string(1), $0.string(2), $0.string(3)) }
        #expect(values?.0 == "ok")
        #expect(values?.1 == "0e984725-c51c-4bf4-9960-e1c80e27aba0")
        #expect(values?.2 == "2.50")
        #expect(values?.3 == "42", "an integer for a numeric parameter goes as text")
    }

    @Test("values that cannot be sent are refused before they reach the server, naming only the parameter")
    func refusedParameters() throws {
        let connection = try PostgreSQLTestServer.connect()
        let table = PostgreSQLTestServer.uniqueTableName()
        try connection.exec("CREATE TABLE \(table) (small int2, i int4, b bytea, t text)")
        defer { _ = try? connection.exec("DROP TABLE \(table)") }
        let cases: [(String, [any SQLBindable])] = [
            ("INSERT INTO \(table) (small) VALUES ($1)", [40_000]),
            ("INSERT INTO \(table) (i) VALUES ($1)", [Int64(Int32.max) + 1]),
            ("INSERT INTO \(table) (t) VALUES ($1)", ["secret\u{0}tail"]),
            ("INSERT INTO \(table) (t) VALUES ($1)", [[UInt8]([1, 2])]),
            ("INSERT INTO \(table) (b) VALUES ($1)", [Date()]),
        ]
        for (sql, arguments) in cases {
            do {
                try connection.execute(sql, arguments)
                Issue.record("\(sql) was accepted")
            } catch {
                #expect(error.code == .invalidArgument, "\(sql)")
                #expect(error.message.contains("$1"))
                #expect(!error.message.contains("secret"))
            }
        }
        let count = try connection.queryFirst("SELECT count(*) FROM \(table)") { try $0.int64(0) }
        #expect(count == 0)
        #expect(throws: StorageError(.internal, "")) {
            try connection.execute("INSERT INTO \(table) (i, t) VALUES ($1, $2)", [1])
        }
    }

    @Test("a unique violation is storage.conflict; its message names the constraint, never the value")
    func uniqueViolation() throws {
        let connection = try PostgreSQLTestServer.connect()
        let table = PostgreSQLTestServer.uniqueTableName()
        try connection.exec(
            "CREATE TABLE \(table) (username text CONSTRAINT \(table)_username UNIQUE NOT NULL)")
        defer { _ = try? connection.exec("DROP TABLE \(table)") }
        try connection.execute("INSERT INTO \(table) (username) VALUES ($1)", ["alice-secret"])
        do {
            try connection.execute("INSERT INTO \(table) (username) VALUES ($1)", ["alice-secret"])
            Issue.record("a duplicate was inserted")
        } catch {
            #expect(error.code == .conflict)
            #expect(error.message.contains("SQLSTATE 23505"))
            #expect(error.message.contains("\(table)_username"))
            #expect(!error.message.contains("alice-secret"))
        }
        // The connection carries on after the error.
        let count = try connection.queryFirst("SELECT count(*) FROM \(table)") { try $0.int64(0) }
        #expect(count == 1)
    }

    @Test("other failures map to their codes without quoting values")
    func otherFailures() throws {
        let connection = try PostgreSQLTestServer.connect()
        let table = PostgreSQLTestServer.uniqueTableName()
        try connection.exec(
            "CREATE TABLE \(table) (id int4 PRIMARY KEY, name varchar(3) NOT NULL, CHECK (id > 0))")
        defer { _ = try? connection.exec("DROP TABLE \(table)") }
        let cases: [(String, [any SQLBindable], StorageError.Code)] = [
            ("INSERT INTO \(table) (id, name) VALUES ($1, $2)", [1, nil as String?], .constraint),
            ("INSERT INTO \(table) (id, name) VALUES ($1, $2)", [-1, "abc"], .constraint),
            ("INSERT INTO \(table) (id, name) VALUES ($1, $2)", [2, "secret"], .invalidArgument),
            ("SELECT $1::int4", ["secret"], .invalidArgument),
            ("SELECT * FROM \(table)_missing", [], .internal),
        ]
        for (sql, arguments, code) in cases {
            do {
                try connection.execute(sql, arguments)
                Issue.record("\(sql) succeeded")
            } catch {
                #expect(error.code == code, "\(sql): \(error)")
                #expect(!error.message.contains("secret"), "\(error)")
                #expect(error.message.contains("SQLSTATE"), "\(error)")
            }
        }
    }

    @Test("a statement past the statement timeout is storage.timeout, and the connection stays usable")
    func statementTimeout() throws {
        let connection = try PostgreSQLTestServer.connect(statementTimeout: .milliseconds(200))
        let started = ContinuousClock.now
        do {
            try connection.execute("SELECT pg_sleep(5)")
            Issue.record("pg_sleep(5) finished within a 200 ms statement timeout")
        } catch let error as StorageError {
            #expect(error.code == .timeout)
            #expect(error.message.contains("SQLSTATE 57014"))
        }
        #expect(ContinuousClock.now - started < .seconds(3))
        #expect(!connection.isBroken)
        let one = try connection.queryFirst("SELECT 1::int8") { try $0.int64(0) }
        #expect(one == 1)
    }

    @Test("a transaction commits its writes, and rolls all of them back when its body throws")
    func transactionCommitAndRollback() throws {
        let connection = try PostgreSQLTestServer.connect()
        let table = PostgreSQLTestServer.uniqueTableName()
        try connection.exec("CREATE TABLE \(table) (id int8 PRIMARY KEY)")
        defer { _ = try? connection.exec("DROP TABLE \(table)") }
        try connection.transaction { connection in
            try connection.execute("INSERT INTO \(table) (id) VALUES ($1)", [1])
            try connection.execute("INSERT INTO \(table) (id) VALUES ($1)", [2])
        }
        #expect(throws: StorageError(.conflict, "")) {
            try connection.transaction(.serializable) { connection in
                try connection.execute("INSERT INTO \(table) (id) VALUES ($1)", [3])
                try connection.execute("INSERT INTO \(table) (id) VALUES ($1)", [1])
            }
        }
        #expect(!connection.isInTransaction)
        let ids = try connection.query("SELECT id FROM \(table) ORDER BY id") { try $0.int64(0) }
        #expect(ids == [1, 2], "the transaction that failed wrote nothing, 3 included")
    }

    @Test("a body that swallows an error cannot commit the aborted transaction, and transactions do not nest")
    func abortedAndNested() throws {
        let connection = try PostgreSQLTestServer.connect()
        let table = PostgreSQLTestServer.uniqueTableName()
        try connection.exec("CREATE TABLE \(table) (id int8 PRIMARY KEY)")
        defer { _ = try? connection.exec("DROP TABLE \(table)") }
        #expect(throws: StorageError(.internal, "")) {
            try connection.transaction { connection in
                try connection.execute("INSERT INTO \(table) (id) VALUES ($1)", [1])
                _ = try? connection.execute("INSERT INTO \(table) (id) VALUES ($1)", [1])
            }
        }
        #expect(throws: StorageError(.internal, "")) {
            try connection.transaction { connection in try connection.transaction { _ in } }
        }
        let count = try connection.queryFirst("SELECT count(*) FROM \(table)") { try $0.int64(0) }
        #expect(count == 0)
        #expect(!connection.isInTransaction)
    }

    @Test("two concurrent SERIALIZABLE transactions in a write skew: one fails, is retried, and both commit")
    func serializationFailureRetried() throws {
        let setup = try PostgreSQLTestServer.connect()
        let table = PostgreSQLTestServer.uniqueTableName()
        try setup.exec("CREATE TABLE \(table) (doctor int8 PRIMARY KEY, on_call bool NOT NULL)")
        defer { _ = try? setup.exec("DROP TABLE \(table)") }
        try setup.exec("INSERT INTO \(table) VALUES (1, true), (2, true)")
        let first = try PostgreSQLTestServer.connect()
        let second = try PostgreSQLTestServer.connect()
        let attempts = AttemptCounter()
        let failures = AttemptCounter()
        let read = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        // Each doctor goes off call if another is still on call: run one after the other, the
        // second stays; interleaved without serializability, both would leave.
        @Sendable func goOffCall(
            _ doctor: Int, on connection: PostgreSQLConnection, mine: DispatchSemaphore,
            theirs: DispatchSemaphore
        ) {
            var attempt = 0
            do {
                try connection.transaction(.serializable) { connection in
                    attempt += 1
                    attempts.increment()
                    let onCall = try connection.queryFirst("SELECT count(*) FROM \(table) WHERE on_call") {
                        try $0.int64(0)
                    }
                    if attempt == 1 {
                        // Both read before either writes: the schedule SERIALIZABLE must refuse.
                        mine.signal()
                        if theirs.wait(timeout: .now() + 5) == .timedOut { failures.increment() }
                    }
                    if onCall ?? 0 >= 2 {
                        try connection.execute(
                            "UPDATE \(table) SET on_call = false WHERE doctor = $1", [doctor])
                    }
                }
            } catch {
                failures.increment()
            }
        }
        PostgreSQLTestServer.concurrently(
            { goOffCall(1, on: first, mine: read.0, theirs: read.1) },
            { goOffCall(2, on: second, mine: read.1, theirs: read.0) })
        #expect(failures.value == 0)
        #expect(attempts.value == 3, "one transaction ran twice")
        let onCall = try setup.queryFirst("SELECT count(*) FROM \(table) WHERE on_call") { try $0.int64(0) }
        #expect(onCall == 1)
    }

    @Test("a deadlock is storage.serialization_failure: the victim is rolled back and retried")
    func deadlockRetried() throws {
        let setup = try PostgreSQLTestServer.connect()
        let table = PostgreSQLTestServer.uniqueTableName()
        try setup.exec("CREATE TABLE \(table) (id int8 PRIMARY KEY, n int8 NOT NULL)")
        defer { _ = try? setup.exec("DROP TABLE \(table)") }
        try setup.exec("INSERT INTO \(table) VALUES (1, 0), (2, 0)")
        let first = try PostgreSQLTestServer.connect()
        let second = try PostgreSQLTestServer.connect()
        let attempts = AttemptCounter()
        let failures = AttemptCounter()
        let locked = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        @Sendable func update(
            _ order: [Int], on connection: PostgreSQLConnection, mine: DispatchSemaphore,
            theirs: DispatchSemaphore
        ) {
            var attempt = 0
            do {
                try connection.transaction { connection in
                    attempt += 1
                    attempts.increment()
                    try connection.execute("UPDATE \(table) SET n = n + 1 WHERE id = $1", [order[0]])
                    if attempt == 1 {
                        // Each holds one row and then wants the other's: a cycle the server breaks.
                        mine.signal()
                        if theirs.wait(timeout: .now() + 5) == .timedOut { failures.increment() }
                    }
                    try connection.execute("UPDATE \(table) SET n = n + 1 WHERE id = $1", [order[1]])
                }
            } catch {
                failures.increment()
            }
        }
        PostgreSQLTestServer.concurrently(
            { update([1, 2], on: first, mine: locked.0, theirs: locked.1) },
            { update([2, 1], on: second, mine: locked.1, theirs: locked.0) })
        #expect(failures.value == 0)
        #expect(attempts.value == 3, "the deadlock victim ran twice")
        let counts = try setup.query("SELECT n FROM \(table) ORDER BY id") { try $0.int64(0) }
        #expect(counts == [2, 2], "both transactions' updates, each once")
    }

    @Test("the retry is bounded: a transaction that always fails to serialize runs exactly `attempts` times")
    func retryBounded() throws {
        let connection = try PostgreSQLTestServer.connect()
        for limit in [1, 3] {
            let attempts = AttemptCounter()
            do {
                try connection.transaction(.serializable, attempts: limit) { connection in
                    attempts.increment()
                    // The server raises a real 40001, as it would for a serialization conflict.
                    try connection.exec(
                        "DO $$ BEGIN RAISE EXCEPTION 'forced' USING ERRCODE = 'serialization_failure'; END $$"
                    )
                }
                Issue.record("the transaction committed")
            } catch {
                #expect((error as? StorageError)?.code == .serializationFailure)
            }
            #expect(attempts.value == limit)
            #expect(!connection.isInTransaction)
        }
    }

    @Test("wrong credentials are storage.unavailable naming host and port, without the password")
    func badCredentials() throws {
        var configuration = try PostgreSQLTestServer.configuration()
        configuration.password = "wrong-password-\(UUID().uuidString)"
        do {
            _ = try PostgreSQLConnection(configuration: configuration)
            Issue.record("a wrong password was accepted")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.message.contains("\(configuration.host):\(configuration.port)"))
            #expect(error.message.contains("password authentication failed"))
            #expect(!error.message.contains(configuration.password!))
        }
    }

    @Test("a port nobody listens on is storage.unavailable naming host and port, quickly")
    func unreachablePort() throws {
        var configuration = try PostgreSQLTestServer.configuration()
        configuration.host = "127.0.0.1"
        configuration.port = try LoopbackPorts.unused()
        let started = ContinuousClock.now
        do {
            _ = try PostgreSQLConnection(configuration: configuration)
            Issue.record("connected to a closed port")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.message.contains("127.0.0.1:\(configuration.port)"))
            #expect(error.message.contains("refused"))
        }
        #expect(ContinuousClock.now - started < .seconds(3))
    }

    @Test("verify-full refuses a server whose certificate does not chain to the given CA")
    func wrongCertificateAuthority() throws {
        let directory = try TemporaryDirectory()
        let other = TestCertificateAuthority.root(
            name: .init(commonName: "Not the server's CA"), notBefore: Date(timeIntervalSinceNow: -3600),
            notAfter: Date(timeIntervalSinceNow: 3600))
        let pem =
            "-----BEGIN CERTIFICATE-----\n"
            + Data(other.certificateDER).base64EncodedString(options: [.lineLength64Characters])
            + "\n-----END CERTIFICATE-----\n"
        try pem.write(toFile: directory.path("other-ca.crt"), atomically: true, encoding: .utf8)
        var configuration = try PostgreSQLTestServer.configuration()
        configuration.tlsMode = .verifyFull
        configuration.rootCertificatePath = directory.path("other-ca.crt")
        do {
            _ = try PostgreSQLConnection(configuration: configuration)
            Issue.record("verify-full accepted a certificate from another CA")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.message.contains("certificate verify failed"), "\(error)")
        }
        // require encrypts without checking the certificate (libpq checks it as verify-ca would
        // when a root file is named, so none is); disable does not encrypt at all.
        configuration.tlsMode = .require
        configuration.rootCertificatePath = nil
        #expect(try PostgreSQLConnection(configuration: configuration).usesTLS)
        configuration.tlsMode = .disable
        #expect(try !PostgreSQLConnection(configuration: configuration).usesTLS)
    }
}
