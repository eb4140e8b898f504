import CryptoCore
import FoundationEssentials

/// The "tpm" attestation format (WebAuthn L3 §8.3): a TPM 2.0 certifies the credential key with an
/// attestation identity key (AIK) whose certificate an Attestation CA issued (Windows Hello).
///
/// Verification, in the specification's order, each step with its own code:
/// 1. ver is "2.0"; ECDAA is refused (`attestation.tpm_unsupported_version`).
/// 2. pubArea parses and its key is the credential key (`attestation.tpm_pub_area_invalid`,
///    `attestation.tpm_public_key_mismatch`).
/// 3. The AIK certificate meets §8.3.1 (`attestation.tpm_certificate_invalid`) and its AAGUID
///    extension, when present, is authData's (`attestation.tpm_aaguid_mismatch`).
/// 4. sig verifies over certInfo with the AIK key and alg (`attestation.tpm_signature_invalid`).
/// 5. certInfo is a TPM-generated certify structure (`attestation.tpm_cert_info_invalid`) whose
///    extraData is alg's hash of authData ‖ clientDataHash (`attestation.tpm_extra_data_mismatch`)
///    and whose attested name is pubArea's Name (`attestation.tpm_name_mismatch`).
/// 6. The x5c chain is validated against the configured "tpm" anchors and, because the AAGUID
///    extension binds the model to the certificate, the AAGUID's anchors.
///
/// sig is verified as the bare signature (PKCS#1 for RSA AIKs, DER for ECDSA), as authenticators in
/// the field send it and the §16 test vectors encode it.
public struct TPMAttestation: AttestationFormat {
    /// "tpm".
    public let identifier = "tpm"

    /// tcg-kp-AIKCertificate: the extended key usage an AIK certificate must carry.
    public static let aikCertificateKeyPurpose = "2.23.133.8.3"
    /// tcg-at-tpmManufacturer, tcg-at-tpmModel and tcg-at-tpmVersion: the SAN directoryName
    /// attributes the TPM EK profile (§3.2.9) requires.
    public static let sanAttributes = ["2.23.133.2.1", "2.23.133.2.2", "2.23.133.2.3"]

    /// The attStmt members the format defines; anything else is a statement this code does not understand.
    private static let members: Set<String> = ["ver", "alg", "x5c", "sig", "certInfo", "pubArea"]

    /// Creates the format. Trust anchors come from the context (configuration and metadata): no
    /// TPM vendor roots are bundled, because they are many and change with each vendor's CA.
    public init() {}

    /// Verifies a TPM attestation statement (§8.3 verification procedure).
    ///
    /// - Returns: Type attCA, the x5c trust path, and whether it reached an anchor.
    /// - Throws: `attestation.invalid_statement` for a malformed statement, `attestation.certificate_invalid`
    ///   or `attestation.chain_invalid` for a bad x5c, or the `attestation.tpm_*` code of the failed step.
    public func verify(
        statement: CBORMap, authenticatorData: AuthenticatorData, authenticatorDataBytes: [UInt8],
        clientDataHash: [UInt8], context: AttestationContext
    ) throws(PasskeyError) -> AttestationOutcome {
        let fields = try Self.decode(statement)
        guard let credential = authenticatorData.attestedCredentialData else {
            throw PasskeyError(.attestationInvalidStatement, "tpm attestation needs attested credential data")
        }
        let pubArea = try TPMPublicArea(bytes: fields.pubArea)
        try Self.verifyPublicKey(pubArea, credential.credentialPublicKey)
        let attToBeSigned = authenticatorDataBytes + clientDataHash

        // Parsed here for the AIK checks and again inside AttestationTrust.evaluate: which anchors apply
        // depends on the AAGUID extension, so the leaf must be read before the chain is evaluated.
        let aik = try AttestationTrust.certificates(x5c: fields.x5c)[0]
        try Self.verifyAIKCertificate(aik)
        let bindsAAGUID = try Self.verifyAAGUID(aik, context.aaguid)
        try Self.verifySignature(fields.sig, over: fields.certInfo, key: aik.publicKey, algorithm: fields.alg)

        let certInfo = try TPMCertifyInfo(bytes: fields.certInfo)
        try Self.verifyExtraData(certInfo, attToBeSigned, fields.alg)
        try Self.verifyName(certInfo, pubArea)

        let chain = try AttestationTrust.evaluate(
            x5c: fields.x5c, format: identifier, context: context, bindsAAGUID: bindsAAGUID)
        return AttestationOutcome(
            type: .attestationCA, trustPath: fields.x5c, trusted: chain.trusted, anchorsUsed: chain.anchor)
    }

