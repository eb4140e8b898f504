// BankID benchmark: animated QR codes generated per second (one thread), as data and drawn as SVG,
// and the upstream /collect calls per order when 50 pollers poll one order as fast as they like for
// BENCH_SECONDS, through the real coordinator, libcurl transport and SQLite store against the
// in-process BankID simulator over mutual TLS. Prints name=value:unit pairs for Benchmarks/record.py.
import BankIDCore
import BankIDSimulator
import CryptoCore
import Foundation
import Storage
import Synchronization
import TestSupport

let seconds = Double(ProcessInfo.processInfo.environment["BENCH_SECONDS"] ?? "") ?? 10
let pollers = 50

// QR codes: the HMAC and formatting for one second's code, as the status endpoint would make it.
let secret = QRStartSecret("d28db9a7-4cde-429e-a983-359be676944c")
let start = Date()
var elapsed = 0
/// The next second's code (of the first 30, round and round).
@MainActor func nextCode() -> String {
    elapsed &+= 1
    return BankIDQRCode.data(
        token: "67df3917-fa0d-44e5-b327-edcc928297f8", secret: secret, startedAt: start,
        now: start.addingTimeInterval(Double(elapsed % 30)))
}
let qrRate = Benchmarking.rate(seconds: 1) { !nextCode().isEmpty }
// The same codes drawn as the status endpoint's SVG (libqrencode's encoding, then the SVG text):
// what every poll of a QR order costs beyond the HMAC.
let svgRate = Benchmarking.rate(seconds: 1) { BankIDQRCode.svg(nextCode()) != nil }

/// Polls one order from `pollers` tasks until `deadline`; returns how many polls were answered.
/// Nonisolated: main.swift's top level is MainActor-isolated, and the pollers must run in parallel.
nonisolated func poll(
    _ orderRef: String, with coordinator: BankIDCollectCoordinator, pollers: Int,
    until deadline: ContinuousClock.Instant
) async throws -> Int {
    try await withThrowingTaskGroup(of: Int.self) { group in
        for _ in 0..<pollers {
            group.addTask {
                var count = 0
                while ContinuousClock.now < deadline {
                    _ = try await coordinator.poll(orderRef: orderRef)
                    count += 1
                    // A browser polls every 2 s; these poll every 10 ms, a far harder load.
                    try await Task.sleep(for: .milliseconds(10))
                }
                return count
            }
        }
        return try await group.reduce(0, +)
    }
}

/// Counts what the transport sends, per path.
final class Counting: BankIDTransport {
    let inner: any BankIDTransport
    let collects = Atomic<Int>(0)
    init(_ inner: any BankIDTransport) { self.inner = inner }
    func send(_ request: BankIDHTTPRequest) async throws(BankIDError) -> BankIDHTTPResponse {
        if request.path == "/collect" { collects.add(1, ordering: .relaxed) }
        return try await inner.send(request)
    }
}

let directory = try TemporaryDirectory(prefix: "bench-bankid")
let simulator = try BankIDSimulator.start(BankIDSimulatorConfiguration(dataDirectory: directory.path("sim")))
defer { simulator.stop() }
let transport = Counting(
    try CurlBankIDTransport(
        configuration: BankIDTransportConfiguration(
            baseURL: simulator.baseURL,
            clientIdentity: .pkcs12(
                path: simulator.clientCertificatePath, passphrase: RedactedSecret(simulator.passphrase)),
            caCertificatePath: simulator.caCertificatePath)))
let database = try SQLiteDatabase(path: directory.path("portvakt.sqlite"))
defer { database.close() }
let coordinator = BankIDCollectCoordinator(
    client: BankIDClient(transport: transport), store: SQLStore(database: database),
    hasher: try IdentityHasher(
        currentKeyID: "bench", keys: [try IdentityKey(id: "bench", secret: Array(repeating: 1, count: 32))]))

let order = try await coordinator.start(.auth, BankIDStartRequest(endUserIP: "192.0.2.1"), intent: .login)
let began = ContinuousClock.now
let polls = try await poll(
    order.orderRef, with: coordinator, pollers: pollers, until: began + .seconds(seconds))
let duration =
    Double((ContinuousClock.now - began).components.seconds)
    + Double((ContinuousClock.now - began).components.attoseconds) / 1e18
let collects = transport.collects.load(ordering: .relaxed)
let intervals = duration / coordinator.timing.pollInterval

print(
    [
        "bankid_qr_codes_per_s=\(Int(qrRate)):codes/s",
        "bankid_qr_svg_per_s=\(Int(svgRate)):codes/s",
        "bankid_collect_pollers=\(pollers):pollers",
        "bankid_polls_served_per_s=\(Int(Double(polls) / duration)):polls/s",
        "bankid_upstream_collects_per_order=\(collects):collects",
        "bankid_upstream_collects_per_poll_interval=\(String(format: "%.2f", Double(collects) / intervals)):collects",
    ].joined(separator: " "))
