import Foundation
import Kernel
import Synchronization
import TestSupport
import Testing

@testable import Storage

/// The PostgreSQL database as a whole: migrations under the advisory lock, refusing a newer or
/// foreign schema, a failing step rolled back, and maintenance jobs that run on one instance.
@Suite(
    "PostgreSQL database: migrations and one-instance jobs",
    .enabled(if: PostgreSQLTestServer.isEnabled, PostgreSQLTestServer.disabledReason))
struct PostgreSQLDatabaseTests {
    static let notes = Migration(
        version: Migration.postgreSQL.count + 1, name: "notes",
        sql: "CREATE TABLE notes (body text NOT NULL);")

    /// A fresh, empty database on the test server (dropped when the test ends), opened with an
    /// explicit migration list.
    final class Scratch {
        let database: PostgreSQLTestDatabase
        var url: String { database.url }
        init() throws { database = try PostgreSQLTestDatabase() }

        func configuration(migrateOnOpen: Bool = true, poolSize: Int = 2) throws
            -> PostgreSQLDatabase.Configuration
        {
            let connection = database.configuration
            return PostgreSQLDatabase.Configuration(
                connection: connection, poolSize: poolSize, migrateOnOpen: migrateOnOpen)
        }

        func open(
            migrateOnOpen: Bool = true, migrations: [Migration] = Migration.postgreSQL, poolSize: Int = 2
        ) throws -> PostgreSQLDatabase {
            try PostgreSQLDatabase(
                configuration: configuration(migrateOnOpen: migrateOnOpen, poolSize: poolSize),
                clock: SystemClock(),
                migrations: migrations)
        }
    }

