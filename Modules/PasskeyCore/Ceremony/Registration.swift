import CryptoCore
public import FoundationEssentials

/// A registration that passed every §7.1 step: what the caller stores as the credential record.
public struct VerifiedRegistration: Sendable {
    /// The credential ID (at most 1023 bytes); look credentials up by it.
    public let credentialID: [UInt8]
    /// The credential public key, parsed and ready to verify with; keep it in caches.
    public let publicKey: COSEKey
    /// The signature counter at registration; 0 for authenticators that do not count.
    public let signCount: UInt32
    /// The authenticator model's AAGUID (all zeros when not disclosed); proven only when `attestationTrusted`.
    public let aaguid: UUID
    /// The authenticator data flags.
    public let flags: AuthenticatorData.Flags
    /// The transports to list in allowCredentials later.
    public let transports: [AuthenticatorTransport]
    /// The attestation fmt.
    public let attestationFormat: String
    /// The attestation type the format proved.
    public let attestationType: AttestationType
    /// True when the attestation chained to a configured trust anchor.
    public let attestationTrusted: Bool
    /// The attestation certificate chain, leaf first, DER; empty for none and self.
    public let attestationTrustPath: [[UInt8]]
    /// The anchor that was reached, described for audit logs.
    public let attestationAnchor: String?
    /// Platform or cross-platform, when the client said.
    public let authenticatorAttachment: AuthenticatorAttachment?
    /// credProps.rk: whether the client reports the credential as discoverable; nil when not reported.
    public let residentKey: Bool?
    /// Metadata for the AAGUID, when a metadata source knows it (a name for the UI, status reports).
    public let authenticatorMetadata: AuthenticatorMetadata?

    /// The COSE_Key bytes to store.
    public var publicKeyBytes: [UInt8] { publicKey.encoded }
    /// The credential's algorithm.
    public var algorithm: COSEAlgorithm { publicKey.algorithm }
    /// UP.
    public var userPresent: Bool { flags.contains(.userPresent) }
    /// UV.
    public var userVerified: Bool { flags.contains(.userVerified) }
    /// BE: a synced passkey. Store it; logins report when it changes.
    public var backupEligible: Bool { flags.contains(.backupEligible) }
    /// BS: backed up right now.
    public var backupState: Bool { flags.contains(.backupState) }
}

/// Verifies a registration response by WebAuthn L3 §7.1, step by step. Stores nothing.
///
/// The caller still owns step 26 (the credential ID must not be registered to any user) and step 27
/// (storing the record): both need storage, which PasskeyCore does not have.
///
/// - Parameters:
///   - response: The parsed `RegistrationResponseJSON`.
///   - expectedChallenge: The challenge issued with the options (and now consumed by the caller).
///   - relyingParty: Origins, RP ID, policies, algorithms and attestation formats.
///   - requireUserVerification: Overrides the policy's UV requirement for this ceremony; nil follows it.
///   - conditionalMediation: The options were used with `mediation: "conditional"` (an automatic
///     passkey upgrade), so UP may be clear (step 14). Only the caller knows: the client data
///     does not say, so it must come from what the caller recorded when it issued the challenge.
///   - validationTime: The instant attestation certificates must be valid at.
/// - Returns: The credential to store.
/// - Throws: `PasskeyError` with the failing step's code.
public func verifyRegistration(
    response: RegistrationResponseJSON, expectedChallenge: [UInt8], relyingParty: RelyingParty,
    requireUserVerification: Bool? = nil, conditionalMediation: Bool = false, at validationTime: Date
) throws(PasskeyError) -> VerifiedRegistration {
    // Steps 5 and 6: UTF-8 decode and parse clientDataJSON.
    let clientData = try CollectedClientData(bytes: response.clientDataJSON)
    try SharedSteps.verifyType(clientData, expected: "webauthn.create")
    try SharedSteps.verifyChallenge(clientData, expected: expectedChallenge)
    try SharedSteps.verifyOrigin(clientData, relyingParty)
    try SharedSteps.verifyCrossOrigin(clientData, relyingParty)
    try SharedSteps.verifyTopOrigin(clientData, relyingParty)
    // Step 11.
    let clientDataHash = Digest.sha256(response.clientDataJSON)
    let attestation = try RegistrationSteps.decodeAttestationObject(response.attestationObject)
    let authenticatorData = try AuthenticatorData(bytes: attestation.authenticatorData)
    try RegistrationSteps.verifyConvenienceMembers(response, attestation.authenticatorData)
    try SharedSteps.verifyRPIDHash(authenticatorData, relyingParty)
    // Step 14: "If options.mediation is not set to conditional, verify that the UP bit is set."
    if !conditionalMediation { try SharedSteps.verifyUserPresent(authenticatorData) }
    try SharedSteps.verifyUserVerified(authenticatorData, relyingParty, override: requireUserVerification)
    // Step 16 (BS without BE) is structural and refused by AuthenticatorData; steps 17 and 18 record
    // BE and BS in the result for the caller's policy.
    let credential = try RegistrationSteps.attestedCredential(authenticatorData)
    // Steps 25 and the rawId binding run before the attestation statement: they are cheap, and every
    // step must pass anyway, so the order changes only which error a doubly broken response gets.
    try RegistrationSteps.verifyCredentialIDLength(response.rawID)
    try RegistrationSteps.verifyCredentialIDMatches(response.rawID, credential)
    try RegistrationSteps.verifyPublicKeyMember(response, credential)
    try RegistrationSteps.verifyAlgorithm(credential, relyingParty)
    // Step 20: no extension outputs are required; credProps is read from the client results below.
    let format = try RegistrationSteps.attestationFormat(attestation.format, relyingParty)
    let context = AttestationContext(
        validationTime: validationTime, aaguid: credential.aaguid, anchors: relyingParty.trustAnchors,
        metadata: relyingParty.metadata, formats: relyingParty.attestationFormats)
    let outcome = try RegistrationSteps.verifyStatement(
        format, attestation.statement, authenticatorData, clientDataHash, context)
    let metadata = relyingParty.metadata?.entry(for: credential.aaguid)
    try RegistrationSteps.verifyTrust(outcome, metadata, relyingParty.attestationPolicy)

    return VerifiedRegistration(
        credentialID: credential.credentialID, publicKey: credential.credentialPublicKey,
        signCount: authenticatorData.signCount, aaguid: credential.aaguid, flags: authenticatorData.flags,
        transports: response.transports, attestationFormat: attestation.format, attestationType: outcome.type,
        attestationTrusted: outcome.trusted, attestationTrustPath: outcome.trustPath,
        attestationAnchor: outcome.anchorsUsed, authenticatorAttachment: response.authenticatorAttachment,
        residentKey: response.clientExtensionResults.credentialPropertiesResidentKey,
        authenticatorMetadata: metadata)
}

