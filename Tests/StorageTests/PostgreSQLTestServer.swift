import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Storage

/// The PostgreSQL server the PostgreSQL tests run against: the one `make test` starts
/// (Tools/postgres-test-cluster.sh), named by `PORTVAKT_TEST_POSTGRES_URL`.
///
/// Without a URL the suites are disabled, so a bare `swift test` on a laptop without PostgreSQL
/// says why instead of failing. Under CI or `PORTVAKT_REQUIRE_POSTGRES=1` (which `make test` sets)
/// a missing URL fails every test instead: the engine must never pass by not running.
enum PostgreSQLTestServer {
    /// The server's URL, when one is given.
    static var url: String? { TestPostgreSQL.url }

    /// Whether the PostgreSQL suites run: with a server, or when one is required (and then fail).
    static var isEnabled: Bool { TestPostgreSQL.isEnabled }

    /// Why the suites are disabled, shown by the test runner.
    static let disabledReason = Comment(rawValue: TestPostgreSQL.disabledReason)

    /// The server's configuration, with the timeouts a test asks for.
    static func configuration(
        statementTimeout: Duration = .seconds(5), connectTimeout: Duration = .seconds(5)
    ) throws -> PostgreSQLConfiguration {
        var configuration = try PostgreSQLConfiguration(url: TestPostgreSQL.requiredURL())
        configuration.applicationName = "portvakt-tests"
        configuration.statementTimeout = statementTimeout
        configuration.connectTimeout = connectTimeout
        return configuration
    }

    /// A new connection to the server.
    static func connect(statementTimeout: Duration = .seconds(5)) throws -> PostgreSQLConnection {
        try PostgreSQLConnection(configuration: configuration(statementTimeout: statementTimeout))
    }

    /// A table name no other test uses (the tests run in parallel against one database).
    static func uniqueTableName() -> String {
        "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    }

    /// Waits until the server has no backend with `pid` any more (pg_terminate_backend only
    /// signals it), at most five seconds.
    static func waitUntilGone(_ pid: Int32, on connection: PostgreSQLConnection) throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            let count = try connection.queryFirst(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", [Int(pid)]
            ) { try $0.int64(0) }
            if count == 0 { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        Issue.record("backend \(pid) was still there after five seconds")
    }

    /// Terminates backend `pid` from another connection and waits until it is gone.
    static func terminate(_ pid: Int32) throws {
        let killer = try connect()
        let terminated = try killer.queryFirst("SELECT pg_terminate_backend($1)", [Int(pid)]) {
            try $0.bool(0)
        }
        #expect(terminated == true)
        try waitUntilGone(pid, on: killer)
    }

    /// The `StorageError` that `body` throws; an issue is recorded when it throws none.
    static func failure<T>(
        sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T
    ) -> StorageError? {
        do {
            _ = try body()
            Issue.record("expected a StorageError, but the call succeeded", sourceLocation: sourceLocation)
        } catch let error as StorageError {
            return error
        } catch {
            Issue.record("expected a StorageError, got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    /// Runs `first` and `second` at the same time on two threads and waits for both.
    static func concurrently(
        _ first: @escaping @Sendable () -> Void, _ second: @escaping @Sendable () -> Void
    ) {
        let bodies = [first, second]
        DispatchQueue.concurrentPerform(iterations: 2) { bodies[$0]() }
    }
}

/// A counter several threads add to.
final class AttemptCounter: Sendable {
    private let count = Mutex(0)

    var value: Int { count.withLock { $0 } }

    /// Adds one and returns the new count.
    @discardableResult
    func increment() -> Int {
        count.withLock {
            $0 += 1; return $0
        }
    }
}
