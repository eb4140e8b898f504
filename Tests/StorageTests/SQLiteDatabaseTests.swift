import CSQLite
import CryptoCore
import Dispatch
import Foundation
import Kernel
import SessionCore
import Synchronization
import TestSupport
import Testing

@testable import Storage

/// The SQLite database itself: opening, pragmas, migrations, transactions, concurrency, operations.
@Suite("SQLite database")
struct SQLiteDatabaseTests {
    let directory: TemporaryDirectory

    init() throws { directory = try TemporaryDirectory() }

    var path: String { directory.path("portvakt.sqlite") }

    /// The newest schema version this binary knows.
    static let latest = Migration.sqlite.count

    /// The version of the migration named `name`, so upgrade tests name the step they test and
    /// keep working when migrations are renumbered before a release.
    static func version(of name: String) -> Int {
        guard let migration = Migration.sqlite.first(where: { $0.name == name }) else {
            fatalError("no migration named \(name)")
        }
        return migration.version
    }

    static let sealedChallenges = version(of: "used sealed login challenges")
    static let auditRebuild = version(of: "audit events without AUTOINCREMENT")
    static let proofOfPresence = version(of: "sessions remember their last proof of presence")

    /// Stores session `id` of `userID` with the columns a file before `proofOfPresence` has, as
    /// the release before it wrote sessions.
    static func insertSessionBeforeProof(
        _ id: String, userID: String, createdAt: Date, in database: SQLiteDatabase
    )
        throws
    {
        let session = makeSession(id, userID: userID, createdAt: createdAt)
        _ = try database.write { connection in
            try connection.execute(
                """
                INSERT INTO sessions (id, user_id, token_hash, client_kind, auth_method, created_at, last_seen_at,
                  expires_at) VALUES (?1, ?2, ?3, 'web', 'passkey', ?4, ?4, ?5)
                """, [session.id, session.userID, session.tokenHash, session.createdAt, session.expiresAt])
        }
    }

