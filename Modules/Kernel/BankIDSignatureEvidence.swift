public import FoundationEssentials

/// The evidence of one completed BankID signature: what was signed, by which account, BankID's
/// OCSP response and completion facts, and the signature (BankID's XML, which names the signer:
/// personal number and name) only where the deployment keeps it (`bankid.keepSignatures`);
/// its SHA-256 always.
public struct BankIDSignatureEvidence: Sendable, Equatable {
    /// Its id, named by the `bankid.step_up` audit event (`evidenceId`).
    public var id: String
    /// The account that signed.
    public var userID: String
    /// The session the signature stepped up.
    public var sessionID: String
    /// When BankID completed the order.
    public var signedAt: Date
    /// The text the user was shown and signed.
    public var userVisibleText: String
    /// The SHA-256 of the signature as BankID gave it (base64 text's bytes).
    public var signatureSHA256: [UInt8]
    /// The signature (base64 XML), when kept.
    public var signature: String?
    /// BankID's OCSP response for the signing certificate (base64; names no person).
    public var ocspResponse: String?
    /// When the signer's BankID was issued (`completionData.bankIdIssueDate`).
    public var bankIDIssueDate: String?
    /// Whether the ID document check was made (`completionData.stepUp.mrtd`).
    public var mrtd: Bool?
    /// BankID's risk assessment, when asked for.
    public var risk: String?

    /// Creates evidence.
    public init(
        id: String, userID: String, sessionID: String, signedAt: Date, userVisibleText: String,
        signatureSHA256: [UInt8], signature: String?, ocspResponse: String?, bankIDIssueDate: String?,
        mrtd: Bool?, risk: String?
    ) {
        self.id = id
        self.userID = userID
        self.sessionID = sessionID
        self.signedAt = signedAt
        self.userVisibleText = userVisibleText
        self.signatureSHA256 = signatureSHA256
        self.signature = signature
        self.ocspResponse = ocspResponse
        self.bankIDIssueDate = bankIDIssueDate
        self.mrtd = mrtd
        self.risk = risk
    }
}
