import BankIDCore
import BankIDSimulator
import CryptoCore
import Foundation
import Kernel
import Storage
import Synchronization
import TestSupport
import Testing

/// Counts the requests a real transport sends, per path.
final class CountingTransport: BankIDTransport {
    let inner: any BankIDTransport
    private let counts = Mutex<[String: Int]>([:])

    init(_ inner: any BankIDTransport) { self.inner = inner }

    func send(_ request: BankIDHTTPRequest) async throws(BankIDError) -> BankIDHTTPResponse {
        counts.withLock { $0[request.path, default: 0] += 1 }
        return try await inner.send(request)
    }

    func count(_ path: String) -> Int { counts.withLock { $0[path, default: 0] } }
}

/// A simulator on ephemeral ports with a fixed clock shared with the coordinator, the real libcurl
/// transport configured from what the simulator reports, a SQLite database for the orders, and a
/// plain client for the user's side.
final class SimulatorFixture: @unchecked Sendable {
    let clock = FixedClock()
    let directory: TemporaryDirectory
    let storage: TestStore
    let simulator: RunningSimulator
    let transport: CountingTransport
    let client: BankIDClient
    let user = HTTPTestClient(timeout: 15)
    let key = try! IdentityKey(id: "k1", secret: Array(repeating: 9, count: 32))

    init() throws {
        directory = try TemporaryDirectory(prefix: "bankid-core-sim")
        storage = try TestStore(.sqlite, clock: clock)
        simulator = try BankIDSimulator.start(
            BankIDSimulatorConfiguration(dataDirectory: directory.path("sim")), clock: clock)
        transport = CountingTransport(try CurlBankIDTransport(configuration: Self.configuration(simulator)))
        client = BankIDClient(transport: transport)
    }

    deinit { simulator.stop() }

    static func configuration(
        _ simulator: RunningSimulator, identity: BankIDClientIdentity? = nil
    ) -> BankIDTransportConfiguration {
        BankIDTransportConfiguration(
            baseURL: simulator.baseURL,
            clientIdentity: identity
                ?? .pkcs12(
                    path: simulator.clientCertificatePath, passphrase: RedactedSecret(simulator.passphrase)),
            caCertificatePath: simulator.caCertificatePath, connectTimeout: 5, requestTimeout: 15)
    }

    /// A coordinator over the fixture's database.
    func coordinator() -> BankIDCollectCoordinator {
        BankIDCollectCoordinator(
            client: client, store: storage.store,
            hasher: try! IdentityHasher(currentKeyID: "k1", keys: [key]),
            clock: clock)
    }

    /// The user's app: POST to the simulator's user API.
    func userPost(_ endpoint: String, _ json: String) throws -> TestResponse {
        try user.sendJSON(url: simulator.userAPIURL + endpoint, json: json)
    }
}

@Suite("Integration: the real client over mutual TLS against the BankID simulator", .serialized)
struct SimulatorIntegrationTests {
    static let tolvan = "198112289874"

    @Test("auth → scan the animated QR code → complete, with the identity as a keyed digest")
    func authToComplete() async throws {
        let fixture = try SimulatorFixture()
        let coordinator = fixture.coordinator()
        let started = try await coordinator.start(
            .auth, BankIDStartRequest(endUserIP: "192.0.2.10", returnRisk: true), intent: .login)
        let first = try await coordinator.poll(orderRef: started.orderRef)
        #expect(first.status == .pending && first.hintCode == .outstandingTransaction)
        fixture.clock.advance(by: 3)
        let qr = try #require(try coordinator.qrData(orderRef: started.orderRef))
        #expect(qr.hasPrefix("bankid.") && qr.split(separator: ".")[2] == "3")
        let scanned = try fixture.userPost("scan", #"{"qrData":"\#(qr)"}"#)
        #expect(scanned.status == 200, "\(scanned.text)")
        let done = try await coordinator.poll(orderRef: started.orderRef)
        #expect(done.status == .complete)
        let completion = try #require(done.completion)
        let hasher = try IdentityHasher(currentKeyID: "k1", keys: [fixture.key])
        #expect(hasher.matches(try PersonalNumber(Self.tolvan), completion.identity))
        #expect(completion.givenName == "Tolvan" && completion.risk == "low")
        #expect(fixture.transport.count("/collect") == 2)

        // A duplicate poll (page refresh, second tab) is answered from the kept result: BankID
        // would refuse a collect after the final state.
        fixture.clock.advance(by: 5)
        #expect(try await coordinator.poll(orderRef: started.orderRef) == done)
        #expect(fixture.transport.count("/collect") == 2)
        await #expect(throws: BankIDError(.invalidParameters, ""), "a blind second collect is refused") {
            try await fixture.client.collect(orderRef: started.orderRef)
        }
    }

