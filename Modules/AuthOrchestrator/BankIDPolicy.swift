public import BankIDCore
public import FoundationEssentials

/// BankID's journeys as a deployment offers them, and how their orders are run.
///
/// Three of them exchange a BankID identification for another way in, which BankID's terms call
/// ID switching (ID-växling) and forbid unless the relying party's bank agrees: `link`,
/// `recovery` and `passkeyAfterBankID` (Docs/bankid.md#bankid-and-id-switching). The app turns
/// them on only where the configuration acknowledges them (or runs the simulator);
/// `idSwitchingFeatures` names the ones on.
public struct BankIDPolicy: Sendable {
    /// BankID login to a linked account.
    public var login: Bool
    /// BankID-first sign-up.
    public var signup: Bool
    /// Recovery after losing every device: a one-time enrollment token for a linked account
    /// (refused as `bankid.intent_not_supported` when the service has no token issuer).
    public var recovery: Bool
    /// Linking an identity to the signed-in account (ID switching: BankID confirms the identity
    /// behind an account that uses passkeys).
    public var link: Bool
    /// Step-up signatures.
    public var sign: Bool
    /// A session BankID opened (login, sign-up) may add a passkey, and its result offers one
    /// (`suggestPasskey`). ID switching: a passkey issued on the strength of a BankID
    /// identification. Off, the offer is not made and `PasskeyRegistration` refuses a passkey for
    /// a BankID session (`passkey.id_switching_refused`).
    public var passkeyAfterBankID: Bool
    /// The support desk may check a caller by a BankID phone order (`BankIDPhoneVerificationService`).
    /// ID switching: it confirms the person behind a passkey account. Off, the admin routes and
    /// `portvakt admin bankid` do not exist.
    public var supportPhoneCheck: Bool = true
    /// Ask BankID for its risk assessment.
    public var returnRisk: Bool
    /// The highest risk a login, sign-up, link or recovery accepts; nil accepts any.
    public var riskCeiling: BankIDRiskLevel?
    /// How long a signature keeps the session stepped up.
    public var stepUpLifetime: TimeInterval
    /// Whether a signature's evidence keeps BankID's signature itself (it names the signer), where
    /// the deployment is allowed to; otherwise only its SHA-256.
    public var keepsSignatures: Bool = false
    /// The page BankID returns to after a web client's same-device order (a `nonce` parameter is
    /// added; the result is delivered only to a poll that presents it).
    public var returnURL: String

    /// Creates a policy; every journey on (the simulator's default), no risk ceiling, 600 s step-up.
    public init(
        login: Bool = true, signup: Bool = true, recovery: Bool = true, link: Bool = true, sign: Bool = true,
        passkeyAfterBankID: Bool = true, returnRisk: Bool = false, riskCeiling: BankIDRiskLevel? = nil,
        stepUpLifetime: TimeInterval = 600, returnURL: String = "http://localhost:8080/"
    ) {
        self.login = login
        self.signup = signup
        self.recovery = recovery
        self.link = link
        self.sign = sign
        self.passkeyAfterBankID = passkeyAfterBankID
        self.returnRisk = returnRisk
        self.riskCeiling = riskCeiling
        self.stepUpLifetime = stepUpLifetime
        self.returnURL = returnURL
    }

    /// Whether the journey for `intent` is on.
    public func allows(_ intent: BankIDOrderIntent) -> Bool {
        switch intent {
        case .login: login
        case .signup: signup
        case .recovery: recovery
        case .link: link
        case .sign: sign
        }
    }

    /// The ID-switching features that are on, in `IDSwitchingFeature` order.
    public var idSwitchingFeatures: [IDSwitchingFeature] {
        IDSwitchingFeature.allCases.filter {
            switch $0 {
            case .link: link
            case .recovery: recovery
            case .passkeyAfterBankID: passkeyAfterBankID && (login || signup)
            case .supportPhoneCheck: supportPhoneCheck
            }
        }
    }

    /// Whether a completion with BankID's reported `risk` (its raw text) is under the ceiling.
    ///
    /// A risk that was asked for and is missing, or a level BankID added after this release,
    /// counts as above every ceiling: the ceiling fails closed.
    public func admitsRisk(_ risk: String?) -> Bool {
        guard let riskCeiling else { return true }
        guard let level = risk.flatMap(BankIDRiskLevel.init(rawValue:)) else { return false }
        return level <= riskCeiling
    }
}

/// BankID's risk assessment of an order (`completionData.risk` with `returnRisk`), ordered
/// low < moderate < high.
///
/// Not BankIDCore's `RiskLevel`: that one is what a request may demand of BankID, and BankID
/// accepts no `high` there.
public enum BankIDRiskLevel: String, Sendable, CaseIterable, Comparable {
    /// Low risk.
    case low
    /// Moderate risk.
    case moderate
    /// High risk.
    case high

    /// The order BankID ranks its levels in.
    private var rank: Int {
        switch self {
        case .low: 0
        case .moderate: 1
        case .high: 2
        }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rank < rhs.rank }
}

/// A feature that exchanges a BankID identification for another way in: what BankID's terms
/// call ID switching (ID-växling). The raw values are the configuration's names.
public enum IDSwitchingFeature: String, Sendable, CaseIterable {
    /// Linking a BankID identity to an account that signs in with passkeys.
    case link
    /// BankID recovery: an identification exchanged for an enrollment token for a new passkey.
    case recovery
    /// A passkey added in a session BankID opened, and the offer to add one after a BankID login
    /// or sign-up.
    case passkeyAfterBankID
    /// The support desk's BankID phone check of a passkey account's owner.
    case supportPhoneCheck
}
