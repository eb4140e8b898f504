import CryptoCore
import Foundation
import Storage
import TestSupport
import Testing

@testable import PortvaktApp

/// Parses `json`, expecting success.
private func parse(_ json: String, environment: [String: String] = [:]) throws -> PortvaktConfiguration {
    try PortvaktConfiguration.parse(json: Array(json.utf8), environment: environment)
}

/// Parses `json`, expecting failure; the issues as `path: message` lines.
private func issues(_ json: String, environment: [String: String] = [:]) -> [String] {
    do {
        _ = try PortvaktConfiguration.parse(json: Array(json.utf8), environment: environment)
        Issue.record("expected \(json) to be refused")
        return []
    } catch {
        return error.issues.map(\.description)
    }
}

/// Parses `json`, expecting failure; the issues' codes and paths.
private func codes(_ json: String, environment: [String: String] = [:]) -> [String] {
    do {
        _ = try PortvaktConfiguration.parse(json: Array(json.utf8), environment: environment)
        Issue.record("expected \(json) to be refused")
        return []
    } catch {
        return error.issues.map { "\($0.code.rawValue) \($0.path)" }
    }
}

/// A password that must never appear in any output.
private let password = "pg-s3cret-Pa55word"

/// A file naming a PostgreSQL server, with nothing but the required keys.
private let minimal =
    #"{"storage": {"engine": "postgresql", "postgresql": {"host": "db.internal", "database": "portvakt", "user": "portvakt"}}}"#

@Suite("Configuration: storage engines")
struct StorageConfigurationTests {
    @Test("the default engine is SQLite, and effective JSON says so with SQLite's keys only")
    func sqliteDefault() throws {
        let c = try parse("{}")
        #expect(c.storage.engine == .sqlite && c.storage.postgresql == nil)
        #expect(try parse(#"{"storage": {"engine": "sqlite"}}"#) == c)
        let shown = c.effectiveJSON()
        #expect(shown.contains(#""engine": "sqlite""#) && shown.contains(#""readers": 4"#))
        #expect(!shown.contains("postgresql"))
    }