    /// One migration past the binary's own, for tests of stepwise upgrades.
    static let notesMigration = Migration(
        version: latest + 1, name: "notes",
        sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT;")

    func tableNames(_ database: SQLiteDatabase) throws -> Set<String> {
        try database.read { connection in
            Set(
                try connection.query("SELECT name FROM sqlite_schema WHERE type = 'table'") {
                    try $0.string(0)
                })
        }
    }

    @Test("SQLite keeps no memory statistics: its allocations take no process-wide lock")
    func noMemoryStatistics() throws {
        let database = try SQLiteDatabase(path: path, clock: FixedClock(at(0.5)))
        defer { database.close() }
        #expect(try tableNames(database).contains("users"))
        // Counted only while statistics are on; SQLite has allocated plenty by now.
        #expect(sqlite3_memory_used() == 0)
        #expect(sqlite3_memory_highwater(0) == 0)
    }

    // MARK: Migrations

    @Test("migrations apply once at open and are recorded")
    func migrationsApplyAndAreRecorded() throws {
        let database = try SQLiteDatabase(
            path: path, clock: FixedClock(at(0.5)))
        defer { database.close() }
        #expect(try database.schemaVersion == Self.latest)
        #expect(SQLiteDatabase.supportedSchemaVersion == Self.latest)
        #expect(
            try database.appliedMigrations()
                == Migration.sqlite.map {
                    AppliedMigration(version: $0.version, name: $0.name, appliedAt: at(0.5))
                })
        #expect(
            try tableNames(database).isSuperset(of: [
                "users", "sessions", "audit_events", "settings", "schema_migrations",
            ]))
        #expect(try database.migrate().isEmpty, "nothing is left to apply")
    }

    @Test("reopening a database does not reapply its migrations")
    func reopeningDoesNotReapply() throws {
        try SQLiteDatabase(path: path, clock: FixedClock(at(1))).close()
        let reopened = try SQLiteDatabase(path: path, clock: FixedClock(at(2)))
        defer { reopened.close() }
        let applied = try reopened.appliedMigrations()
        #expect(applied.count == Self.latest)
        #expect(applied.allSatisfy { $0.appliedAt == at(1) }, "the records are from the first open")
        #expect(try reopened.migrate().isEmpty)
    }

    @Test("with migrate-on-open off, migrate() applies and reports the pending steps")
    func explicitMigrate() throws {
        let database = try SQLiteDatabase(
            path: path, configuration: .init(migrateOnOpen: false),
            clock: FixedClock(epoch))
        defer { database.close() }
        #expect(try database.schemaVersion == 0)
        let applied = try database.migrate()
        #expect(applied.map(\.version) == Array(1...Self.latest))
        #expect(applied.first?.appliedAt == epoch)
        #expect(try database.schemaVersion == Self.latest)
    }

    @Test("a later migration is applied on its own to an older database")
    func stepwiseUpgrade() throws {
        try SQLiteDatabase(path: path).close()
        let upgraded = try SQLiteDatabase(
            path: path, configuration: .init(migrateOnOpen: false), clock: SystemClock(),
            migrations: Migration.sqlite + [Self.notesMigration])
        defer { upgraded.close() }
        #expect(try upgraded.migrate().map(\.version) == [Self.latest + 1])
        #expect(try upgraded.schemaVersion == Self.latest + 1)
        #expect(try tableNames(upgraded).contains("notes"))
    }

    @Test("a database from a newer version is refused")
    func newerDatabaseIsRefused() throws {
        let newer = try SQLiteDatabase(
            path: path, configuration: .init(), clock: SystemClock(),
            migrations: Migration.sqlite + [Self.notesMigration])
        newer.close()
        #expect(throws: StorageError(.migration, "")) { try SQLiteDatabase(path: path) }
        do {
            _ = try SQLiteDatabase(path: path)
        } catch let error as StorageError {
            #expect(error.message.contains("schema version \(Self.latest + 1)"))
        }
    }

    @Test("a database whose recorded history differs from this binary's is refused")
    func foreignHistoryIsRefused() throws {
        let renamed = Migration(
            version: 1, name: "something else", sql: "CREATE TABLE other (x INTEGER) STRICT;")
        try SQLiteDatabase(
            path: path, configuration: .init(), clock: SystemClock(), migrations: [renamed]
        ).close()
        #expect(throws: StorageError(.migration, "")) { try SQLiteDatabase(path: path) }
    }

    @Test("a failing migration is rolled back and reported")
    func failingMigrationRollsBack() throws {
        try SQLiteDatabase(path: path).close()
        let broken = Migration(
            version: Self.latest + 1, name: "broken",
            sql: "CREATE TABLE half (x INTEGER) STRICT; CREATE TABLE users (y INTEGER);")
        let database = try SQLiteDatabase(
            path: path, configuration: .init(migrateOnOpen: false), clock: SystemClock(),
            migrations: Migration.sqlite + [broken])
        defer { database.close() }
        #expect(throws: StorageError(.migration, "")) { try database.migrate() }
        #expect(try database.schemaVersion == Self.latest)
        #expect(
            try tableNames(database).contains("half") == false, "the first statement was undone too"
        )
    }

    @Test("a migration list with a gap is refused")
    func gapInMigrations() throws {
        let gap = Migration(version: Self.latest + 2, name: "gap", sql: "SELECT 1;")
        #expect(throws: StorageError(.migration, "")) {
            try SQLiteDatabase(
                path: path, configuration: .init(), clock: SystemClock(),
                migrations: Migration.sqlite + [gap])
        }
    }

    @Test("migration 2 keeps version-1 users and gives each a unique 32-byte user handle")
    func userHandlesMigration() throws {
        let versionOne = try SQLiteDatabase(
            path: path, configuration: .init(), clock: SystemClock(),
            migrations: Array(Migration.sqlite.prefix(1)))
        try versionOne.write { connection in
            for index in 0..<50 {
                try connection.execute(
                    "INSERT INTO users (id, username, display_name, created_at) VALUES (?1, ?2, ?3, ?4)",
                    ["u\(index)", "user\(index)", "User \(index)", at(Double(index))])
            }
            try connection.execute(
                """
                INSERT INTO sessions (id, user_id, token_hash, client_kind, auth_method, created_at,
                  last_seen_at, expires_at) VALUES ('s1', 'u1', x'01', 'web', 'bankid', 0, 0, 1)
                """)
        }
        versionOne.close()

        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let store = SQLStore(database: database)
        #expect(try database.schemaVersion == Self.latest)
        let users = try store.users(afterID: nil, limit: 100)
        #expect(users.count == 50)
        #expect(users.allSatisfy { $0.userHandle.count == 32 })
        #expect(Set(users.map(\.userHandle)).count == 50, "every handle is different")
        let user = try #require(try store.user(id: "u7"))
        #expect(user.username == "user7" && user.displayName == "User 7" && user.createdAt == at(7))
        #expect(try store.user(handle: user.userHandle) == user)
        #expect(try store.session(id: "s1")?.userID == "u1", "sessions survive the migration")
        #expect(try database.integrityCheck() == "ok")
        let foreignKeyProblems = try database.read { connection in
            try connection.query("PRAGMA foreign_key_check") { try $0.string(0) }
        }
        #expect(foreignKeyProblems.isEmpty)
    }

    @Test("the proof-of-presence migration gives every stored session its sign-in as its proof")
    func proofOfPresenceMigration() throws {
        let before = try SQLiteDatabase(
            path: path, configuration: .init(), clock: SystemClock(),
            migrations: Array(Migration.sqlite.prefix(Self.proofOfPresence - 1)))
        try SQLStore(database: before).insertUser(makeUser("u1"))
        try Self.insertSessionBeforeProof("s1", userID: "u1", createdAt: at(42.5), in: before)
        before.close()

        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        #expect(try database.schemaVersion == Self.latest)
        let session = try #require(try SQLStore(database: database).session(id: "s1"))
        #expect(session.authenticatedAt == at(42.5) && session.createdAt == at(42.5))
    }

    @Test(
        "the used-challenge migration adds its set to a file from the step before and keeps everything in it")
    func usedChallengesMigration() throws {
        // A real file one step before, written through the store as the previous release would.
        let beforeSealing = try SQLiteDatabase(
            path: path, configuration: .init(), clock: SystemClock(),
            migrations: Array(Migration.sqlite.prefix(Self.sealedChallenges - 1)))
        let old = SQLStore(database: beforeSealing)
        try old.createUser(
            makeUser("u1", username: "ada"), firstPasskey: makePasskey([1, 2, 3], userID: "u1", signCount: 5))
        try Self.insertSessionBeforeProof("s1", userID: "u1", createdAt: epoch, in: beforeSealing)
        // A challenge row as the schema of that step has it (the store of today also writes the
        // later `conditional` column); the migrations up to now must read it as not conditional.
        try beforeSealing.write { connection in
            _ = try connection.execute(
                "INSERT INTO challenges (id, challenge, purpose, created_at, expires_at) VALUES ('c1', ?1, 'login', ?2, ?3)",
                [[UInt8](repeating: 7, count: 32), epoch, at(300)])
        }
        _ = try old.appendAudit(
            AuditEvent(at: at(1), action: .passkeyRegistered, actor: .user("u1"), userID: "u1"))
        try old.setSetting("k", value: [1, 2])
        #expect(try beforeSealing.schemaVersion == Self.sealedChallenges - 1)
        #expect(!(try tableNames(beforeSealing).contains("used_challenges")))
        beforeSealing.close()

        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let store = SQLStore(database: database)
        #expect(try database.schemaVersion == Self.latest)
        #expect(try database.appliedMigrations().map(\.version).contains(Self.sealedChallenges))
        #expect(try store.user(id: "u1")?.username == "ada")
        #expect(try store.passkey(credentialID: [1, 2, 3])?.signCount == 5)
        #expect(try store.session(id: "s1") != nil)
        #expect(try store.challenge(id: "c1", purpose: .login, at: at(1)) == makeChallenge("c1"))
        #expect(
            try store.auditEvents(userID: "u1", beforeID: nil, limit: 10).map(\.action.rawValue) == [
                "passkey.registered"
            ])
        #expect(try store.setting("k") == [1, 2])
        // The new table works, and its key is what the purge and the uniqueness check seek.
        #expect(try store.useSealedChallenge([UInt8](repeating: 1, count: 32), expiresAt: at(300), at: at(1)))
        #expect(
            try !store.useSealedChallenge([UInt8](repeating: 1, count: 32), expiresAt: at(300), at: at(2)))
        let purgePlan = try database.read { connection in
            try connection.query(
                "EXPLAIN QUERY PLAN DELETE FROM used_challenges WHERE expires_at <= ?1", [0]
            ) { try $0.string(3) }.joined(separator: "; ")
        }
        #expect(purgePlan.contains("PRIMARY KEY (expires_at<?)"), "\(purgePlan)")
        #expect(try database.integrityCheck() == "ok")
    }

    @Test(
        "the audit migration rebuilds the trail of a file from the step before without AUTOINCREMENT, every row and id kept"
    )
    func auditWithoutAutoincrementMigration() throws {
        let beforeRebuild = try SQLiteDatabase(
            path: path, configuration: .init(), clock: SystemClock(),
            migrations: Array(Migration.sqlite.prefix(Self.auditRebuild - 1)))
        let old = SQLStore(database: beforeRebuild)
        try old.createUser(makeUser("u1", username: "ada"), firstPasskey: makePasskey([1], userID: "u1"))
        try Self.insertSessionBeforeProof("s1", userID: "u1", createdAt: epoch, in: beforeRebuild)
        var written: [AuditEvent] = []
        for index in 0..<300 {
            var event = AuditEvent(
                at: at(Double(index)), action: index % 3 == 0 ? .passkeyLogin : .passkeyRenamed,
                actor: index % 2 == 0 ? .user("u1") : .anonymous, userID: index % 2 == 0 ? "u1" : nil,
                requestID: "r\(index)", ipAddress: index % 5 == 0 ? nil : "192.0.2.\(index % 250)",
                details: index % 4 == 0 ? [:] : ["n": "\(index)", "quote": "\"é\""])
            event.id = try old.appendAudit(event)
            written.append(event)
        }
        // A gap in the middle, as deleting one row by hand would leave: ids are kept, not renumbered.
        _ = try beforeRebuild.write { try $0.execute("DELETE FROM audit_events WHERE id = 150") }
        written.removeAll { $0.id == 150 }
        let sequenced = try beforeRebuild.read { connection in
            try connection.query("SELECT name FROM sqlite_sequence") { try $0.string(0) }
        }
        #expect(sequenced == ["audit_events"])
        beforeRebuild.close()

        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let store = SQLStore(database: database)
        #expect(try database.schemaVersion == Self.latest)
        let all = try store.auditEvents(userID: nil, beforeID: nil, limit: 1000)
        #expect(all.count == 299 && all.count == written.count)
        #expect(Array(all.reversed()) == written, "every row, every field, every id")
        #expect(try store.auditEvents(userID: "u1", beforeID: nil, limit: 1000).count == 150)
        let schema = try database.read { connection in
            try connection.queryFirst("SELECT sql FROM sqlite_schema WHERE name = 'audit_events'") {
                try $0.string(0)
            }
        }
        #expect(schema?.contains("AUTOINCREMENT") == false)
        let sequencedAfter = try database.read { connection in
            try connection.query("SELECT name FROM sqlite_sequence") { try $0.string(0) }
        }
        #expect(sequencedAfter.isEmpty, "no sequence row left to update on every append")
        let next = try store.appendAudit(
            AuditEvent(at: at(400), action: .passkeyLogin, actor: .user("u1"), userID: "u1"))
        #expect(next == 301, "the next id follows the largest kept")
        func plan(_ sql: String) throws -> String {
            try database.read { connection in
                try connection.query("EXPLAIN QUERY PLAN " + sql) { try $0.string(3) }.joined(separator: "; ")
            }
        }
        #expect(
            try plan("SELECT id FROM audit_events WHERE user_id = 'u1' ORDER BY id DESC").contains(
                "audit_events_user_id"))
        #expect(
            try plan("SELECT id FROM audit_events WHERE action = 'passkey.login' ORDER BY id DESC").contains(
                "audit_events_action"))
        #expect(try database.integrityCheck() == "ok")
        #expect(try store.session(id: "s1") != nil && store.passkey(credentialID: [1]) != nil)
    }

    @Test("a passkey lookup by credential id and a challenge consumption seek their primary keys")
    func hotPathPlans() throws {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        func plan(_ sql: String) throws -> String {
            try database.read { connection in
                try connection.query("EXPLAIN QUERY PLAN " + sql, [[UInt8](), ""]) { try $0.string(3) }
                    .joined(separator: "; ")
            }
        }
        let lookup = try plan("SELECT name FROM passkeys WHERE credential_id = ?1 AND ?2 = ?2")
        #expect(lookup.contains("USING INDEX sqlite_autoindex_passkeys_1 (credential_id=?)"), "\(lookup)")
        let list = try plan(
            "SELECT name FROM passkeys WHERE user_id = ?2 AND ?1 = ?1 ORDER BY created_at, credential_id")
        #expect(list.contains("passkeys_user_id (user_id=?)"), "\(list)")
        #expect(!list.contains("TEMP B-TREE"), "the index yields the order: \(list)")
        let ids = try plan(
            "SELECT credential_id FROM passkeys WHERE user_id = ?2 AND ?1 = ?1 ORDER BY created_at, credential_id"
        )
        #expect(ids == "SEARCH passkeys USING COVERING INDEX passkeys_user_id (user_id=?)", "\(ids)")
        let withOwner = try plan(
            "SELECT u.username FROM passkeys AS p JOIN users AS u ON u.id = p.user_id WHERE p.credential_id = ?1 AND ?2 = ?2"
        )
        #expect(
            withOwner.contains("USING INDEX sqlite_autoindex_passkeys_1 (credential_id=?)"), "\(withOwner)")
        #expect(withOwner.contains("USING INDEX sqlite_autoindex_users_1 (id=?)"), "\(withOwner)")
        let consume = try plan("SELECT challenge FROM challenges WHERE id = ?2 AND ?1 = ?1")
        #expect(consume.contains("PRIMARY KEY (id=?)"), "\(consume)")
    }

    // MARK: Opening

    @Test(
        "WAL, foreign keys and the busy timeout are on for the writer and every reader",
        arguments: SQLiteDatabase.Synchronous.allCases)
    func pragmas(synchronous: SQLiteDatabase.Synchronous) throws {
        let database = try SQLiteDatabase(
            path: path,
            configuration: .init(
                busyTimeoutMilliseconds: 1234, synchronous: synchronous, readerCount: 2))
        defer { database.close() }
        func pragma(_ name: String, on connection: Connection) throws -> String? {
            try connection.queryFirst("PRAGMA \(name)") { try $0.string(0) }
        }
        let names = ["journal_mode", "foreign_keys", "busy_timeout", "synchronous", "query_only"]
        let writer = try database.write { connection in
            try names.map { try pragma($0, on: connection) }
        }
        #expect(writer == ["wal", "1", "1234", synchronous == .normal ? "1" : "2", "0"])
        // Hold both readers at once so each one is checked, not the same one twice.
        let readers = try database.read { first in
            try database.read { second in
                try [first, second].map { reader in
                    try names.dropLast(2).map { try pragma($0, on: reader) }
                }
                    + [[try pragma("query_only", on: first), try pragma("query_only", on: second)]]
            }
        }
        #expect(readers == [["wal", "1", "1234"], ["wal", "1", "1234"], ["1", "1"]])
    }

    @Test("missing directories are created 0700 and the file 0600")
    func fileModes() throws {
        let nested = directory.path("a/b/portvakt.sqlite")
        let database = try SQLiteDatabase(path: nested)
        defer { database.close() }
        let fileMode =
            try FileManager.default.attributesOfItem(atPath: nested)[.posixPermissions] as? Int
        let directoryMode =
            try FileManager.default.attributesOfItem(atPath: directory.path("a/b"))[
                .posixPermissions] as? Int
        #expect(fileMode.map { $0 & 0o777 } == 0o600)
        #expect(directoryMode.map { $0 & 0o777 } == 0o700)
        // SQLite gives the WAL the main file's mode.
        let walMode =
            try FileManager.default.attributesOfItem(atPath: nested + "-wal")[.posixPermissions]
            as? Int
        #expect(walMode.map { $0 & 0o777 } == 0o600)
    }

    @Test("a file that is not a database is reported as corrupt")
    func notADatabase() throws {
        try Data(repeating: 0x42, count: 4096).write(to: URL(fileURLWithPath: path))
        #expect(throws: StorageError(.corrupt, "")) { try SQLiteDatabase(path: path) }
    }

    @Test("a bad configuration or path is an invalid argument")
    func invalidArguments() throws {
        #expect(throws: StorageError(.invalidArgument, "")) {
            try SQLiteDatabase(path: path, configuration: .init(readerCount: 0))
        }
        #expect(throws: StorageError(.invalidArgument, "")) {
            try SQLiteDatabase(path: path, configuration: .init(busyTimeoutMilliseconds: -1))
        }
        #expect(throws: StorageError(.invalidArgument, "")) { try SQLiteDatabase(path: "") }
        #expect(throws: StorageError(.invalidArgument, "")) { try SQLiteDatabase(path: ":memory:") }
    }

    // MARK: Opening together

    @Test(
        "opening a new file while another connection holds its write lock waits for the lock instead of failing at once"
    )
    func openWaitsForAWriteLockOnANewFile() throws {
        // A new file in rollback mode with its write lock held: the WAL switch reads the header,
        // then needs that lock, and SQLite answers BUSY there without calling the busy handler.
        let holder = try Connection(path: path, flags: [.readWrite, .create], busyTimeoutMilliseconds: 0)
        try holder.exec("BEGIN IMMEDIATE")
        let released = DispatchSemaphore(value: 0)
        let holdFor = 0.3
        Thread {
            Thread.sleep(forTimeInterval: holdFor)
            _ = try? holder.exec("COMMIT")
            holder.close()
            released.signal()
        }.start()
        let started = Date()
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        #expect(Date().timeIntervalSince(started) >= holdFor * 0.8, "it waited for the lock")
        #expect(try database.schemaVersion == Self.latest)
        #expect(released.wait(timeout: .now() + 5) == .success)
    }

    @Test("the wait for a new file's write lock is bounded by the busy timeout")
    func openGivesUpAfterTheBusyTimeout() throws {
        let holder = try Connection(path: path, flags: [.readWrite, .create], busyTimeoutMilliseconds: 0)
        defer { holder.close() }
        try holder.exec("BEGIN IMMEDIATE")
        let started = Date()
        #expect(throws: StorageError(.busy, "")) {
            try SQLiteDatabase(path: path, configuration: .init(busyTimeoutMilliseconds: 200))
        }
        let waited = Date().timeIntervalSince(started)
        #expect(waited >= 0.15 && waited < 2, "waited \(waited) s for a 200 ms timeout")
        try holder.exec("ROLLBACK")
    }

    @Test(
        "8 threads opening one new file at once all succeed, 50 rounds; every migration is recorded once"
    )
    func openTogetherOnANewFile() throws {
        let threads = 8
        let deadline = Date().addingTimeInterval(60)
        var rounds = 0
        while rounds < 50, Date() < deadline {
            let file = directory.path("together-\(rounds)/portvakt.sqlite")
            let failures = Mutex<[String]>([])
            let gate = DispatchSemaphore(value: 0)
            let waiting = DispatchGroup()
            for _ in 0..<threads { waiting.enter() }
            onThreads(threads + 1) { index in
                if index == threads {
                    // Release every opener at the same moment once all are waiting.
                    waiting.wait()
                    for _ in 0..<threads { gate.signal() }
                    return
                }
                waiting.leave()
                gate.wait()
                do {
                    let database = try SQLiteDatabase(path: file, configuration: .init(readerCount: 1))
                    database.close()
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            #expect(failures.withLock { $0 } == [], "round \(rounds)")
            let database = try SQLiteDatabase(path: file)
            defer { database.close() }
            #expect(try database.appliedMigrations().map(\.version) == Migration.sqlite.map(\.version))
            rounds += 1
        }
        #expect(rounds == 50, "only \(rounds) rounds in 60 s")
    }

    // MARK: Transactions

    @Test("a thrown error rolls the transaction back and leaves nothing behind")
    func rollbackOnThrow() throws {
        struct Abort: Error {}
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let store = SQLStore(database: database)
        #expect(throws: Abort.self) {
            try database.write { connection in
                try connection.execute(
                    "INSERT INTO users (id, display_name, created_at, user_handle) VALUES (?1, ?2, ?3, randomblob(32))",
                    ["u1", "One", epoch])
                throw Abort()
            }
        }
        #expect(try store.user(id: "u1") == nil)
        #expect(try database.write { $0.isInTransaction } == true, "the next write starts cleanly")
        try store.insertUser(makeUser("u2"))
        #expect(try store.userCount() == 1)
    }

    @Test("readers refuse to write")
    func readersAreQueryOnly() throws {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        #expect(throws: StorageError(.readOnly, "")) {
            try database.read { connection in
                try connection.execute(
                    "INSERT INTO users (id, display_name, created_at, user_handle) VALUES (?1, ?2, ?3, randomblob(32))",
                    ["u1", "One", epoch])
            }
        }
    }

    @Test("readers run while a write transaction is open and see only committed rows")
    func readersDuringWrite() throws {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let store = SQLStore(database: database)
        try Self.whileWriting(database, inserting: "u1") { () throws in
            let started = Date()
            #expect(try store.userCount() == 0, "the uncommitted row is invisible")
            #expect(try store.user(id: "u1") == nil)
            #expect(Date().timeIntervalSince(started) < 2, "reads did not wait for the writer")
        }
        #expect(try store.user(id: "u1") != nil, "committed rows are visible to the next read")
    }

    /// Runs `during` while another thread holds a write transaction open that inserted user
    /// `userID`, then lets that transaction end (commit, or throw when `failing`) and waits for
    /// it; whether the write succeeded.
    @discardableResult
    static func whileWriting(
        _ database: SQLiteDatabase, inserting userID: String, failing: Bool = false,
        _ during: () throws -> Void
    ) throws -> Bool {
        struct Refused: Error {}
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let succeeded = Mutex(false)
        let writer = Thread {
            let written: Void? = try? database.write { connection in
                try SQLStore.insert(makeUser(userID), on: connection)
                inside.signal()
                // Hold the transaction open until `during` is done (bounded, so a bug cannot hang).
                _ = release.wait(timeout: .now() + 10)
                if failing { throw Refused() }
            }
            succeeded.withLock { $0 = written != nil }
            finished.signal()
        }
        writer.start()
        #expect(inside.wait(timeout: .now() + 10) == .success)
        defer {
            release.signal()
            #expect(finished.wait(timeout: .now() + 10) == .success)
        }
        try during()
        return succeeded.withLock { $0 }
    }

    /// Whether `connection` refuses writes at the SQL level: 1 on a reader (`query_only`), 0 on
    /// the writer.
    static func queryOnly(_ connection: Connection) throws -> Int64? {
        try connection.queryFirst("PRAGMA query_only") { try $0.int64(0) }
    }

    @Test(
        "a point read borrows the idle writer, whose page cache survives commits, and reads the latest commit"
    )
    func pointReadBorrowsIdleWriter() throws {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let store = SQLStore(database: database)
        #expect(try database.pointRead(Self.queryOnly) == 0, "the writer, which is not query_only")
        #expect(try database.read(Self.queryOnly) == 1, "a plain read stays on a reader")
        try store.insertUser(makeUser("u1"))
        #expect(
            try database.pointRead { try $0.queryFirst("SELECT id FROM users") { try $0.string(0) } } == "u1")
    }

    @Test("a point read on the borrowed writer refuses every write and hands it back as it was")
    func pointReadRefusesWrites() throws {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let store = SQLStore(database: database)
        let insert =
            "INSERT INTO users (id, display_name, created_at, user_handle) VALUES (?1, ?2, ?3, randomblob(32))"
        #expect(throws: StorageError(.readOnly, "")) {
            try database.pointRead { try $0.execute(insert, ["u1", "One", epoch]) }
        }
        #expect(throws: StorageError(.readOnly, ""), "BEGIN IMMEDIATE takes the write lock") {
            try database.pointRead { try $0.execute("BEGIN IMMEDIATE") }
        }
        #expect(throws: StorageError(.readOnly, ""), "raw SQL (pragmas, DDL) is never a read") {
            try database.pointRead { try $0.exec("PRAGMA query_only = OFF") }
        }
        // A read transaction left open by the body is ended when the writer is handed back.
        let leftOpen = try database.pointRead { connection -> Bool in
            try connection.execute("BEGIN")
            _ = try connection.queryFirst("SELECT count(*) FROM users") { try $0.int64(0) }
            return connection.isInTransaction
        }
        #expect(leftOpen)
        #expect(try database.pointRead { $0.isInTransaction } == false)
        // Writes work as before, on the same connection, and the refused insert left nothing.
        try store.insertUser(makeUser("u2"))
        #expect(try store.user(id: "u1") == nil)
        #expect(try store.user(id: "u2") != nil)
        #expect(try database.write { try $0.execute(insert, ["u3", "Three", epoch]) } == 1)
    }

    @Test("a point read does not wait for a write that holds the writer: it runs on a reader")
    func pointReadDuringWrite() throws {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let store = SQLStore(database: database)
        try store.insertUser(makeUser("u0"))
        try Self.whileWriting(database, inserting: "u1") { () throws in
            let started = Date()
            #expect(try database.pointRead(Self.queryOnly) == 1, "on a reader while the writer is held")
            #expect(
                try database.pointRead {
                    try $0.query("SELECT id FROM users ORDER BY id") { try $0.string(0) }
                }
                    == ["u0"], "the uncommitted row is invisible")
            #expect(Date().timeIntervalSince(started) < 2, "the point reads did not wait for the writer")
        }
        #expect(
            try database.pointRead { try $0.query("SELECT id FROM users ORDER BY id") { try $0.string(0) } }
                == ["u0", "u1"])
    }

    @Test("a lone write that throws is rolled back whole; the writes queued behind it commit after it")
    func queuedWritesDoNotJoinAFailedLoneWrite() throws {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let queuedDone = DispatchSemaphore(value: 0)
        // The held write ran alone, so without a savepoint: only a ROLLBACK of the whole
        // transaction undoes its insert.
        let leaderSucceeded = try Self.whileWriting(database, inserting: "leader", failing: true) {
            Thread {
                _ = try? database.write { try SQLStore.insert(makeUser("queued"), on: $0) }
                queuedDone.signal()
            }.start()
            #expect(Threads.wait(atMost: 10) { database.queuedWrites == 1 })
        }
        #expect(queuedDone.wait(timeout: .now() + 10) == .success)
        #expect(!leaderSucceeded)
        #expect(
            try database.read { try $0.query("SELECT id FROM users ORDER BY id") { try $0.string(0) } }
                == ["queued"])
    }

    @Test("8 threads × 200 inserts from concurrent writers all land")
    func concurrentWriters() throws {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let store = SQLStore(database: database)
        let failures = Wins()
        onThreads(8) { thread in
            for index in 0..<200 {
                do {
                    try store.insertUser(
                        makeUser("t\(thread)-\(index)", username: "name-\(thread)-\(index)"))
                    // Readers keep working alongside.
                    if index.isMultiple(of: 50) { _ = try store.userCount() }
                } catch {
                    failures.add(thread)
                }
            }
        }
        #expect(failures.all.isEmpty)
        #expect(try store.userCount() == 1600)
        #expect(try database.integrityCheck() == "ok")
    }

    /// The WAL file's size in bytes, 0 when there is none.
    func walSize() -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
    }

    @Test("under constant writes with readers active the WAL stays bounded; close removes it")
    func walStaysBounded() throws {
        // A short checkpoint threshold, so that a few thousand small commits cross it many times.
        let frames = 64
        let database = try SQLiteDatabase(
            path: path, configuration: .init(), clock: SystemClock(), migrations: Migration.sqlite,
            checkpointFrames: frames)
        let store = SQLStore(database: database)
        let largest = Mutex(0)
        let done = Atomic(false)
        let watcher = DispatchSemaphore(value: 0)
        Thread {
            while !done.load(ordering: .relaxed) {
                let size = walSize()
                largest.withLock { $0 = max($0, size) }
                usleep(500)
            }
            watcher.signal()
        }.start()
        let failures = Wins()
        onThreads(8) { thread in
            for index in 0..<400 {
                do {
                    try store.insertUser(
                        makeUser("t\(thread)-\(index)", username: "name-\(thread)-\(index)"))
                    _ = try store.user(id: "t\(thread)-\(index / 2)")
                } catch {
                    failures.add(thread)
                }
            }
        }
        done.store(true, ordering: .relaxed)
        watcher.wait()
        #expect(failures.all.isEmpty)
        #expect(try store.userCount() == 3200)
        // Without a restart the WAL would hold every commit, about 57 MB here (passive checkpoints
        // alone never restart it while commits keep coming); with them it stays near 256 frames,
        // plus what commits add while a pass runs (about 8 MB on a busy 2-core machine).
        #expect(largest.withLock { $0 } <= 16 << 20)
        #expect(try database.integrityCheck() == "ok")
        database.close()
        #expect(walSize() == 0, "the last connection out checkpoints and removes the WAL")
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        let reopened = try SQLiteDatabase(path: path)
        defer { reopened.close() }
        #expect(try SQLStore(database: reopened).userCount() == 3200)
    }

    @Test("a long reader holds the WAL back only while it lasts; then the WAL starts again")
    func walRestartsAfterLongReader() throws {
        let database = try SQLiteDatabase(
            path: path, configuration: .init(), clock: SystemClock(), migrations: Migration.sqlite,
            checkpointFrames: 64)
        defer { database.close() }
        let store = SQLStore(database: database)
        // A read transaction kept open, as a backup's is: no checkpoint may pass its snapshot.
        let reader = try Connection(path: path, flags: [.readWrite], busyTimeoutMilliseconds: 1000)
        try reader.exec("BEGIN")
        _ = try reader.queryFirst("SELECT count(*) FROM users") { try $0.int64(0) }
        for index in 0..<1000 { try store.insertUser(makeUser("a\(index)", username: "a\(index)")) }
        let heldBack = walSize()
        try reader.exec("COMMIT")
        reader.close()
        for index in 0..<3000 { try store.insertUser(makeUser("b\(index)", username: "b\(index)")) }
        // Without a restart the file would grow by every one of the 3,000 commits (about 50 MB).
        // With it, twice what was held back (the back-off) plus what commits add while a pass
        // runs: up to about 8 MB on a busy 2-core machine, as above.
        #expect(walSize() <= 2 * heldBack + (8 << 20), "held back \(heldBack), then \(walSize())")
        #expect(try store.userCount() == 4000)
        #expect(try database.integrityCheck() == "ok")
    }

    /// How the threads of a group-commit test call: each waiting for its commit (leading when
    /// none runs), each suspended as an HTTP worker's handler is (the writer thread leads), or
    /// half one way and half the other.
    enum Callers: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case waiting, suspended, mixed
        var testDescription: String { rawValue }

        func suspends(thread: Int) -> Bool {
            switch self {
            case .waiting: false
            case .suspended: true
            case .mixed: thread.isMultiple(of: 2)
            }
        }
    }

    /// `body` in a write transaction, as `callers` has thread `thread` call it.
    static func write<T: Sendable>(
        _ database: SQLiteDatabase, as callers: Callers, thread: Int,
        _ body: @escaping @Sendable (Connection) throws -> T
    ) throws -> T {
        guard callers.suspends(thread: thread) else { return try database.write(body) }
        return try SuspendingCaller.run { try await database.writeAsync(body) }
    }

    @Test(
        "in shared transactions a failing writer undoes only its own writes; the others land",
        arguments: Callers.allCases)
    func groupCommitIsolation(callers: Callers) throws {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        struct Refused: Error {}
        let unexpected = Wins()
        onThreads(8) { thread in
            for index in 0..<150 {
                do {
                    try Self.write(database, as: callers, thread: thread) { connection in
                        // Two rows per job, so a half-applied job would show as a lone row.
                        for part in ["a", "b"] {
                            try connection.execute(
                                "INSERT INTO settings (key, value, updated_at) VALUES (?1, ?2, 0)",
                                ["t\(thread)-\(index)-\(part)", [UInt8(thread)]])
                        }
                        // Every third job throws after writing; every fifth hits a constraint.
                        if index % 3 == 0 { throw Refused() }
                        if index % 5 == 0 {
                            try connection.execute(
                                "INSERT INTO settings (key, value, updated_at) VALUES (?1, ?2, 0)",
                                ["t\(thread)-\(index)-a", [0]])
                        }
                    }
                    if index % 3 == 0 || index % 5 == 0 { unexpected.add(thread) }
                } catch is Refused {
                    if index % 3 != 0 { unexpected.add(thread) }
                } catch let error as StorageError {
                    if error.code != .conflict || index % 3 == 0 || index % 5 != 0 { unexpected.add(thread) }
                } catch {
                    unexpected.add(thread)
                }
            }
        }
        #expect(unexpected.all.isEmpty, "each writer saw its own outcome")
        let keys = try database.read { connection in
            Set(try connection.query("SELECT key FROM settings") { try $0.string(0) })
        }
        var expected = Set<String>()
        for thread in 0..<8 {
            for index in 0..<150 where index % 3 != 0 && index % 5 != 0 {
                expected.insert("t\(thread)-\(index)-a")
                expected.insert("t\(thread)-\(index)-b")
            }
        }
        #expect(keys == expected)
        #expect(try database.integrityCheck() == "ok")
    }

    @Test(
        "a suspended write is resumed on the writer thread, which may write again itself without waiting for itself"
    )
    func suspendedWriteResumesOnTheWriter() throws {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let done = DispatchSemaphore(value: 0)
        let resumedOn = Locked<String?>(nil)
        Thread {
            _ = try? SuspendingCaller.run {
                try await database.writeAsync { try SQLStore.insert(makeUser("first"), on: $0) }
                resumedOn.withLock { $0 = Threads.currentName }
                // The rest of a handler after its commit: here, on the writer thread, a second
                // write must lead itself rather than queue behind the thread it runs on.
                try database.write { try SQLStore.insert(makeUser("second"), on: $0) }
            }
            done.signal()
        }.start()
        #expect(done.wait(timeout: .now() + 10) == .success, "the second write never committed")
        #expect(resumedOn.withLock { $0 } == "sqlite-writer")
        #expect(
            try database.read { try $0.query("SELECT id FROM users ORDER BY id") { try $0.string(0) } }
                == ["first", "second"])
    }

    /// A write body that adds user `id`.
    static func inserting(_ id: String) -> @Sendable (Connection) throws -> Void {
        { connection in try SQLStore.insert(makeUser(id), on: connection) }
    }

    /// Starts a suspended write of user "handler" whose rest, on the writer thread, waits for
    /// `resume` and then runs `rest`; returns once the writer thread is held there.
    /// - Returns: the semaphore that lets the handler go on, and the one signalled when it is done.
    static func holdWriterThread(
        _ database: SQLiteDatabase, then rest: @escaping @Sendable () throws -> Void
    ) throws -> (resume: DispatchSemaphore, done: DispatchSemaphore) {
        let (resumed, resume, done) = (
            DispatchSemaphore(value: 0), DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)
        )
        Thread {
            _ = try? SuspendingCaller.run {
                try await database.writeAsync(Self.inserting("handler"))
                resumed.signal()
                resume.wait()
                try rest()
            }
            done.signal()
        }.start()
        try #require(resumed.wait(timeout: .now() + 10) == .success, "the suspended write never resumed")
        return (resume, done)
    }

    /// The ids in the users table, sorted.
    static func userIDs(_ database: SQLiteDatabase) throws -> [String] {
        try database.read { try $0.query("SELECT id FROM users ORDER BY id") { try $0.string(0) } }
    }

    @Test(
        "a resumed handler that writes again on the writer thread while another caller leads and a suspended write is queued ahead of it gets the lead"
    )
    func writerWaitsBehindASuspendedWrite() throws {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        // A handler whose rest runs on the writer thread and writes again there (as a lost
        // sign-in's audit event does), held until the queue below is set up.
        let (resume, handlerDone) = try Self.holdWriterThread(database) {
            try database.write(Self.inserting("handler-again"))
        }
        // Another thread leads and holds its batch open…
        let (leading, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        Thread {
            _ = try? database.write { connection in
                leading.signal()
                release.wait()
                try Self.inserting("leader")(connection)
            }
        }.start()
        #expect(leading.wait(timeout: .now() + 10) == .success)
        // …a suspended write queues behind it, then the handler's second write behind that.
        let suspendedDone = DispatchSemaphore(value: 0)
        Thread {
            _ = try? SuspendingCaller.run { try await database.writeAsync(Self.inserting("suspended")) }
            suspendedDone.signal()
        }.start()
        #expect(Threads.wait(atMost: 10) { database.queuedWrites == 1 })
        resume.signal()
        #expect(Threads.wait(atMost: 10) { database.queuedWrites == 2 })
        release.signal()
        #expect(handlerDone.wait(timeout: .now() + 10) == .success, "the writer thread waited for itself")
        #expect(suspendedDone.wait(timeout: .now() + 10) == .success)
        #expect(try Self.userIDs(database) == ["handler", "handler-again", "leader", "suspended"])
    }

    @Test(
        "a waiting caller that leads with a full batch of suspended writes queued ahead runs its own write first"
    )
    func waitingLeaderBehindAFullQueue() throws {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        // The writer thread is kept busy with a resumed handler, so suspended writes pile up.
        let (resume, handlerDone) = try Self.holdWriterThread(database) {}
        let queued = GroupCommit.maximumBatch
        let suspended = DispatchGroup()
        for index in 0..<queued {
            suspended.enter()
            Thread {
                _ = try? SuspendingCaller.run { try await database.writeAsync(Self.inserting("s\(index)")) }
                suspended.leave()
            }.start()
        }
        #expect(Threads.wait(atMost: 10) { database.queuedWrites == queued })
        try database.write(Self.inserting("waiting"))
        #expect(try Self.userIDs(database).contains("waiting"), "the leader's own write committed")
        resume.signal()
        #expect(handlerDone.wait(timeout: .now() + 10) == .success)
        #expect(suspended.wait(timeout: .now() + 10) == .success)
        try database.write(Self.inserting("later"))
        #expect(try Self.userIDs(database).count == queued + 3)
    }

    @Test("on a thread that may block, writeAsync waits for its commit on that thread, as write does")
    func writeAsyncWaitsWhereItMayBlock() async throws {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let ranOn = try await database.writeAsync { _ in Threads.currentName }
        #expect(ranOn != "sqlite-writer")
    }

    @Test("a suspended write after close fails with storage.closed, never waits")
    func suspendedWriteAfterClose() throws {
        let database = try SQLiteDatabase(path: path)
        _ = try SuspendingCaller.run {
            try await database.writeAsync { try SQLStore.insert(makeUser("u1"), on: $0) }
        }
        database.close()
        #expect(throws: StorageError(.closed, "")) {
            try SuspendingCaller.run {
                try await database.writeAsync { try SQLStore.insert(makeUser("u2"), on: $0) }
            }
        }
    }

    // MARK: Operations

    @Test("the integrity check reports ok and the health check passes")
    func integrityAndHealth() throws {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        try SQLStore(database: database).insertUser(makeUser("u1"))
        #expect(try database.integrityCheck() == "ok")
        try database.checkHealth()
    }

    @Test("a backup is a 0600 file that opens with the same rows")
    func backup() throws {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let store = SQLStore(database: database)
        try store.insertUser(makeUser("u1", username: "alice"))
        try store.insertSession(makeSession("s1", userID: "u1"))
        try store.setSetting("admin.token_hash", value: [1, 2, 3])
        let eventID = try store.appendAudit(
            AuditEvent(
                at: epoch, action: AuditAction(rawValue: "user.created"), actor: .admin(tokenName: "ops"),
                userID: "u1"))

        let destination = directory.path("backups/portvakt-backup.sqlite")
        try database.backup(to: destination)
        let mode =
            try FileManager.default.attributesOfItem(atPath: destination)[.posixPermissions] as? Int
        #expect(mode.map { $0 & 0o777 } == 0o600)

        let copy = try SQLiteDatabase(path: destination)
        defer { copy.close() }
        let restored = SQLStore(database: copy)
        #expect(try restored.user(id: "u1") == store.user(id: "u1"))
        #expect(try restored.session(id: "s1") == store.session(id: "s1"))
        #expect(try restored.setting("admin.token_hash") == [1, 2, 3])
        #expect(
            try restored.auditEvents(userID: nil, beforeID: nil, limit: 5).map(\.id) == [eventID])
        #expect(try copy.schemaVersion == Self.latest)
        #expect(try copy.integrityCheck() == "ok")
    }

    @Test("a backup never overwrites an existing file")
    func backupRefusesExisting() throws {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let destination = directory.path("existing.sqlite")
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: destination))
        #expect(throws: StorageError(.conflict, "")) { try database.backup(to: destination) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination)) == Data("keep me".utf8))
    }

    @Test("a closed database refuses work, and closing twice is harmless")
    func closed() throws {
        let database = try SQLiteDatabase(path: path)
        let store = SQLStore(database: database)
        database.close()
        database.close()
        #expect(throws: StorageError(.closed, "")) { try store.user(id: "u1") }
        #expect(throws: StorageError(.closed, "")) { try store.insertUser(makeUser("u1")) }
        #expect(throws: StorageError(.closed, "")) { try database.checkHealth() }
        let destination = directory.path("after-close.sqlite")
        #expect(throws: StorageError(.closed, "")) { try database.backup(to: destination) }
        #expect(
            !FileManager.default.fileExists(atPath: destination), "no empty backup is left behind")
    }

    // MARK: Statements

    @Test("the writer reuses its prepared statements across transactions")
    func writerReusesStatements() throws {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let store = SQLStore(database: database)
        try store.insertUser(makeUser("u0"))
        let before = try database.write { $0.prepareCount }
        for index in 1...20 { try store.insertUser(makeUser("u\(index)")) }
        #expect(
            try database.write { $0.prepareCount } == before, "no insert compiled its SQL again")
    }

    @Test("bound values never appear in error messages")
    func noValuesInErrors() throws {
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let store = SQLStore(database: database)
        let secret = "secret-username-4711"
        try store.insertUser(makeUser("u1", username: secret))
        do {
            try store.insertUser(makeUser("u2", username: secret))
            Issue.record("a duplicate username was accepted")
        } catch let error as StorageError {
            #expect(error.code == .conflict)
            #expect(!error.description.contains(secret))
            #expect(!error.message.contains("u2"))
            // SQLITE_CONSTRAINT_UNIQUE, kept for operators.
            #expect(error.sqliteResultCode == 2067)
        }
    }
}