    // MARK: Steps

    /// The statement's members, typed.
    struct Fields {
        let alg: COSEAlgorithm
        let x5c: [[UInt8]]
        let sig: [UInt8]
        let certInfo: [UInt8]
        let pubArea: [UInt8]
    }

    /// §8.3 syntax: ver "2.0", alg, x5c, sig, certInfo and pubArea, nothing else; ECDAA refused.
    static func decode(_ statement: CBORMap) throws(PasskeyError) -> Fields {
        // ECDAA left WebAuthn in Level 3 and no deployed TPM authenticator uses it.
        if statement[name: "ecdaaKeyId"] != nil {
            throw PasskeyError(
                .attestationTPMUnsupportedVersion, "tpm attestation with ECDAA is not supported")
        }
        guard case .text(let version)? = statement[name: "ver"] else {
            throw PasskeyError(.attestationInvalidStatement, "tpm attStmt needs ver as text")
        }
        guard version == "2.0" else {
            throw PasskeyError(.attestationTPMUnsupportedVersion, "tpm attStmt ver must be \"2.0\"")
        }
        for entry in statement {
            guard case .text(let name) = entry.key, members.contains(name) else {
                throw PasskeyError(
                    .attestationInvalidStatement, "tpm attStmt has a member the format does not define")
            }
        }
        guard case .integer(let raw)? = statement[name: "alg"] else {
            throw PasskeyError(.attestationInvalidStatement, "tpm attStmt needs alg as an integer")
        }
        // EdDSA has no TPM 2.0 signing scheme; accepting it would leave extraData without a hash.
        guard let alg = COSEAlgorithm(rawValue: raw), alg != .edDSA else {
            throw PasskeyError(.attestationInvalidStatement, "tpm attStmt alg \(raw) is not supported")
        }
        guard let x5c = try AttestationTrust.x5c(in: statement) else {
            throw PasskeyError(.attestationInvalidStatement, "tpm attStmt needs x5c (ECDAA is not supported)")
        }
        return Fields(
            alg: alg, x5c: x5c, sig: try bytes(statement, "sig"), certInfo: try bytes(statement, "certInfo"),
            pubArea: try bytes(statement, "pubArea"))
    }

    /// A required byte-string member.
    private static func bytes(_ statement: CBORMap, _ name: String) throws(PasskeyError) -> [UInt8] {
        guard case .bytes(let value)? = statement[name: name] else {
            throw PasskeyError(.attestationInvalidStatement, "tpm attStmt needs \(name) as a byte string")
        }
        return value
    }

