import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport

/// What the crafted tpm, android-key and android-safetynet tests share: a throwaway CA, a clock
/// inside its validity, authenticator data for a credential key, and a direct call to a format.
enum CraftedAttestation {
    static let start = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01
    static let end = start.addingTimeInterval(5 * 365 * 86_400)
    static let now = start.addingTimeInterval(86_400)
    static let aaguid = UUID(uuidString: "9ddd1817-af5a-4672-a2b9-3e3dd95000a9")!
    static let clientDataHash = Digest.sha256("client data for a crafted attestation")

    static let root = TestCertificateAuthority.root(
        name: .init(country: "SE", organization: "Portvakt Test", commonName: "Attestation Test Root"),
        notBefore: start, notAfter: end)
    static let intermediate = root.intermediate(
        name: .init(organization: "Portvakt Test", commonName: "Test CA"))

    /// Authenticator data for registration (UP, UV, AT) holding `key` as the credential key.
    static func authenticatorData(
        key: SoftwareKey, algorithm: COSEAlgorithm, aaguid: UUID = aaguid, rpID: String = "example.com"
    ) -> [UInt8] {
        var bytes = Digest.sha256(rpID)
        bytes.append(0x45)
        bytes += [0, 0, 0, 7]
        bytes += withUnsafeBytes(of: aaguid.uuid) { Array($0) }
        let credentialID: [UInt8] = Array(repeating: 0x42, count: 16)
        bytes += [0, UInt8(credentialID.count)] + credentialID
        bytes += CBOREncoder.encode(.map(key.coseMap(algorithm: algorithm)))
        return bytes
    }

    /// A context at `time` whose only anchors are `anchors` for `format`.
    static func context(format: String, anchors: [[UInt8]] = [], at time: Date = now) -> AttestationContext {
        AttestationContext(
            validationTime: time, aaguid: aaguid,
            anchors: StaticTrustAnchors(perFormat: anchors.isEmpty ? [:] : [format: anchors]), metadata: nil)
    }

    /// Runs `format` on a statement the way the ceremony would.
    static func verify(
        _ format: some AttestationFormat, statement: CBORMap, authenticatorData: [UInt8],
        clientDataHash: [UInt8] = clientDataHash, context: AttestationContext
    ) throws(PasskeyError) -> AttestationOutcome {
        let parsed = try AuthenticatorData(bytes: authenticatorData)
        return try format.verify(
            statement: statement, authenticatorData: parsed, authenticatorDataBytes: authenticatorData,
            clientDataHash: clientDataHash, context: context)
    }
}

/// Builds TPM 2.0 structures and AIK certificates as a Windows Hello TPM would, with a knob for
/// every field a rule checks. Defaults make a valid ES256 credential under an RSA-2048 AIK.
struct TPMStatementBuilder {
    var credentialKey: SoftwareKey = TestKeys.p256
    var credentialAlgorithm: COSEAlgorithm = .es256
    var aikKey: SoftwareKey = TestKeys.rsa2048
    var alg: COSEAlgorithm = .rs256
    var nameAlgorithm: UInt16 = 0x000B

    // pubArea
    var rsaExponent: UInt32 = 0
    var pubAreaOverride: [UInt8]? = nil

    // certInfo
    var magic: UInt32 = 0xFF54_4347
    var attestType: UInt16 = 0x8017
    var extraDataOverride: [UInt8]? = nil
    var nameOverride: [UInt8]? = nil
    var certInfoOverride: [UInt8]? = nil
    var signatureOverride: [UInt8]? = nil

    // AIK certificate
    var aikSubject = TestCertificateAuthority.Name()
    var sanCritical = true
    var sanAttributes: [(String, String)] = [
        ("2.23.133.2.1", "id:FFFFF1D0"), ("2.23.133.2.2", "FIDO2-NET-LIB-TEST-TPM"),
        ("2.23.133.2.3", "id:13"),
    ]
    var includeSAN = true
    var extendedKeyUsage: [String]? = ["2.23.133.8.3"]
    var basicConstraints: TestCertificateAuthority.BasicConstraints = .endEntity
    var aaguidExtension: [UInt8]? = DERWriter.octetString(
        withUnsafeBytes(of: CraftedAttestation.aaguid.uuid) { Array($0) })
    var aikVersion = 3

    // statement
    var version: CBORValue = "2.0"
    var extraMembers: [(CBORValue, CBORValue)] = []

    var authenticatorData: [UInt8] {
        CraftedAttestation.authenticatorData(key: credentialKey, algorithm: credentialAlgorithm)
    }

