import FoundationEssentials
import Kernel

/// The answer to /auth and /sign. Decodable but not Encodable: it holds the qrStartSecret, which
/// must never be written into a response or a log.
public struct BankIDStartResponse: Sendable, Decodable {
    /// BankID's reference for the order, used for /collect and /cancel.
    public let orderRef: String
    /// The token for the same-device launch link (`bankid:///?autostarttoken=…`).
    public let autoStartToken: String
    /// The public half of the animated QR code.
    public let qrStartToken: String
    /// The secret half of the animated QR code: kept on the server, redacted when printed.
    public let qrStartSecret: QRStartSecret

    /// Creates a response (for tests and the coordinator's stored orders).
    public init(orderRef: String, autoStartToken: String, qrStartToken: String, qrStartSecret: QRStartSecret)
    {
        self.orderRef = orderRef
        self.autoStartToken = autoStartToken
        self.qrStartToken = qrStartToken
        self.qrStartSecret = qrStartSecret
    }
}

/// The answer to /phone/auth and /phone/sign: only the order's reference.
public struct BankIDPhoneStartResponse: Sendable, Decodable, Equatable {
    /// BankID's reference for the order.
    public let orderRef: String
}

/// Where an order stands, as /collect reports it.
public enum CollectStatus: Sendable, Hashable {
    /// Still waiting for the user; collect again in 2 seconds.
    case pending
    /// Ended without a result; never collect it again.
    case failed
    /// The user identified or signed; completionData is present.
    case complete
    /// A status this version does not know; treated as pending (and shown with RFA21).
    case unknown(String)

    /// The raw value BankID sends.
    public var rawValue: String {
        switch self {
        case .pending: "pending"
        case .failed: "failed"
        case .complete: "complete"
        case .unknown(let raw): raw
        }
    }

    /// Reads a raw value, keeping unknown ones.
    public init(rawValue: String) {
        switch rawValue {
        case "pending": self = .pending
        case "failed": self = .failed
        case "complete": self = .complete
        default: self = .unknown(rawValue)
        }
    }

    /// Whether the order has ended, so it must never be collected again.
    public var isFinal: Bool { self == .failed || self == .complete }
}

/// A hint about a pending or failed order. Unknown codes are kept as `.unknown(raw)`: BankID adds
/// codes without notice, and they get the default message for their status.
public enum HintCode: Sendable, Hashable {
    // Pending.
    /// The order is being processed; the app has not yet picked it up.
    case outstandingTransaction
    /// No app has picked up the order (the user has no BankID app, or it is not started).
    case noClient
    /// The app has started the order and is looking for a BankID.
    case started
    /// The app is waiting for the user to scan their ID document.
    case userMrtd
    /// The user is asked to confirm a phone call is genuine (phone orders).
    case userCallConfirm
    /// The app is waiting for the user's security code or biometrics.
    case userSign
    // Failed.
    /// The order expired before the user finished.
    case expiredTransaction
    /// The user's BankID is blocked, too old, or not allowed by the requirement.
    case certificateErr
    /// The user cancelled in the app.
    case userCancel
    /// The order was cancelled (by the RP, or by a new order for the same person).
    case cancelled
    /// The app could not start the order (no QR scanned in time, or autostart failed).
    case startFailed
    /// The user declined the phone call.
    case userDeclinedCall
    /// The user's app is too old for the order's requirements.
    case notSupportedByUserApp
    /// BankID blocked the order for its risk.
    case transactionRiskBlocked
    /// A code this version does not know.
    case unknown(String)

    /// Every code this version knows, in the reference's order.
    public static let known: [HintCode] = [
        .outstandingTransaction, .noClient, .started, .userMrtd, .userCallConfirm, .userSign,
        .expiredTransaction, .certificateErr, .userCancel, .cancelled, .startFailed, .userDeclinedCall,
        .notSupportedByUserApp, .transactionRiskBlocked,
    ]

    /// The raw value BankID sends.
    public var rawValue: String {
        switch self {
        case .outstandingTransaction: "outstandingTransaction"
        case .noClient: "noClient"
        case .started: "started"
        case .userMrtd: "userMrtd"
        case .userCallConfirm: "userCallConfirm"
        case .userSign: "userSign"
        case .expiredTransaction: "expiredTransaction"
        case .certificateErr: "certificateErr"
        case .userCancel: "userCancel"
        case .cancelled: "cancelled"
        case .startFailed: "startFailed"
        case .userDeclinedCall: "userDeclinedCall"
        case .notSupportedByUserApp: "notSupportedByUserApp"
        case .transactionRiskBlocked: "transactionRiskBlocked"
        case .unknown(let raw): raw
        }
    }

    /// Reads a raw value, keeping unknown ones.
    public init(rawValue: String) {
        self = Self.known.first { $0.rawValue == rawValue } ?? .unknown(rawValue)
    }
}

extension CollectStatus: Decodable {
    /// Decodes the raw string, keeping unknown values.
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }
}

extension HintCode: Decodable {
    /// Decodes the raw string, keeping unknown values.
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }
}

/// What BankID reports about the user and the order once it is complete.
public struct CompletionData: Sendable, Decodable {
    /// The person who identified or signed.
    public struct User: Sendable, Decodable {
        /// Their personal number: redacted when printed; hash it with ``IdentityHasher`` to keep it.
        public let personalNumber: PersonalNumber
        /// The full name.
        public let name: String
        /// The given name.
        public let givenName: String
        /// The surname.
        public let surname: String
    }

    /// The device the order was completed on.
    public struct Device: Sendable, Decodable, Equatable {
        /// The device's IP address as BankID saw it.
        public let ipAddress: String
        /// BankID's unique hardware identifier of the device, when sent.
        public let uhi: String?
    }

    /// The extra checks the user passed.
    public struct StepUp: Sendable, Decodable, Equatable {
        /// Whether the user scanned their ID document.
        public let mrtd: Bool
    }

    /// The user.
    public let user: User
    /// The device.
    public let device: Device
    /// When the user's BankID was issued, YYYY-MM-DD.
    public let bankIdIssueDate: String?
    /// Present when an MRTD step-up was required.
    public let stepUp: StepUp?
    /// The XML signature, base64.
    public let signature: String?
    /// The OCSP response, base64.
    public let ocspResponse: String?
    /// BankID's risk assessment ("low", "moderate", "high"), when returnRisk was set.
    public let risk: String?
}

/// The answer to /collect.
public struct BankIDCollectResponse: Sendable, Decodable {
    /// The order's reference.
    public let orderRef: String
    /// Where the order stands.
    public let status: CollectStatus
    /// A hint for pending and failed orders.
    public let hintCode: HintCode?
    /// The result, for complete orders.
    public let completionData: CompletionData?
}

/// An error body: `{"errorCode": "...", "details": "..."}`.
struct BankIDErrorBody: Decodable {
    let errorCode: String?
    let details: String?
}
