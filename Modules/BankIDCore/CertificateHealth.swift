import CryptoCore
public import FoundationEssentials
public import Kernel

/// The health of the RP certificate BankID knows us by: read once at start, judged against the
/// clock on every readiness probe, so an expiry weeks away is visible long before logins fail.
public struct BankIDCertificateHealth: Sendable, Equatable {
    /// How the certificate stands at a moment.
    public enum Status: Sendable, Equatable {
        /// Valid, and expiring later than the warning window.
        case valid(daysLeft: Int)
        /// Valid, but expiring within the warning window: renew it now.
        case expiringSoon(daysLeft: Int)
        /// Past its notAfter: BankID will refuse every call.
        case expired
        /// Before its notBefore (a clock or issuance problem).
        case notYetValid
    }

    /// The certificate's subject, for operators (the RP's organisation, not a person).
    public let subject: String
    /// Start of validity.
    public let notBefore: Date
    /// End of validity.
    public let notAfter: Date
    /// How many days before expiry warnings start (30 by default).
    public let warningDays: Int

    /// Creates a health value from a certificate's validity.
    public init(subject: String, notBefore: Date, notAfter: Date, warningDays: Int = 30) {
        self.subject = subject
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.warningDays = warningDays
    }

    /// Reads the leaf certificate of the configured client identity.
    /// - Parameters:
    ///   - identity: the PKCS#12 bundle or PEM certificate the transport presents.
    ///   - warningDays: the warning window.
    /// - Throws: `BankIDError(.certificate)` when the file cannot be read or opened; the passphrase
    ///   is never part of the message.
    public static func load(_ identity: BankIDClientIdentity, warningDays: Int = 30) throws(BankIDError)
        -> BankIDCertificateHealth
    {
        let certificate: Certificate
        do {
            switch identity {
            case .pkcs12(let path, let passphrase):
                let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
                certificate = try PKCS12Reader.certificate(der: bytes, passphrase: passphrase.value)
            case .pem(let certificatePath, _, _):
                let text = try String(contentsOfFile: certificatePath, encoding: .utf8)
                guard let first = try Certificate.certificates(pem: text).first else {
                    throw BankIDError(.certificate, "no certificate in \(certificatePath)")
                }
                certificate = first
            }
        } catch let error as BankIDError {
            throw error
        } catch let error as CryptoError {
            throw BankIDError(.certificate, "the RP certificate could not be read: \(error.message)")
        } catch {
            throw BankIDError(.certificate, "the RP certificate file could not be read")
        }
        return BankIDCertificateHealth(
            subject: "\(certificate.subject)", notBefore: certificate.notBefore,
            notAfter: certificate.notAfter,
            warningDays: warningDays)
    }

    /// How the certificate stands at `now`; days left are whole days, rounded down.
    public func status(at now: Date) -> Status {
        if now < notBefore { return .notYetValid }
        if now >= notAfter { return .expired }
        let daysLeft = Int(notAfter.timeIntervalSince(now) / 86_400)
        return daysLeft < warningDays ? .expiringSoon(daysLeft: daysLeft) : .valid(daysLeft: daysLeft)
    }

    /// Whether BankID calls can work at `now`: /health/ready fails only when they cannot.
    public func isUsable(at now: Date) -> Bool {
        switch status(at: now) {
        case .valid, .expiringSoon: true
        case .expired, .notYetValid: false
        }
    }

    /// A line for /health/ready and the log when the certificate needs attention; nil when it does not.
    public func warning(at now: Date) -> String? {
        let date = UTCTimestamp.dateString(notAfter)
        switch status(at: now) {
        case .valid: return nil
        case .expiringSoon(let days):
            return
                "the BankID RP certificate expires in \(days) day\(days == 1 ? "" : "s") (\(date)); renew it"
        case .expired: return "the BankID RP certificate expired on \(date); BankID refuses every call"
        case .notYetValid: return "the BankID RP certificate is not valid yet; check the clock"
        }
    }
}

/// Logs the certificate's warning at most once per day (UTC), however often it is asked: call
/// ``check()`` from a timer or from every readiness probe.
public final class BankIDCertificateMonitor: Sendable {
    /// The certificate being watched.
    public let health: BankIDCertificateHealth
    private let clock: any WallClock
    private let log: @Sendable (String) -> Void
    private let lastWarnedDay = Locked<Int?>(nil)

    /// Creates a monitor.
    /// - Parameters:
    ///   - health: the certificate read at start.
    ///   - clock: the wall clock.
    ///   - log: receives the warning line (at most once a day).
    public init(
        health: BankIDCertificateHealth, clock: any WallClock = SystemClock(),
        log: @escaping @Sendable (String) -> Void
    ) {
        self.health = health
        self.clock = clock
        self.log = log
    }

    /// The current warning, logged when it is the first of this UTC day; nil when all is well.
    @discardableResult
    public func check() -> String? {
        let now = clock.now()
        guard let warning = health.warning(at: now) else { return nil }
        let day = Int((now.timeIntervalSince1970 / 86_400).rounded(.down))
        let first = lastWarnedDay.withLock { last in
            guard last != day else { return false }
            last = day
            return true
        }
        if first { log(warning) }
        return warning
    }
}
