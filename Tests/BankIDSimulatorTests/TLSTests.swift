import BankIDSimulator
import CryptoCore
import Foundation
import Kernel
import Synchronization
import TestSupport
import Testing

/// Mutual TLS: only a client certificate from the simulator's CA gets a request through.
@Suite("Mutual TLS and the development PKI")
struct TLSTests {
    /// A throwaway CA and a client certificate from it, written as PEM files.
    static func foreignClient(in directory: String) throws -> (certificate: String, key: String, ca: String) {
        let now = Date()
        let caKey = try SigningKey.generate(.p256)
        let caName = CertificateIssuer.Name(commonName: "Some other CA")
        let caDER = try CertificateIssuer.makeCertificate(
            subject: caName, subjectPublicKeyInfo: caKey.subjectPublicKeyInfo, issuer: caName,
            issuerKey: caKey,
            notBefore: now.addingTimeInterval(-60), notAfter: now.addingTimeInterval(86_400),
            basicConstraints: .ca(pathLength: 0), keyUsage: [.keyCertSign])
        let key = try SigningKey.generate(.p256)
        let der = try CertificateIssuer.makeCertificate(
            subject: CertificateIssuer.Name(commonName: "Portvakt RP test client"),
            subjectPublicKeyInfo: key.subjectPublicKeyInfo, issuer: caName, issuerKey: caKey,
            notBefore: now.addingTimeInterval(-60), notAfter: now.addingTimeInterval(86_400),
            extensions: [.extendedKeyUsage([CertificateIssuer.Extension.clientAuth])])
        let paths = (directory + "/other.pem", directory + "/other-key.pem", directory + "/other-ca.pem")
        try PEM.encode(der, label: "CERTIFICATE").write(toFile: paths.0, atomically: true, encoding: .utf8)
        try key.pkcs8PEM.write(toFile: paths.1, atomically: true, encoding: .utf8)
        try PEM.encode(caDER, label: "CERTIFICATE").write(toFile: paths.2, atomically: true, encoding: .utf8)
        return paths
    }

    static let body = #"{"endUserIp":"192.0.2.1"}"#

