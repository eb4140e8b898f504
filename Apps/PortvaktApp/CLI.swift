import AuthOrchestrator
import CryptoCore
import Dispatch
import FoundationEssentials
import Kernel
import Storage

/// The `portvakt` command line: parses arguments, runs one command, returns the exit status.
/// Exit 0 on success, 1 when the command failed, 2 for bad usage.
public enum PortvaktCLI {
    static let usage = """
        Portvakt \(PortvaktVersion.current): passwordless authentication server (passkeys, BankID).

        Usage: portvakt <command> [options]

        Commands:
          serve [--config FILE]          run the server (no configuration: the embedded default,
                                         http://localhost:8080, data in ./.portvakt)
          migrate [--config FILE] [--status]
                                         apply database migrations and exit (SQLite or
                                         PostgreSQL, as storage.engine says); --status only
                                         reports the schema version and applied migrations
          storage copy --from SQLITE_FILE --to-config FILE
                                         copy a SQLite database into the empty PostgreSQL
                                         database FILE names, in one transaction
          config check FILE              validate a configuration file; names every problem
          config show [--config FILE]    print the effective configuration, secrets redacted
          webauthn verify-registration --rp-id ID --origin ORIGIN [--origin ...] --challenge B64URL
                   [--algorithm NAME ...] [--require-uv] [--trust-anchor PEM ...] [--at RFC3339]
                   [--require-trusted] [--metadata MDS3_BLOB --metadata-root PEM]
                                         verify a RegistrationResponseJSON from standard input
          webauthn verify-authentication --rp-id ID --origin ORIGIN [--origin ...] --challenge B64URL
                   --public-key COSE_B64URL --sign-count N [--user-handle B64URL] [--require-uv]
                                         verify an AuthenticationResponseJSON from standard input
          webauthn inspect               decode a WebAuthn response, attestation object or
                                         authenticator data from standard input, every field
          admin token create --name NAME --scope read|write|introspect [--expires-in DURATION] [--config FILE]
                                         mint an admin API token (data folder directly; shown once)
          admin token list [--config FILE]
                                         list admin tokens (never their secrets)
          admin token revoke NAME-or-ID [--config FILE]
                                         revoke an admin token
          admin keys rotate [--immediately] [--retire-current] [--config FILE]
                                         a new access-token signing key (signs in 10 s; at once
                                         with --immediately; --retire-current stops the old
                                         keys' tokens verifying now)
          admin keys list [--config FILE]
                                         list the signing keys (never their private halves)
          admin users list [--search TEXT] [--limit N] [--cursor C]
          admin users show|disable|enable ID
          admin users delete ID --yes
          admin passkeys revoke USER-ID PASSKEY-ID
          admin sessions revoke USER-ID (SESSION-ID | --all)
          admin enrollment-link USER-ID [--expires-in DURATION]
          admin bankid verify-phone USER-ID [--call-initiator RP|user]
          admin bankid sign-phone USER-ID --text TEXT [--call-initiator RP|user]
                                         a BankID phone check of the caller: reads the personal
                                         number they state from standard input; exit 0 verified
                                         over the admin API: --url (PORTVAKT_ADMIN_URL, default
                                         http://127.0.0.1:8081), --token (PORTVAKT_ADMIN_TOKEN),
                                         --json for the API's JSON instead of tables
          bankid-simulator --data DIR --port N [--user-port N] [--auto-complete N]
                   [--scenario FILE] [--print-config]
                                         a BankID RP API v6 simulator (mutual TLS, development PKI)
          help                           show this text

        Options:
          -h, --help                     show this text
          --version                      print the version

        Environment:
          PORTVAKT_DATA                  data directory (default ./.portvakt)
          PORTVAKT_ADMIN_TOKEN           admin API token (otherwise created on first start)
          PORTVAKT_DATABASE_PASSWORD     the PostgreSQL password (never in the file)
          PORTVAKT_DATABASE_URL          a whole postgresql:// URL; selects PostgreSQL
        """

