import CryptoCore
public import FoundationEssentials
import HTTPEngine
public import Kernel
import Synchronization

/// A BankID RP API v6 server for development and tests: mutual TLS with a generated development
/// PKI, the /rp/v6.0/ endpoints with BankID's rules and errors, the user's app over a loopback API,
/// and scenarios and faults. Start it in-process with `start`; `portvakt bankid-simulator` runs it alone.
public enum BankIDSimulator {
    /// Creates (first time) or loads the PKI in the data folder, then listens on 127.0.0.1.
    ///
    /// - Parameters:
    ///   - configuration: ports, timing, persons, scenarios and faults.
    ///   - clock: the wall clock orders age by; tests pass a controllable one.
    ///   - log: receives one line per RP request (method, path, status; never secrets or personal numbers).
    /// - Returns: the running simulator; call `stop()` when done.
    /// - Throws: `SimulatorError` when the configuration is invalid, the PKI cannot be made or a port is taken.
    public static func start(
        _ configuration: BankIDSimulatorConfiguration, clock: any WallClock = SystemClock(),
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) throws(SimulatorError) -> RunningSimulator {
        try configuration.validate()
        // Certificates are judged by TLS libraries against the real time, never the injected clock.
        let pki = try DevelopmentPKI.loadOrCreate(in: configuration.dataDirectory, now: Date())
        let engine = SimulatorEngine(
            configuration: configuration, clock: clock, signingKey: pki.serverKey,
            certificateDER: pki.serverCertificateDER, log: log)
        let rp = try Listeners.rp(engine, port: configuration.port, pki: pki)
        let user: HTTPServer
        do {
            user = try Listeners.user(engine, port: configuration.userPort)
        } catch {
            rp.shutdown(grace: 0)
            throw error
        }
        return RunningSimulator(engine: engine, rp: rp, user: user, pki: pki)
    }

    /// What a client needs for a simulator with this configuration's ports, without starting it:
    /// creates the PKI when missing (so the paths exist). Ports must not be 0.
    /// - Throws: `SimulatorError` (.configuration for port 0, .storage, .pki).
    public static func clientConfiguration(_ configuration: BankIDSimulatorConfiguration)
        throws(SimulatorError)
        -> SimulatorClientConfiguration
    {
        guard configuration.port != 0, configuration.userPort != 0 else {
            throw SimulatorError(.configuration, "the client configuration needs fixed ports, not 0")
        }
        let pki = try DevelopmentPKI.loadOrCreate(in: configuration.dataDirectory, now: Date())
        return SimulatorClientConfiguration(
            pki: pki, port: configuration.port, userPort: configuration.userPort)
    }
}

/// Where a BankID client finds the simulator and what it trusts and presents.
public struct SimulatorClientConfiguration: Sendable, Hashable {
    /// The RP API base URL, e.g. `https://127.0.0.1:8443/rp/v6.0/` (trailing slash, as BankID's).
    public let baseURL: String
    /// The CA certificate (PEM file) to trust for the RP API.
    public let caCertificatePath: String
    /// The RP client certificate (PKCS#12 file) to present.
    public let clientCertificatePath: String
    /// The PKCS#12 passphrase. Secret: never log it.
    public let passphrase: String
    /// The user API base URL, e.g. `http://127.0.0.1:8444/sim/v1/`.
    public let userAPIURL: String

    init(pki: DevelopmentPKI, port: Int, userPort: Int) {
        baseURL = "https://127.0.0.1:\(port)/rp/v6.0/"
        userAPIURL = "http://127.0.0.1:\(userPort)/sim/v1/"
        caCertificatePath = pki.caCertificatePath
        clientCertificatePath = pki.clientCertificatePath
        passphrase = pki.clientPassphrase
    }

    /// One JSON object: baseUrl, caCertificate, clientCertificate, passphrase, userApiUrl.
    public var json: String {
        let value: JSONValue = [
            "baseUrl": .string(baseURL), "caCertificate": .string(caCertificatePath),
            "clientCertificate": .string(clientCertificatePath), "passphrase": .string(passphrase),
            "userApiUrl": .string(userAPIURL),
        ]
        return String(decoding: value.serialized, as: UTF8.self)
    }
}

/// A started simulator: where it listens, what a client needs to trust and present, and control.
public final class RunningSimulator: Sendable {
    let engine: SimulatorEngine
    private let rp: HTTPServer
    private let user: HTTPServer

