import CryptoCore
import Foundation
import Kernel
import TestSupport
import Testing

@testable import Storage

/// The migration that lets admin tokens have the `introspect` scope, on each engine: tokens made
/// before it keep every field, the new scope is accepted after it and not before, and the check
/// still refuses any other scope.
@Suite("Admin token scopes: the introspect migration")
struct AdminTokenScopeMigrationTests {
    static let name = "admin tokens that may only introspect sessions"

    /// Tokens as an older release wrote them: each scope it knew, live, expiring and revoked.
    static let older = [
        AdminTokenRecord(
            id: "adt_1", name: "bootstrap", scope: .write, tokenHash: Digest.sha256("one"),
            createdAt: Date(timeIntervalSince1970: 1_764_000_000)),
        AdminTokenRecord(
            id: "adt_2", name: "support-ro", scope: .read, tokenHash: Digest.sha256("two"),
            createdAt: Date(timeIntervalSince1970: 1_764_000_100),
            expiresAt: Date(timeIntervalSince1970: 1_770_000_000)),
        AdminTokenRecord(
            id: "adt_3", name: "old", scope: .write, tokenHash: Digest.sha256("three"),
            createdAt: Date(timeIntervalSince1970: 1_764_000_200),
            revokedAt: Date(timeIntervalSince1970: 1_764_000_300)),
    ]
    static let narrow = AdminTokenRecord(
        id: "adt_4", name: "app-server", scope: .introspect, tokenHash: Digest.sha256("four"),
        createdAt: Date(timeIntervalSince1970: 1_764_000_400))

    /// Writes the older tokens before the migration, checks the new scope is refused there, and
    /// checks everything after it, on `before` and then `after` (the same database).
    func check(before: SQLStore, closeBefore: () -> Void, after: () throws -> SQLStore) throws {
        for token in Self.older { try before.insertAdminToken(token) }
        #expect(throws: StorageError.self, "the scope check refused introspect before") {
            try before.insertAdminToken(Self.narrow)
        }
        closeBefore()
        let store = try after()
        #expect(try store.adminTokens().sorted { $0.id < $1.id } == Self.older, "every row, every field")
        try store.insertAdminToken(Self.narrow)
        #expect(try store.adminToken(hash: Digest.sha256("four")) == Self.narrow)
        var bogus = Self.narrow
        bogus.id = "adt_5"
        bogus.name = "bogus"
        bogus.tokenHash = Digest.sha256("five")
        try store.insertAdminToken(bogus)
        // The check is still there: a scope no release knows cannot be written.
        #expect(throws: StorageError.self) {
            try store.engine.write {
                try $0.execute("UPDATE admin_tokens SET scope = 'admin' WHERE id = 'adt_5'")
            }
        }
        #expect(try store.adminTokens().count == 5)
    }

    @Test("SQLite 12 rebuilds admin_tokens keeping every row, and accepts introspect")
    func sqlite() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("portvakt.sqlite")
        let version = try #require(Migration.sqlite.first { $0.name == Self.name }?.version)
        #expect(version == 12)
        let old = try SQLiteDatabase(
            path: path, configuration: .init(), clock: SystemClock(),
            migrations: Array(Migration.sqlite.prefix(version - 1)))
        var reopened: SQLiteDatabase?
        defer { reopened?.close() }
        try check(
            before: SQLStore(database: old), closeBefore: { old.close() },
            after: {
                let database = try SQLiteDatabase(path: path)
                reopened = database
                // Reopening applies this migration and every later one.
                #expect(try database.schemaVersion == Migration.sqlite.count)
                return SQLStore(database: database)
            })
    }

    @Test(
        "PostgreSQL 5 replaces the scope check in place, and accepts introspect",
        .enabled(if: PostgreSQLTestServer.isEnabled, PostgreSQLTestServer.disabledReason))
    func postgreSQL() throws {
        let scratch = try PostgreSQLDatabaseTests.Scratch()
        let version = try #require(Migration.postgreSQL.first { $0.name == Self.name }?.version)
        #expect(version == 5)
        let old = try scratch.open(migrations: Array(Migration.postgreSQL.prefix(version - 1)))
        var reopened: PostgreSQLDatabase?
        defer { reopened?.close() }
        try check(
            before: SQLStore(database: old), closeBefore: { old.close() },
            after: {
                let database = try scratch.open()
                reopened = database
                #expect(try database.schemaVersion == Migration.postgreSQL.count)
                return SQLStore(database: database)
            })
    }
}
