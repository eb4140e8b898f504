public import FoundationEssentials

/// One attestation statement format (WebAuthn L3 §8): verifies `attStmt` and says what it proves.
///
/// The contract every format keeps:
/// - `identifier` is the exact, case-sensitive `fmt` string from the IANA registry ("packed", "tpm").
/// - `verify` runs the format's §8 verification procedure on the statement, the authenticator data
///   (parsed, and as the exact signed bytes) and the client data hash, and nothing else: no I/O, no
///   clock reads (use `context.validationTime`), no trust anchors from the statement itself (x5c
///   roots are never anchors: use `context.trustAnchors(forFormat:)` and, once the format has bound
///   the AAGUID to its certificate, `context.trustAnchors(forAAGUID:)`).
/// - It throws `attestation.invalid_statement` (or a more specific `attestation.*` code it adds) when
///   the statement does not verify; a chain that verifies but reaches no anchor is *not* an error:
///   return `trusted: false` and the trust path, and the ceremony's policy step decides.
/// - It never weakens the ceremony: rpIdHash, flags, challenge and algorithm are checked by the
///   ceremony before `verify` is called, and the credential public key is already parsed and checked.
public protocol AttestationFormat: Sendable {
    /// The fmt identifier this format verifies, matched case-sensitively (§7.1 step 21).
    var identifier: String { get }

    /// Verifies an attestation statement (§7.1 step 22) and assesses its trust (steps 23 and 24).
    ///
    /// - Parameters:
    ///   - statement: attStmt, a CBOR map as decoded.
    ///   - authenticatorData: The parsed authenticator data; attested credential data is present.
    ///   - authenticatorDataBytes: The exact bytes signed over (authData ‖ clientDataHash).
    ///   - clientDataHash: SHA-256 of clientDataJSON.
    ///   - context: Validation time, trust anchors and metadata.
    /// - Returns: The attestation type, the trust path and whether it reached an anchor.
    /// - Throws: `PasskeyError` with an `attestation.*` code when the statement is invalid.
    func verify(
        statement: CBORMap, authenticatorData: AuthenticatorData, authenticatorDataBytes: [UInt8],
        clientDataHash: [UInt8], context: AttestationContext
    ) throws(PasskeyError) -> AttestationOutcome

    /// Verifies an attestation statement whose attStmt is a CBOR array rather than a map.
    ///
    /// Only "compound" (§8.9) has such a statement; the default implementation refuses it, so every
    /// other format keeps a map-only syntax without writing anything.
    ///
    /// - Parameters: As in `verify(statement:...)`, with `statements` the attStmt array.
    /// - Returns: The attestation type, the trust path and whether it reached an anchor.
    /// - Throws: `attestation.malformed` by default; the format's codes when it accepts arrays.
    func verify(
        statements: [CBORValue], authenticatorData: AuthenticatorData, authenticatorDataBytes: [UInt8],
        clientDataHash: [UInt8], context: AttestationContext
    ) throws(PasskeyError) -> AttestationOutcome
}

extension AttestationFormat {
    /// Refuses an array attStmt: §6.5.4 makes attStmt a map for every format but compound.
    public func verify(
        statements: [CBORValue], authenticatorData: AuthenticatorData, authenticatorDataBytes: [UInt8],
        clientDataHash: [UInt8], context: AttestationContext
    ) throws(PasskeyError) -> AttestationOutcome {
        throw PasskeyError(.attestationMalformed, "attStmt must be a map for the \(identifier) format")
    }
}

/// The attestation types of WebAuthn L3 §6.5.3.
public enum AttestationType: String, Sendable, Hashable, CaseIterable {
    /// No attestation statement: nothing about the authenticator is proven.
    case none
    /// Self attestation: signed by the credential key itself; proves possession, not provenance.
    case selfAttestation = "self"
    /// Basic attestation: a batch key with a certificate chain.
    case basic
    /// An Attestation CA vouched for a per-credential key (TPM).
    case attestationCA = "attCA"
    /// An anonymization CA issued a per-credential certificate (Apple).
    case anonymizationCA = "anonCA"
}

/// What an attestation format proved (§7.1 steps 22 to 24).
public struct AttestationOutcome: Sendable, Hashable {
    /// The attestation type.
    public var type: AttestationType
    /// The attestation certificate chain as sent, leaf first, DER; empty for none and self.
    public var trustPath: [[UInt8]]
    /// True only when the trust path chained to an anchor from `AttestationContext`.
    public var trusted: Bool
    /// A human-readable description of the anchor that was reached (its subject), for audit logs.
    public var anchorsUsed: String?

