public import CryptoCore
public import FoundationEssentials
import Glibc
import Kernel

/// The simulator's development PKI, made on first start in its data folder and reused after:
/// a root CA, a server certificate for 127.0.0.1 and localhost, and an RP client certificate
/// as PKCS#12 with a random passphrase, the way BankID's test environment hands out a root CA
/// and a test certificate. Keys, the bundle and its passphrase are written with mode 0600.
public struct DevelopmentPKI: Sendable {
    /// The file names inside the data folder.
    enum File {
        static let caCertificate = "ca.pem"
        static let caKey = "ca-key.pem"
        static let serverCertificate = "server.pem"
        static let serverKey = "server-key.pem"
        static let clientBundle = "rp-client.p12"
        static let clientPassphrase = "rp-client.passphrase"
        static let all = [caCertificate, caKey, serverCertificate, serverKey, clientBundle, clientPassphrase]
        /// Held while the files are checked, made or read (empty; never deleted).
        static let lock = "pki.lock"
    }

    /// The folder holding the files.
    public let directory: String
    /// The CA certificate (PEM); clients trust this, and client certificates must chain to it.
    public let caCertificatePEM: String
    /// The server certificate (PEM).
    public let serverCertificatePEM: String
    /// The server's key; it also signs the simulated completion signatures.
    public let serverKey: SigningKey
    /// The passphrase of the RP client bundle. Secret: never logged.
    public let clientPassphrase: String

    /// The CA certificate's path.
    public var caCertificatePath: String { directory + "/" + File.caCertificate }
    /// The RP client certificate's path (PKCS#12).
    public var clientCertificatePath: String { directory + "/" + File.clientBundle }

    /// Loads the PKI from `directory`, creating the folder and every file when any is missing.
    /// - Throws: `SimulatorError` (.storage, .pki).
    public static func loadOrCreate(in directory: String, now: Date = Date()) throws(SimulatorError)
        -> DevelopmentPKI
    {
        let manager = FileManager.default
        do {
            try manager.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            // Another instance starting at the same moment may have made it meanwhile.
            var isDirectory = false
            guard manager.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory
            else {
                throw SimulatorError(.storage, "cannot create the data folder \(directory)")
            }
        }
        // Instances starting together on an empty folder: without the lock each made a PKI of its
        // own and they replaced each other's files, so one could serve a certificate from a CA
        // that was no longer on disk. Under it the first creates; the others wait, then load.
        let lock = try lockFolder(directory)
        defer { close(lock) }
        let present = File.all.allSatisfy { manager.fileExists(atPath: directory + "/" + $0) }
        if !present { try create(in: directory, now: now) }
        return try load(from: directory)
    }