    /// TPMT_PUBLIC for the credential key.
    var pubArea: [UInt8] {
        if let pubAreaOverride { return pubAreaOverride }
        var bytes: [UInt8] = []
        switch credentialKey.kind {
        case .ec(let curve):
            let (x, y) = credentialKey.ecCoordinates
            let curveID: UInt16 =
                switch curve {
                case .p256: 3
                case .p384: 4
                case .p521: 5
                }
            bytes += be16(0x0023) + be16(nameAlgorithm) + be32(0x0006_0472) + be16(0)
            bytes += be16(0x0010) + be16(0x0010) + be16(curveID) + be16(0x0010)
            bytes += be16(UInt16(x.count)) + x + be16(UInt16(y.count)) + y
        case .rsa:
            let (n, _) = credentialKey.rsaComponents
            bytes += be16(0x0001) + be16(nameAlgorithm) + be32(0x0006_0472) + be16(0)
            bytes += be16(0x0010) + be16(0x0010) + be16(UInt16(n.count * 8)) + be32(rsaExponent)
            bytes += be16(UInt16(n.count)) + n
        case .ed25519:
            fatalError("a TPM holds no Ed25519 keys")
        }
        return bytes
    }

    /// The digest `alg` implies.
    var extraDataDigest: DigestAlgorithm {
        switch alg {
        case .rs1: .sha1
        case .es384, .rs384: .sha384
        case .es512, .rs512: .sha512
        default: .sha256
        }
    }

    /// TPMS_ATTEST certifying `pubArea`.
    var certInfo: [UInt8] {
        if let certInfoOverride { return certInfoOverride }
        let extraData =
            extraDataOverride
            ?? Digest.hash(extraDataDigest, authenticatorData + CraftedAttestation.clientDataHash)
        let digest: DigestAlgorithm =
            switch nameAlgorithm {
            case 0x0004: .sha1
            case 0x000C: .sha384
            case 0x000D: .sha512
            default: .sha256
            }
        let name = nameOverride ?? (be16(nameAlgorithm) + Digest.hash(digest, pubArea))
        var bytes = be32(magic) + be16(attestType)
        bytes += sized(Array(repeating: 0x11, count: 34))  // qualifiedSigner
        bytes += sized(extraData)
        bytes += Array(repeating: 0x22, count: 17)  // clockInfo
        bytes += Array(repeating: 0x33, count: 8)  // firmwareVersion
        bytes += sized(name) + sized(be16(0x000B) + Array(repeating: 0x44, count: 32))
        return bytes
    }

    /// The AIK certificate, issued by the intermediate.
    var aikCertificate: [UInt8] {
        var extensions: [TestCertificateAuthority.Extension] = []
        if includeSAN {
            let rdns = sanAttributes.map { oid, value in
                DERWriter.set([
                    DERWriter.sequence([DERWriter.objectIdentifier(oid), DERWriter.utf8String(value)])
                ])
            }
            extensions.append(
                .init(
                    oid: Certificate.OID.subjectAlternativeName, critical: sanCritical,
                    value: DERWriter.sequence([DERWriter.explicit(4, DERWriter.sequence(rdns))])))
        }
        if let extendedKeyUsage {
            extensions.append(
                .init(
                    oid: Certificate.OID.extendedKeyUsage,
                    value: DERWriter.sequence(extendedKeyUsage.map(DERWriter.objectIdentifier))))
        }
        if let aaguidExtension {
            extensions.append(.init(oid: Certificate.OID.fidoAAGUID, value: aaguidExtension))
        }
        let ca = CraftedAttestation.intermediate
        if aikVersion == 1 {
            return TestCertificateAuthority.makeCertificate(
                subject: aikSubject, subjectPublicKeyInfo: aikKey.subjectPublicKeyInfo, issuer: ca.name,
                issuerKey: ca.key, notBefore: CraftedAttestation.start, notAfter: CraftedAttestation.end,
                basicConstraints: .absent, keyUsage: nil, version: 1)
        }
        return ca.issue(
            subject: aikSubject, subjectPublicKeyInfo: aikKey.subjectPublicKeyInfo,
            basicConstraints: basicConstraints, extensions: extensions)
    }

    /// The attStmt.
    var statement: CBORMap {
        let info = certInfo
        let sig = signatureOverride ?? aikKey.sign(info, algorithm: alg.signatureAlgorithm)
        var map: CBORMap = [
            "ver": version, "alg": .integer(alg.rawValue),
            "x5c": .array([.bytes(aikCertificate), .bytes(CraftedAttestation.intermediate.certificateDER)]),
            "sig": .bytes(sig), "certInfo": .bytes(info), "pubArea": .bytes(pubArea),
        ]
        for (key, value) in extraMembers { map[key] = value }
        return map
    }