    @Test("a client without a certificate gets no request through; the simulator keeps serving")
    func noClientCertificate() throws {
        let harness = try Harness()
        let bare = HTTPTestClient(timeout: 10, tls: .init(caPath: harness.simulator.caCertificatePath))
        #expect(throws: HTTPTestClientError.self) {
            try bare.sendJSON(url: harness.simulator.baseURL + "auth", json: Self.body)
        }
        #expect(try harness.post("auth", Self.body).status == 200)
    }

    @Test("a client certificate from another CA is refused")
    func foreignCertificate() throws {
        let harness = try Harness()
        let other = try Self.foreignClient(in: harness.directory)
        let client = HTTPTestClient(
            timeout: 10,
            tls: .init(
                caPath: harness.simulator.caCertificatePath, certificatePath: other.certificate,
                certificateType: "PEM", keyPath: other.key))
        #expect(throws: HTTPTestClientError.self) {
            try client.sendJSON(url: harness.simulator.baseURL + "auth", json: Self.body)
        }
        #expect(try harness.post("auth", Self.body).status == 200)
    }

    @Test("a client that trusts another CA refuses the simulator's server certificate")
    func serverVerification() throws {
        let harness = try Harness()
        let other = try Self.foreignClient(in: harness.directory)
        let client = HTTPTestClient(
            timeout: 10,
            tls: .init(
                caPath: other.ca, certificatePath: harness.simulator.clientCertificatePath,
                passphrase: harness.simulator.passphrase))
        #expect(throws: HTTPTestClientError.self) {
            try client.sendJSON(url: harness.simulator.baseURL + "auth", json: Self.body)
        }
    }

    @Test("the PKCS#12 bundle needs its passphrase")
    func passphraseRequired() throws {
        let harness = try Harness()
        let client = HTTPTestClient(
            timeout: 10,
            tls: .init(
                caPath: harness.simulator.caCertificatePath,
                certificatePath: harness.simulator.clientCertificatePath, passphrase: "qwerty123"))
        #expect(throws: HTTPTestClientError.self) {
            try client.sendJSON(url: harness.simulator.baseURL + "auth", json: Self.body)
        }
    }

    @Test("the server certificate is valid for localhost as well as 127.0.0.1")
    func localhost() throws {
        let harness = try Harness()
        let response = try harness.rp.sendJSON(
            url: "https://localhost:\(harness.simulator.port)/rp/v6.0/auth", json: Self.body)
        #expect(response.status == 200)
    }

    @Test("6 simulators loading one empty folder at once share one PKI, the one on disk; 5 rounds")
    func pkiMadeOnceByRacingStarts() throws {
        let directory = try TemporaryDirectory()
        let deadline = Date().addingTimeInterval(60)
        for round in 0..<5 where Date() < deadline {
            let folder = directory.path("round-\(round)/bankid-simulator")
            let loaded = Mutex<[Result<DevelopmentPKI, SimulatorError>]>([])
            let gate = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            for _ in 0..<6 {
                done.enter()
                Thread {
                    gate.wait()
                    let pki = Result { () throws(SimulatorError) in
                        try DevelopmentPKI.loadOrCreate(in: folder)
                    }
                    loaded.withLock { $0.append(pki) }
                    done.leave()
                }.start()
            }
            // Released together, so they meet the empty folder at the same moment.
            for _ in 0..<6 { gate.signal() }
            #expect(done.wait(timeout: .now() + 30) == .success)
            let results = loaded.withLock { $0 }
            let pkis = results.compactMap { try? $0.get() }
            #expect(pkis.count == 6, "round \(round): \(results)")
            let onDisk = try String(contentsOfFile: folder + "/ca.pem", encoding: .utf8)
            let server = try String(contentsOfFile: folder + "/server.pem", encoding: .utf8)
            #expect(Set(pkis.map(\.caCertificatePEM)) == [onDisk], "round \(round)")
            #expect(Set(pkis.map(\.serverCertificatePEM)) == [server], "round \(round)")
            #expect(Set(pkis.map(\.clientPassphrase)).count == 1, "round \(round)")
        }
    }

    @Test("the PKI is made once: keys, bundle and passphrase are 0600 and reused on the next start")
    func pkiFiles() throws {
        let harness = try Harness()
        let files = try FileManager.default.contentsOfDirectory(atPath: harness.directory)
        #expect(
            Set(files).isSuperset(of: [
                "ca.pem", "ca-key.pem", "server.pem", "server-key.pem", "rp-client.p12",
                "rp-client.passphrase",
            ]))
        for secret in ["ca-key.pem", "server-key.pem", "rp-client.p12", "rp-client.passphrase"] {
            let attributes = try FileManager.default.attributesOfItem(
                atPath: harness.directory + "/" + secret)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600, "\(secret)")
        }
        let ca = try String(contentsOfFile: harness.simulator.caCertificatePath, encoding: .utf8)
        let again = try BankIDSimulator.start(BankIDSimulatorConfiguration(dataDirectory: harness.directory))
        defer { again.stop() }
        #expect(again.caCertificatePEM == ca)
        #expect(again.passphrase == harness.simulator.passphrase)
        #expect(again.passphrase.count >= 16)
        let ca509 = try Certificate(pem: ca)
        #expect(ca509.isSelfSigned && ca509.isCA == true)
    }

    @Test(
        "a second simulator on a port the first holds, RP or user side, fails with .listen naming 127.0.0.1:PORT"
    )
    func portTaken() throws {
        let harness = try Harness()
        for (taken, ports) in [
            (harness.simulator.port, (harness.simulator.port, 0)),
            (harness.simulator.userPort, (0, harness.simulator.userPort)),
        ] {
            let directory = NSTemporaryDirectory() + "bankid-sim-" + UUID().uuidString
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var configuration = BankIDSimulatorConfiguration(dataDirectory: directory)
            configuration.port = ports.0
            configuration.userPort = ports.1
            do {
                let second = try BankIDSimulator.start(configuration)
                second.stop()
                Issue.record("a second simulator started beside the first on port \(taken)")
            } catch {
                #expect(error.code == .listen)
                #expect(error.message.contains("127.0.0.1:\(taken)"), "\(error.message)")
            }
        }
        // The first still answers on both sides.
        #expect(try harness.post("auth", Self.body).status == 200)
        #expect(
            try harness.user.send(method: "GET", url: harness.simulator.userAPIURL + "persons").status == 200)
    }

    @Test("stop: new connections are refused afterwards, on both listeners")
    func stop() throws {
        let harness = try Harness()
        #expect(try harness.post("auth", Self.body).status == 200)
        harness.simulator.stop(grace: 2)
        let refused = HTTPTestClient(
            timeout: 10,
            tls: .init(
                caPath: harness.simulator.caCertificatePath,
                certificatePath: harness.simulator.clientCertificatePath,
                passphrase: harness.simulator.passphrase))
        do {
            _ = try refused.sendJSON(url: harness.simulator.baseURL + "auth", json: Self.body)
            Issue.record("the RP API still answers after stop")
        } catch {
            #expect(error.isConnectionRefused)
        }
        #expect(throws: HTTPTestClientError.self) {
            try harness.user.send(method: "GET", url: harness.simulator.userAPIURL + "persons")
        }
    }
}
