public import Foundation
public import Storage

/// An empty database of its own for one test, made with `CREATE DATABASE` on the test server
/// and dropped (with any connection still open to it) when the value goes away.
public final class PostgreSQLTestDatabase: Sendable {
    /// The server, connected to the new database.
    public let configuration: PostgreSQLConfiguration
    /// The URL it was created under, which the drop names.
    private let createdURL: String

    public init() throws {
        createdURL = try TestPostgreSQL.createDatabase()
        var configuration = try PostgreSQLConfiguration(url: createdURL)
        configuration.applicationName = "portvakt-tests"
        self.configuration = configuration
    }

    deinit { TestPostgreSQL.dropDatabase(createdURL) }

    /// The database's name.
    public var name: String { configuration.database }

    /// `host:port`, as Portvakt's messages name the server.
    public var endpoint: String { configuration.endpoint }

    /// The role's password, which Portvakt takes only from the environment.
    public var password: String { configuration.password ?? "" }

    /// `PORTVAKT_DATABASE_PASSWORD` for a configuration that names the server in its file.
    public var passwordEnvironment: [String: String] { ["PORTVAKT_DATABASE_PASSWORD": password] }

    /// The `storage` section naming this database (everything but the password).
    public var storageJSON: [String: Any] {
        var server: [String: Any] = [
            "host": configuration.host, "port": configuration.port, "database": name,
            "user": configuration.user, "sslmode": configuration.tlsMode.rawValue,
        ]
        server["rootCertificateFile"] = configuration.rootCertificatePath
        return ["engine": "postgresql", "postgresql": server]
    }

    /// The database as a `postgresql://` URL with the password, for `PORTVAKT_DATABASE_URL`.
    public var url: String {
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
    public func open(migrate: Bool = true) throws -> PostgreSQLDatabase {
        try PostgreSQLDatabase(
            configuration: PostgreSQLDatabase.Configuration(
                connection: configuration, poolSize: 2, migrateOnOpen: migrate))
    }

    /// A configuration file for `portvakt` naming this database, with listeners on free ports.
    public func writeConfiguration(in directory: URL, extra: [String: Any] = [:]) throws -> String {
        var object: [String: Any] = [
            "listen": ["public": ["port": 0], "admin": ["port": 0]], "storage": storageJSON,
        ]
        object.merge(extra) { _, new in new }
        let url = directory.appendingPathComponent("postgresql.json")
        try JSONSerialization.data(withJSONObject: object).write(to: url)
        return url.path
    }
}