    @Test("storage.postgresql: host, database and user are all it needs; the rest has strict defaults")
    func postgresqlDefaults() throws {
        let c = try parse(minimal)
        #expect(c.storage.engine == .postgresql)
        #expect(
            c.storage.postgresql
                == .init(
                    host: "db.internal", port: 5432, database: "portvakt", user: "portvakt",
                    sslmode: .verifyFull,
                    rootCertificateFile: nil, applicationName: "portvakt", poolSize: 10,
                    poolWaitTimeoutMilliseconds: 5000, connectTimeoutSeconds: 5,
                    statementTimeoutMilliseconds: 5000,
                    password: nil))
    }

    @Test("every storage.postgresql key is accepted with a valid value, the password from the environment")
    func everyPostgreSQLKey() throws {
        let json = """
            {"storage": {"engine": "postgresql", "postgresql": {
              "host": "10.0.0.5", "port": 6432, "database": "auth", "user": "portvakt_app",
              "sslmode": "verify-ca", "rootCertificateFile": "/etc/portvakt/db-ca.pem",
              "applicationName": "portvakt-eu1", "poolSize": 2, "poolWaitTimeoutMilliseconds": 250,
              "connectTimeoutSeconds": 10, "statementTimeoutMilliseconds": 30000,
              "passwordFromEnvironment": true}}}
            """
        let c = try parse(json, environment: ["PORTVAKT_DATABASE_PASSWORD": password])
        let settings = try #require(c.storage.postgresql)
        #expect(
            settings
                == .init(
                    host: "10.0.0.5", port: 6432, database: "auth", user: "portvakt_app", sslmode: .verifyCA,
                    rootCertificateFile: "/etc/portvakt/db-ca.pem", applicationName: "portvakt-eu1",
                    poolSize: 2, poolWaitTimeoutMilliseconds: 250, connectTimeoutSeconds: 10,
                    statementTimeoutMilliseconds: 30000, password: .init(password)))
        // What Storage is handed: the same values, the timeouts as durations.
        let connection = settings.connection
        #expect(connection.endpoint == "10.0.0.5:6432" && connection.tlsMode == .verifyCA)
        #expect(connection.password == password && connection.statementTimeout == .seconds(30))
        #expect(connection.connectTimeout == .seconds(10) && connection.applicationName == "portvakt-eu1")
        for mode in ["disable", "require", "verify-full"] {
            let text = minimal.replacingOccurrences(
                of: #""user": "portvakt""#, with: #""user": "u", "sslmode": "\#(mode)""#)
            #expect(try parse(text).storage.postgresql?.sslmode.rawValue == mode)
        }
        // A socket directory and an IPv6 literal are hosts too.
        for host in ["/var/run/postgresql", "::1", "DB-1.example.com"] {
            let text = minimal.replacingOccurrences(of: "db.internal", with: host)
            #expect(try parse(text).storage.postgresql?.host == host)
        }
    }

    @Test("a password in the file is refused, naming the key and the environment variable, never echoing it")
    func passwordInFileRefused() {
        let json = minimal.replacingOccurrences(
            of: #""user": "portvakt""#, with: #""user": "portvakt", "password": "\#(password)""#)
        let found = issues(json)
        #expect(found.count == 1)
        #expect(found.first?.hasPrefix("storage.postgresql.password: ") == true)
        #expect(found.first?.contains("PORTVAKT_DATABASE_PASSWORD") == true)
        #expect(!found.joined().contains(password))
        #expect(codes(json) == ["config.secret_in_file storage.postgresql.password"])
        // A URL may hold the password too, so it is no key of the file either.
        let url = minimal.replacingOccurrences(
            of: #""user": "portvakt""#, with: #""user": "portvakt", "url": "postgresql://u:\#(password)@h/d""#
        )
        #expect(codes(url) == ["config.secret_in_file storage.postgresql.url"])
        #expect(!issues(url).joined().contains(password))
    }

    @Test("missing connection keys, a bad sslmode, pool size below 2 and other bad values name their key")
    func badValues() {
        #expect(
            issues(#"{"storage": {"engine": "postgresql"}}"#) == [
                #"storage.postgresql.host: required for storage.engine "postgresql" (or set PORTVAKT_DATABASE_URL)"#,
                #"storage.postgresql.database: required for storage.engine "postgresql" (or set PORTVAKT_DATABASE_URL)"#,
                #"storage.postgresql.user: required for storage.engine "postgresql" (or set PORTVAKT_DATABASE_URL)"#,
            ])
        func with(_ members: String) -> String {
            minimal.replacingOccurrences(of: #""user": "portvakt""#, with: #""user": "portvakt", "# + members)
        }
        #expect(
            issues(with(#""sslmode": "prefer""#)) == [
                #"storage.postgresql.sslmode: expected one of "disable", "require", "verify-ca", "verify-full", got "prefer""#
            ])
        #expect(
            issues(with(#""poolSize": 1"#)) == [
                "storage.postgresql.poolSize: expected an integer from 2 to 1000, got 1"
            ])
        #expect(
            codes(
                with(
                    #""port": 0, "connectTimeoutSeconds": 0, "statementTimeoutMilliseconds": 0, "poolWaitTimeoutMilliseconds": 0, "applicationName": "portvakt ☃""#
                ))
                == [
                    "config.invalid_value storage.postgresql.port",
                    "config.invalid_value storage.postgresql.applicationName",
                    "config.invalid_value storage.postgresql.poolWaitTimeoutMilliseconds",
                    "config.invalid_value storage.postgresql.connectTimeoutSeconds",
                    "config.invalid_value storage.postgresql.statementTimeoutMilliseconds",
                ])
        #expect(codes(with(#""poolSize": "10""#)) == ["config.wrong_type storage.postgresql.poolSize"])
        for host in ["db host", "a.example,b.example", "", "-db"] {
            let text = minimal.replacingOccurrences(of: "db.internal", with: host)
            #expect(codes(text) == ["config.invalid_value storage.postgresql.host"], "\(host)")
        }
        let long = String(repeating: "d", count: 64)
        #expect(
            issues(
                minimal.replacingOccurrences(of: #""database": "portvakt""#, with: #""database": "\#(long)""#)
            )
                == ["storage.postgresql.database: expected 1 to 63 bytes, got 64"])
        #expect(
            issues(with(#""hots": "x""#)) == [#"storage.postgresql.hots: unknown key (did you mean "host"?)"#]
        )
        #expect(codes(#"{"storage": {"engine": "mysql"}}"#) == ["config.invalid_value storage.engine"])
    }

    @Test("SQLite's keys under PostgreSQL, and storage.postgresql under SQLite, are conflicts naming the key")
    func keysOfTheOtherEngine() {
        let json =
            #"{"storage": {"engine": "postgresql", "path": "/x.sqlite", "readers": 2, "synchronous": "full", "busyTimeoutMilliseconds": 1, "postgresql": {"host": "h", "database": "d", "user": "u"}}}"#
        #expect(
            codes(json) == [
                "config.conflict storage.path", "config.conflict storage.busyTimeoutMilliseconds",
                "config.conflict storage.synchronous", "config.conflict storage.readers",
            ])
        #expect(issues(json).first?.contains(#"applies only to storage.engine "sqlite""#) == true)
        #expect(
            issues(#"{"storage": {"postgresql": {"host": "h", "database": "d", "user": "u"}}}"#) == [
                #"storage.postgresql: is given but storage.engine is "sqlite"; set storage.engine to "postgresql" or remove this section"#
            ])
        // The password belongs to PostgreSQL: set while SQLite runs, it points at a mistake.
        #expect(
            codes("{}", environment: ["PORTVAKT_DATABASE_PASSWORD": password])
                == ["config.conflict PORTVAKT_DATABASE_PASSWORD"])
    }

    @Test("PORTVAKT_DATABASE_URL selects PostgreSQL and replaces the file's connection keys")
    func databaseURL() throws {
        let url =
            "postgresql://app:\(password)@pg.example.com:5433/auth?sslmode=verify-full&sslrootcert=/etc/ca.pem&application_name=pv1&connect_timeout=7"
        let environment = ["PORTVAKT_DATABASE_URL": url]
        let alone = try parse("{}", environment: environment)
        #expect(
            alone.storage.postgresql
                == .init(
                    host: "pg.example.com", port: 5433, database: "auth", user: "app", sslmode: .verifyFull,
                    rootCertificateFile: "/etc/ca.pem", applicationName: "pv1", connectTimeoutSeconds: 7,
                    password: .init(password)))
        // The file's connection keys give way to the URL (defaults included); pool and statement
        // settings stay the file's.
        let file =
            #"{"storage": {"engine": "postgresql", "postgresql": {"host": "other", "port": 1, "database": "x", "user": "y", "sslmode": "disable", "rootCertificateFile": "/other.pem", "poolSize": 4, "statementTimeoutMilliseconds": 900}}}"#
        let both = try #require(try parse(file, environment: environment).storage.postgresql)
        #expect(
            both.host == "pg.example.com" && both.port == 5433 && both.database == "auth"
                && both.user == "app")
        #expect(both.sslmode == .verifyFull && both.rootCertificateFile == "/etc/ca.pem")
        #expect(both.poolSize == 4 && both.statementTimeoutMilliseconds == 900)
        let bare = try #require(
            try parse(file, environment: ["PORTVAKT_DATABASE_URL": "postgresql://app@pg/auth"]).storage
                .postgresql)
        #expect(bare.sslmode == .verifyFull && bare.rootCertificateFile == nil && bare.port == 5432)
        // A URL without a password takes it from PORTVAKT_DATABASE_PASSWORD; both at once is a conflict.
        let split = try parse(
            "{}",
            environment: [
                "PORTVAKT_DATABASE_URL": "postgresql://app@pg/auth", "PORTVAKT_DATABASE_PASSWORD": password,
            ])
        #expect(split.storage.postgresql?.password == .init(password))
        #expect(
            codes("{}", environment: environment.merging(["PORTVAKT_DATABASE_PASSWORD": "x"]) { $1 })
                == ["config.conflict PORTVAKT_DATABASE_PASSWORD"])
        // A file that says sqlite while the URL is set is refused rather than guessed.
        #expect(
            issues(#"{"storage": {"engine": "sqlite"}}"#, environment: environment) == [
                #"storage.engine: is "sqlite" while PORTVAKT_DATABASE_URL is set; set it to "postgresql" or unset PORTVAKT_DATABASE_URL"#
            ])
    }

    @Test("a bad PORTVAKT_DATABASE_URL names the variable and never quotes it")
    func badDatabaseURL() {
        for url in [
            "postgresql://app:\(password)@pg/auth?sslmode=prefer",
            "postgresql://app:\(password)@pg/auth?options=x",
            "postgresql://app:\(password)@/auth", "not a url \(password)",
            "postgresql://app:\(password)@pg/\(String(repeating: "d", count: 70))",
        ] {
            let found = issues("{}", environment: ["PORTVAKT_DATABASE_URL": url])
            #expect(found.count == 1 && found.first?.hasPrefix("PORTVAKT_DATABASE_URL: ") == true, "\(found)")
            #expect(!found.joined().contains(password))
        }
        #expect(
            codes(
                "{}",
                environment: [
                    "PORTVAKT_DATABASE_URL": "postgresql://a@h/d", "PORTVAKT_DATABASE_PASSWORD": "",
                ])
                == ["config.invalid_environment PORTVAKT_DATABASE_PASSWORD"])
        #expect(
            codes("{}", environment: ["PORTVAKT_DATABSE_URL": "postgresql://a@h/d"])
                == ["config.invalid_environment PORTVAKT_DATABSE_URL"])
    }

    @Test("passwordFromEnvironment asserts whether the environment supplies the password")
    func passwordAssertion() throws {
        func with(_ flag: Bool) -> String {
            minimal.replacingOccurrences(
                of: #""user": "portvakt""#, with: #""user": "portvakt", "passwordFromEnvironment": \#(flag)"#)
        }
        let environment = ["PORTVAKT_DATABASE_PASSWORD": password]
        #expect(
            try parse(with(true), environment: environment).storage.postgresql?.password == .init(password))
        #expect(try parse(with(false)).storage.postgresql?.password == nil)
        #expect(codes(with(true)) == ["config.conflict storage.postgresql.passwordFromEnvironment"])
        #expect(
            codes(with(false), environment: environment) == [
                "config.conflict storage.postgresql.passwordFromEnvironment"
            ])
    }

    @Test(
        "effective JSON shows PostgreSQL's keys, never the password, and parses back to the same configuration"
    )
    func effectiveJSON() throws {
        let cases: [(String, [String: String])] = [
            (minimal, [:]),
            (minimal, ["PORTVAKT_DATABASE_PASSWORD": password]),
            (
                "{}",
                ["PORTVAKT_DATABASE_URL": "postgresql://app:\(password)@pg:6000/auth?sslrootcert=/ca.pem"]
            ),
        ]
        for (json, environment) in cases {
            let original = try parse(json, environment: environment)
            let shown = original.effectiveJSON()
            #expect(!shown.contains(password))
            #expect(!shown.contains(#""path""#) && shown.contains(#""engine": "postgresql""#))
            #expect(
                shown.contains(#""passwordFromEnvironment": true"#)
                    == (original.storage.postgresql?.password != nil))
            let reparsed = try parse(shown, environment: environment)
            #expect(reparsed == original)
            #expect(reparsed.effectiveJSON() == shown)
        }
        let shown = try parse(
            "{}", environment: ["PORTVAKT_DATABASE_URL": "postgresql://app:\(password)@pg:6000/auth"]
        )
        .effectiveJSON()
        for member in [
            #""host": "pg""#, #""port": 6000"#, #""database": "auth""#, #""user": "app""#,
            #""sslmode": "verify-full""#,
        ] {
            #expect(shown.contains(member), "\(member)")
        }
        // Nothing prints it either.
        let settings = try #require(
            try parse(minimal, environment: ["PORTVAKT_DATABASE_PASSWORD": password]).storage.postgresql)
        var dumped = ""
        dump(settings, to: &dumped)
        #expect(!"\(settings)".contains(password) && !dumped.contains(password))
        #expect(!settings.connection.description.contains(password))
    }
}

