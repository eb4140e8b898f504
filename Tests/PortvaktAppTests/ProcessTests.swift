import Foundation
import HTTPEngine
import Kernel
import PortvaktAPI
import SessionCore
import Storage
import TestSupport
import Testing

/// The built binary as operators run it: command line, first start, signals, crash safety.
@Suite("portvakt process", .serialized)
struct ProcessTests {
    let client = HTTPTestClient()

    @Test("--help and --version exit 0; unknown commands and flags exit 2 naming them")
    func commandLine() throws {
        let help = try PortvaktProcess.run(["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("serve") && help.stdout.contains("config check"))
        let version = try PortvaktProcess.run(["--version"])
        #expect(version.status == 0 && version.stdout.hasPrefix("portvakt "))
        let unknown = try PortvaktProcess.run(["frobnicate"])
        #expect(unknown.status == 2 && unknown.stderr.contains("unknown command 'frobnicate'"))
        let flag = try PortvaktProcess.run(["serve", "--colour", "blue"])
        #expect(flag.status == 2 && flag.stderr.contains("unknown option '--colour'"))
        let none = try PortvaktProcess.run([])
        #expect(none.status == 2)
    }

    @Test("config check names the exact key and problem, and exits non-zero")
    func configCheck() throws {
        let directory = try TemporaryDirectory()
        let bad = directory.url.appendingPathComponent("bad.json")
        try Data(#"{"http": {"maxBodyBytes": "big"}, "listen": {"public": {"prot": 1}}}"#.utf8).write(to: bad)
        let result = try PortvaktProcess.run(["config", "check", bad.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("http.maxBodyBytes"))
        #expect(result.stderr.contains("listen.public.prot"))
        let good = directory.url.appendingPathComponent("good.json")
        try Data("{}".utf8).write(to: good)
        #expect(try PortvaktProcess.run(["config", "check", good.path]).status == 0)
        let missing = try PortvaktProcess.run(["config", "check", directory.path("no.json")])
        #expect(missing.status == 1)
    }

    @Test("config show prints the effective configuration with the admin token redacted")
    func configShow() throws {
        let secret = "pva_" + String(repeating: "s", count: 40)
        let result = try PortvaktProcess.run(
            ["config", "show"], environment: ["PORTVAKT_ADMIN_TOKEN": secret])
        #expect(result.status == 0)
        #expect(result.stdout.contains("\"publicURL\""))
        #expect(!result.stdout.contains(secret))
    }

    @Test("the first start prints an admin token once; a restart keeps it and prints none")
    func firstStart() throws {
        let directory = try TemporaryDirectory()
        let config = try Self.writeConfig(in: directory)
        let environment = ["PORTVAKT_DATA": directory.path]
        let first = try PortvaktProcess(["serve", "--config", config], environment: environment)
        let adminPort = try first.waitForPort(listener: "admin")
        #expect(first.waitForStdout(containing: "pva_"), "no admin token printed: \(first.stdout)")
        let token = try #require(
            first.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.hasPrefix("pva_") })
        #expect(!first.stderr.contains(token), "the token must not reach the log")
        let authorized = try client.send(
            .GET, "http://127.0.0.1:\(adminPort)/admin/v1/config",
            headers: ["Authorization": "Bearer \(token)"])
        #expect(authorized.status == 200)
        first.send(SIGKILL)
        first.wait()

        let second = try PortvaktProcess(["serve", "--config", config], environment: environment)
        let secondAdmin = try second.waitForPort(listener: "admin")
        #expect(!second.stdout.contains("pva_"))
        let again = try client.send(
            .GET, "http://127.0.0.1:\(secondAdmin)/admin/v1/config",
            headers: ["Authorization": "Bearer \(token)"])
        #expect(again.status == 200)
        second.send(SIGTERM)
        #expect(second.wait() == 0)
    }

    @Test("SIGTERM lets a request in flight finish, then the process exits 0")
    func gracefulShutdown() throws {
        let directory = try TemporaryDirectory()
        let config = try Self.writeConfig(in: directory)
        let server = try PortvaktProcess(
            ["serve", "--config", config], environment: ["PORTVAKT_DATA": directory.path])
        let port = try server.waitForPort(listener: "public")

        // A request whose body is still arriving is in flight when the signal lands.
        let connection = try RawSocketClient(port: port)
        let body = #"{"reason":"slow client"}"#
        try connection.send(
            "POST /v1/logout HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n" + body.prefix(5))
        Thread.sleep(forTimeInterval: 0.3)
        server.send(SIGTERM)
        Thread.sleep(forTimeInterval: 0.3)
        #expect(server.isRunning, "the server waits for the request in flight")
        try connection.send(String(body.dropFirst(5)))
        let response = connection.readResponse(timeout: 5)
        #expect(response.hasPrefix("HTTP/1.1 401"), "the in-flight request got its answer")
        #expect(server.wait() == 0)
        #expect(server.stderr.contains("\"msg\":\"stopped\""))
    }

    @Test("a committed write survives SIGKILL, and the database passes integrity_check")
    func crashSafety() throws {
        let directory = try TemporaryDirectory()
        let config = try Self.writeConfig(in: directory)
        let databasePath = directory.path("portvakt.sqlite")

        // Arrange a user and two sessions through the library API, as login methods will.
        let setup = try SQLiteDatabase(path: databasePath)
        let store = SQLStore(database: setup)
        try store.insertUser(User(id: "u1", username: "ada", displayName: "Ada", createdAt: Date()))
        let sessions = SessionService(repository: store, policy: SessionPolicy())
        let loggedOut = try sessions.issue(userID: "u1", clientKind: .native, authMethod: .passkey)
        let kept = try sessions.issue(userID: "u1", clientKind: .native, authMethod: .passkey)
        setup.close()

        let environment = ["PORTVAKT_DATA": directory.path]
        let first = try PortvaktProcess(["serve", "--config", config], environment: environment)
        var port = try first.waitForPort(listener: "public")
        let logout = try client.send(
            .POST, "http://127.0.0.1:\(port)/v1/logout",
            headers: ["Authorization": "Bearer \(loggedOut.token)"])
        #expect(logout.status == 204)
        // The 204 means the revocation committed; the process dies without any chance to flush.
        first.send(SIGKILL)
        #expect(first.wait() == 128 + SIGKILL)

        let second = try PortvaktProcess(["serve", "--config", config], environment: environment)
        port = try second.waitForPort(listener: "public")
        let revoked = try client.send(
            .GET, "http://127.0.0.1:\(port)/v1/me", headers: ["Authorization": "Bearer \(loggedOut.token)"])
        #expect(try revoked.problemCode() == "session.revoked")
        let alive = try client.send(
            .GET, "http://127.0.0.1:\(port)/v1/me", headers: ["Authorization": "Bearer \(kept.token)"])
        #expect(alive.status == 200)
        second.send(SIGTERM)
        #expect(second.wait() == 0)

        let check = try SQLiteDatabase(path: databasePath)
        defer { check.close() }
        #expect(try check.integrityCheck() == "ok")
    }

    @Test(
        "a second serve on the public or the admin port the first holds exits non-zero naming 127.0.0.1:PORT; the first keeps serving"
    )
    func portTaken() throws {
        let ports = try LoopbackPorts.unused(2)
        let (publicPort, adminPort) = (ports[0], ports[1])
        let firstDirectory = try TemporaryDirectory()
        let first = try PortvaktProcess(
            [
                "serve", "--config",
                try Self.writeConfig(in: firstDirectory, public: publicPort, admin: adminPort),
            ],
            environment: ["PORTVAKT_DATA": firstDirectory.path])
        defer {
            first.send(SIGTERM)
            _ = first.wait()
        }
        #expect(try first.waitForPort(listener: "public") == publicPort)
        #expect(try first.waitForPort(listener: "admin") == adminPort)
        // Each second instance has a database of its own, as in the incident: had it bound,
        // the kernel would have split the first one's clients between two databases.
        for (taken, config) in [(publicPort, (publicPort, 0)), (adminPort, (0, adminPort))] {
            let directory = try TemporaryDirectory()
            let second = try PortvaktProcess.run(
                [
                    "serve", "--config",
                    try Self.writeConfig(in: directory, public: config.0, admin: config.1),
                ],
                environment: ["PORTVAKT_DATA": directory.path])
            #expect(second.status != 0, "a second serve started beside the first on port \(taken)")
            #expect(second.stderr.contains("127.0.0.1:\(taken)"), "stderr: \(second.stderr)")
            #expect(second.stderr.contains("already in use"), "stderr: \(second.stderr)")
        }
        #expect(first.isRunning)
        let health = try client.send(method: "GET", url: "http://127.0.0.1:\(publicPort)/health/alive")
        #expect(health.status == 200)
    }

    @Test("once up, the server lets go of the code only starting ran, and still serves every route")
    func startupCodeReleased() throws {
        let directory = try TemporaryDirectory()
        let config = try Self.writeConfig(in: directory)
        let server = try PortvaktProcess(
            ["serve", "--config", config], environment: ["PORTVAKT_DATA": directory.path])
        let port = try server.waitForPort(listener: "public")
        #expect(server.waitForFirstOutput())
        let deadline = Date().addingTimeInterval(10)
        while !server.stderr.contains("startup code released"), Date() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        let line = try #require(
            server.stderr.split(separator: "\n").first { $0.contains("\"msg\":\"startup code released\"") })
        let released = try #require(
            line.split(separator: "\"").drop { $0 != "residentKB" }.dropFirst(2).first.flatMap { Int($0) })
        // What starting had mapped of the binary's and the libraries' code, against what is
        // mapped again after the release (the idle threads' code).
        #expect(released > 2048, "resident code at start: \(released) kB")
        let smaps = try String(contentsOfFile: "/proc/\(server.pid)/smaps", encoding: .utf8)
        var residentCode = 0
        var executable = false
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.count >= 6, fields[0].contains("-"), !fields[0].hasSuffix(":") {
                executable = fields[1] == "r-xp" && fields[5].hasPrefix("/")
            } else if executable, fields.first == "Rss:", fields.count >= 2 {
                residentCode += Int(fields[1]) ?? 0
            }
        }
        #expect(residentCode < released / 2, "code resident again: \(residentCode) of \(released) kB")
        let health = try client.send(url: "http://127.0.0.1:\(port)/health/ready")
        #expect(health.status == 200)
        let login = try client.send(
            method: "POST", url: "http://127.0.0.1:\(port)/v1/passkeys/login/initialize",
            headers: [("Content-Type", "application/json")], body: Array("{}".utf8))
        #expect(login.status == 200)
        server.send(SIGTERM)
        #expect(server.wait() == 0)
    }

    /// A configuration on the given ports (0: free ones) with the data in `directory`.
    static func writeConfig(in directory: TemporaryDirectory, public: Int, admin: Int) throws -> String {
        let url = directory.url.appendingPathComponent("portvakt.json")
        let json =
            #"{"listen": {"public": {"port": \#(`public`)}, "admin": {"port": \#(admin)}}, "logging": {"accessLog": true}}"#
        try Data(json.utf8).write(to: url)
        return url.path
    }

    /// A configuration on free ports with the data in `directory`.
    static func writeConfig(in directory: TemporaryDirectory) throws -> String {
        let url = directory.url.appendingPathComponent("portvakt.json")
        let json =
            #"{"listen": {"public": {"port": 0}, "admin": {"port": 0}}, "logging": {"accessLog": true}}"#
        try Data(json.utf8).write(to: url)
        return url.path
    }
}
