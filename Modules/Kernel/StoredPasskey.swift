public import FoundationEssentials

/// A registered passkey (a WebAuthn public-key credential) as Portvakt keeps it.
public struct StoredPasskey: Sendable, Equatable {
    /// The credential id the authenticator chose (1 to 1023 bytes); unique across all users.
    public var credentialID: [UInt8]
    /// The user who owns it.
    public var userID: String
    /// The credential public key in COSE_Key form, as registered.
    public var publicKey: [UInt8]
    /// The COSE algorithm identifier (for example -7 for ES256).
    public var algorithm: Int
    /// The signature counter last seen; 0 for authenticators that do not count.
    public var signCount: UInt32
    /// The authenticator model's AAGUID in its textual UUID form (all zeros when not disclosed).
    public var aaguid: String
    /// The provider's name looked up from the AAGUID (for example "iCloud Keychain"), if known.
    public var providerName: String?
    /// The transports the client reported (for example "internal", "hybrid").
    public var transports: [String]
    /// The BE flag at registration: whether the credential may be synced.
    public var backupEligible: Bool
    /// The BS flag last seen: whether the credential is currently backed up.
    public var backupState: Bool
    /// The attestation statement format ("none", "packed", …).
    public var attestationFormat: String
    /// The attestation type the verifier found ("None", "Self", "Basic", "AttCA", …).
    public var attestationType: String
    /// Whether the attestation chained to a trusted root.
    public var attestationTrusted: Bool
    /// The user-given name shown in passkey lists.
    public var name: String
    /// When it was registered.
    public var createdAt: Date
    /// When it was last used to sign in; nil before the first use.
    public var lastUsedAt: Date?

    /// Creates a passkey value.
    public init(
        credentialID: [UInt8], userID: String, publicKey: [UInt8], algorithm: Int,
        signCount: UInt32, aaguid: String, providerName: String?, transports: [String],
        backupEligible: Bool, backupState: Bool, attestationFormat: String,
        attestationType: String, attestationTrusted: Bool, name: String, createdAt: Date,
        lastUsedAt: Date?
    ) {
        self.credentialID = credentialID
        self.userID = userID
        self.publicKey = publicKey
        self.algorithm = algorithm
        self.signCount = signCount
        self.aaguid = aaguid
        self.providerName = providerName
        self.transports = transports
        self.backupEligible = backupEligible
        self.backupState = backupState
        self.attestationFormat = attestationFormat
        self.attestationType = attestationType
        self.attestationTrusted = attestationTrusted
        self.name = name
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }
}