    /// Runs the command in `arguments` (without the program name).
    public static func run(_ arguments: [String], environment: [String: String]) -> Int32 {
        var rest = arguments[...]
        guard let command = rest.popFirst() else {
            printError(usage)
            return 2
        }
        do {
            switch command {
            case "-h", "--help", "help":
                print(usage)
                return 0
            case "--version", "version":
                print("portvakt \(PortvaktVersion.current)")
                return 0
            case "serve":
                let options = try Options.parse(rest, command: "serve", flags: ["--config"])
                return try ServeCommand.run(configPath: options["--config"], environment: environment)
            case "migrate":
                let options = try Options.parse(
                    rest, command: "migrate", flags: ["--config"], switches: ["--status"])
                return try migrate(
                    configPath: options["--config"], statusOnly: options.isSet("--status"),
                    environment: environment)
            case "storage":
                return try StorageCommand.run(rest, environment: environment)
            case "config":
                return try config(rest, environment: environment)
            case "webauthn":
                return try webauthn(rest)
            case "bankid-simulator":
                return try BankIDSimulatorCommand.run(rest)
            case "admin":
                return try AdminCommand.run(rest, environment: environment)
            default:
                throw UsageError("unknown command '\(command)'")
            }
        } catch let error as UsageError {
            printError("portvakt: \(error.message)\nRun 'portvakt --help' for usage.")
            return 2
        } catch let error as AdminAPIError {
            printError("portvakt: \(error.description)")
            return 1
        } catch let error as AuthError {
            // The code and message only: neither ever carries a token.
            printError("portvakt: \(error.description)")
            return 1
        } catch let error as ConfigurationError {
            printError("portvakt: the configuration has problems:\n\(error.description)")
            return 1
        } catch {
            printError("portvakt: \(error)")
            return 1
        }
    }

    private static func config(_ arguments: ArraySlice<String>, environment: [String: String]) throws -> Int32
    {
        var rest = arguments
        switch rest.popFirst() {
        case "check":
            let options = try Options.parse(rest, command: "config check", flags: [], positional: 1)
            guard let path = options.positional.first else {
                throw UsageError("config check needs a FILE")
            }
            do {
                let configuration = try PortvaktConfiguration.load(path: path, environment: environment)
                print("\(path): ok")
                // The choice about BankID's rule against ID switching, said whenever BankID is on.
                if let summary = configuration.idSwitchingSummary { print(summary) }
                return 0
            } catch {
                printError("\(path): invalid configuration\n\(error.description)")
                return 1
            }
        case "show":
            let options = try Options.parse(rest, command: "config show", flags: ["--config"])
            let configuration = try PortvaktConfiguration.load(
                path: options["--config"], environment: environment)
            print(configuration.effectiveJSON())
            return 0
        case let other?:
            throw UsageError("unknown config command '\(other)' (expected check or show)")
        case nil:
            throw UsageError("config needs a command: check FILE, or show")
        }
    }

    private static func webauthn(_ arguments: ArraySlice<String>) throws -> Int32 {
        var rest = arguments
        switch rest.popFirst() {
        case "inspect":
            _ = try Options.parse(rest, command: "webauthn inspect", flags: [])
            let input = StandardIO.readAll()
            let found: [String: Any]?
            do {
                found = try InspectCommand.inspect(input)
            } catch {
                printError(
                    "portvakt: standard input is not strict JSON: \(error.reason) at byte \(error.offset)")
                return 1
            }
            guard let report = found else {
                printError(
                    "portvakt: standard input is not a WebAuthn response, clientDataJSON, attestation object or "
                        + "authenticator data")
                return 1
            }
            let json = try JSONText.data(report, pretty: true, sortedKeys: true)
            StandardIO.writeOutput(json + Array("\n".utf8))
            return 0
        case "verify-registration":
            return try VerifyCommands.registration(rest)
        case "verify-authentication":
            return try VerifyCommands.authentication(rest)
        case let other?:
            throw UsageError("unknown webauthn command '\(other)'")
        case nil:
            throw UsageError(
                "webauthn needs a command: verify-registration, verify-authentication or inspect")
        }
    }

