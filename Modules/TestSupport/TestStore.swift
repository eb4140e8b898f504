public import FoundationEssentials
public import Kernel
public import Storage

/// The storage engines a store test runs on: SQLite always, PostgreSQL when the test server is
/// there (or required, and then failing without it).
public enum TestEngine: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgresql

    public var description: String { rawValue }

    /// The engines this run tests: every behavioural store test takes these as its arguments.
    public static var tested: [TestEngine] { TestPostgreSQL.isEnabled ? [.sqlite, .postgresql] : [.sqlite] }
}

/// A fresh, empty store on one engine for one test: SQLite on a file in a temporary folder (not
/// ":memory:", which `SQLiteDatabase` refuses: its pooled connections must share one database),
/// or a new PostgreSQL database on the test server.
///
/// Keep this value alive while the store is used: when it goes, the database is closed and the
/// folder or database removed, so `try TestStore(.sqlite).store` alone is a closed store. A test
/// that plays a second instance puts another `SQLStore(engine: testStore.engine)` on it.
public final class TestStore: @unchecked Sendable {
    /// The stores.
    public let store: SQLStore
    /// The open database under them.
    public var engine: StorageEngine { store.engine }
    private let directory: TemporaryDirectory?
    private let postgres: PostgreSQLTestDatabase?

    /// - Parameter poolSize: PostgreSQL connections; small, since tests run in parallel against
    ///   one server.
    public init(_ kind: TestEngine, clock: any WallClock = SystemClock(), poolSize: Int = 4) throws {
        switch kind {
        case .sqlite:
            let directory = try TemporaryDirectory()
            self.directory = directory
            postgres = nil
            store = SQLStore(
                database: try SQLiteDatabase(path: directory.path("portvakt.sqlite"), clock: clock),
                clock: clock)
        case .postgresql:
            let postgres = try PostgreSQLTestDatabase()
            self.postgres = postgres
            directory = nil
            var connection = postgres.configuration
            connection.statementTimeout = .seconds(10)
            store = SQLStore(
                database: try PostgreSQLDatabase(
                    configuration: PostgreSQLDatabase.Configuration(
                        connection: connection, poolSize: poolSize),
                    clock: clock),
                clock: clock)
        }
    }

    // Closed here, before the folder or the database goes with the stored properties.
    deinit { store.engine.close() }
}

extension SessionAccessStore {
    /// Ends one of `userID`'s sessions with no audit event or webhook, for tests that need a
    /// revoked session (the product ends sessions through AuthOrchestrator, which records them).
    /// - Returns: whether this call ended it.
    @discardableResult
    public func endSession(_ id: String, ofUser userID: String, at: Date) throws -> Bool {
        try !revokeSessions(ofUser: userID, ids: [id], except: nil, at: at) { _ in .none }.isEmpty
    }
}