    /// §8.3 step: the key in pubArea's parameters and unique is the credential public key.
    ///
    /// EC coordinates must be byte-identical (a TPM writes them at the curve's size); RSA moduli are
    /// compared as integers, because COSE tolerates leading zero bytes that change nothing.
    static func verifyPublicKey(_ pubArea: TPMPublicArea, _ key: COSEKey) throws(PasskeyError) {
        switch (pubArea.key, key.parameters) {
        case (.ecc(let ecc), .ec2(let curve, let x, let y)):
            guard let tpmCurve = ecc.curve, tpmCurve == curve.ecCurve else {
                throw PasskeyError(
                    .attestationTPMPublicKeyMismatch,
                    "pubArea curve \(ecc.curveID) is not the credential's curve")
            }
            guard ecc.x == x, ecc.y == y else {
                throw PasskeyError(
                    .attestationTPMPublicKeyMismatch, "pubArea's EC point is not the credential key")
            }
        case (.rsa(let rsa), .rsa(let n, let e)):
            let modulus = Array(rsa.modulus.drop { $0 == 0 })
            guard Int(rsa.keyBits) == rsa.modulus.count * 8 else {
                throw PasskeyError(
                    .attestationTPMPublicKeyMismatch,
                    "pubArea keyBits \(rsa.keyBits) disagree with its modulus")
            }
            guard modulus == Array(n.drop { $0 == 0 }) else {
                throw PasskeyError(
                    .attestationTPMPublicKeyMismatch, "pubArea's modulus is not the credential key's")
            }
            let exponent = Array(e.drop { $0 == 0 })
            guard exponent.count <= 4,
                exponent.reduce(UInt32(0), { $0 << 8 | UInt32($1) }) == rsa.effectiveExponent
            else {
                throw PasskeyError(
                    .attestationTPMPublicKeyMismatch, "pubArea's exponent is not the credential key's")
            }
        default:
            throw PasskeyError(
                .attestationTPMPublicKeyMismatch,
                "pubArea type \(pubArea.type) does not match the credential key type")
        }
    }

    /// §8.3.1: the AIK certificate is version 3 with an empty subject, a critical SAN naming the TPM,
    /// the AIK extended key usage, and basicConstraints with cA false.
    static func verifyAIKCertificate(_ aik: Certificate) throws(PasskeyError) {
        guard aik.version == 3 else {
            throw PasskeyError(.attestationTPMCertificateInvalid, "the AIK certificate is not version 3")
        }
        guard aik.subject.isEmpty else {
            throw PasskeyError(
                .attestationTPMCertificateInvalid, "the AIK certificate's subject is not empty")
        }
        guard let san = aik.extensions.first(where: { $0.oid == Certificate.OID.subjectAlternativeName })
        else {
            throw PasskeyError(.attestationTPMCertificateInvalid, "the AIK certificate has no subjectAltName")
        }
        // An empty subject makes the SAN the certificate's only name, so RFC 5280 §4.2.1.6 makes it critical.
        guard san.critical else {
            throw PasskeyError(
                .attestationTPMCertificateInvalid, "the AIK certificate's subjectAltName is not critical")
        }
        let attributes = try directoryNameAttributes(san.value)
        for oid in sanAttributes where attributes[oid]?.isEmpty ?? true {
            throw PasskeyError(
                .attestationTPMCertificateInvalid,
                "the AIK certificate's subjectAltName lacks TPM attribute \(oid)")
        }
        guard (aik.extendedKeyUsage ?? []).contains(aikCertificateKeyPurpose) else {
            throw PasskeyError(
                .attestationTPMCertificateInvalid, "the AIK certificate's extendedKeyUsage lacks 2.23.133.8.3"
            )
        }
        // Absent basicConstraints is not "cA false" for this check: §8.3.1 requires the extension.
        guard aik.isCA == false else {
            throw PasskeyError(
                .attestationTPMCertificateInvalid, "the AIK certificate needs basicConstraints with cA false")
        }
    }

    /// The attributes of the directoryName entries in a SAN extension value, by OID.
    ///
    /// - Throws: `attestation.tpm_certificate_invalid` when the SAN is not well-formed DER.
    static func directoryNameAttributes(_ value: [UInt8]) throws(PasskeyError) -> [String: String] {
        var attributes: [String: String] = [:]
        do throws(CryptoError) {
            var outer = DERReader(value)
            var names = try outer.readSequence()
            try outer.finish()
            while !names.isAtEnd {
                let general = try names.readElement()
                // directoryName is [4], explicitly tagged because Name is a CHOICE.
                guard general.tag == .contextSpecific(4, constructed: true) else { continue }
                var wrapper = try general.contents()
                var rdns = try wrapper.readSequence()
                try wrapper.finish()
                while !rdns.isAtEnd {
                    var set = try rdns.readSet()
                    while !set.isAtEnd {
                        var pair = try set.readSequence()
                        let oid = try pair.readObjectIdentifier()
                        let text = try pair.readString()
                        try pair.finish()
                        attributes[oid] = text
                    }
                }
            }
        } catch {
            throw PasskeyError(
                .attestationTPMCertificateInvalid, "the AIK certificate's subjectAltName is malformed",
                underlying: error)
        }
        return attributes
    }

