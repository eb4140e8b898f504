import BankIDSimulator
import Foundation
import Kernel
import TestSupport
import Testing

/// `portvakt bankid-simulator` as a process, driven by the curl command line configured only from
/// `--print-config`: what any third-party v6 client would do.
@Suite("portvakt bankid-simulator with a standard client")
struct CommandLineTests {
    /// Runs curl and returns its exit status, the HTTP status and the body.
    static func curl(_ arguments: [String]) throws -> (exit: Int32, status: Int, body: [String: Any]) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sS", "--max-time", "20", "-w", "\n%{http_code}"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = Pipe()
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let status = Int(lines.last ?? "") ?? 0
        let json = lines.dropLast().joined(separator: "\n")
        let body = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any] ?? [:]
        return (process.terminationStatus, status, body)
    }

    @Test("auth, collect, sign, phone auth and cancel with curl --cacert and --cert-type P12, and its errors")
    func curlClient() throws {
        let directory = NSTemporaryDirectory() + "bankid-sim-cli-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let serving = try PortvaktProcess([
            "bankid-simulator", "--data", directory, "--port", "0", "--user-port", "0",
        ])
        defer {
            if serving.isRunning {
                serving.send(SIGKILL)
                serving.wait()
            }
        }
        let port = try serving.waitForPort(listener: "bankid-simulator")
        let userPort = try serving.waitForPort(listener: "bankid-simulator-user")
        let printed = try PortvaktProcess.run([
            "bankid-simulator", "--data", directory, "--port", "\(port)", "--user-port", "\(userPort)",
            "--print-config",
        ])
        #expect(printed.status == 0, "\(printed.stderr)")
        let config = try #require(
            try JSONSerialization.jsonObject(with: Data(printed.stdout.utf8)) as? [String: String])
        #expect(
            Set(config.keys) == ["baseUrl", "caCertificate", "clientCertificate", "passphrase", "userApiUrl"])
        let base = try #require(config["baseUrl"])
        let user = try #require(config["userApiUrl"])
        let tls = [
            "--cacert", try #require(config["caCertificate"]), "--cert-type", "P12", "--cert",
            "\(try #require(config["clientCertificate"])):\(try #require(config["passphrase"]))",
        ]
        func rp(_ endpoint: String, _ body: String) throws -> (exit: Int32, status: Int, body: [String: Any])
        {
            try Self.curl(tls + ["-H", "Content-Type: application/json", "-d", body, base + endpoint])
        }
        func app(_ endpoint: String, _ body: String) throws -> Int {
            try Self.curl(["-H", "Content-Type: application/json", "-d", body, user + endpoint]).status
        }

        // Auth on the same device: the app opens the autostart token, the RP collects.
        let auth = try rp("auth", #"{"endUserIp":"192.0.2.7"}"#)
        #expect(auth.status == 200)
        let authRef = try #require(auth.body["orderRef"] as? String)
        #expect(auth.body["qrStartToken"] is String && auth.body["qrStartSecret"] is String)
        #expect(try rp("collect", #"{"orderRef":"\#(authRef)"}"#).body["status"] as? String == "pending")
        #expect(
            try app("autostart", #"{"autoStartToken":"\#(auth.body["autoStartToken"] as! String)"}"#) == 200)
        let collected = try rp("collect", #"{"orderRef":"\#(authRef)"}"#)
        #expect(collected.body["status"] as? String == "complete")
        #expect(collected.body["completionData"] is [String: Any])

        // Sign.
        let text = Data("Sign **this**".utf8).base64EncodedString()
        let sign = try rp("sign", #"{"endUserIp":"192.0.2.7","userVisibleData":"\#(text)"}"#)
        #expect(sign.status == 200)
        #expect(
            try app("autostart", #"{"autoStartToken":"\#(sign.body["autoStartToken"] as! String)"}"#) == 200)
        let signed = try rp("collect", #"{"orderRef":"\#(sign.body["orderRef"] as! String)"}"#)
        #expect((signed.body["completionData"] as? [String: Any])?["signature"] is String)

        // Phone auth.
        let phone = try rp("phone/auth", #"{"callInitiator":"RP","personalNumber":"199001012385"}"#)
        #expect(phone.status == 200)
        let phoneRef = try #require(phone.body["orderRef"] as? String)
        #expect(try app("phone", #"{"orderRef":"\#(phoneRef)"}"#) == 200)
        #expect(try rp("collect", #"{"orderRef":"\#(phoneRef)"}"#).body["status"] as? String == "complete")

        // Cancel, and the errors a client must handle.
        let cancelRef = try #require(
            try rp("auth", #"{"endUserIp":"192.0.2.7"}"#).body["orderRef"] as? String)
        let cancelled = try rp("cancel", #"{"orderRef":"\#(cancelRef)"}"#)
        #expect(cancelled.status == 200 && cancelled.body.isEmpty)
        let again = try rp("cancel", #"{"orderRef":"\#(cancelRef)"}"#)
        #expect(again.status == 400 && again.body["errorCode"] as? String == "invalidParameters")
        let get = try Self.curl(tls + [base + "auth"])
        #expect(get.status == 405 && get.body["errorCode"] as? String == "methodNotAllowed")
        let charset = try Self.curl(
            tls + ["-H", "Content-Type: application/json; charset=UTF-8", "-d", "{}", base + "auth"])
        #expect(charset.status == 415 && charset.body["errorCode"] as? String == "unsupportedMediaType")
        let invalid = try rp("auth", #"{"endUserIp":"nowhere"}"#)
        #expect(invalid.status == 400 && invalid.body["errorCode"] as? String == "invalidParameters")

        // Without the client certificate curl gets nothing through.
        let bare = try Self.curl([
            "--cacert", config["caCertificate"]!, "-H", "Content-Type: application/json", "-d", "{}",
            base + "auth",
        ])
        #expect(bare.exit != 0 && bare.status == 0)

        serving.send(SIGTERM)
        #expect(serving.wait() == 0)
        #expect(!serving.stdout.isEmpty && !serving.stderr.contains(config["passphrase"]!))
    }

    @Test("--print-config needs fixed ports; bad usage exits 2")
    func usage() throws {
        let directory = NSTemporaryDirectory() + "bankid-sim-cli-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(try PortvaktProcess.run(["bankid-simulator", "--port", "1"]).status == 2)
        #expect(
            try PortvaktProcess.run(["bankid-simulator", "--data", directory, "--port", "x"]).status == 2)
        let zero = try PortvaktProcess.run([
            "bankid-simulator", "--data", directory, "--port", "0", "--print-config",
        ])
        #expect(zero.status == 1)
        let missing = try PortvaktProcess.run([
            "bankid-simulator", "--data", directory, "--port", "1", "--scenario", directory + "/none.json",
        ])
        #expect(missing.status == 2)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(#"{"faults": [{"fault": "fire"}]}"#.utf8).write(
            to: URL(fileURLWithPath: directory + "/bad.json"))
        let bad = try PortvaktProcess.run([
            "bankid-simulator", "--data", directory, "--port", "1", "--scenario", directory + "/bad.json",
        ])
        #expect(bad.status == 1 && bad.stderr.contains("faults"))
    }
}