    @Test("sign through autostart: the signature is kept")
    func sign() async throws {
        let fixture = try SimulatorFixture()
        let coordinator = fixture.coordinator()
        let started = try await coordinator.start(
            .sign,
            BankIDStartRequest(
                endUserIP: "192.0.2.10", userVisibleData: "Jag godkänner **avtalet**",
                userVisibleDataFormat: .simpleMarkdownV1), intent: .sign)
        let token = try #require(started.autoStartToken)
        #expect(try fixture.userPost("autostart", #"{"autoStartToken":"\#(token)"}"#).status == 200)
        let done = try await coordinator.poll(orderRef: started.orderRef)
        #expect(done.status == .complete)
        #expect(done.completion?.signature?.isEmpty == false)
        #expect(done.completion?.ocspResponse?.isEmpty == false)
    }

    @Test("phone auth: userCallConfirm, then complete as the called person")
    func phoneAuth() async throws {
        let fixture = try SimulatorFixture()
        let coordinator = fixture.coordinator()
        let started = try await coordinator.startPhone(
            .phoneAuth,
            BankIDPhoneRequest(callInitiator: .user, personalNumber: try PersonalNumber(Self.tolvan)),
            intent: .login)
        #expect(started.qrData == nil && started.autoStartToken == nil)
        #expect(
            try fixture.userPost("phone", #"{"orderRef":"\#(started.orderRef)","action":"start"}"#).status
                == 200)
        #expect(try await coordinator.poll(orderRef: started.orderRef).hintCode == .userCallConfirm)
        #expect(try fixture.userPost("phone", #"{"orderRef":"\#(started.orderRef)"}"#).status == 200)
        fixture.clock.advance(by: 2)
        let done = try await coordinator.poll(orderRef: started.orderRef)
        #expect(done.status == .complete)
        let hasher = try IdentityHasher(currentKeyID: "k1", keys: [fixture.key])
        #expect(done.completion.map { hasher.matches(try! PersonalNumber(Self.tolvan), $0.identity) } == true)
    }

    @Test("cancel: /cancel is sent, the order ends cancelled and is not collected again")
    func cancel() async throws {
        let fixture = try SimulatorFixture()
        let coordinator = fixture.coordinator()
        let started = try await coordinator.start(
            .auth, BankIDStartRequest(endUserIP: "192.0.2.10"), intent: .login)
        _ = try await coordinator.poll(orderRef: started.orderRef)
        let cancelled = try await coordinator.cancel(orderRef: started.orderRef)
        #expect(cancelled.status == .cancelled)
        #expect(fixture.transport.count("/cancel") == 1)
        // BankID's view agrees: the order has ended.
        let upstream = try await fixture.client.collect(orderRef: started.orderRef)
        #expect(upstream.status == .failed && upstream.hintCode == .cancelled)
        fixture.clock.advance(by: 5)
        #expect(try await coordinator.poll(orderRef: started.orderRef).status == .cancelled)
        #expect(fixture.transport.count("/collect") == 2, "one by the coordinator, one by this test")
    }