    /// Verifies with `TPMAttestation`, anchored at the test root unless told otherwise.
    func verify(anchored: Bool = true) throws(PasskeyError) -> AttestationOutcome {
        try CraftedAttestation.verify(
            TPMAttestation(), statement: statement, authenticatorData: authenticatorData,
            context: CraftedAttestation.context(
                format: "tpm", anchors: anchored ? [CraftedAttestation.root.certificateDER] : []))
    }
}

/// Big-endian encodings and TPM2B sizing for the builders.
func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
func be32(_ value: UInt32) -> [UInt8] { (0..<4).reversed().map { UInt8((value >> (8 * UInt32($0))) & 0xFF) } }
func sized(_ bytes: [UInt8]) -> [UInt8] { be16(UInt16(bytes.count)) + bytes }

/// Builds Android key attestation statements: a leaf certificate for the credential key carrying a
/// key description, and sig by the credential key. Defaults are a valid TEE-backed ES256 key.
struct AndroidKeyStatementBuilder {
    /// One authorization list's knobs.
    struct Authorizations {
        var purposes: [Int]? = [2]
        var origin: Int? = 0
        var allApplications = false
        /// Further authorizations as (tag, encoded inner element), e.g. [2] algorithm.
        var others: [(UInt32, [UInt8])] = [(2, DERWriter.integer(3)), (10, DERWriter.integer(256))]

        /// The AuthorizationList DER, tags in ascending order as Keystore writes them.
        var encoded: [UInt8] {
            var items: [(UInt32, [UInt8])] = others
            if let purposes { items.append((1, DERWriter.set(purposes.map(DERWriter.integer)))) }
            if allApplications { items.append((600, DERWriter.null)) }
            if let origin { items.append((702, DERWriter.integer(origin))) }
            return DERWriter.sequence(items.sorted { $0.0 < $1.0 }.map { DERWriter.explicit($0.0, $0.1) })
        }

        static let empty = Authorizations(purposes: nil, origin: nil, others: [])
    }

    var credentialKey: SoftwareKey = TestKeys.p256
    var credentialAlgorithm: COSEAlgorithm = .es256
    var certificateKey: SoftwareKey? = nil
    var alg: COSEAlgorithm = .es256
    var signingKey: SoftwareKey? = nil
    var challenge: [UInt8] = CraftedAttestation.clientDataHash
    var softwareEnforced = Authorizations.empty
    var teeEnforced = Authorizations()
    var keyDescriptionOverride: [UInt8]? = nil
    var includeKeyDescription = true
    var extraMembers: [(CBORValue, CBORValue)] = []

    var authenticatorData: [UInt8] {
        CraftedAttestation.authenticatorData(key: credentialKey, algorithm: credentialAlgorithm)
    }

    /// The KeyDescription DER.
    var keyDescription: [UInt8] {
        keyDescriptionOverride
            ?? DERWriter.sequence([
                DERWriter.integer(200), DERWriter.enumerated(1), DERWriter.integer(200),
                DERWriter.enumerated(1),
                DERWriter.octetString(challenge), DERWriter.octetString([]), softwareEnforced.encoded,
                teeEnforced.encoded,
            ])
    }

    var leafCertificate: [UInt8] {
        CraftedAttestation.intermediate.issue(
            subject: .init(commonName: "Android Keystore Key"),
            subjectPublicKeyInfo: (certificateKey ?? credentialKey).subjectPublicKeyInfo,
            extensions: includeKeyDescription
                ? [.init(oid: "1.3.6.1.4.1.11129.2.1.17", value: keyDescription)] : [])
    }

    var statement: CBORMap {
        let sig = (signingKey ?? credentialKey).sign(
            authenticatorData + CraftedAttestation.clientDataHash, algorithm: alg.signatureAlgorithm)
        var map: CBORMap = [
            "alg": .integer(alg.rawValue), "sig": .bytes(sig),
            "x5c": .array([.bytes(leafCertificate), .bytes(CraftedAttestation.intermediate.certificateDER)]),
        ]
        for (key, value) in extraMembers { map[key] = value }
        return map
    }

