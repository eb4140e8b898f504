import CryptoCore
import FoundationEssentials

/// The "fido-u2f" attestation format (WebAuthn L3 §8.6): a U2F registration signature, made by a
/// P-256 batch attestation key, that the client repackaged for WebAuthn.
///
/// FIDO U2F has no AAGUID: the client writes the attested credential data, so the AAGUID there is
/// never bound to the certificate and only the format's own anchors apply. It is not refused when
/// non-zero, because §8.6 does not require zero and the W3C §16 vector carries random bytes.
public struct FIDOU2FAttestation: AttestationFormat {
    /// "fido-u2f".
    public let identifier = "fido-u2f"

    /// Creates the format.
    public init() {}

    /// Verifies a fido-u2f statement over the U2F registration message it reconstructs.
    ///
    /// - Returns: Type basic, x5c as the trust path, and whether it reached an anchor for "fido-u2f".
    /// - Throws: `attestation.invalid_statement` (syntax, or x5c not exactly one certificate),
    ///   `attestation.certificate_requirements` (not a P-256 key), `attestation.algorithm_mismatch`
    ///   (a credential that is not ES256 on P-256), `attestation.signature_invalid`, and the x5c codes
    ///   of `AttestationTrust`.
    public func verify(
        statement: CBORMap, authenticatorData: AuthenticatorData, authenticatorDataBytes: [UInt8],
        clientDataHash: [UInt8], context: AttestationContext
    ) throws(PasskeyError) -> AttestationOutcome {
        // §8.6 syntax: exactly x5c and sig.
        guard statement.count == 2, case .bytes(let signature)? = statement[name: "sig"] else {
            throw PasskeyError(
                .attestationInvalidStatement, "fido-u2f attStmt must hold exactly x5c and sig (bytes)")
        }
        guard let x5c = try AttestationTrust.x5c(in: statement) else {
            throw PasskeyError(.attestationInvalidStatement, "fido-u2f attStmt needs x5c")
        }
        // Step 2: one certificate, with an EC P-256 key.
        guard x5c.count == 1 else {
            throw PasskeyError(.attestationInvalidStatement, "fido-u2f x5c must hold exactly one certificate")
        }
        let chain = try AttestationTrust.certificates(x5c: x5c)
        guard chain[0].publicKey.type == .ec(.p256) else {
            throw PasskeyError(
                .attestationCertificateRequirements,
                "the fido-u2f attestation certificate's key is not EC P-256")
        }
        guard let credential = authenticatorData.attestedCredentialData else {
            throw PasskeyError(
                .attestationInvalidStatement, "fido-u2f attestation needs attested credential data")
        }
        // Step 4: the credential key as a raw X9.62 point; U2F only ever made ES256 keys on P-256.
        guard case .ec2(.p256, let x, let y) = credential.credentialPublicKey.parameters,
            x.count == 32, y.count == 32
        else {
            throw PasskeyError(
                .attestationAlgorithmMismatch, "a fido-u2f credential key must be EC2 on P-256")
        }
        // Step 5: the U2F registration message: 0x00 ‖ application ‖ challenge ‖ key handle ‖ user key.
        let verificationData =
            [0x00] + authenticatorData.rpIDHash + clientDataHash + credential.credentialID + [0x04] + x + y
        // Step 6: ECDSA with SHA-256 under the certificate's key.
        guard chain[0].publicKey.verify(signature: signature, data: verificationData, algorithm: .ecdsaSHA256)
        else {
            throw PasskeyError(.attestationSignatureInvalid, "the fido-u2f signature does not verify")
        }
        let trust = try AttestationTrust.evaluate(
            chain: chain, format: identifier, context: context, bindsAAGUID: false)
        return AttestationOutcome(
            type: .basic, trustPath: x5c, trusted: trust.trusted, anchorsUsed: trust.anchor)
    }
}
