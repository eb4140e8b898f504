import CryptoCore
import Kernel
import Storage

extension StorageEngine {
    /// Opens the database `configuration` names: the SQLite file, or a pool of connections to
    /// the PostgreSQL server (every connection now, so a wrong address, password or server
    /// release fails here, at start-up, rather than at the first request).
    ///
    /// The one place the app turns `storage` settings into a database; `serve`, `migrate` and
    /// `admin token` all open through it.
    /// - Parameters:
    ///   - migrate: Whether opening applies missing migrations (`serve` does); `portvakt migrate`
    ///     passes false and applies them itself, to report them.
    /// - Throws: `StorageError`: for PostgreSQL `storage.unavailable` naming host and port when the
    ///   server cannot be reached, `storage.unsupported_server` naming its release when it is older
    ///   than 13; `storage.migration` when the schema is newer than this binary.
    static func open(
        _ configuration: PortvaktConfiguration, clock: any WallClock = SystemClock(), migrate: Bool = true
    ) throws -> StorageEngine {
        let storage = configuration.storage
        guard let postgresql = storage.postgresql else {
            return .sqlite(
                try SQLiteDatabase(
                    path: storage.path,
                    configuration: SQLiteDatabase.Configuration(
                        busyTimeoutMilliseconds: storage.busyTimeoutMilliseconds,
                        synchronous: storage.synchronous == .full ? .full : .normal,
                        readerCount: storage.readers, migrateOnOpen: migrate),
                    clock: clock))
        }
        return .postgresql(try PostgreSQLDatabase.open(postgresql, clock: clock, migrate: migrate))
    }

    /// Where the data is, for the log and the command line: the SQLite file, or the PostgreSQL
    /// server and database (never the password).
    var location: String {
        switch self {
        case .sqlite(let database): database.path
        case .postgresql(let database):
            "\(database.endpoint)/\(database.configuration.connection.database)"
        }
    }
}

extension PostgreSQLDatabase {
    /// Connects the pool `settings` describe and, when `migrate`, applies missing migrations.
    static func open(
        _ settings: PortvaktConfiguration.PostgreSQLSettings, clock: any WallClock = SystemClock(),
        migrate: Bool = true
    ) throws -> PostgreSQLDatabase {
        try PostgreSQLDatabase(
            configuration: Configuration(
                connection: settings.connection, poolSize: settings.poolSize,
                poolWaitTimeout: .milliseconds(settings.poolWaitTimeoutMilliseconds), migrateOnOpen: migrate),
            clock: clock)
    }
}

extension PortvaktConfiguration.PostgreSQLSettings {
    /// Storage's connection settings for this server, with the password from the environment.
    var connection: PostgreSQLConfiguration {
        let tlsMode: PostgreSQLConfiguration.TLSMode =
            switch sslmode {
            case .disable: .disable
            case .require: .require
            case .verifyCA: .verifyCA
            case .verifyFull: .verifyFull
            }
        return PostgreSQLConfiguration(
            host: host, port: port, database: database, user: user, password: password?.value,
            tlsMode: tlsMode, rootCertificatePath: rootCertificateFile, applicationName: applicationName,
            connectTimeout: .seconds(connectTimeoutSeconds),
            statementTimeout: .milliseconds(statementTimeoutMilliseconds))
    }
}
