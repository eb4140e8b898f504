public import FoundationEssentials

/// One step of an engine's schema: applied once, in its own transaction, and recorded in
/// `schema_migrations`. Steps are never edited once released; a change is a new step, written
/// for each engine (`Migration.sqlite`, `Migration.postgreSQL`).
struct Migration: Sendable {
    /// Position in the sequence, starting at 1 with no gaps.
    let version: Int
    /// A short description, recorded beside the version and checked on every open.
    let name: String
    /// The DDL, possibly several statements.
    let sql: String
}

/// A migration as recorded in the database.
public struct AppliedMigration: Sendable, Equatable {
    /// The schema version the migration brought the database to.
    public let version: Int
    /// The migration's short description.
    public let name: String
    /// When it was applied.
    public let appliedAt: Date

    /// Creates a record; an engine's `migrate()` is the usual way to get one.
    public init(version: Int, name: String, appliedAt: Date) {
        self.version = version
        self.name = name
        self.appliedAt = appliedAt
    }
}

extension Migration {
    /// Checks that `migrations` run 1, 2, 3, … with no gaps or repeats.
    static func validate(_ migrations: [Migration]) throws(StorageError) {
        for (offset, migration) in migrations.enumerated() where migration.version != offset + 1 {
            throw StorageError(
                .migration,
                "migration versions must run 1, 2, 3, … without gaps; found \(migration.version) at position \(offset + 1)"
            )
        }
    }

    /// Refuses a database whose `schema_migrations` (read on `connection`) is newer than
    /// `migrations`, or whose recorded history disagrees with them: the same rule on both engines.
    static func checkHistory(on connection: any SQLConnection, knowing migrations: [Migration]) throws {
        let recorded = try connection.query("SELECT version, name FROM schema_migrations ORDER BY version") {
            (version: Int(try $0.int64(0)), name: try $0.string(1))
        }
        let known = migrations.last?.version ?? 0
        if let newest = recorded.last, newest.version > known {
            throw StorageError(
                .migration,
                "the database is at schema version \(newest.version) but this Portvakt knows only up to \(known); use a newer Portvakt or restore a backup"
            )
        }
        for entry in recorded {
            guard entry.version >= 1, migrations[entry.version - 1].name == entry.name else {
                throw StorageError(
                    .migration,
                    "schema version \(entry.version) in the database is not the one this Portvakt knows")
            }
        }
    }
}