    @Test("three instances migrating one new database at once apply each step exactly once")
    func concurrentMigration() throws {
        let scratch = try Scratch()
        let instances = try (0..<3).map { _ in try scratch.open(migrateOnOpen: false) }
        defer { instances.forEach { $0.close() } }
        let applied = Mutex<[[Int]]>([])
        DispatchQueue.concurrentPerform(iterations: instances.count) { index in
            let versions = (try? instances[index].migrate().map(\.version)) ?? [-1]
            applied.withLock { $0.append(versions) }
        }
        let results = applied.withLock { $0 }
        #expect(
            results.filter { $0 == Migration.postgreSQL.map(\.version) }.count == 1, "one instance migrated")
        #expect(results.filter(\.isEmpty).count == 2, "the others found nothing left to do: \(results)")
        #expect(try instances[0].appliedMigrations().map(\.version) == Migration.postgreSQL.map(\.version))
        #expect(try instances[2].schemaVersion == PostgreSQLDatabase.supportedSchemaVersion)
    }

    @Test(
        "a later step is applied on its own; a database newer than this binary is refused, naming its version"
    )
    func newerSchemaIsRefused() throws {
        let scratch = try Scratch()
        try scratch.open().close()
        let newer = try scratch.open(migrateOnOpen: false, migrations: Migration.postgreSQL + [Self.notes])
        #expect(try newer.migrate().map(\.version) == [Self.notes.version])
        newer.close()
        let refused = #expect(throws: StorageError.self) { try scratch.open() }
        #expect(refused?.code == .migration)
        #expect(refused?.message.contains("schema version \(Self.notes.version)") == true)
        // Looking without migrating is refused as well: nothing may run against a schema it does not know.
        #expect(throws: StorageError.self) { try scratch.open(migrateOnOpen: false) }
    }

    @Test("an instance waits for another's migration longer than a statement may take, then finds it done")
    func waitsForAnotherMigration() throws {
        let scratch = try Scratch()
        // Another instance, mid-migration: it holds the lock for longer than the statement timeout.
        let holder = try PostgreSQLConnection(configuration: PostgreSQLConfiguration(url: scratch.url))
        try holder.execute("SELECT pg_advisory_lock($1)", [PostgreSQLDatabase.migrationLockKey])
        var configuration = try scratch.configuration()
        configuration.connection.statementTimeout = .milliseconds(500)
        let settings = configuration
        let opened = Mutex<Result<Int, any Error>?>(nil)
        let opener = Thread {
            let result = Result { () throws -> Int in
                let database = try PostgreSQLDatabase(configuration: settings)
                defer { database.close() }
                return try database.schemaVersion
            }
            opened.withLock { $0 = result }
        }
        opener.start()
        Thread.sleep(forTimeInterval: 2)
        #expect(opened.withLock { $0 } == nil, "still waiting for the lock, past four statement timeouts")
        try holder.execute("SELECT pg_advisory_unlock($1)", [PostgreSQLDatabase.migrationLockKey])
        for _ in 0..<250 where opened.withLock({ $0 }) == nil { Thread.sleep(forTimeInterval: 0.02) }
        #expect(try opened.withLock { $0 }?.get() == PostgreSQLDatabase.supportedSchemaVersion)
    }

    @Test("a pool of one is refused: maintenance holds one connection while its work needs another")
    func poolOfOne() throws {
        let scratch = try Scratch()
        let failure = #expect(throws: StorageError.self) { try scratch.open(poolSize: 1) }
        #expect(failure?.code == .invalidArgument)
    }

    @Test("opening to look writes nothing: an unmigrated database stays empty and reads as version 0")
    func lookOnly() throws {
        let scratch = try Scratch()
        let database = try scratch.open(migrateOnOpen: false)
        defer { database.close() }
        #expect(try database.schemaVersion == 0)
        #expect(try database.appliedMigrations().isEmpty)
        let tables = try database.read { connection in
            try connection.queryFirst("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'") {
                try $0.int64(0)
            }
        }
        #expect(tables == 0)
    }

    @Test("a database whose recorded history differs from this binary's is refused")
    func foreignHistoryIsRefused() throws {
        let scratch = try Scratch()
        let renamed = Migration(version: 1, name: "something else", sql: "CREATE TABLE other (x integer);")
        try scratch.open(migrations: [renamed]).close()
        #expect(throws: StorageError(.migration, "")) { try scratch.open() }
    }

    @Test("a failing step is rolled back whole and reported; the steps before it stay")
    func failingStepRollsBack() throws {
        let scratch = try Scratch()
        try scratch.open().close()
        let broken = Migration(
            version: Self.notes.version, name: "broken",
            sql: "CREATE TABLE half (x integer); CREATE TABLE users (y integer);")
        let failure = #expect(throws: StorageError.self) {
            try scratch.open(migrations: Migration.postgreSQL + [broken])
        }
        #expect(failure?.code == .migration)
        #expect(failure?.message.contains("migration \(broken.version) (broken) failed") == true)
        let database = try scratch.open()
        defer { database.close() }
        #expect(try database.schemaVersion == PostgreSQLDatabase.supportedSchemaVersion)
        let half = try database.read { connection in
            try connection.queryFirst("SELECT count(*) FROM pg_tables WHERE tablename = 'half'") {
                try $0.int64(0)
            }
        }
        #expect(half == 0, "the failed step left nothing behind")
    }

    @Test("a maintenance job runs on one instance at a time; another instance skips it meanwhile")
    func runAlone() throws {
        let scratch = try Scratch()
        let first = try scratch.open()
        let second = try scratch.open()
        defer {
            first.close()
            second.close()
        }
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let ran = Mutex<[String]>([])
        let holder = Thread {
            _ = try? first.runAlone(job: "purge") {
                ran.withLock { $0.append("first") }
                inside.signal()
                release.wait()
            }
        }
        holder.start()
        inside.wait()
        #expect(try second.runAlone(job: "purge") { ran.withLock { $0.append("second") } } == false)
        #expect(try second.runAlone(job: "another job") { ran.withLock { $0.append("other") } } == true)
        release.signal()
        // Once the first is done, the job is free again (a short wait: the holder's unlock follows its body).
        var secondRan = false
        for _ in 0..<100 where !secondRan {
            secondRan = try second.runAlone(job: "purge") { ran.withLock { $0.append("second") } }
            if !secondRan { Thread.sleep(forTimeInterval: 0.02) }
        }
        #expect(secondRan)
        #expect(ran.withLock { $0 } == ["first", "other", "second"])
    }

    @Test("an unreachable server is storage.unavailable naming host and port, at open")
    func unreachable() throws {
        var connection = try PostgreSQLConfiguration(url: TestPostgreSQL.requiredURL())
        connection.port = 1
        connection.connectTimeout = .seconds(2)
        let failure = #expect(throws: StorageError.self) {
            try PostgreSQLDatabase(
                configuration: PostgreSQLDatabase.Configuration(connection: connection, poolSize: 2))
        }
        #expect(failure?.code == .unavailable)
        #expect(failure?.message.contains("\(connection.host):1") == true)
    }
}