    /// §8.3: when the AIK certificate carries id-fido-gen-ce-aaguid, it equals authData's AAGUID.
    ///
    /// - Returns: True when the extension is present, so the AAGUID is proven and its anchors apply.
    static func verifyAAGUID(_ aik: Certificate, _ aaguid: UUID) throws(PasskeyError) -> Bool {
        guard let item = aik.extensions.first(where: { $0.oid == Certificate.OID.fidoAAGUID }) else {
            return false
        }
        let value: [UInt8]
        do throws(CryptoError) {
            value = try DERReader.single(item.value).octetString()
        } catch {
            throw PasskeyError(
                .attestationTPMCertificateInvalid, "the AIK certificate's AAGUID extension is malformed",
                underlying: error)
        }
        let expected = withUnsafeBytes(of: aaguid.uuid) { Array($0) }
        guard value == expected else {
            throw PasskeyError(.attestationTPMAAGUIDMismatch, "the AIK certificate names another AAGUID")
        }
        return true
    }

    /// §8.3: sig is a valid signature over certInfo with the AIK's key under alg.
    static func verifySignature(
        _ signature: [UInt8], over certInfo: [UInt8], key: PublicKey, algorithm: COSEAlgorithm
    ) throws(PasskeyError) {
        guard algorithm.fits(key.type),
            key.verify(signature: signature, data: certInfo, algorithm: algorithm.signatureAlgorithm)
        else {
            throw PasskeyError(
                .attestationTPMSignatureInvalid, "sig does not verify over certInfo with the AIK key")
        }
    }

    /// §8.3: extraData is the hash of attToBeSigned under the hash alg implies.
    static func verifyExtraData(_ certInfo: TPMCertifyInfo, _ attToBeSigned: [UInt8], _ alg: COSEAlgorithm)
        throws(PasskeyError)
    {
        guard let digest = digest(for: alg) else {
            throw PasskeyError(
                .attestationUnsupportedAlgorithm,
                "alg \(alg.name) names no hash for extraData: TPM 2.0 has no ML-DSA")
        }
        let expected = Digest.hash(digest, attToBeSigned)
        guard ConstantTime.equals(certInfo.extraData, expected) else {
            throw PasskeyError(
                .attestationTPMExtraDataMismatch,
                "certInfo.extraData is not the hash of authData ‖ clientDataHash")
        }
    }

    /// §8.3: attested.name is pubArea's Name under pubArea's nameAlg.
    static func verifyName(_ certInfo: TPMCertifyInfo, _ pubArea: TPMPublicArea) throws(PasskeyError) {
        guard certInfo.attestedName == (try pubArea.name()) else {
            throw PasskeyError(.attestationTPMNameMismatch, "certInfo.attested.name is not pubArea's Name")
        }
    }

    /// The hash an attestation algorithm signs with, which is also extraData's hash; nil for
    /// ML-DSA, which hashes internally and names no hash a TPM could use.
    static func digest(for alg: COSEAlgorithm) -> DigestAlgorithm? {
        switch alg {
        case .rs1: .sha1
        case .es384, .rs384: .sha384
        case .es512, .rs512: .sha512
        case .es256, .rs256, .ps256, .edDSA: .sha256
        case .mlDSA44, .mlDSA65, .mlDSA87: nil
        }
    }
}