/// The registration-only steps of §7.1.
enum RegistrationSteps {
    /// The three members of an attestation object (§6.5.4).
    struct AttestationObject {
        let format: String
        let statement: Statement
        let authenticatorData: [UInt8]
    }

    /// attStmt: a map for every format, an array for compound (§8.9).
    enum Statement {
        case map(CBORMap)
        case array([CBORValue])
    }

    /// §7.1 step 12: CBOR-decode the attestation object into fmt, attStmt and authData, and nothing else.
    static func decodeAttestationObject(_ bytes: [UInt8]) throws(PasskeyError) -> AttestationObject {
        let value: CBORValue
        do throws(PasskeyError) {
            value = try CBORDecoder().decode(bytes)
        } catch {
            throw error.context("attestationObject")
        }
        guard case .map(let map) = value else {
            throw PasskeyError(
                .attestationMalformed, "attestationObject must be a map, found \(value.typeName)")
        }
        // §6.5.4 defines exactly three members; anything else is a client we do not understand.
        guard map.count == 3 else {
            throw PasskeyError(
                .attestationMalformed, "attestationObject must hold exactly fmt, attStmt and authData")
        }
        guard case .text(let format)? = map[name: "fmt"] else {
            throw PasskeyError(.attestationMalformed, "attestationObject needs fmt as a text string")
        }
        let statement: Statement
        switch map[name: "attStmt"] {
        case .map(let members)?: statement = .map(members)
        // Only compound takes an array; every other format refuses one as attestation.malformed.
        case .array(let items)?: statement = .array(items)
        default:
            throw PasskeyError(.attestationMalformed, "attestationObject needs attStmt as a map or array")
        }
        guard case .bytes(let authenticatorData)? = map[name: "authData"] else {
            throw PasskeyError(.attestationMalformed, "attestationObject needs authData as a byte string")
        }
        return AttestationObject(format: format, statement: statement, authenticatorData: authenticatorData)
    }

    /// §5.2.1 (L3 getters): the response's authenticatorData and publicKeyAlgorithm members, when sent,
    /// agree with the attestation object, so nothing downstream can read a different value.
    static func verifyConvenienceMembers(_ response: RegistrationResponseJSON, _ authenticatorData: [UInt8])
        throws(PasskeyError)
    {
        if let convenience = response.authenticatorData, convenience != authenticatorData {
            throw PasskeyError(
                .responseInconsistent, "response.authenticatorData differs from the attestation object's")
        }
    }

    /// §7.1 step 19 precondition: registration authenticator data carries the new credential (AT).
    static func attestedCredential(_ authenticatorData: AuthenticatorData) throws(PasskeyError)
        -> AttestedCredentialData
    {
        guard let credential = authenticatorData.attestedCredentialData else {
            throw PasskeyError(
                .ceremonyMissingAttestedCredential, "registration authenticator data has no credential")
        }
        return credential
    }

