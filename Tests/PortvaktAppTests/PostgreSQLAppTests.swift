import AuthOrchestrator
import Foundation
import HTTPEngine
import Kernel
import PortvaktApp
import SessionCore
import TestSupport
import Testing

@testable import Storage

/// The app on PostgreSQL, as operators run it: `portvakt serve`, `migrate` and `storage copy`
/// against a database of each test's own on the test server.
@Suite(
    "portvakt on PostgreSQL", .serialized,
    .enabled(if: TestPostgreSQL.isEnabled, Comment(rawValue: TestPostgreSQL.disabledReason)))
struct PostgreSQLAppTests {
    let client = HTTPTestClient()

    @Test(
        "serve on PostgreSQL: ready, metrics by engine, the admin token in the database, the password nowhere"
    )
    func serve() throws {
        let database = try PostgreSQLTestDatabase()
        let directory = try TemporaryDirectory()
        let config = try database.writeConfiguration(in: directory.url)
        let environment = database.passwordEnvironment.merging(["PORTVAKT_DATA": directory.path]) { $1 }
        let server = try PortvaktProcess(["serve", "--config", config], environment: environment)
        let port = try server.waitForPort(listener: "public")
        let adminPort = try server.waitForPort(listener: "admin")
        #expect(try client.send(.GET, "http://127.0.0.1:\(port)/health/ready").status == 200)
        #expect(server.waitForStdout(containing: "pva_"), "no admin token printed: \(server.stdout)")
        let token = try #require(
            server.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.hasPrefix("pva_") })
        let metrics = try client.send(
            .GET, "http://127.0.0.1:\(adminPort)/metrics", headers: ["Authorization": "Bearer \(token)"])
        #expect(metrics.status == 200)
        #expect(metrics.text.contains(#"portvakt_storage_write_duration_seconds_count{engine="postgresql"}"#))
        #expect(!metrics.text.contains("portvakt_sqlite_write_duration_seconds"))
        server.send(SIGTERM)
        #expect(server.wait() == 0)
        #expect(server.stderr.contains(#""msg":"storage opened","engine":"postgresql""#))
        #expect(server.stderr.contains(database.endpoint))
        #expect(!server.stderr.contains(database.password) && !server.stdout.contains(database.password))
        // Everything went to PostgreSQL: the token is there, and no SQLite file was made.
        let opened = try database.open()
        #expect(try SQLStore(database: opened).adminTokens().map(\.name) == ["bootstrap"])
        opened.close()
        #expect(!FileManager.default.fileExists(atPath: directory.path("portvakt.sqlite")))

        // PORTVAKT_DATABASE_URL alone selects the same database: no new token this time.
        let bare = directory.url.appendingPathComponent("bare.json")
        try Data(#"{"listen": {"public": {"port": 0}, "admin": {"port": 0}}}"#.utf8).write(to: bare)
        let again = try PortvaktProcess(
            ["serve", "--config", bare.path],
            environment: ["PORTVAKT_DATA": directory.path, "PORTVAKT_DATABASE_URL": database.url])
        let secondPort = try again.waitForPort(listener: "public")
        #expect(try client.send(.GET, "http://127.0.0.1:\(secondPort)/health/ready").status == 200)
        again.send(SIGTERM)
        #expect(again.wait() == 0)
        #expect(!again.stdout.contains("pva_"), "the database already had its token")
        #expect(!again.stderr.contains(database.password))
    }

    @Test("portvakt migrate on PostgreSQL: --status before, every migration, up to date after")
    func migrate() throws {
        let database = try PostgreSQLTestDatabase()
        let directory = try TemporaryDirectory()
        let config = try database.writeConfiguration(in: directory.url)
        let environment = database.passwordEnvironment
        let latest = PostgreSQLDatabase.supportedSchemaVersion
        let before = try PortvaktProcess.run(
            ["migrate", "--config", config, "--status"], environment: environment)
        #expect(before.status == 0, "\(before.stderr)")
        #expect(
            before.stdout.contains(
                "postgresql database \(database.endpoint)/\(database.name): schema version 0 of \(latest)"))
        #expect(before.stdout.contains("\(latest) migration(s) pending"))
        let applied = try PortvaktProcess.run(["migrate", "--config", config], environment: environment)
        #expect(applied.status == 0, "\(applied.stderr)")
        #expect(applied.stdout.hasPrefix("applied migration 1: the schema of SQLite's version 8\n"))
        #expect(applied.stdout.split(separator: "\n").count == latest, "\(applied.stdout)")
        let again = try PortvaktProcess.run(["migrate", "--config", config], environment: environment)
        #expect(again.stdout == "postgresql database is up to date (schema version \(latest))\n")
        let after = try PortvaktProcess.run(
            ["migrate", "--config", config, "--status"], environment: environment)
        #expect(
            after.stdout.contains("schema version \(latest) of \(latest)")
                && !after.stdout.contains("pending"))
        #expect(after.stdout.contains("the schema of SQLite's version 8"))
        let opened = try database.open(migrate: false)
        #expect(try opened.schemaVersion == latest)
        opened.close()
    }

    @Test(
        "storage copy: every table of a SQLite deployment arrives whole, sign-in works on, a second copy is refused"
    )
    func copyRoundTrip() throws {
        // A SQLite deployment with accounts, passkeys, sessions, admin tokens and a long audit
        // trail (several multi-row INSERTs' worth).
        let source = try TestServer.inProcess()
        let person = PasskeyUser(server: source)
        let (mia, miaID, _) = try person.signUp("mia")
        _ = try person.signUp("noor")
        #expect(try person.login(mia).status == 200)
        let plain = try source.makeUser(username: "plain")
        _ = try source.signIn(plain, as: .web)
        _ = try source.server.adminTokens.create(name: "ops", scope: .write, lifetime: 3600, actor: .cli)
        let store = source.server.store
        for number in 0..<1100 {
            _ = try store.appendAudit(
                AuditEvent(
                    at: source.clock.now(), action: .passkeyLoginFailed, actor: .anonymous,
                    details: ["attempt": String(number)]))
        }
        let expected = try Snapshot(store, at: source.clock.now())
        #expect(expected.users.count == 3 && expected.passkeys.count == 2 && expected.audit.count > 1100)
        source.stop()
        let sqlitePath = source.directory.path("portvakt.sqlite")
        let sqliteCounts = try Self.counts(sqlite: sqlitePath)

        let database = try PostgreSQLTestDatabase()
        let directory = try TemporaryDirectory()
        let config = try database.writeConfiguration(in: directory.url)
        let copy = try PortvaktProcess.run(
            ["storage", "copy", "--from", sqlitePath, "--to-config", config],
            environment: database.passwordEnvironment)
        #expect(copy.status == 0, "\(copy.stderr)")
        #expect(
            copy.stdout.hasPrefix(
                "copied \(sqlitePath) into PostgreSQL \(database.endpoint)/\(database.name):\n"))
        // The printed counts are SQLite's, table by table, in foreign-key order, users first.
        let printed = copy.stdout.split(separator: "\n").dropFirst(2).map {
            $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        }
        #expect(printed.first?.first == "users")
        #expect(printed.dropLast().map { $0[0] } == StorageCopy.tables.map(\.name))
        #expect(
            Dictionary(uniqueKeysWithValues: printed.dropLast().map { ($0[0], Int($0[1]) ?? -1) })
                == sqliteCounts)
        #expect(printed.last == ["total", String(sqliteCounts.values.reduce(0, +))])
        #expect(!copy.stdout.contains(database.password) && !copy.stderr.contains(database.password))

        // Read back through the stores, every value is what SQLite held.
        let target = try database.open()
        let copied = try Snapshot(SQLStore(database: target), at: source.clock.now())
        #expect(copied == expected)
        #expect(try Self.counts(postgres: target) == sqliteCounts)
        target.close()

        // The target now holds data: a second copy is refused and changes nothing.
        let second = try PortvaktProcess.run(
            ["storage", "copy", "--from", sqlitePath, "--to-config", config],
            environment: database.passwordEnvironment)
        #expect(second.status == 1)
        #expect(
            second.stderr.contains("storage.conflict: the PostgreSQL database already holds data (users: 3"))
        let reopened = try database.open()
        #expect(try Self.counts(postgres: reopened) == sqliteCounts)
        reopened.close()

        // A server on the copy signs the same passkey in, and the audit trail numbers on.
        let server = try TestServer.inProcess(
            configuration: ["storage": database.storageJSON], environment: database.passwordEnvironment)
        defer { server.stop() }
        #expect(try PasskeyUser(server: server).loginWith(person.authenticator, mia).status == 200)
        let newest = try #require(
            try server.server.store.auditEvents(userID: miaID, beforeID: nil, limit: 1).first)
        #expect((newest.id ?? 0) > (expected.audit.compactMap(\.id).max() ?? .max))
        #expect(newest.action == .passkeyLogin)
    }

    @Test("storage copy refuses a SQLite file behind the current schema, pointing to portvakt migrate")
    func copyNeedsCurrentSchema() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("old.sqlite")
        try SQLiteDatabase(
            path: path, configuration: .init(), clock: SystemClock(),
            migrations: Array(Migration.sqlite.prefix(7))
        ).close()
        let database = try PostgreSQLTestDatabase()
        let config = try database.writeConfiguration(in: directory.url)
        let copy = try PortvaktProcess.run(
            ["storage", "copy", "--from", path, "--to-config", config],
            environment: database.passwordEnvironment)
        #expect(copy.status == 1)
        #expect(
            copy.stderr.contains(
                "storage.migration: the SQLite database is at schema version 7; storage copy reads version \(SQLiteDatabase.supportedSchemaVersion): run `portvakt migrate` on it first"
            ), "\(copy.stderr)")
        // Nothing was written to the target but its schema.
        let target = try database.open()
        #expect(try Self.counts(postgres: target).values.allSatisfy { $0 == 0 })
        target.close()
    }

    @Test(
        "TestServer(engine: .postgresql) serves from a database of its own (a pool of 4, the test's storage keys over it), dropped when the server goes"
    )
    func testServerOnPostgreSQL() throws {
        // The API suites take TestEngine.tested: were the engine ignored, they would pass on
        // SQLite twice.
        var connection: PostgreSQLConfiguration?
        do {
            let server = try TestServer.inProcess(
                engine: .postgresql,
                configuration: ["storage": ["postgresql": ["statementTimeoutMilliseconds": 900]]])
            defer { server.stop() }
            guard case .postgresql(let database) = server.server.engine else {
                Issue.record("the server is on \(server.server.engine.name)")
                return
            }
            #expect(database.configuration.poolSize == 4)
            #expect(database.configuration.connection.statementTimeout == .milliseconds(900))
            #expect(database.configuration.connection.database.hasPrefix("portvakt_t_"))
            _ = try server.makeUser(username: "ada")
            #expect(try server.server.store.userCount() == 1)
            #expect(!FileManager.default.fileExists(atPath: server.directory.path("portvakt.sqlite")))
            connection = database.configuration.connection
        }
        // The server has gone, and its database with it.
        let gone = try #require(connection)
        #expect(throws: StorageError.self) {
            let database = try PostgreSQLDatabase(
                configuration: .init(connection: gone, poolSize: 2, migrateOnOpen: false))
            defer { database.close() }
            try database.checkHealth()
        }
    }

    /// Rows per data table in a SQLite file.
    static func counts(sqlite path: String) throws -> [String: Int] {
        let database = try SQLiteDatabase(
            path: path, configuration: .init(readerCount: 1, migrateOnOpen: false))
        defer { database.close() }
        return try database.read { connection in
            try StorageCopy.tables.reduce(into: [:]) { counts, table in
                counts[table.name] = Int(
                    try connection.queryFirst("SELECT count(*) FROM \(table.name)") { try $0.int64(0) } ?? -1)
            }
        }
    }

    /// Rows per data table in a PostgreSQL database.
    static func counts(postgres database: PostgreSQLDatabase) throws -> [String: Int] {
        try database.read { connection in
            try StorageCopy.tables.reduce(into: [:]) { counts, table in
                counts[table.name] = Int(
                    try connection.queryFirst("SELECT count(*) FROM \(table.name)") { try $0.int64(0) } ?? -1)
            }
        }
    }
}

/// What the stores read back of a deployment: users, their passkeys and sessions, the audit
/// trail, admin tokens and the shared settings.
private struct Snapshot: Equatable {
    let users: [User]
    let passkeys: [StoredPasskey]
    let sessions: [Session]
    let audit: [AuditEvent]
    let adminTokens: [AdminTokenRecord]
    let challengeKey: [UInt8]?

    init(_ store: SQLStore, at now: Date) throws {
        users = try store.users(afterID: nil, limit: 1000)
        passkeys = try users.flatMap { try store.passkeys(userID: $0.id) }
        sessions = try users.flatMap { try store.sessions(userID: $0.id, liveAt: now) }
        var audit: [AuditEvent] = []
        while true {
            let page = try store.auditEvents(userID: nil, beforeID: audit.last?.id, limit: 500)
            if page.isEmpty { break }
            audit += page
        }
        self.audit = audit
        adminTokens = try store.adminTokens()
        challengeKey = try store.setting(PasskeyService.challengeKeySetting)
    }
}
