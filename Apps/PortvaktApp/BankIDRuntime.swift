import BankIDCore
import BankIDSimulator
import CryptoCore
import FoundationEssentials
import Glibc
import HTTPEngine
import Kernel
import PortvaktAPI
import Storage

/// BankID as `portvakt serve` runs it: the client over libcurl with its collect coordinator, the
/// RP certificate's health, and, in the embedded default, the simulator it talks to.
///
/// With `bankid.environment` "simulator" and no `baseURL`, the simulator starts in-process on
/// loopback (ephemeral ports, its development PKI in `<dataDirectory>/bankid-simulator`) and the
/// client is pointed at it exactly as it would be at BankID: over mutual TLS with the generated
/// CA and client certificate. Nothing else changes between development and production.
final class BankIDRuntime: Sendable {
    /// The embedded simulator, when this runtime started one.
    let simulator: RunningSimulator?
    /// The v6 client over libcurl.
    let client: BankIDClient
    /// The client's libcurl threads, whose queue /metrics reports.
    let transport: CurlBankIDTransport
    /// Orders, polling and the single-flight collect, over the server's database.
    let coordinator: BankIDCollectCoordinator
    /// The RP certificate's expiry, judged on every readiness probe and logged daily.
    let certificate: BankIDCertificateMonitor
    /// Personal numbers to keyed digests (the configured keys, or the development key).
    let hasher: IdentityHasher
    /// Upstream calls by endpoint and outcome, for /metrics.
    let calls = Tally<BankIDCall>()

    /// The development identity key's file inside the data folder (simulator only).
    static let developmentKeyFile = "bankid-identity.key"

    /// Starts what the configuration asks for.
    /// - Throws: `SimulatorError` when the embedded simulator cannot start, `BankIDError` when the
    ///   client certificate cannot be read or the transport is misconfigured.
    init(
        configuration: PortvaktConfiguration, store: SQLStore, clock: any WallClock,
        certificateClock: any WallClock, logger: Logger
    ) throws {
        let settings = configuration.bankid
        var transportConfiguration = settings.transportConfiguration
        var hasher = try settings.identityHasher()
        var simulator: RunningSimulator?
        if settings.environment == .simulator, settings.baseURL == nil {
            // The simulator lets anyone act as any person: it serves a server on this machine only.
            // One reachable from elsewhere must name a real BankID or switch BankID off (then no
            // runtime is built at all).
            guard Self.isLoopback(configuration.publicURL) else {
                throw BankIDError(
                    .configuration,
                    "bankid.environment is \"simulator\" (the default) while publicURL is not on this machine; the simulator approves anyone as anyone. Set bankid.environment to \"production\" or \"test\" with BankID's certificates, or methods.bankid.enabled to false"
                )
            }
            let folder = configuration.dataDirectory.appendingPathSegment("bankid-simulator")
            let started = try BankIDSimulator.start(
                BankIDSimulatorConfiguration(dataDirectory: folder), clock: clock,
                log: { [logger] line in logger.log(.debug, "bankid simulator", ["event": line]) })
            simulator = started
            transportConfiguration = BankIDTransportConfiguration(
                baseURL: started.baseURL,
                clientIdentity: .pkcs12(
                    path: started.clientCertificatePath, passphrase: RedactedSecret(started.passphrase)),
                caCertificatePath: started.caCertificatePath,
                connectTimeout: Double(settings.connectTimeoutSeconds),
                requestTimeout: Double(settings.requestTimeoutSeconds), threads: settings.threads,
                maximumQueued: settings.maxQueued)
            logger.log(
                .info, "bankid simulator started",
                ["baseUrl": started.baseURL, "userApiUrl": started.userAPIURL])
        }
        guard let transportConfiguration else {
            // Loading refuses production and test settings without certificates.
            throw BankIDError(.configuration, "bankid: the client certificate and CA are not configured")
        }
        if hasher == nil {
            // Only the simulator may run without configured keys: the development key lives in the
            // data folder, beside the database whose digests it made.
            guard simulator != nil || settings.environment == .simulator else {
                throw BankIDError(.configuration, "bankid.identityKeys: at least one key is required")
            }
            hasher = try Self.developmentHasher(dataDirectory: configuration.dataDirectory)
        }
        guard let hasher else { throw BankIDError(.configuration, "bankid.identityKeys: no key") }
        self.hasher = hasher
        do {
            // The transport's worker threads end when the last reference to it goes.
            transport = try CurlBankIDTransport(configuration: transportConfiguration)
            client = BankIDClient(transport: MeteredBankIDTransport(wrapping: transport, counts: calls))
            // The collect lease must outlast the longest call its holder can make (connect, the
            // whole request, and a margin for waiting on a transport thread): a lease that lapsed
            // mid-call would let another instance send a second /collect in the same interval.
            let longestCall = TimeInterval(settings.connectTimeoutSeconds + settings.requestTimeoutSeconds)
            coordinator = BankIDCollectCoordinator(
                client: client, store: store, hasher: hasher, clock: clock,
                timing: BankIDOrderTiming(leaseDuration: max(30, longestCall + 20)))
            certificate = BankIDCertificateMonitor(
                health: try BankIDCertificateHealth.load(
                    transportConfiguration.clientIdentity, warningDays: settings.certificateWarningDays),
                clock: certificateClock, log: { [logger] warning in logger.log(.warning, warning) })
        } catch {
            simulator?.stop()
            throw error
        }
        self.simulator = simulator
        certificate.check()
    }