    /// Takes the folder's lock (an exclusive `flock` on `File.lock`), waiting for whoever holds it;
    /// closing the descriptor releases it, as does the holder's exit, so a crash leaves no lock.
    ///
    /// A lock here, where SQLite has its own: these are plain files with no lock of their own,
    /// written only by the simulator, and six of them must come from the same generation.
    private static func lockFolder(_ directory: String) throws(SimulatorError) -> Int32 {
        let descriptor = open(directory + "/" + File.lock, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw SimulatorError(.storage, "cannot lock the data folder \(directory)")
        }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else {
                close(descriptor)
                throw SimulatorError(.storage, "cannot lock the data folder \(directory)")
            }
        }
        return descriptor
    }

    private static func load(from directory: String) throws(SimulatorError) -> DevelopmentPKI {
        let caPEM = try read(directory, File.caCertificate)
        let serverPEM = try read(directory, File.serverCertificate)
        let keyPEM = try read(directory, File.serverKey)
        let passphrase = try read(directory, File.clientPassphrase).trimmingWhitespaceAndNewlines()
        let key: SigningKey
        do { key = try SigningKey(pkcs8PEM: keyPEM) } catch {
            throw SimulatorError(
                .pki, "\(File.serverKey) is not a PKCS#8 key; delete the folder to regenerate")
        }
        return DevelopmentPKI(
            directory: directory, caCertificatePEM: caPEM, serverCertificatePEM: serverPEM, serverKey: key,
            clientPassphrase: passphrase)
    }

    /// The server's key as PEM, for the TLS listener.
    var serverKeyPEM: String { serverKey.pkcs8PEM }

    /// The server certificate's DER (embedded in completion signatures).
    var serverCertificateDER: [UInt8] { PEM.decode(serverCertificatePEM, label: "CERTIFICATE") ?? [] }

    private static func create(in directory: String, now: Date) throws(SimulatorError) {
        do {
            let notBefore = now.addingTimeInterval(-3600)
            let caKey = try SigningKey.generate(.p256)
            let caName = CertificateIssuer.Name(
                country: "SE", organization: "Portvakt development",
                commonName: "Portvakt BankID Simulator Root CA")
            let caDER = try CertificateIssuer.makeCertificate(
                subject: caName, subjectPublicKeyInfo: caKey.subjectPublicKeyInfo, issuer: caName,
                issuerKey: caKey,
                notBefore: notBefore, notAfter: now.addingTimeInterval(10 * 365 * 86_400),
                basicConstraints: .ca(pathLength: 0), keyUsage: [.keyCertSign, .cRLSign])

            let serverKey = try SigningKey.generate(.p256)
            let serverDER = try CertificateIssuer.makeCertificate(
                subject: CertificateIssuer.Name(
                    country: "SE", organization: "Portvakt development", commonName: "localhost"),
                subjectPublicKeyInfo: serverKey.subjectPublicKeyInfo, issuer: caName, issuerKey: caKey,
                notBefore: notBefore, notAfter: now.addingTimeInterval(2 * 365 * 86_400),
                keyUsage: [.digitalSignature],
                extensions: [
                    .subjectAltName(dnsNames: ["localhost"], ipAddresses: [[127, 0, 0, 1]]),
                    .extendedKeyUsage([CertificateIssuer.Extension.serverAuth]),
                ])

            let clientKey = try SigningKey.generate(.p256)
            let clientDER = try CertificateIssuer.makeCertificate(
                subject: CertificateIssuer.Name(
                    country: "SE", organization: "Portvakt development", commonName: "Portvakt RP test client"
                ),
                subjectPublicKeyInfo: clientKey.subjectPublicKeyInfo, issuer: caName, issuerKey: caKey,
                notBefore: notBefore, notAfter: now.addingTimeInterval(2 * 365 * 86_400),
                keyUsage: [.digitalSignature],
                extensions: [.extendedKeyUsage([CertificateIssuer.Extension.clientAuth])])
            let passphrase = Hex.encode(SystemRandom().bytes(12))
            let bundle = try CertificateIssuer.pkcs12(
                key: clientKey, certificateDER: clientDER, chainDER: [caDER],
                friendlyName: "Portvakt RP test client",
                passphrase: passphrase)

            // Secrets first, each 0600; the CA certificate last, so a half-written folder is redone.
            try write(directory, File.caKey, Array(caKey.pkcs8PEM.utf8), secret: true)
            try write(directory, File.serverKey, Array(serverKey.pkcs8PEM.utf8), secret: true)
            try write(directory, File.clientBundle, bundle, secret: true)
            try write(directory, File.clientPassphrase, Array((passphrase + "\n").utf8), secret: true)
            try write(
                directory, File.serverCertificate, Array(PEM.encode(serverDER, label: "CERTIFICATE").utf8),
                secret: false)
            try write(
                directory, File.caCertificate, Array(PEM.encode(caDER, label: "CERTIFICATE").utf8),
                secret: false)
        } catch let error as SimulatorError {
            throw error
        } catch {
            throw SimulatorError(.pki, "could not generate the development PKI: \(error)")
        }
    }

    private static func read(_ directory: String, _ name: String) throws(SimulatorError) -> String {
        guard let data = FileManager.default.contents(atPath: directory + "/" + name) else {
            throw SimulatorError(.storage, "cannot read \(name) in \(directory)")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Writes a file through a temporary name and a rename; secrets are created 0600 from the
    /// start (never readable by others, not even for a moment).
    private static func write(_ directory: String, _ name: String, _ bytes: [UInt8], secret: Bool)
        throws(SimulatorError)
    {
        let path = directory + "/" + name
        let temporary = path + ".tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, secret ? 0o600 : 0o644)
        guard descriptor >= 0 else { throw SimulatorError(.storage, "cannot write \(name) in \(directory)") }
        var written = 0
        while written < bytes.count {
            let result = bytes[written...].withUnsafeBytes {
                Glibc.write(descriptor, $0.baseAddress, $0.count)
            }
            guard result > 0 else {
                close(descriptor)
                throw SimulatorError(.storage, "cannot write \(name) in \(directory)")
            }
            written += result
        }
        fchmod(descriptor, secret ? 0o600 : 0o644)
        close(descriptor)
        guard rename(temporary, path) == 0 else { throw SimulatorError(.storage, "cannot rename \(name)") }
    }
}
