import AuthOrchestrator
import BankIDCore
import BankIDSimulator
import CryptoCore
import Foundation
import HTTPEngine
import Kernel
import PortvaktAPI
import Storage
import Synchronization
import TestSupport
import Testing

@testable import PortvaktApp

/// `portvakt serve`'s BankID: in the embedded default the simulator runs beside the server and
/// the real client talks to it over mutual TLS; with a configured BankID it does not run.
@Suite("Embedded BankID", .serialized)
struct EmbeddedBankIDTests {
    let http = InProcessHTTPClient()

    @Test(
        "the embedded default starts the simulator: the client completes an order through it, the app plays along under /sim/"
    )
    func embeddedDefault() async throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let runtime = try #require(server.server.bankID)
        let simulator = try #require(runtime.simulator)
        #expect(simulator.baseURL.hasPrefix("https://127.0.0.1:"))

        // The real client, over mTLS with the generated certificates, through the coordinator.
        let coordinator = runtime.coordinator
        let started = try await coordinator.start(
            .auth, BankIDStartRequest(endUserIP: "192.0.2.10"), intent: .login)
        #expect(try await coordinator.poll(orderRef: started.orderRef).status == .pending)
        server.clock.advance(by: 2)
        let qr = try #require(try coordinator.qrData(orderRef: started.orderRef))
        // The user's app, reached through the public listener.
        let scanned = try http.sendJSON(url: server.publicURL + "/sim/v1/scan", json: #"{"qrData":"\#(qr)"}"#)
        #expect(scanned.status == 200, "\(scanned.text)")
        let done = try await coordinator.poll(orderRef: started.orderRef)
        #expect(done.status == .complete)
        #expect(done.completion?.identity.keyID == "development")

        // The upstream calls show in /metrics by endpoint and outcome.
        _ = try await coordinator.start(.auth, BankIDStartRequest(endUserIP: "192.0.2.10"), intent: .login)
        let reader = try server.server.adminTokens.create(
            name: "scraper", scope: .read, lifetime: nil, actor: .cli)
        let metrics = try http.send(
            .GET, server.adminURL + "/metrics", headers: ["Authorization": "Bearer \(reader.token)"]
        ).text
        #expect(metrics.contains(#"portvakt_bankid_upstream_calls_total{endpoint="/auth",outcome="ok"} 2"#))
        #expect(
            metrics.contains(#"portvakt_bankid_upstream_calls_total{endpoint="/collect",outcome="ok"} 2"#))

        let page = try http.send(.GET, server.publicURL + "/sim/")
        #expect(page.status == 200 && page.text.contains("<html"))
        let persons = try http.send(.GET, server.publicURL + "/sim/v1/persons")
        #expect(persons.status == 200 && persons.text.contains("personalNumber"))
    }

    /// Runs the gauge test's calls and its scrapes: other suites block Swift's global executor
    /// on purpose, and calls started there could begin too far apart to wait together.
    static let callers = OffPoolExecutor(name: "test-bankid", threads: 4)

    @Test("/metrics reports the BankID calls waiting for a client thread, and none once they are done")
    func callsQueuedGauge() async throws {
        let server = try TestServer.inProcess(configuration: ["bankid": ["threads": 1]])
        defer { server.stop() }
        let runtime = try #require(server.server.bankID)
        try #require(runtime.simulator).setLatency(milliseconds: 2_000)
        let token = try server.server.adminTokens.create(
            name: "scraper", scope: .read, lifetime: nil, actor: .cli
        ).token
        let url = server.adminURL + "/metrics"
        let queued: @Sendable () throws -> String? = {
            try InProcessHTTPClient().send(.GET, url, headers: ["Authorization": "Bearer \(token)"]).text
                .split(separator: "\n").first { $0.hasPrefix("portvakt_bankid_calls_queued ") }.map(
                    String.init)
        }
        #expect(try queued() == "portvakt_bankid_calls_queued 0")

        // Three orders at once on one thread: one is sent, two wait for it (2 s each).
        let coordinator = runtime.coordinator
        let seen = try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<3 {
                group.addTask(executorPreference: Self.callers) {
                    _ = try await coordinator.start(
                        .auth, BankIDStartRequest(endUserIP: "192.0.2.10"), intent: .login)
                    return nil
                }
            }
            group.addTask(executorPreference: Self.callers) {
                let deadline = ContinuousClock.now + .seconds(10)
                var last = try queued()
                while last != "portvakt_bankid_calls_queued 2", ContinuousClock.now < deadline {
                    usleep(10_000)
                    last = try queued()
                }
                return last
            }
            return try await group.reduce(into: [String]()) { if let value = $1 { $0.append(value) } }
        }
        #expect(seen == ["portvakt_bankid_calls_queued 2"])
        #expect(try queued() == "portvakt_bankid_calls_queued 0")
    }

