import CryptoCore
import FoundationEssentials

/// The "apple" anonymous attestation format (WebAuthn L3 §8.8): Apple's anonymization CA issues a
/// certificate for the credential key itself, carrying SHA-256(authData ‖ clientDataHash) as a nonce.
///
/// There is no signature in the statement: the nonce in a certificate the CA signed is what binds
/// the statement to this ceremony, and the certificate's key being the credential key is what binds
/// it to this credential. Both are checked. Trust comes from the anchors for "apple", which
/// `BundledTrustAnchors` supplies (the Apple WebAuthn Root CA).
public struct AppleAttestation: AttestationFormat {
    /// "apple".
    public let identifier = "apple"

    /// The extension holding the nonce: SEQUENCE { [1] EXPLICIT OCTET STRING }.
    public static let nonceExtensionOID = "1.2.840.113635.100.8.2"

    /// Creates the format.
    public init() {}

    /// Verifies an apple statement.
    ///
    /// - Returns: Type anonCA, x5c as the trust path, and whether it reached an anchor for "apple".
    /// - Throws: `attestation.invalid_statement` (syntax), `attestation.certificate_requirements` (no
    ///   or malformed nonce extension), `attestation.nonce_mismatch`, `attestation.public_key_mismatch`,
    ///   and the x5c codes of `AttestationTrust`.
    public func verify(
        statement: CBORMap, authenticatorData: AuthenticatorData, authenticatorDataBytes: [UInt8],
        clientDataHash: [UInt8], context: AttestationContext
    ) throws(PasskeyError) -> AttestationOutcome {
        // Step 1: exactly x5c.
        guard statement.count == 1, let x5c = try AttestationTrust.x5c(in: statement) else {
            throw PasskeyError(.attestationInvalidStatement, "apple attStmt must hold exactly x5c")
        }
        guard let credential = authenticatorData.attestedCredentialData else {
            throw PasskeyError(
                .attestationInvalidStatement, "apple attestation needs attested credential data")
        }
        let chain = try AttestationTrust.certificates(x5c: x5c)
        let credCert = chain[0]
        // Steps 2 to 4: the nonce the CA certified is the hash of exactly what this ceremony produced.
        let nonce = Digest.sha256(authenticatorDataBytes + clientDataHash)
        guard ConstantTime.equals(try Self.certifiedNonce(credCert), nonce) else {
            throw PasskeyError(
                .attestationNonceMismatch, "the certificate's nonce is not SHA-256(authData ‖ clientDataHash)"
            )
        }
        // Step 5: SubjectPublicKeyInfo has one DER encoding per key, so equal bytes mean equal keys.
        guard
            credCert.publicKey.derRepresentation == credential.credentialPublicKey.publicKey.derRepresentation
        else {
            throw PasskeyError(
                .attestationPublicKeyMismatch, "the certificate's key is not the credential public key")
        }
        let trust = try AttestationTrust.evaluate(
            chain: chain, format: identifier, context: context, bindsAAGUID: false)
        return AttestationOutcome(
            type: .anonymizationCA, trustPath: x5c, trusted: trust.trusted, anchorsUsed: trust.anchor)
    }

    /// The nonce in `certificate`'s 1.2.840.113635.100.8.2 extension.
    static func certifiedNonce(_ certificate: Certificate) throws(PasskeyError) -> [UInt8] {
        guard let (_, value) = certificate.extension(oid: nonceExtensionOID) else {
            throw PasskeyError(
                .attestationCertificateRequirements, "the apple certificate has no nonce extension")
        }
        do throws(CryptoError) {
            var outer = DERReader(value)
            var sequence = try outer.readSequence()
            var tagged = try sequence.readExplicit(1)
            let nonce = try tagged.readOctetString()
            try tagged.finish()
            try sequence.finish()
            try outer.finish()
            return nonce
        } catch {
            throw PasskeyError(
                .attestationCertificateRequirements,
                "the apple nonce extension is not SEQUENCE { [1] OCTET STRING }",
                underlying: error)
        }
    }
}
