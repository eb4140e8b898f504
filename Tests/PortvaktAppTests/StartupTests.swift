import Foundation
import HTTPEngine
import Storage
import TestSupport
import Testing

/// The binary at the edges of its life: several instances starting together on an empty data
/// folder, and a stop signal that arrives while a process is still starting.
@Suite("portvakt starting", .serialized)
struct StartupTests {
    let client = HTTPTestClient()

    @Test(
        "4 `serve` started at once on an empty data folder all come up, 10 rounds: one admin token, printed once and valid on all; each migration applied once; one BankID PKI that every instance's client trusts"
    )
    func instancesStartedTogether() throws {
        let instances = 4
        let rounds = 10
        let deadline = Date().addingTimeInterval(240)
        var round = 0
        while round < rounds, Date() < deadline {
            let directory = try TemporaryDirectory()
            // Not created yet: the instances race to make the folder too.
            let data = directory.path("data")
            let config = try ProcessTests.writeConfig(in: directory)
            let processes = try (0..<instances).map { _ in
                try PortvaktProcess(["serve", "--config", config], environment: ["PORTVAKT_DATA": data])
            }
            defer {
                for process in processes where process.isRunning { process.send(SIGKILL) }
                for process in processes { process.wait(timeout: 10) }
            }
            let ports = try processes.map {
                (public: try $0.waitForPort(listener: "public"), admin: try $0.waitForPort(listener: "admin"))
            }

            // The token is printed just before "ready"; whoever printed one has by then.
            for process in processes {
                #expect(Self.waitForStderr(process, containing: #""msg":"ready""#), "round \(round)")
            }
            // Standard output and standard error are read by two threads of the test's own, so on a
            // busy machine the token's line can still be on its way when "ready" has arrived: wait
            // for it (bounded) instead of reading once.
            let printedBy = Date().addingTimeInterval(10)
            while processes.allSatisfy({ Self.tokens(in: $0.stdout).isEmpty }), Date() < printedBy {
                Thread.sleep(forTimeInterval: 0.02)
            }
            let tokens = processes.flatMap { Self.tokens(in: $0.stdout) }
            #expect(tokens.count == 1, "round \(round): one instance printed a token once: \(tokens.count)")
            let token = try #require(tokens.first)
            for port in ports {
                let config = try client.send(
                    .GET, "http://127.0.0.1:\(port.admin)/admin/v1/config",
                    headers: ["Authorization": "Bearer \(token)"])
                #expect(config.status == 200, "round \(round): the token works on every instance")
                // An order goes through the instance's BankID client to its own embedded
                // simulator over mutual TLS: it only works if both loaded the same PKI.
                let order = try client.sendJSON(
                    url: "http://127.0.0.1:\(port.public)/v1/bankid/orders",
                    json: #"{"intent":"login","device":"other","client":"web"}"#)
                #expect(order.status == 201, "round \(round): \(order.text)")
            }

            for process in processes { process.send(SIGTERM) }
            for process in processes {
                #expect(process.wait(timeout: 20) == 0, "round \(round): \(process.stderr)")
            }
            #expect(processes.flatMap { Self.tokens(in: $0.stdout) }.count == 1, "round \(round)")
            let database = try SQLiteDatabase(path: data + "/portvakt.sqlite")
            defer { database.close() }
            #expect(
                try database.appliedMigrations().map(\.version)
                    == Array(1...SQLiteDatabase.supportedSchemaVersion), "round \(round)")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: data).filter {
                $0.hasSuffix(".tmp")
            }
            #expect(leftovers.isEmpty, "round \(round): \(leftovers)")
            round += 1
        }
        #expect(round == rounds, "only \(round) of \(rounds) rounds in time")
    }

    @Test("SIGTERM at a `serve`'s first byte of output stops it cleanly: exit 0 within 20 s, 10 rounds")
    func serveStoppedAsItStarts() throws {
        let rounds = 10
        let deadline = Date().addingTimeInterval(180)
        var round = 0
        while round < rounds, Date() < deadline {
            // A new folder each round: the first start says the most before it is up.
            let directory = try TemporaryDirectory()
            let config = try ProcessTests.writeConfig(in: directory)
            let server = try PortvaktProcess(
                ["serve", "--config", config], environment: ["PORTVAKT_DATA": directory.path])
            #expect(server.waitForFirstOutput(timeout: 20), "round \(round): no output")
            server.send(SIGTERM)
            let status = server.wait(timeout: 20)
            #expect(status == 0, "round \(round): exit \(status); stderr: \(server.stderr)")
            #expect(server.stderr.contains(#""msg":"stopping""#), "round \(round)")
            round += 1
        }
        #expect(round == rounds, "only \(round) of \(rounds) rounds in time")
    }

    @Test(
        "SIGTERM at a `bankid-simulator`'s first byte of output stops it cleanly: exit 0 within 20 s, 10 rounds"
    )
    func simulatorStoppedAsItStarts() throws {
        let rounds = 10
        let deadline = Date().addingTimeInterval(120)
        var round = 0
        while round < rounds, Date() < deadline {
            let directory = try TemporaryDirectory()
            let simulator = try PortvaktProcess(
                ["bankid-simulator", "--data", directory.path, "--port", "0"])
            #expect(simulator.waitForFirstOutput(timeout: 20), "round \(round): no output")
            simulator.send(SIGTERM)
            let status = simulator.wait(timeout: 20)
            #expect(status == 0, "round \(round): exit \(status); stderr: \(simulator.stderr)")
            #expect(simulator.stderr.contains(#""msg":"stopping""#), "round \(round)")
            round += 1
        }
        #expect(round == rounds, "only \(round) of \(rounds) rounds in time")
    }

    /// The admin tokens a first start printed (`pva_…` lines).
    static func tokens(in stdout: String) -> [String] {
        stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            $0.hasPrefix("pva_")
        }
    }

    /// Waits until standard error contains `text`; false after `timeout` seconds.
    static func waitForStderr(_ process: PortvaktProcess, containing text: String, timeout: TimeInterval = 20)
        -> Bool
    {
        let deadline = Date().addingTimeInterval(timeout)
        while !process.stderr.contains(text) {
            guard Date() < deadline, process.isRunning else { return process.stderr.contains(text) }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return true
    }
}
