public import Kernel
public import Storage

/// A fresh SQLite store on a file in its own temporary directory: real storage for a test in one
/// line, `let storage = try TemporaryStore()`, then `storage.store`.
///
/// A file and not ":memory:", which `SQLiteDatabase` refuses: its pooled connections must share
/// one database. Keep this value alive while the store is used: when it goes away the database
/// is closed and the directory removed, so `try TemporaryStore().store` alone is a closed store.
public final class TemporaryStore: Sendable {
    /// Every store protocol over the file.
    public let store: SQLStore
    /// The database under `store`, for a test that puts a second `SQLStore` (another instance)
    /// on the same file.
    public let database: SQLiteDatabase
    /// The directory holding the file and its WAL, removed after the database is closed.
    private let directory: TemporaryDirectory

    /// Creates and migrates an empty database.
    /// - Parameter clock: stamps migrations and settings' update times, as in the server.
    /// - Throws: `StorageError` when the database cannot be created, or a Foundation error when
    ///   the directory cannot.
    public init(clock: any WallClock = SystemClock()) throws {
        directory = try TemporaryDirectory(prefix: "portvakt-store")
        database = try SQLiteDatabase(path: directory.path("portvakt.sqlite"), clock: clock)
        store = SQLStore(database: database, clock: clock)
    }

    // Closed here, before the stored properties are released, so the directory goes only once
    // every connection to its files is shut.
    deinit { database.close() }
}