    @Test("a client certificate from another CA is refused")
    func wrongClientCertificate() async throws {
        let fixture = try SimulatorFixture()
        let stranger = try TemporaryDirectory(prefix: "bankid-stranger")
        let other = try BankIDSimulator.start(
            BankIDSimulatorConfiguration(dataDirectory: stranger.path("sim")))
        defer { other.stop() }
        // Trust the right server, but present the other simulator's RP certificate.
        let transport = try CurlBankIDTransport(
            configuration: SimulatorFixture.configuration(
                fixture.simulator,
                identity: .pkcs12(
                    path: other.clientCertificatePath, passphrase: RedactedSecret(other.passphrase))))
        let error = await #expect(throws: BankIDError.self) {
            try await BankIDClient(transport: transport).auth(BankIDStartRequest(endUserIP: "192.0.2.10"))
        }
        #expect(
            [.tlsFailed, .transportFailed, .unauthorized].contains(error?.code),
            "refused as a TLS or authorization failure, got \(String(describing: error))")
        // And the server is verified against the configured CA only: the other CA does not vouch for it.
        var wrongCA = SimulatorFixture.configuration(fixture.simulator)
        wrongCA.caCertificatePath = other.caCertificatePath
        await #expect(throws: BankIDError(.tlsFailed, "")) {
            try await BankIDClient(transport: try CurlBankIDTransport(configuration: wrongCA))
                .auth(BankIDStartRequest(endUserIP: "192.0.2.10"))
        }
    }

    @Test("certificate health reads the simulator's real PKCS#12 client certificate")
    func certificateHealth() throws {
        let fixture = try SimulatorFixture()
        let health = try BankIDCertificateHealth.load(
            .pkcs12(
                path: fixture.simulator.clientCertificatePath,
                passphrase: RedactedSecret(fixture.simulator.passphrase)))
        #expect(health.notBefore < health.notAfter)
        #expect(health.isUsable(at: Date()))
        #expect(!health.subject.isEmpty)
    }

    @Test("a charset in Content-Type is refused with 415, and the client never sends one")
    func charset() async throws {
        let fixture = try SimulatorFixture()
        let body = Array(#"{"endUserIp":"192.0.2.10"}"#.utf8)
        let refused = try await fixture.transport.send(
            BankIDHTTPRequest(path: "/auth", body: body, contentType: "application/json; charset=utf-8"))
        #expect(refused.status == 415)
        let error = BankIDClient.error(path: "/auth", response: refused)
        #expect(error.code == .unsupportedMediaType && error.upstreamCode == "unsupportedMediaType")
        let accepted = try await fixture.transport.send(BankIDHTTPRequest(path: "/auth", body: body))
        #expect(accepted.status == 200)
    }

    @Test("50 concurrent pollers of one order: at most one upstream /collect per poll interval")
    func fiftyPollers() async throws {
        let fixture = try SimulatorFixture()
        let coordinator = fixture.coordinator()
        let started = try await coordinator.start(
            .auth, BankIDStartRequest(endUserIP: "192.0.2.10"), intent: .login)
        for round in 1...3 {
            let snapshots = try await withThrowingTaskGroup(of: BankIDOrderSnapshot.self) { group in
                for _ in 0..<50 { group.addTask { try await coordinator.poll(orderRef: started.orderRef) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(snapshots.count == 50 && snapshots.allSatisfy { $0.status == .pending })
            #expect(fixture.transport.count("/collect") == round, "round \(round)")
            fixture.clock.advance(by: 2)
        }
        // Connections are kept alive and reused: 12 more collects open at most one per worker
        // thread, plus the fresh one the start request always gets.
        for _ in 0..<12 { _ = try await fixture.client.collect(orderRef: started.orderRef) }
        let curl = try #require(fixture.transport.inner as? CurlBankIDTransport)
        #expect(curl.connectionsOpened >= 1 && curl.connectionsOpened <= curl.configuration.threads + 1)
    }

    @Test("maintenance is retried silently over the wire; a dropped connection is surfaced, not resent")
    func faults() async throws {
        let fixture = try SimulatorFixture()
        let client = BankIDClient(transport: fixture.transport, sleep: { _ in })
        fixture.simulator.inject(.maintenance, count: 2)
        _ = try await client.auth(BankIDStartRequest(endUserIP: "192.0.2.10"))
        #expect(fixture.transport.count("/auth") == 3)
        fixture.simulator.inject(.dropConnection, count: 1)
        let error = await #expect(throws: BankIDError.self) {
            try await client.auth(BankIDStartRequest(endUserIP: "192.0.2.10"))
        }
        #expect(error?.code == .transportFailed || error?.code == .timedOut)
        #expect(fixture.transport.count("/auth") == 4)
        fixture.simulator.inject(.requestTimeout, count: 1)
        await #expect(throws: BankIDError(.requestTimeout, "")) {
            try await client.auth(BankIDStartRequest(endUserIP: "192.0.2.10"))
        }
        #expect(fixture.transport.count("/auth") == 5)
    }

    @Test("a hanging BankID: the call times out as timedOut, and calls beyond the queue are refused at once")
    func hangingBankID() async throws {
        let fixture = try SimulatorFixture()
        fixture.simulator.setLatency(milliseconds: 6_000)
        var configuration = SimulatorFixture.configuration(fixture.simulator)
        configuration.connectTimeout = 1.5
        configuration.requestTimeout = 1.5
        let impatient = BankIDClient(transport: try CurlBankIDTransport(configuration: configuration))
        let started = ContinuousClock.now
        await #expect(throws: BankIDError(.timedOut, "")) {
            try await impatient.auth(BankIDStartRequest(endUserIP: "192.0.2.10"))
        }
        #expect(ContinuousClock.now - started < .seconds(6), "the timeout, not BankID, ended the call")

        // One thread, one waiting place: of three calls at once, at least one is refused without waiting.
        fixture.simulator.setLatency(milliseconds: 1_500)
        configuration.connectTimeout = 5
        configuration.requestTimeout = 15
        configuration.threads = 1
        configuration.maximumQueued = 1
        let narrow = BankIDClient(transport: try CurlBankIDTransport(configuration: configuration))
        let codes = await withTaskGroup(of: BankIDError.Code?.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    do throws(BankIDError) {
                        _ = try await narrow.auth(BankIDStartRequest(endUserIP: "192.0.2.10"))
                        return nil
                    } catch {
                        return error.code
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(codes.contains(.overloaded))
        #expect(codes.filter { $0 == nil }.count >= 1, "the calls that got a place still complete")
    }
}
