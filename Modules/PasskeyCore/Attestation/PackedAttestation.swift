import CryptoCore
import FoundationEssentials

/// The "packed" attestation format (WebAuthn L3 §8.2): self attestation, or a signature by an
/// attestation key whose certificate chain is x5c.
///
/// Strict syntax: attStmt holds exactly alg and sig, plus x5c for basic attestation. ECDAA
/// (`ecdaaKeyId`), which Level 1 allowed and later levels removed, is refused outright rather than
/// treated as an unknown member, so the error says why.
public struct PackedAttestation: AttestationFormat {
    /// "packed".
    public let identifier = "packed"

    /// The literal subject OU §8.2.1 requires of an attestation certificate.
    public static let attestationOrganizationalUnit = "Authenticator Attestation"

    /// Creates the format.
    public init() {}

    /// Verifies a packed statement: self attestation when x5c is absent, otherwise basic attestation.
    ///
    /// - Returns: Type self with an empty trust path, or type basic with x5c as the trust path and
    ///   whether it reached an anchor (the format's anchors; the AAGUID's too when the certificate
    ///   carries the AAGUID extension, which binds the model to the certificate).
    /// - Throws: `attestation.invalid_statement` (syntax), `attestation.unsupported_algorithm`,
    ///   `attestation.algorithm_mismatch`, `attestation.signature_invalid`,
    ///   `attestation.certificate_requirements`, `attestation.aaguid_mismatch`, and the x5c codes of
    ///   `AttestationTrust`.
    public func verify(
        statement: CBORMap, authenticatorData: AuthenticatorData, authenticatorDataBytes: [UInt8],
        clientDataHash: [UInt8], context: AttestationContext
    ) throws(PasskeyError) -> AttestationOutcome {
        let (algorithm, signature) = try Self.decode(statement)
        let signed = authenticatorDataBytes + clientDataHash
        guard let credential = authenticatorData.attestedCredentialData else {
            throw PasskeyError(
                .attestationInvalidStatement, "packed attestation needs attested credential data")
        }
        guard let x5c = try AttestationTrust.x5c(in: statement) else {
            return try Self.verifySelf(algorithm, signature, signed, credential.credentialPublicKey)
        }
        let chain = try AttestationTrust.certificates(x5c: x5c)
        let leaf = chain[0]
        // Signature first: it is what proves the statement belongs to this ceremony at all. The curve
        // is not tied to alg here: §5.8.5 pins curves for credential keys, not for attestation keys.
        guard algorithm.signatureAlgorithm.accepts(leaf.publicKey.type) else {
            throw PasskeyError(
                .attestationAlgorithmMismatch,
                "alg \(algorithm.rawValue) cannot be made by the attestation certificate's \(leaf.publicKey.type) key"
            )
        }
        guard
            leaf.publicKey.verify(signature: signature, data: signed, algorithm: algorithm.signatureAlgorithm)
        else {
            throw PasskeyError(
                .attestationSignatureInvalid, "the packed signature does not verify under x5c[0]")
        }
        try Self.checkCertificateRequirements(leaf)
        let bindsAAGUID = try Self.checkAAGUIDExtension(leaf, credential.aaguid)
        let trust = try AttestationTrust.evaluate(
            chain: chain, format: identifier, context: context, bindsAAGUID: bindsAAGUID)
        return AttestationOutcome(
            type: .basic, trustPath: x5c, trusted: trust.trusted, anchorsUsed: trust.anchor)
    }

    /// §8.2 syntax: alg (a COSE algorithm Portvakt verifies) and sig, x5c optional, nothing else.
    static func decode(_ statement: CBORMap) throws(PasskeyError) -> (COSEAlgorithm, [UInt8]) {
        if statement[name: "ecdaaKeyId"] != nil {
            throw PasskeyError(
                .attestationUnsupportedAlgorithm, "ECDAA attestation is obsolete and not accepted")
        }
        for entry in statement {
            guard case .text(let name) = entry.key, ["alg", "sig", "x5c"].contains(name) else {
                throw PasskeyError(
                    .attestationInvalidStatement, "packed attStmt holds a member other than alg, sig, x5c")
            }
        }
        guard case .integer(let identifier)? = statement[name: "alg"] else {
            throw PasskeyError(.attestationInvalidStatement, "packed attStmt needs alg as an integer")
        }
        guard case .bytes(let signature)? = statement[name: "sig"] else {
            throw PasskeyError(.attestationInvalidStatement, "packed attStmt needs sig as a byte string")
        }
        guard let algorithm = COSEAlgorithm(rawValue: identifier) else {
            throw PasskeyError(.attestationUnsupportedAlgorithm, "packed alg \(identifier) is not supported")
        }
        return (algorithm, signature)
    }

