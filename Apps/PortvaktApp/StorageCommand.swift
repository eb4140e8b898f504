import FoundationEssentials
import Storage

/// `portvakt storage copy`: moves a deployment from its SQLite file to PostgreSQL.
enum StorageCommand {
    static func run(_ arguments: ArraySlice<String>, environment: [String: String]) throws -> Int32 {
        var rest = arguments
        switch rest.popFirst() {
        case "copy":
            let options = try Options.parse(rest, command: "storage copy", flags: ["--from", "--to-config"])
            return try copy(
                from: try options.required("--from"), toConfig: try options.required("--to-config"),
                environment: environment)
        case let other?:
            throw UsageError("unknown storage command '\(other)' (expected copy)")
        case nil:
            throw UsageError("storage needs a command: copy --from SQLITE_FILE --to-config FILE")
        }
    }

    /// Copies the SQLite database at `path` into the PostgreSQL database the configuration file
    /// at `configPath` names (password from the environment), and prints each table's row count.
    ///
    /// The SQLite file must exist and be at this release's schema version; it is only read. The
    /// target is migrated first and must hold no data; the copy is one transaction, so a failure
    /// leaves it empty.
    static func copy(from path: String, toConfig configPath: String, environment: [String: String]) throws
        -> Int32
    {
        // Opening a path that does not exist would create an empty database and copy nothing.
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory
        else {
            PortvaktCLI.printError("portvakt: storage copy: --from \(path): no such SQLite database file")
            return 1
        }
        let configuration = try PortvaktConfiguration.load(path: configPath, environment: environment)
        guard let settings = configuration.storage.postgresql else {
            throw ConfigurationError(issues: [
                ConfigurationIssue(
                    .conflict, path: "storage.engine",
                    message:
                        "is \"sqlite\" in \(configPath); storage copy needs the PostgreSQL database to copy into (storage.engine \"postgresql\", or \(PortvaktConfiguration.EnvironmentVariable.databaseURL))"
                )
            ])
        }
        // Not migrated: a copy reads the file exactly as it is, and StorageCopy names an old schema.
        let source = try SQLiteDatabase(
            path: path,
            configuration: SQLiteDatabase.Configuration(
                busyTimeoutMilliseconds: configuration.storage.busyTimeoutMilliseconds, readerCount: 1,
                migrateOnOpen: false))
        defer { source.close() }
        let target = try PostgreSQLDatabase.open(settings)
        defer { target.close() }
        let copied = try StorageCopy.copy(from: source, to: target)
        print("copied \(path) into PostgreSQL \(StorageEngine.postgresql(target).location):")
        let total = copied.reduce(0) { $0 + $1.rows }
        print(
            TextTable.render(
                header: ["TABLE", "ROWS"],
                rows: copied.map { [$0.name, String($0.rows)] } + [["total", String(total)]]))
        return 0
    }
}
