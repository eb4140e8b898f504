import CPQ
import Foundation
public import Storage

/// The PostgreSQL server tests run against: the throwaway cluster `make test` starts
/// (Tools/postgres-test-cluster.sh), named by `PORTVAKT_TEST_POSTGRES_URL`.
///
/// Without a URL the PostgreSQL tests are disabled, so a bare `swift test` on a laptop without
/// PostgreSQL says why instead of failing. Under CI or `PORTVAKT_REQUIRE_POSTGRES=1` (which
/// `make test` sets) a missing URL fails them instead: an engine must never pass by not running.
public enum TestPostgreSQL {
    private static let environment = ProcessInfo.processInfo.environment

    /// The server's URL, when one is given.
    public static let url: String? = environment["PORTVAKT_TEST_POSTGRES_URL"].flatMap {
        $0.isEmpty ? nil : $0
    }

    /// Whether this run must test PostgreSQL.
    public static let isRequired: Bool = {
        if environment["PORTVAKT_REQUIRE_POSTGRES"] == "1" { return true }
        guard let ci = environment["CI"]?.lowercased() else { return false }
        return !["", "0", "false", "no"].contains(ci)
    }()

    /// Whether PostgreSQL tests run: with a server, or when one is required (and then fail).
    public static let isEnabled = url != nil || isRequired

    /// Why PostgreSQL tests are disabled, for the test runner.
    public static let disabledReason =
        "PORTVAKT_TEST_POSTGRES_URL is not set: `make test` starts a throwaway PostgreSQL and sets it"

    /// The server's URL, or an error saying that none was given although one is required.
    public static func requiredURL() throws -> String {
        guard let url else {
            throw StorageError(
                .invalidArgument,
                "PORTVAKT_TEST_POSTGRES_URL is not set, but CI or PORTVAKT_REQUIRE_POSTGRES requires the PostgreSQL tests"
            )
        }
        return url
    }

    /// Creates a new, empty database on the server for one test and returns its URL: tests run
    /// in parallel, and each store test needs a database nobody else writes to.
    public static func createDatabase() throws -> String {
        let url = try requiredURL()
        let name = "portvakt_t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let connection = PQconnectdb(url)
        defer { PQfinish(connection) }
        guard PQstatus(connection) == CONNECTION_OK else {
            throw StorageError(.unavailable, "cannot reach the test PostgreSQL: \(message(connection))")
        }
        let result = PQexec(connection, "CREATE DATABASE \(name)")
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else {
            throw StorageError(.internal, "CREATE DATABASE failed: \(message(connection))")
        }
        return try replacingDatabase(in: url, with: name)
    }

    /// Drops the database `url` names, closing whatever still connects to it (PostgreSQL 13+).
    public static func dropDatabase(_ url: String) {
        guard let server = self.url, let name = URLComponents(string: url)?.path.dropFirst(),
            name.hasPrefix("portvakt_t_"), name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" })
        else { return }
        let connection = PQconnectdb(server)
        defer { PQfinish(connection) }
        PQclear(PQexec(connection, "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"))
    }

    /// The configuration of a new, empty database (see `createDatabase`).
    public static func createDatabaseConfiguration(
        statementTimeout: Duration = .seconds(10)
    ) throws -> PostgreSQLConfiguration {
        var configuration = try PostgreSQLConfiguration(url: createDatabase())
        configuration.applicationName = "portvakt-tests"
        configuration.statementTimeout = statementTimeout
        return configuration
    }

    /// `url` with its path (the database name) replaced by `name`.
    static func replacingDatabase(in url: String, with name: String) throws -> String {
        guard var components = URLComponents(string: url) else {
            throw StorageError(.invalidArgument, "PORTVAKT_TEST_POSTGRES_URL is not a URL")
        }
        components.path = "/" + name
        guard let replaced = components.string else {
            throw StorageError(.invalidArgument, "PORTVAKT_TEST_POSTGRES_URL is not a URL")
        }
        return replaced
    }

    private static func message(_ connection: OpaquePointer?) -> String {
        PQerrorMessage(connection).map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) }
            ?? ""
    }
}