@Suite("Configuration: storage engines on the command line", .serialized)
struct StorageConfigurationCommandTests {
    @Test("config show redacts the database password, from PORTVAKT_DATABASE_PASSWORD or the URL")
    func configShowRedacts() throws {
        let directory = try TemporaryDirectory()
        let file = directory.url.appendingPathComponent("pg.json")
        try Data(minimal.utf8).write(to: file)
        let fromVariable = try PortvaktProcess.run(
            ["config", "show", "--config", file.path], environment: ["PORTVAKT_DATABASE_PASSWORD": password])
        #expect(fromVariable.status == 0, "\(fromVariable.stderr)")
        #expect(fromVariable.stdout.contains(#""host": "db.internal""#))
        #expect(fromVariable.stdout.contains(#""passwordFromEnvironment": true"#))
        let fromURL = try PortvaktProcess.run(
            ["config", "show"],
            environment: ["PORTVAKT_DATABASE_URL": "postgresql://app:\(password)@pg.example.com/auth"])
        #expect(fromURL.status == 0, "\(fromURL.stderr)")
        #expect(fromURL.stdout.contains(#""host": "pg.example.com""#))
        for output in [fromVariable.stdout, fromVariable.stderr, fromURL.stdout, fromURL.stderr] {
            #expect(!output.contains(password))
        }
    }

