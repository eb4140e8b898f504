import BankIDSimulator
import CryptoCore
import Foundation
import Kernel
import TestSupport

/// One simulator on ephemeral ports with its own data folder and a controllable clock, plus an
/// mTLS client configured from what the simulator reports and a plain client for the user's side.
final class Harness {
    let clock = FixedClock()
    let directory: String
    let simulator: RunningSimulator
    let rp: HTTPTestClient
    let user = HTTPTestClient(timeout: 15)

    init(_ configure: (inout BankIDSimulatorConfiguration) -> Void = { _ in }) throws {
        directory = NSTemporaryDirectory() + "bankid-sim-" + UUID().uuidString
        var configuration = BankIDSimulatorConfiguration(dataDirectory: directory)
        configure(&configuration)
        simulator = try BankIDSimulator.start(configuration, clock: clock)
        rp = HTTPTestClient(
            timeout: 15,
            tls: .init(
                caPath: simulator.caCertificatePath, certificatePath: simulator.clientCertificatePath,
                passphrase: simulator.passphrase))
    }

    deinit {
        simulator.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// POSTs JSON to an RP endpoint ("auth", "collect", ...).
    func post(_ endpoint: String, _ json: String) throws -> TestResponse {
        try rp.sendJSON(url: simulator.baseURL + endpoint, json: json)
    }

    /// POSTs JSON to a user endpoint ("scan", "autostart", ...).
    func userPost(_ endpoint: String, _ json: String) throws -> TestResponse {
        try user.sendJSON(url: simulator.userAPIURL + endpoint, json: json)
    }

    /// Starts an /auth order and returns its response fields.
    func startAuth(_ extra: String = "") throws -> [String: Any] {
        let response = try post("auth", #"{"endUserIp":"192.0.2.10"\#(extra)}"#)
        guard response.status == 200 else {
            throw HarnessError("auth answered \(response.status): \(response.text)")
        }
        return try response.jsonObject()
    }

    /// Collects and returns the body as an object.
    func collect(_ orderRef: String) throws -> (status: Int, body: [String: Any]) {
        let response = try post("collect", #"{"orderRef":"\#(orderRef)"}"#)
        return (response.status, try response.jsonObject())
    }

    /// The animated QR text for time `t`, as an RP computes it.
    static func qrData(token: String, secret: String, t: Int) -> String {
        let code = Hex.encode(
            HMAC.authenticate(.sha256, key: Array(secret.utf8), data: Array(String(t).utf8)))
        return "bankid.\(token).\(t).\(code)"
    }

    /// Scans the order's QR code at the clock's current second.
    func scan(_ order: [String: Any], t: Int = 0, extra: String = "") throws -> TestResponse {
        let qr = Self.qrData(
            token: order["qrStartToken"] as! String, secret: order["qrStartSecret"] as! String, t: t)
        return try userPost("scan", #"{"qrData":"\#(qr)"\#(extra)}"#)
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension TestResponse {
    /// The `errorCode` of a BankID error body.
    var errorCode: String? { (try? jsonObject())?["errorCode"] as? String }
}
