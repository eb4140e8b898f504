import BankIDCore
import CryptoCore
import Foundation
import Kernel
import Synchronization
import TestSupport
import Testing

@Suite("RP certificate health")
struct CertificateHealthTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// Writes a PKCS#12 bundle whose certificate expires `days` after `now`, and returns its path.
    func bundle(in directory: TemporaryDirectory, expiringIn days: Double, passphrase: String) throws
        -> String
    {
        let key = try SigningKey.generate(.p256)
        let name = CertificateIssuer.Name(organization: "Portvakt RP", commonName: "Portvakt test RP")
        let der = try CertificateIssuer.makeCertificate(
            subject: name, subjectPublicKeyInfo: key.subjectPublicKeyInfo, issuer: name, issuerKey: key,
            notBefore: now.addingTimeInterval(-86_400), notAfter: now.addingTimeInterval(days * 86_400))
        let p12 = try CertificateIssuer.pkcs12(
            key: key, certificateDER: der, chainDER: [], friendlyName: "rp", passphrase: passphrase)
        let path = directory.path("rp.p12")
        try Data(p12).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("the expiry is read from the PKCS#12 bundle; within 30 days it is reported")
    func readsExpiry() throws {
        let directory = try TemporaryDirectory()
        let path = try bundle(in: directory, expiringIn: 20.5, passphrase: "qwerty123")
        let health = try BankIDCertificateHealth.load(
            .pkcs12(path: path, passphrase: RedactedSecret("qwerty123")))
        #expect(abs(health.notAfter.timeIntervalSince(now.addingTimeInterval(20.5 * 86_400))) < 1)
        #expect(health.subject.contains("Portvakt test RP"))
        #expect(health.status(at: now) == .expiringSoon(daysLeft: 20))
        #expect(health.isUsable(at: now))
        #expect(health.warning(at: now)?.contains("expires in 20 days") == true)
        #expect(health.status(at: now.addingTimeInterval(-30 * 86_400)) == .notYetValid)
        #expect(health.status(at: now.addingTimeInterval(21 * 86_400)) == .expired)
        #expect(!health.isUsable(at: now.addingTimeInterval(21 * 86_400)))
    }

    @Test("the warning window is configurable; outside it all is well")
    func window() {
        let health = BankIDCertificateHealth(
            subject: "CN=rp", notBefore: now, notAfter: now.addingTimeInterval(45 * 86_400), warningDays: 30)
        #expect(health.status(at: now) == .valid(daysLeft: 45))
        #expect(health.warning(at: now) == nil)
        #expect(health.status(at: now.addingTimeInterval(15.5 * 86_400)) == .expiringSoon(daysLeft: 29))
        let wide = BankIDCertificateHealth(
            subject: "CN=rp", notBefore: now, notAfter: now.addingTimeInterval(45 * 86_400), warningDays: 60)
        #expect(wide.status(at: now) == .expiringSoon(daysLeft: 45))
    }

    @Test("a wrong passphrase is a certificate error that does not contain the passphrase")
    func wrongPassphrase() throws {
        let directory = try TemporaryDirectory()
        let path = try bundle(in: directory, expiringIn: 100, passphrase: "right-one")
        let error = #expect(throws: BankIDError(.certificate, "")) {
            try BankIDCertificateHealth.load(.pkcs12(path: path, passphrase: RedactedSecret("s3cr3t-wrong")))
        }
        #expect(error?.message.contains("s3cr3t-wrong") == false)
        #expect(throws: BankIDError(.certificate, "")) {
            try BankIDCertificateHealth.load(
                .pkcs12(path: directory.path("missing.p12"), passphrase: RedactedSecret("x")))
        }
    }

    @Test("the monitor logs the warning once per day, however often it is asked")
    func dailyWarning() {
        let clock = FixedClock(now)
        let lines = Mutex<[String]>([])
        let monitor = BankIDCertificateMonitor(
            health: BankIDCertificateHealth(
                subject: "CN=rp", notBefore: now, notAfter: now.addingTimeInterval(10 * 86_400)),
            clock: clock, log: { line in lines.withLock { $0.append(line) } })
        for _ in 0..<50 { #expect(monitor.check() != nil) }
        #expect(lines.withLock { $0.count } == 1)
        clock.advance(by: 86_400)
        for _ in 0..<5 { monitor.check() }
        #expect(lines.withLock { $0 }.count == 2)
        #expect(lines.withLock { $0 }.last?.contains("expires in 9 days") == true)
    }
}