    /// Creates an outcome.
    public init(type: AttestationType, trustPath: [[UInt8]] = [], trusted: Bool, anchorsUsed: String? = nil) {
        self.type = type
        self.trustPath = trustPath
        self.trusted = trusted
        self.anchorsUsed = anchorsUsed
    }
}

/// What a format may consult while verifying: the time, the trust anchors and the metadata.
public struct AttestationContext: Sendable {
    /// The instant certificates must be valid at; injected, never read from a clock here.
    public let validationTime: Date
    /// The AAGUID from the attested credential data, as the authenticator claims it.
    public let aaguid: UUID
    /// Anchors from configuration.
    public let anchors: any TrustAnchorSource
    /// Metadata, when the deployment loads FIDO MDS.
    public let metadata: (any AuthenticatorMetadataSource)?
    /// The relying party's registry, so a compound statement verifies its members with exactly the
    /// formats this relying party accepts (an unregistered format stays refused inside compound too).
    public let formats: AttestationFormatRegistry

    /// Creates a context.
    ///
    /// - Parameter formats: The relying party's formats; the default registry when not given.
    public init(
        validationTime: Date, aaguid: UUID, anchors: any TrustAnchorSource,
        metadata: (any AuthenticatorMetadataSource)?, formats: AttestationFormatRegistry = .default
    ) {
        self.validationTime = validationTime
        self.aaguid = aaguid
        self.anchors = anchors
        self.metadata = metadata
        self.formats = formats
    }

    /// The configured anchors for a format (for example the Apple WebAuthn root for "apple"), DER.
    public func trustAnchors(forFormat identifier: String) -> [[UInt8]] {
        anchors.anchors(forFormat: identifier)
    }

    /// The anchors for an authenticator model, DER: configured ones plus the metadata's
    /// attestationRootCertificates. Only meaningful once the format has bound the AAGUID to the
    /// attestation certificate (packed's id-fido-gen-ce-aaguid extension); an AAGUID the statement does
    /// not prove is just a claim.
    public func trustAnchors(forAAGUID aaguid: UUID) -> [[UInt8]] {
        anchors.anchors(forAAGUID: aaguid) + (metadata?.entry(for: aaguid)?.attestationRootCertificates ?? [])
    }
}

/// The fmt identifiers a relying party verifies, and the format behind each.
///
/// Closed by default: an fmt that is not registered is refused with `attestation.unsupported_format`,
/// whatever the attestation policy, because an unknown format proves nothing and may hide a bypass.
public struct AttestationFormatRegistry: Sendable {
    private var formats: [String: any AttestationFormat]

    /// The formats Portvakt verifies out of the box.
    public static var `default`: AttestationFormatRegistry {
        AttestationFormatRegistry([
            NoneAttestation(), PackedAttestation(), FIDOU2FAttestation(), AppleAttestation(),
            CompoundAttestation(), TPMAttestation(), AndroidKeyAttestation(), AndroidSafetyNetAttestation(),
        ])
    }

    /// A registry of exactly `formats`; a later format with the same identifier replaces an earlier one.
    public init(_ formats: [any AttestationFormat]) {
        self.formats = [:]
        for format in formats { register(format) }
    }

    /// Adds `format`, replacing any format registered under the same identifier.
    public mutating func register(_ format: any AttestationFormat) {
        formats[format.identifier] = format
    }

    /// Removes the format for `identifier`, so that fmt is refused from now on.
    public mutating func unregister(_ identifier: String) {
        formats[identifier] = nil
    }

    /// The format registered for `identifier`, matched case-sensitively.
    public func format(for identifier: String) -> (any AttestationFormat)? { formats[identifier] }

    /// The registered identifiers, sorted.
    public var identifiers: [String] { formats.keys.sorted() }
}

/// Where attestation trust anchors come from: a seam, so configuration, bundled roots or MDS can supply them.
public protocol TrustAnchorSource: Sendable {
    /// DER certificates trusted for every attestation of format `identifier`.
    func anchors(forFormat identifier: String) -> [[UInt8]]
    /// DER certificates trusted for the authenticator model `aaguid`.
    func anchors(forAAGUID aaguid: UUID) -> [[UInt8]]
}

/// Trust anchors held in memory, as loaded from configuration.
public struct StaticTrustAnchors: TrustAnchorSource {
    /// Anchors per fmt identifier.
    public var perFormat: [String: [[UInt8]]]
    /// Anchors per AAGUID.
    public var perAAGUID: [UUID: [[UInt8]]]