    /// §8.2 verification, x5c absent: alg is the credential key's, and the credential key made sig.
    static func verifySelf(
        _ algorithm: COSEAlgorithm, _ signature: [UInt8], _ signed: [UInt8], _ credentialKey: COSEKey
    ) throws(PasskeyError) -> AttestationOutcome {
        guard algorithm == credentialKey.algorithm else {
            throw PasskeyError(
                .attestationAlgorithmMismatch,
                "self attestation alg \(algorithm.rawValue) is not the credential's \(credentialKey.algorithm.rawValue)"
            )
        }
        guard credentialKey.verify(signature: signature, data: signed) else {
            throw PasskeyError(.attestationSignatureInvalid, "the self attestation signature does not verify")
        }
        return AttestationOutcome(type: .selfAttestation, trustPath: [], trusted: false, anchorsUsed: nil)
    }

    /// §8.2.1: version 3; subject C (two-letter ISO 3166 code), O, OU "Authenticator Attestation" and
    /// CN; basicConstraints present with cA false.
    static func checkCertificateRequirements(_ leaf: Certificate) throws(PasskeyError) {
        func refuse(_ why: String) -> PasskeyError {
            PasskeyError(.attestationCertificateRequirements, "packed attestation certificate: \(why)")
        }
        guard leaf.version == 3 else { throw refuse("version \(leaf.version), 3 required") }
        let subject = leaf.subject
        // Any two capital letters: ISO 3166 reserves user-assigned codes (AA, QM–QZ, XA–XZ, ZZ) that
        // vendors and the W3C test vectors use, so a fixed country list would refuse valid certificates.
        guard let country = subject.country, country.utf8.count == 2,
            country.utf8.allSatisfy({ (65...90).contains($0) })
        else { throw refuse("subject C must be a two-letter ISO 3166 code") }
        guard let organization = subject.organization, !organization.isEmpty else {
            throw refuse("subject O is missing")
        }
        guard subject.organizationalUnit == attestationOrganizationalUnit else {
            throw refuse("subject OU must be \"\(attestationOrganizationalUnit)\"")
        }
        guard let commonName = subject.commonName, !commonName.isEmpty else {
            throw refuse("subject CN is missing")
        }
        // Absent basicConstraints is refused too: §8.2.1 requires the extension, with cA false.
        guard leaf.isCA == false else { throw refuse("basicConstraints must be present with cA false") }
    }

    /// §8.2 and §8.2.1: when id-fido-gen-ce-aaguid is present it is non-critical and equals authData's
    /// AAGUID. Returns whether it was present, which is what binds the AAGUID to the certificate.
    static func checkAAGUIDExtension(_ leaf: Certificate, _ aaguid: UUID) throws(PasskeyError) -> Bool {
        guard let (critical, value) = leaf.extension(oid: Certificate.OID.fidoAAGUID) else { return false }
        guard !critical else {
            throw PasskeyError(
                .attestationCertificateRequirements,
                "the id-fido-gen-ce-aaguid extension must not be critical")
        }
        let claimed: [UInt8]
        do throws(CryptoError) {
            var reader = DERReader(value)
            claimed = try reader.readOctetString()
            try reader.finish()
        } catch {
            throw PasskeyError(
                .attestationCertificateRequirements,
                "the id-fido-gen-ce-aaguid extension is not an OCTET STRING",
                underlying: error)
        }
        guard claimed == withUnsafeBytes(of: aaguid.uuid, { Array($0) }) else {
            throw PasskeyError(
                .attestationAAGUIDMismatch, "the certificate's AAGUID is not the one in authenticator data")
        }
        return true
    }
}