    func verify(
        anchored: Bool = true, policy: AndroidKeyAttestation.AuthorizationPolicy = .trustedEnvironment
    ) throws(PasskeyError) -> AttestationOutcome {
        try CraftedAttestation.verify(
            AndroidKeyAttestation(authorizationPolicy: policy), statement: statement,
            authenticatorData: authenticatorData,
            context: CraftedAttestation.context(
                format: "android-key", anchors: anchored ? [CraftedAttestation.root.certificateDER] : []))
    }
}

/// Builds SafetyNet responses: a JWS signed by an attest.android.com certificate from the test CA,
/// with knobs for every checked claim. No W3C vector exists for this format.
struct SafetyNetStatementBuilder {
    var signingKey: SoftwareKey = TestKeys.otherRSA2048
    var jwsAlgorithm = "RS256"
    var subject = TestCertificateAuthority.Name(commonName: "attest.android.com")
    var dnsNames: [String]? = nil
    var nonceOverride: String? = nil
    var ctsProfileMatch: String = "true"
    var timestamp: Date = CraftedAttestation.now.addingTimeInterval(-5)
    var payloadOverride: String? = nil
    var headerOverride: String? = nil
    var signatureOverride: [UInt8]? = nil
    var version: CBORValue = "243030037"
    var credentialKey: SoftwareKey = TestKeys.p256

    var authenticatorData: [UInt8] {
        CraftedAttestation.authenticatorData(key: credentialKey, algorithm: .es256)
    }

    var leafCertificate: [UInt8] {
        var extensions: [TestCertificateAuthority.Extension] = []
        if let dnsNames {
            // dNSName is [2] IMPLICIT IA5String.
            extensions.append(
                .init(
                    oid: Certificate.OID.subjectAlternativeName,
                    value: DERWriter.sequence(
                        dnsNames.map { DERWriter.contextSpecific(2, constructed: false, Array($0.utf8)) })))
        }
        return CraftedAttestation.intermediate.issue(
            subject: subject, subjectPublicKeyInfo: signingKey.subjectPublicKeyInfo, extensions: extensions)
    }

    var header: String {
        headerOverride
            ?? """
            {"alg":"\(jwsAlgorithm)","x5c":["\(Data(leafCertificate).base64EncodedString())","\
            \(Data(CraftedAttestation.intermediate.certificateDER).base64EncodedString())"]}
            """
    }

    var payload: String {
        let nonce =
            nonceOverride
            ?? Data(Digest.sha256(authenticatorData + CraftedAttestation.clientDataHash))
            .base64EncodedString()
        let milliseconds = Int64((timestamp.timeIntervalSince1970 * 1000).rounded())
        return payloadOverride
            ?? """
            {"nonce":"\(nonce)","timestampMs":\(milliseconds),"apkPackageName":"com.google.android.gms",\
            "ctsProfileMatch":\(ctsProfileMatch),"basicIntegrity":true,"evaluationType":"BASIC"}
            """
    }

    var response: [UInt8] {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
        let signature: [UInt8]
        if let signatureOverride {
            signature = signatureOverride
        } else if jwsAlgorithm == "ES256" {
            signature = rawECDSA(signingKey.sign(Array(input.utf8), algorithm: .ecdsaSHA256), size: 32)
        } else {
            signature = signingKey.sign(Array(input.utf8), algorithm: .rsaPKCS1SHA256)
        }
        return Array((input + "." + Base64URL.encode(signature)).utf8)
    }

    var statement: CBORMap { ["ver": version, "response": .bytes(response)] }

    func verify(
        anchored: Bool = true, maximumAge: TimeInterval = AndroidSafetyNetAttestation.defaultMaximumAge
    ) throws(PasskeyError) -> AttestationOutcome {
        try CraftedAttestation.verify(
            AndroidSafetyNetAttestation(maximumAge: maximumAge), statement: statement,
            authenticatorData: authenticatorData,
            context: CraftedAttestation.context(
                format: "android-safetynet", anchors: anchored ? [CraftedAttestation.root.certificateDER] : []
            ))
    }
}

/// A DER ECDSA signature as JOSE's fixed-size r‖s.
func rawECDSA(_ der: [UInt8], size: Int) -> [UInt8] {
    var outer = DERReader(der)
    guard var sequence = try? outer.readSequence(), let r = try? sequence.readIntegerBytes(),
        let s = try? sequence.readIntegerBytes()
    else { fatalError("not a DER ECDSA signature") }
    func pad(_ value: [UInt8]) -> [UInt8] {
        let trimmed = Array(value.drop { $0 == 0 })
        return Array(repeating: 0, count: size - trimmed.count) + trimmed
    }
    return pad(r) + pad(s)
}