    /// `portvakt migrate`: applies the configured engine's missing migrations (on PostgreSQL under
    /// its advisory lock, so a server starting meanwhile waits), or with `statusOnly` lists them.
    private static func migrate(configPath: String?, statusOnly: Bool, environment: [String: String]) throws
        -> Int32
    {
        let configuration = try PortvaktConfiguration.load(path: configPath, environment: environment)
        let engine = try StorageEngine.open(configuration, migrate: false)
        defer { engine.close() }
        if statusOnly {
            let version = try engine.schemaVersion
            print(
                "\(engine.name) database \(engine.location): schema version \(version) of \(engine.supportedSchemaVersion)"
            )
            for migration in try engine.appliedMigrations() {
                print(
                    "  \(migration.version)  \(AdminTokenCommand.timestamp(migration.appliedAt))  \(migration.name)"
                )
            }
            if version < engine.supportedSchemaVersion {
                print("\(engine.supportedSchemaVersion - version) migration(s) pending; run portvakt migrate")
            }
            return 0
        }
        let applied = try engine.migrate()
        if applied.isEmpty {
            print("\(engine.name) database is up to date (schema version \(try engine.schemaVersion))")
        } else {
            for migration in applied { print("applied migration \(migration.version): \(migration.name)") }
        }
        return 0
    }

    static func printError(_ text: String) {
        StandardIO.writeError((text + "\n").utf8)
    }
}

/// Bad usage: an unknown command or flag, or a missing value. Exit status 2.
struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// Parsed options and positional arguments, refusing anything not declared: `--flag VALUE`
/// (once), repeatable `--flag VALUE` (any number of times) and `--switch` (no value); after a
/// lone `--` everything is positional.
struct Options {
    private var values: [String: [String]] = [:]
    private var switchesSet: Set<String> = []
    private(set) var positional: [String] = []

    /// The value of a single-valued flag.
    subscript(flag: String) -> String? { values[flag]?.first }

    /// Every value a repeatable flag was given.
    func all(_ flag: String) -> [String] { values[flag] ?? [] }

    /// Whether a switch was given.
    func isSet(_ flag: String) -> Bool { switchesSet.contains(flag) }

    /// Parses `arguments` where every flag in `flags` takes one value (once), every flag in
    /// `repeatable` takes one value each time, and `switches` take none.
    static func parse(
        _ arguments: ArraySlice<String>, command: String, flags: Set<String>, repeatable: Set<String> = [],
        switches: Set<String> = [], positional limit: Int = 0
    ) throws(UsageError) -> Options {
        var options = Options()
        var rest = arguments
        var optionsEnded = false
        while let argument = rest.popFirst() {
            // `--` ends the options. Options are `--name` only, so a value that merely starts
            // with one dash (a base64url credential id can) is positional, as it must be.
            if argument == "--", !optionsEnded {
                optionsEnded = true
                continue
            }
            guard !optionsEnded, argument.hasPrefix("--") else {
                guard options.positional.count < limit else {
                    throw UsageError("unexpected argument '\(argument)' for \(command)")
                }
                options.positional.append(argument)
                continue
            }
            let (name, inline) = Self.split(argument)
            if switches.contains(name) {
                guard inline == nil else { throw UsageError("option '\(name)' takes no value") }
                options.switchesSet.insert(name)
                continue
            }
            guard flags.contains(name) || repeatable.contains(name) else {
                throw UsageError("unknown option '\(name)' for \(command)")
            }
            guard let value = inline ?? rest.popFirst(), !value.isEmpty else {
                throw UsageError("option '\(name)' needs a value")
            }
            guard repeatable.contains(name) || options.values[name] == nil else {
                throw UsageError("option '\(name)' given twice")
            }
            options.values[name, default: []].append(value)
        }
        return options
    }

    /// The value of a flag that must be given.
    func required(_ flag: String) throws(UsageError) -> String {
        guard let value = self[flag] else { throw UsageError("missing required option '\(flag)'") }
        return value
    }

    /// Splits `--flag=value` into its name and value.
    private static func split(_ argument: String) -> (String, String?) {
        guard let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }
}