    /// Whether `url` is served on this machine only (http on localhost or a loopback address).
    static func isLoopback(_ url: String) -> Bool {
        guard let components = URLComponents(string: url), let host = components.host else { return false }
        return ["localhost", "127.0.0.1", "::1", "[::1]"].contains(host.lowercased())
    }

    /// Stops the embedded simulator (after the listeners, so no order is cut off mid-request).
    func stop() {
        simulator?.stop(grace: 1)
    }

    /// The simulator's user API and page on the public listener under /sim/, so a browser on the
    /// sign-in page can play the BankID app (embedded default only).
    func mountSimulator(on router: inout Router) {
        guard let simulator else { return }
        let forward: @Sendable (HTTPRequest) -> HTTPResponse = { request in
            let answer = simulator.handleUserRequest(
                method: request.method.rawValue, path: request.path, body: request.body,
                peer: request.clientIP)
            return HTTPResponse(
                status: answer.status, headers: ["Content-Type": answer.contentType], body: answer.body)
        }
        router.add(
            .GET, "/sim/", rateClass: .standard,
            summary: "BankID simulator: the test user's app (development only)"
        ) {
            forward($0)
        }
        for path in ["/sim/v1/persons", "/sim/v1/control"] {
            router.add(
                .GET, path, rateClass: .standard, summary: "BankID simulator: user API (development only)"
            ) { forward($0) }
        }
        for path in [
            "/sim/v1/scan", "/sim/v1/autostart", "/sim/v1/phone", "/sim/v1/respond", "/sim/v1/control",
        ] {
            router.add(
                .POST, path, rateClass: .standard, summary: "BankID simulator: user API (development only)"
            ) { forward($0) }
        }
    }

    /// The identity key the embedded default uses when none is configured: 32 random bytes kept
    /// in the data folder (0600), created on first start and reused after.
    static func developmentHasher(dataDirectory: String) throws -> IdentityHasher {
        let path = dataDirectory.appendingPathSegment(developmentKeyFile)
        if !FileManager.default.fileExists(atPath: path) { try createDevelopmentKey(at: path) }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
            let secret = Base64URL.decode(text.trimmingWhitespaceAndNewlines()),
            secret.count >= IdentityKey.minimumSecretBytes
        else { throw BankIDError(.configuration, "\(path) does not hold a usable identity key") }
        return try IdentityHasher(
            currentKeyID: "development", keys: [IdentityKey(id: "development", secret: secret)])
    }

    /// Writes a new development key to a file of this process's own and links it in at `path`.
    ///
    /// Instances starting together on an empty folder all come here: the name appears only with
    /// the whole key behind it (creating it in place let a second instance read it still empty),
    /// and `link` never replaces, so the first one wins and the others read its key.
    private static func createDevelopmentKey(at path: String) throws {
        // A random name: callers in one process (an in-process server's tests) race here too.
        let temporary = path + "." + Hex.encode(SystemRandom().bytes(8)) + ".tmp"
        let descriptor = open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw BankIDError(.configuration, "could not write \(temporary)") }
        defer { unlink(temporary) }
        let text = Array(Base64URL.encode(SystemRandom().bytes(32)).utf8)
        let written = text.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        guard written == text.count else { throw BankIDError(.configuration, "could not write \(temporary)") }
        // EEXIST: another instance linked its key first; everyone reads that one.
        guard link(temporary, path) == 0 || errno == EEXIST else {
            throw BankIDError(.configuration, "could not create \(path)")
        }
    }
}

/// A BankID call as /metrics counts it: the endpoint and its outcome — "ok", BankID's error code
/// for an answer that was not 200 (`maintenance`, `alreadyInProgress`, …), or the transport's
/// code when there was no answer (`bankid.timed_out`, …).
struct BankIDCall: Hashable, Sendable {
    var endpoint: String
    var outcome: String
}

/// Counts every call on its way through to the real transport.
struct MeteredBankIDTransport: BankIDTransport {
    let wrapping: any BankIDTransport
    let counts: Tally<BankIDCall>

    func send(_ request: BankIDHTTPRequest) async throws(BankIDError) -> BankIDHTTPResponse {
        do {
            let response = try await wrapping.send(request)
            let outcome =
                response.status == 200
                ? "ok" : BankIDClient.error(path: request.path, response: response).code.rawValue
            counts.record(BankIDCall(endpoint: request.path, outcome: outcome))
            return response
        } catch {
            counts.record(BankIDCall(endpoint: request.path, outcome: error.code.rawValue))
            throw error
        }
    }
}
