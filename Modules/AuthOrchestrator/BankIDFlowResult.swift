public import BankIDCore
public import FoundationEssentials
public import Kernel
public import SessionCore

/// A started order as the client sees it.
public struct StartedBankIDFlow: Sendable {
    /// Our own order id: the capability for polling and cancelling.
    public let orderID: String
    /// The token for the same-device launch link.
    public let autoStartToken: String?
    /// The universal link that opens the BankID app on this device.
    public let launchURL: String?
    /// The QR data at t = 0 (another device).
    public let qrData: String?
    /// A new client binding to hand to the client (cookie or body); nil when the request had one
    /// or was signed in.
    public let newBinding: String?
    /// A new device cookie for a browser that had none (web clients): the raw value, which only
    /// the browser keeps; BankID receives its keyed hash.
    public var newDeviceCookie: String? = nil
}

/// What a completed order did. Built only through the named constructors, one per kind of
/// result, so each outcome carries exactly the fields it shows.
public struct BankIDFlowResult: Sendable {
    /// What happened; `bankid.result_delivered` for every poll after the one that received it.
    public let code: BankIDOutcome
    /// The account concerned, when it may be shown to this client.
    public let user: User?
    /// The session opened (login, sign-up), delivered once.
    public let session: IssuedSession?
    /// Where that session's token goes.
    public let clientKind: ClientKind
    /// The account has no passkey on this device yet: offer to add one. Never true where the
    /// policy does not let a BankID session add a passkey (BankID's rule against ID switching).
    public let suggestPasskey: Bool
    /// Until when the session is stepped up (sign).
    public let steppedUpUntil: Date?
    /// Whether BankID sign-up is available (with `bankid.no_account` only).
    public let signupAvailable: Bool
    /// Recovery: the one-time enrollment token for a new passkey (`bankid.recovery_verified`),
    /// delivered once; POST /v1/passkeys/registration/initialize takes it.
    public let enrollmentToken: String?
    /// A result that opened a session: the account's passkeys and names, for the Signal API
    /// (nil when they could not be read: the result stands).
    public internal(set) var signals: PasskeySignals?

    private init(
        _ code: BankIDOutcome, clientKind: ClientKind, user: User? = nil, session: IssuedSession? = nil,
        suggestPasskey: Bool = false, steppedUpUntil: Date? = nil, signupAvailable: Bool = false,
        enrollmentToken: String? = nil
    ) {
        self.code = code
        self.user = user
        self.session = session
        self.clientKind = clientKind
        self.suggestPasskey = suggestPasskey
        self.steppedUpUntil = steppedUpUntil
        self.signupAvailable = signupAvailable
        self.enrollmentToken = enrollmentToken
    }

    /// A BankID session for an existing account (`bankid.signed_in`); `suggestPasskey` where the
    /// policy lets a BankID session add one (`BankIDPolicy.passkeyAfterBankID`).
    static func signedIn(_ user: User, session: IssuedSession, clientKind: ClientKind, suggestPasskey: Bool)
        -> Self
    {
        // BankID was the way in because no passkey was at hand here: offer to add one.
        Self(.signedIn, clientKind: clientKind, user: user, session: session, suggestPasskey: suggestPasskey)
    }

    /// A new account and its first session (`bankid.account_created`); `suggestPasskey` as for
    /// `signedIn`.
    static func accountCreated(
        _ user: User, session: IssuedSession, clientKind: ClientKind, suggestPasskey: Bool
    ) -> Self {
        Self(
            .accountCreated, clientKind: clientKind, user: user, session: session,
            suggestPasskey: suggestPasskey)
    }

    /// No account has the identity (`bankid.no_account`); `signupAvailable` tells the client
    /// whether to offer a sign-up order.
    static func noAccount(signupAvailable: Bool, clientKind: ClientKind) -> Self {
        Self(.noAccount, clientKind: clientKind, signupAvailable: signupAvailable)
    }

    /// The identity is now linked to `user` (`bankid.linked`).
    static func linked(_ user: User, clientKind: ClientKind) -> Self {
        Self(.linked, clientKind: clientKind, user: user)
    }

    /// The session is stepped up until `until` (`bankid.signed`).
    static func signed(_ user: User, until: Date, clientKind: ClientKind) -> Self {
        Self(.signed, clientKind: clientKind, user: user, steppedUpUntil: until)
    }

    /// The recovering account and its one-time enrollment token (`bankid.recovery_verified`).
    static func recoveryVerified(_ user: User, enrollmentToken: String, clientKind: ClientKind) -> Self {
        Self(.recoveryVerified, clientKind: clientKind, user: user, enrollmentToken: enrollmentToken)
    }

    /// An outcome that consumed the completion and changed nothing else (a refusal, a repeated
    /// link); `user` only where the client may see the account.
    static func unchanged(_ outcome: BankIDOutcome, user: User? = nil, clientKind: ClientKind) -> Self {
        Self(outcome, clientKind: clientKind, user: user)
    }

    /// The answer to every poll after the one that received the result: what happened, never
    /// the session or the token again.
    static func delivered(clientKind: ClientKind) -> Self {
        Self(.resultDelivered, clientKind: clientKind)
    }
}

/// Where an order stands for its client.
public struct BankIDFlowStatus: Sendable {
    /// pending, complete, failed or cancelled.
    public let status: BankIDOrderStatus
    /// BankID's last hint code.
    public let hintCode: String?
    /// The message to show; nil once complete.
    public let message: RecommendedMessage?
    /// The QR data for this second, while pending on another device.
    public let qrData: String?
    /// The result, once complete.
    public let result: BankIDFlowResult?
    /// Complete, but held until the client polls with the nonce from the returnUrl (a web
    /// client's same-device order); `status` says pending meanwhile.
    public let awaitingReturn: Bool

    init(
        status: BankIDOrderStatus, hintCode: String?, message: RecommendedMessage?, qrData: String?,
        result: BankIDFlowResult?
    ) {
        self.status = status
        self.hintCode = hintCode
        self.message = message
        self.qrData = qrData
        self.result = result
        awaitingReturn = false
    }

    private init(awaitingReturn: Void) {
        status = .pending
        hintCode = nil
        message = nil
        qrData = nil
        result = nil
        self.awaitingReturn = true
    }

    /// Complete in the app, but the result waits for the browser BankID returns to.
    static let awaitingReturn = Self(awaitingReturn: ())
}