    /// §7.1 step 25: the credential ID is at most 1023 bytes.
    static func verifyCredentialIDLength(_ rawID: [UInt8]) throws(PasskeyError) {
        guard rawID.count <= AuthenticatorData.maximumCredentialIDLength else {
            throw PasskeyError(
                .ceremonyCredentialIDTooLong,
                "rawId is \(rawID.count) bytes, at most \(AuthenticatorData.maximumCredentialIDLength)")
        }
    }

    /// §7.1 step 25 with §5.1: rawId is the credential ID the authenticator attested, so the ID stored
    /// is the one the signed data names.
    static func verifyCredentialIDMatches(_ rawID: [UInt8], _ credential: AttestedCredentialData)
        throws(PasskeyError)
    {
        guard rawID == credential.credentialID else {
            throw PasskeyError(.ceremonyCredentialIDMismatch, "rawId is not the attested credential ID")
        }
    }

    /// §5.2.1 (L3 getters): publicKeyAlgorithm and publicKey, when sent, describe the attested key.
    static func verifyPublicKeyMember(
        _ response: RegistrationResponseJSON, _ credential: AttestedCredentialData
    )
        throws(PasskeyError)
    {
        let key = credential.credentialPublicKey
        if let algorithm = response.publicKeyAlgorithm, algorithm != key.algorithm.rawValue {
            throw PasskeyError(
                .responseInconsistent, "response.publicKeyAlgorithm differs from the attested key's")
        }
        // SubjectPublicKeyInfo has one DER encoding per key, so comparing bytes compares keys.
        if let spki = response.publicKey, spki != key.publicKey.derRepresentation {
            throw PasskeyError(.responseInconsistent, "response.publicKey is not the attested key")
        }
    }

    /// §7.1 step 19: the credential's algorithm is one the relying party offered.
    static func verifyAlgorithm(_ credential: AttestedCredentialData, _ relyingParty: RelyingParty)
        throws(PasskeyError)
    {
        let algorithm = credential.credentialPublicKey.algorithm
        guard relyingParty.allowedAlgorithms.contains(algorithm) else {
            throw PasskeyError(
                .ceremonyAlgorithmNotAllowed, "algorithm \(algorithm) (\(algorithm.rawValue)) is not allowed")
        }
    }

    /// §7.1 step 21: the fmt is registered (case-sensitive); anything else is refused, never skipped.
    static func attestationFormat(_ identifier: String, _ relyingParty: RelyingParty) throws(PasskeyError)
        -> any AttestationFormat
    {
        guard let format = relyingParty.attestationFormats.format(for: identifier) else {
            // Printable identifiers only: fmt comes from the client and ends up in logs.
            let shown = identifier.count <= 32 && identifier.allSatisfy { $0.isASCII && !$0.isNewline }
            throw PasskeyError(
                .attestationUnsupportedFormat,
                "attestation format \(shown ? "\"\(identifier)\"" : "(unprintable)") is not supported")
        }
        return format
    }

    /// §7.1 steps 22 to 24: the format verifies attStmt and assesses its trust path.
    static func verifyStatement(
        _ format: any AttestationFormat, _ statement: Statement, _ authenticatorData: AuthenticatorData,
        _ clientDataHash: [UInt8], _ context: AttestationContext
    ) throws(PasskeyError) -> AttestationOutcome {
        switch statement {
        case .map(let members):
            try format.verify(
                statement: members, authenticatorData: authenticatorData,
                authenticatorDataBytes: authenticatorData.rawBytes, clientDataHash: clientDataHash,
                context: context)
        case .array(let items):
            try format.verify(
                statements: items, authenticatorData: authenticatorData,
                authenticatorDataBytes: authenticatorData.rawBytes, clientDataHash: clientDataHash,
                context: context)
        }
    }

    /// §7.1 step 27: under requireTrusted, an attestation that reached no anchor (none and self among
    /// them), or a model that metadata reports as compromised, fails the ceremony.
    static func verifyTrust(
        _ outcome: AttestationOutcome, _ metadata: AuthenticatorMetadata?,
        _ policy: RelyingParty.AttestationPolicy
    ) throws(PasskeyError) {
        guard policy == .requireTrusted else { return }
        guard outcome.trusted else {
            throw PasskeyError(
                .attestationUntrusted, "attestation type \(outcome.type.rawValue) reached no trust anchor")
        }
        // Only meaningful once trusted: the chain has proven the model, so its status reports apply.
        if let status = metadata?.statusReports.last(where: \.isCompromise) {
            throw PasskeyError(
                .attestationAuthenticatorCompromised,
                "metadata reports the authenticator as \(status.rawValue)")
        }
    }
}