    /// Where a client finds this simulator and what it trusts and presents.
    public let clientConfiguration: SimulatorClientConfiguration
    /// The RP API base URL, e.g. `https://127.0.0.1:8443/rp/v6.0/` (trailing slash, as BankID's).
    public var baseURL: String { clientConfiguration.baseURL }
    /// The user API base URL, e.g. `http://127.0.0.1:8444/sim/v1/`.
    public var userAPIURL: String { clientConfiguration.userAPIURL }
    /// The RP API's port.
    public let port: Int
    /// The user API's port.
    public let userPort: Int
    /// The CA certificate (PEM file) a client must trust for the RP API.
    public var caCertificatePath: String { clientConfiguration.caCertificatePath }
    /// The CA certificate's PEM text.
    public let caCertificatePEM: String
    /// The RP client certificate (PKCS#12 file) a client must present.
    public var clientCertificatePath: String { clientConfiguration.clientCertificatePath }
    /// The PKCS#12 passphrase. Secret: never log it.
    public var passphrase: String { clientConfiguration.passphrase }

    init(engine: SimulatorEngine, rp: HTTPServer, user: HTTPServer, pki: DevelopmentPKI) {
        self.engine = engine
        self.rp = rp
        self.user = user
        port = rp.port
        userPort = user.port
        clientConfiguration = SimulatorClientConfiguration(pki: pki, port: rp.port, userPort: user.port)
        caCertificatePEM = pki.caCertificatePEM
    }

    /// What `portvakt bankid-simulator --print-config` prints for this simulator.
    public var clientConfigurationJSON: String { clientConfiguration.json }

    /// Stops both listeners: new connections are refused at once, requests in flight get up to
    /// `grace` seconds to finish, then every connection is closed. Later calls do nothing.
    public func stop(grace: Double = 0) {
        rp.shutdown(grace: grace)
        user.shutdown(grace: grace)
    }

    // MARK: In-process control, the same as the user API's control endpoint.

    /// Sets how an approval by `personalNumber` ends (nil: complete).
    public func setOutcome(_ outcome: Outcome?, for personalNumber: String) {
        _ = engine.updateControls { $0.outcomes[personalNumber] = outcome }
    }

    /// Makes the next `count` RP API requests fail with `fault`, after any bursts already queued.
    public func inject(_ fault: Fault, count: Int) {
        _ = engine.updateControls { $0.faults += Array(repeating: fault, count: max(0, count)) }
    }

    /// Drops every fault still queued: BankID answers normally again.
    public func clearFaults() {
        _ = engine.updateControls { $0.faults.removeAll() }
    }

    /// Sets the delay added to every RP API response.
    public func setLatency(milliseconds: Int) {
        _ = engine.updateControls { $0.latencyMilliseconds = max(0, milliseconds) }
    }

    /// Turns auto-complete on (after `collects` pending collects) or off (nil).
    public func setAutoComplete(after collects: Int?) {
        _ = engine.updateControls { $0.autoCompleteAfter = collects.map { max(0, $0) } }
    }

    /// Answers one request to the user's side in-process, for a server that mounts the user API
    /// and page on its own listener (paths as on the user port: `/sim/`, `/sim/v1/scan`, ...).
    ///
    /// - Parameters:
    ///   - method: the request method.
    ///   - path: the path without query, starting with `/sim/`.
    ///   - body: the request body.
    ///   - peer: the client's IP address (becomes completionData.device.ipAddress on approval).
    /// - Returns: status, content type and body to send back.
    public func handleUserRequest(method: String, path: String, body: [UInt8], peer: String)
        -> (status: Int, contentType: String, body: [UInt8])
    {
        let answer =
            HTTPMethod(token: method).map {
                engine.handleUser(HTTPRequest(method: $0, path: path, body: body, peerAddress: peer))
            } ?? SimulatorEngine.error(405, "methodNotAllowed", "Unknown method")
        return (answer.status, answer.headers["Content-Type"] ?? "application/octet-stream", answer.body)
    }

    /// When each /collect of `orderRef` arrived (empty for an unknown order).
    public func collectTimes(orderRef: String) -> [Date] {
        engine.state.withLock { $0.orders[orderRef]?.collectTimes ?? [] }
    }

    /// The bodies of the last order requests (/auth, /sign, /phone/auth, /phone/sign), oldest
    /// first, as JSON text with sorted keys, accepted or refused: what a client really sent.
    /// The simulator keeps the last 64.
    public var orderBodies: [(endpoint: String, json: String)] {
        let received = engine.state.withLock { $0.orderBodies }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return received.map { order in
            (
                order.endpoint,
                (try? encoder.encode(order.body)).map { String(decoding: $0, as: UTF8.self) } ?? ""
            )
        }
    }

    /// The body of the last order request, as JSON text; nil before any.
    public var lastOrderBody: String? { orderBodies.last?.json }

    /// The orderRefs of every order the simulator holds.
    public var orderRefs: [String] { engine.state.withLock { Array($0.orders.keys) } }

    /// The test persons in effect; the first is the default.
    public var testPersons: [TestPerson] { engine.persons }

    deinit { stop() }
}
