import Foundation
import Testing

@testable import Storage

/// The PostgreSQL server the app's PostgreSQL tests run against: the one `make test` starts
/// (Tools/postgres-test-cluster.sh), named by `PORTVAKT_TEST_POSTGRES_URL`, as in StorageTests.
///
/// Without a URL the suites are disabled, so a bare `swift test` without PostgreSQL says why.
/// Under CI or `PORTVAKT_REQUIRE_POSTGRES=1` a missing URL fails every test instead: the
/// PostgreSQL paths must never pass by not running.
enum PostgreSQLTestServer {
    private static let environment = ProcessInfo.processInfo.environment

    /// The server's URL, when one is given.
    static let url: String? = environment["PORTVAKT_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }

    /// Whether this run must test PostgreSQL.
    static let isRequired: Bool = {
        if environment["PORTVAKT_REQUIRE_POSTGRES"] == "1" { return true }
        guard let ci = environment["CI"]?.lowercased() else { return false }
        return !["", "0", "false", "no"].contains(ci)
    }()

    /// Whether the PostgreSQL suites run: with a server, or when one is required (and then fail).
    static let isEnabled = url != nil || isRequired

    /// Why the suites are disabled, shown by the test runner.
    static let disabledReason: Comment =
        "PORTVAKT_TEST_POSTGRES_URL is not set: Tools/postgres-test-cluster.sh run swift test … sets it"

    /// The server's configuration (its own database), or the error that fails a required run.
    static func configuration() throws -> PostgreSQLConfiguration {
        guard let url else {
            throw StorageError(
                .invalidArgument,
                "PORTVAKT_TEST_POSTGRES_URL is not set, but CI or PORTVAKT_REQUIRE_POSTGRES requires the PostgreSQL tests"
            )
        }
        var configuration = try PostgreSQLConfiguration(url: url)
        configuration.applicationName = "portvakt-app-tests"
        return configuration
    }
}

/// An empty database of its own for one test, made with `CREATE DATABASE` on the test server
/// and dropped (with any connection still open to it) when the value goes away.
final class PostgreSQLTestDatabase: Sendable {
    /// The server, connected to the new database.
    let configuration: PostgreSQLConfiguration
    /// The server's own database, which the drop connects to.
    private let serverConfiguration: PostgreSQLConfiguration

    init() throws {
        serverConfiguration = try PostgreSQLTestServer.configuration()
        let name = "portvakt_app_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let connection = try PostgreSQLConnection(configuration: serverConfiguration)
        defer { connection.close() }
        try connection.exec("CREATE DATABASE \(name)")
        var configuration = serverConfiguration
        configuration.database = name
        self.configuration = configuration
    }

    deinit {
        guard let connection = try? PostgreSQLConnection(configuration: serverConfiguration) else { return }
        _ = try? connection.exec("DROP DATABASE IF EXISTS \(configuration.database) WITH (FORCE)")
        connection.close()
    }

    /// The database's name.
    var name: String { configuration.database }

    /// `host:port`, as Portvakt's messages name the server.
    var endpoint: String { configuration.endpoint }

    /// The role's password, which Portvakt takes only from the environment.
    var password: String { configuration.password ?? "" }

    /// `PORTVAKT_DATABASE_PASSWORD` for a configuration that names the server in its file.
    var passwordEnvironment: [String: String] { ["PORTVAKT_DATABASE_PASSWORD": password] }

    /// The `storage` section naming this database (everything but the password).
    var storageJSON: [String: Any] {
        var server: [String: Any] = [
            "host": configuration.host, "port": configuration.port, "database": name,
            "user": configuration.user, "sslmode": configuration.tlsMode.rawValue,
        ]
        server["rootCertificateFile"] = configuration.rootCertificatePath
        return ["engine": "postgresql", "postgresql": server]
    }

    /// The database as a `postgresql://` URL with the password, for `PORTVAKT_DATABASE_URL`.
    var url: String {
        var components = URLComponents()
        components.scheme = "postgresql"
        components.user = configuration.user
        components.password = configuration.password
        components.host = configuration.host
        components.port = configuration.port
        components.path = "/" + name
        components.queryItems =
            [URLQueryItem(name: "sslmode", value: configuration.tlsMode.rawValue)]
            + (configuration.rootCertificatePath.map { [URLQueryItem(name: "sslrootcert", value: $0)] } ?? [])
        return components.string ?? ""
    }

    /// Opens the database as Storage does (migrating it unless told not to).
    func open(migrate: Bool = true) throws -> PostgreSQLDatabase {
        try PostgreSQLDatabase(
            configuration: PostgreSQLDatabase.Configuration(
                connection: configuration, poolSize: 2, migrateOnOpen: migrate))
    }

    /// A configuration file for `portvakt` naming this database, with listeners on free ports.
    func writeConfiguration(in directory: URL, extra: [String: Any] = [:]) throws -> String {
        var object: [String: Any] = [
            "listen": ["public": ["port": 0], "admin": ["port": 0]], "storage": storageJSON,
        ]
        object.merge(extra) { _, new in new }
        let url = directory.appendingPathComponent("postgresql.json")
        try JSONSerialization.data(withJSONObject: object).write(to: url)
        return url.path
    }
}