    @Test("config check names a password in the file and a pool size below 2")
    func configCheck() throws {
        let directory = try TemporaryDirectory()
        let file = directory.url.appendingPathComponent("pg.json")
        let json = minimal.replacingOccurrences(
            of: #""user": "portvakt""#,
            with: #""user": "portvakt", "password": "\#(password)", "poolSize": 1"#)
        try Data(json.utf8).write(to: file)
        let result = try PortvaktProcess.run(["config", "check", file.path])
        #expect(result.status == 1)
        #expect(
            result.stderr.contains(
                "storage.postgresql.password: the database password is never read from the file"))
        #expect(
            result.stderr.contains("storage.postgresql.poolSize: expected an integer from 2 to 1000, got 1"))
        #expect(!result.stderr.contains(password) && !result.stdout.contains(password))
    }

    @Test("storage copy refuses a missing source file and a target configuration on SQLite, naming them")
    func copyUsage() throws {
        let directory = try TemporaryDirectory()
        let sqlite = directory.path("source.sqlite")
        try SQLiteDatabase(path: sqlite).close()
        let file = directory.url.appendingPathComponent("sqlite.json")
        try Data("{}".utf8).write(to: file)
        let onSQLite = try PortvaktProcess.run([
            "storage", "copy", "--from", sqlite, "--to-config", file.path,
        ])
        #expect(onSQLite.status == 1)
        #expect(
            onSQLite.stderr.contains(#"storage.engine: is "sqlite" in \#(file.path); storage copy needs"#))
        let missing = try PortvaktProcess.run(
            ["storage", "copy", "--from", directory.path("none.sqlite"), "--to-config", file.path])
        #expect(missing.status == 1 && missing.stderr.contains("none.sqlite: no such SQLite database file"))
        #expect(!FileManager.default.fileExists(atPath: directory.path("none.sqlite")))
        let usage = try PortvaktProcess.run(["storage", "copy", "--from", sqlite])
        #expect(usage.status == 2 && usage.stderr.contains("missing required option '--to-config'"))
        #expect(try PortvaktProcess.run(["storage", "move"]).status == 2)
    }

    @Test("an unreachable PostgreSQL is a one-line start-up error naming host:port, exit 1, no crash")
    func unreachable() throws {
        let port = try LoopbackPorts.unused()
        let directory = try TemporaryDirectory()
        let file = directory.url.appendingPathComponent("pg.json")
        let json =
            #"{"listen": {"public": {"port": 0}, "admin": {"port": 0}}, "storage": {"engine": "postgresql", "postgresql": {"host": "127.0.0.1", "port": \#(port), "database": "portvakt", "user": "portvakt", "sslmode": "disable", "connectTimeoutSeconds": 2}}}"#
        try Data(json.utf8).write(to: file)
        let environment = ["PORTVAKT_DATA": directory.path, "PORTVAKT_DATABASE_PASSWORD": password]
        for arguments in [["serve"], ["migrate"], ["admin", "token", "list"]] {
            let result = try PortvaktProcess.run(
                arguments + ["--config", file.path], environment: environment)
            #expect(result.status == 1, "\(arguments): \(result.stderr)")
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1, "\(result.stderr)")
            #expect(
                result.stderr.contains("storage.unavailable") && result.stderr.contains("127.0.0.1:\(port)"))
            #expect(!result.stderr.contains("Fatal error") && !result.stderr.contains(password))
        }
    }
}
