import CryptoCore
import HTTPEngine

/// The simulator's two listeners on the HTTP engine: the RP API over HTTPS with required client
/// certificates, and the user's side over plain HTTP, both on 127.0.0.1.
///
/// Both give every connection its own thread, so injected latency (a handler that sleeps) stalls
/// only its own client, as a slow BankID would. Requests no route takes go to a fallback that
/// answers with BankID's bare error bodies rather than the engine's problem+json. Nothing is rate
/// limited: the simulator's clients are the developer's own. The engine's access log is not kept:
/// the simulator logs one line per RP request itself, in BankID's terms (see `SimulatorEngine.log`).
enum Listeners {
    /// The RP API: `POST /rp/v6.0/<endpoint>` for each endpoint, mutual TLS with the development PKI.
    static func rp(_ engine: SimulatorEngine, port: Int, pki: DevelopmentPKI) throws(SimulatorError)
        -> HTTPServer
    {
        var router = Router()
        for endpoint in RPEndpoint.allCases {
            router.add(
                .POST, SimulatorEngine.rpPrefix + endpoint.rawValue, rateClass: .unlimited,
                summary: "BankID RP API v6: \(endpoint.rawValue)"
            ) { engine.handleRP(endpoint, $0) }
        }
        router.fallback(rateClass: .unlimited) { engine.handleUnroutedRP($0, $1) }
        let tls = HTTPServerTLS(
            keyPEM: RedactedSecret(pki.serverKeyPEM), certificatePEM: pki.serverCertificatePEM,
            clientCAPEM: pki.caCertificatePEM)
        return try start(router, port: port, tls: tls)
    }

    /// The user's side: the app's actions, the control endpoint and the page, plain HTTP.
    static func user(_ engine: SimulatorEngine, port: Int) throws(SimulatorError) -> HTTPServer {
        var router = Router()
        for route in SimulatorEngine.userRoutes {
            router.add(
                route.method, route.path, rateClass: .unlimited, summary: "BankID simulator: the user's app"
            ) {
                engine.handleUser(route.endpoint, $0)
            }
        }
        router.fallback(rateClass: .unlimited) { engine.handleUnroutedUser($0, $1) }
        return try start(router, port: port, tls: nil)
    }

    /// Builds and starts one listener on 127.0.0.1:`port`.
    private static func start(_ router: Router, port: Int, tls: HTTPServerTLS?) throws(SimulatorError)
        -> HTTPServer
    {
        // Bodies up to 1 MiB: BankID's requests are small, and a larger one is an error either way.
        // Every client is on loopback (127.0.0.1), so the per-address cap is the total one.
        let configuration = HTTPServerConfiguration(
            host: "127.0.0.1", port: port, connectionTimeoutSeconds: 30, maxBodyBytes: 1 << 20,
            threading: .threadPerConnection, tls: tls, perAddressConnectionLimit: 1024)
        do {
            let server = try HTTPServer(configuration: configuration, router: router, accessLog: { _ in })
            try server.start()
            return server
        } catch {
            switch error.code {
            case .invalidConfiguration: throw SimulatorError(.configuration, error.message)
            case .startFailed, .addressInUse, .invalidState, .invalidRequest:
                throw SimulatorError(.listen, error.message)
            }
        }
    }
}