    @Test("the development identity key is created once, 0600, in the data folder, and reused")
    func developmentKey() throws {
        let directory = try TemporaryDirectory()
        let first = try BankIDRuntime.developmentHasher(dataDirectory: directory.path)
        let path = directory.path(BankIDRuntime.developmentKeyFile)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode.map { $0 & 0o777 } == 0o600)
        let again = try BankIDRuntime.developmentHasher(dataDirectory: directory.path)
        let number = try PersonalNumber("198112289874")
        #expect(again.matches(number, first.digest(number)))
    }

    @Test("8 instances creating the development identity key at once all get the same key; 100 rounds")
    func developmentKeyMadeOnceByRacingStarts() throws {
        let directory = try TemporaryDirectory()
        let number = try PersonalNumber("198112289874")
        let deadline = Date().addingTimeInterval(60)
        for round in 0..<100 where Date() < deadline {
            let folder = directory.path("round-\(round)")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let hashers = Mutex<[IdentityHasher]>([])
            let failures = Mutex<[String]>([])
            let gate = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            for _ in 0..<8 {
                done.enter()
                Thread {
                    gate.wait()
                    do {
                        let hasher = try BankIDRuntime.developmentHasher(dataDirectory: folder)
                        hashers.withLock { $0.append(hasher) }
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                    done.leave()
                }.start()
            }
            for _ in 0..<8 { gate.signal() }
            #expect(done.wait(timeout: .now() + 30) == .success)
            #expect(failures.withLock { $0 } == [], "round \(round)")
            let all = hashers.withLock { $0 }
            let digest = try #require(all.first).digest(number)
            #expect(all.allSatisfy { $0.matches(number, digest) }, "round \(round): one key for all")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder)
            #expect(leftovers == [BankIDRuntime.developmentKeyFile], "round \(round): \(leftovers)")
        }
    }

    @Test(
        "readiness reports a certificate inside its warning window without failing, and fails once it expired"
    )
    func certificateWarning() throws {
        let certificateClock = FixedClock(Date())
        let server = try TestServer.inProcess(certificateClock: certificateClock)
        defer { server.stop() }
        #expect(try http.send(.GET, server.publicURL + "/health/ready").text == #"{"status":"ready"}"#)
        // Ten days before the RP certificate's notAfter.
        let notAfter = try #require(server.server.bankID).certificate.health.notAfter
        certificateClock.advance(by: notAfter.timeIntervalSince(certificateClock.now()) - 10 * 86_400)
        let ready = try http.send(.GET, server.publicURL + "/health/ready")
        #expect(ready.status == 200)
        let warnings = try #require(try ready.jsonObject()["warnings"] as? [String])
        #expect(
            warnings.count == 1 && warnings[0].contains("expires in 10 days"))
        certificateClock.advance(by: 11 * 86_400)
        let expired = try http.send(.GET, server.publicURL + "/health/ready")
        #expect(expired.status == 503)
        #expect(try expired.problemCode() == "health.not_ready")
    }

    @Test("with an external BankID configured nothing is simulated here and /sim/ is not mounted")
    func externalBankID() throws {
        let folder = try TemporaryDirectory()
        let external = try BankIDSimulator.start(BankIDSimulatorConfiguration(dataDirectory: folder.path))
        defer { external.stop() }
        let keyFile = folder.path("identity.key")
        try Data(Base64URL.encode(SystemRandom().bytes(32)).utf8).write(to: URL(fileURLWithPath: keyFile))
        let passphraseFile = folder.path("passphrase")
        try Data(external.passphrase.utf8).write(to: URL(fileURLWithPath: passphraseFile))
        let server = try TestServer.inProcess(configuration: [
            "bankid": [
                "environment": "simulator", "baseURL": external.baseURL,
                "caCertificate": external.caCertificatePath,
                "clientCertificate": external.clientCertificatePath,
                "passphraseFile": passphraseFile, "identityKeys": ["k1": ["file": keyFile]],
                "currentIdentityKey": "k1",
            ]
        ])
        defer { server.stop() }
        #expect(try #require(server.server.bankID).simulator == nil)
        #expect(try http.send(.GET, server.publicURL + "/sim/").status == 404)
        #expect(try http.send(.GET, server.publicURL + "/health/ready").status == 200)
    }
}

@Suite("The embedded BankID simulator stays on this machine")
struct SimulatorPlacementTests {
    @Test(
        "a server reachable from elsewhere refuses to start on the simulator, unless BankID is off (then nothing of BankID runs, /sim/ is not mounted, its routes answer method_disabled)"
    )
    func refusedForRemotePublicURL() throws {
        let refused = #expect(throws: BankIDError.self) {
            try TestServer.inProcess(configuration: ["publicURL": "https://login.example.com"])
        }
        #expect(refused.map { "\($0)".contains("bankid.environment") } == true)
        let off = try TestServer.inProcess(configuration: [
            "publicURL": "https://login.example.com", "methods": ["bankid": ["enabled": false]],
        ])
        defer { off.stop() }
        #expect(off.server.bankID == nil, "with BankID off nothing of it runs")
        #expect(try InProcessHTTPClient().send(.GET, off.publicURL + "/sim/").status == 404)
        #expect(try InProcessHTTPClient().send(.GET, off.publicURL + "/health/ready").status == 200)
        let poll = try InProcessHTTPClient().send(
            .GET, off.publicURL + "/v1/bankid/orders/" + String(repeating: "A", count: 43))
        #expect(try poll.status == 403 && poll.problemCode() == "method_disabled")
        #expect(
            BankIDRuntime.isLoopback("http://127.0.0.1:8080")
                && !BankIDRuntime.isLoopback("https://example.com"))
    }
}