    /// Creates an anchor set; empty by default, so no attestation is trusted until configured.
    public init(perFormat: [String: [[UInt8]]] = [:], perAAGUID: [UUID: [[UInt8]]] = [:]) {
        self.perFormat = perFormat
        self.perAAGUID = perAAGUID
    }

    /// The configured anchors for a format.
    public func anchors(forFormat identifier: String) -> [[UInt8]] { perFormat[identifier] ?? [] }

    /// The configured anchors for an AAGUID.
    public func anchors(forAAGUID aaguid: UUID) -> [[UInt8]] { perAAGUID[aaguid] ?? [] }
}

/// A status report about an authenticator model (FIDO MDS3 `AuthenticatorStatus`).
///
/// A struct over the raw string: MDS adds statuses, and unknown ones must survive to the audit log.
public struct AuthenticatorStatus: RawRepresentable, Sendable, Hashable {
    /// The status as MDS spells it.
    public let rawValue: String

    /// Wraps a status.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// FIDO certified at some level.
    public static let fidoCertified = AuthenticatorStatus(rawValue: "FIDO_CERTIFIED")
    /// The certification was revoked.
    public static let revoked = AuthenticatorStatus(rawValue: "REVOKED")
    /// The attestation key is known to be compromised.
    public static let attestationKeyCompromise = AuthenticatorStatus(rawValue: "ATTESTATION_KEY_COMPROMISE")
    /// User verification can be bypassed.
    public static let userVerificationBypass = AuthenticatorStatus(rawValue: "USER_VERIFICATION_BYPASS")
    /// User keys can be extracted remotely.
    public static let userKeyRemoteCompromise = AuthenticatorStatus(rawValue: "USER_KEY_REMOTE_COMPROMISE")
    /// User keys can be extracted with physical access.
    public static let userKeyPhysicalCompromise = AuthenticatorStatus(
        rawValue: "USER_KEY_PHYSICAL_COMPROMISE")

    /// True for the statuses that make an authenticator model unfit for strict deployments.
    public var isCompromise: Bool {
        [
            .revoked, .attestationKeyCompromise, .userVerificationBypass, .userKeyRemoteCompromise,
            .userKeyPhysicalCompromise,
        ].contains(self)
    }
}

/// What metadata says about one authenticator model.
public struct AuthenticatorMetadata: Sendable, Hashable {
    /// The model's name ("YubiKey 5 Series", "iCloud Keychain").
    public var name: String?
    /// The roots its attestations chain to, DER.
    public var attestationRootCertificates: [[UInt8]]
    /// Its status reports, newest last.
    public var statusReports: [AuthenticatorStatus]

    /// Creates a metadata entry.
    public init(
        name: String?, attestationRootCertificates: [[UInt8]] = [], statusReports: [AuthenticatorStatus] = []
    ) {
        self.name = name
        self.attestationRootCertificates = attestationRootCertificates
        self.statusReports = statusReports
    }
}

/// Authenticator metadata by AAGUID: the seam where a verified FIDO MDS3 BLOB plugs in.
public protocol AuthenticatorMetadataSource: Sendable {
    /// The entry for `aaguid`, nil when the model is unknown.
    func entry(for aaguid: UUID) -> AuthenticatorMetadata?
}

/// Metadata held in memory (tests, or a BLOB already verified and loaded by the application).
public struct InMemoryMetadataSource: AuthenticatorMetadataSource {
    /// The entries by AAGUID.
    public var entries: [UUID: AuthenticatorMetadata]

    /// Creates a source of `entries`.
    public init(entries: [UUID: AuthenticatorMetadata] = [:]) { self.entries = entries }

    /// The entry for `aaguid`.
    public func entry(for aaguid: UUID) -> AuthenticatorMetadata? { entries[aaguid] }
}

/// The "none" attestation format (§8.7): no statement, nothing proven.
public struct NoneAttestation: AttestationFormat {
    /// "none".
    public let identifier = "none"

    /// Creates the format.
    public init() {}

    /// Accepts only an empty statement: anything inside would be an unverified claim.
    ///
    /// - Returns: Type none, no trust path, not trusted.
    /// - Throws: `attestation.invalid_statement` when attStmt is not empty.
    public func verify(
        statement: CBORMap, authenticatorData: AuthenticatorData, authenticatorDataBytes: [UInt8],
        clientDataHash: [UInt8], context: AttestationContext
    ) throws(PasskeyError) -> AttestationOutcome {
        guard statement.isEmpty else {
            throw PasskeyError(.attestationInvalidStatement, "the none format's attStmt must be an empty map")
        }
        return AttestationOutcome(type: .none, trustPath: [], trusted: false, anchorsUsed: nil)
    }
}
