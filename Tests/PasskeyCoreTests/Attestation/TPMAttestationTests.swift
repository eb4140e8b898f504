import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

/// The tpm format (§8.3) against crafted statements: every rule refused with its code.
@Suite("tpm attestation")
struct TPMAttestationTests {
    typealias Builder = TPMStatementBuilder

    static func builder(_ change: (inout Builder) -> Void) -> Builder {
        var value = Builder()
        change(&value)
        return value
    }

    @Test(
        "§8.3: valid statements verify as attCA, trusted only with the anchor",
        arguments: [
            (COSEAlgorithm.es256, COSEAlgorithm.rs256, UInt16(0x000B)), (.rs256, .rs256, 0x000B),
            (.es256, .rs1, 0x0004), (.es384, .es384, 0x000C), (.rs256, .es256, 0x000D),
        ])
    func validStatements(credential: COSEAlgorithm, alg: COSEAlgorithm, nameAlg: UInt16) throws {
        let builder = Self.builder {
            $0.credentialAlgorithm = credential
            $0.credentialKey =
                credential == .rs256
                ? TestKeys.rsa2048 : (credential == .es384 ? TestKeys.p384 : TestKeys.p256)
            $0.alg = alg
            $0.aikKey =
                alg == .es256 ? TestKeys.otherP256 : (alg == .es384 ? TestKeys.p384 : TestKeys.otherRSA2048)
            $0.nameAlgorithm = nameAlg
        }
        let trusted = try builder.verify()
        #expect(trusted.type == .attestationCA)
        #expect(trusted.trusted)
        #expect(trusted.trustPath.count == 2)
        #expect(trusted.anchorsUsed?.contains("Attestation Test Root") == true)
        let untrusted = try builder.verify(anchored: false)
        #expect(!untrusted.trusted && untrusted.anchorsUsed == nil)
    }

    @Test("§8.3: an RSA exponent written as 65537 instead of 0 means the same key")
    func explicitExponent() throws {
        _ = try Self.builder {
            $0.credentialKey = TestKeys.rsa2048
            $0.credentialAlgorithm = .rs256
            $0.rsaExponent = 65537
        }.verify()
        expectCode(.attestationTPMPublicKeyMismatch) {
            _ = try Self.builder {
                $0.credentialKey = TestKeys.rsa2048
                $0.credentialAlgorithm = .rs256
                $0.rsaExponent = 3
            }.verify()
        }
    }

    @Test("§8.3 syntax: ver must be \"2.0\" and ECDAA is refused")
    func version() {
        for version: CBORValue in ["1.2", "2.00", ""] {
            expectCode(.attestationTPMUnsupportedVersion, "\(version)") {
                _ = try Self.builder { $0.version = version }.verify()
            }
        }
        expectCode(.attestationTPMUnsupportedVersion) {
            _ = try Self.builder { $0.extraMembers = [("ecdaaKeyId", .bytes([1, 2, 3]))] }.verify()
        }
        expectCode(.attestationInvalidStatement) { _ = try Self.builder { $0.version = 2 }.verify() }
    }

    @Test("§8.3 syntax: members must be present with their types, and no others")
    func syntax() {
        let valid = Builder().statement
        for name in ["alg", "x5c", "sig", "certInfo", "pubArea"] {
            var statement = CBORMap()
            for entry in valid where entry.key != .text(name) { statement[entry.key] = entry.value }
            expectCode(.attestationInvalidStatement, "without \(name)") {
                _ = try CraftedAttestation.verify(
                    TPMAttestation(), statement: statement, authenticatorData: Builder().authenticatorData,
                    context: CraftedAttestation.context(format: "tpm"))
            }
        }
        for (name, value): (String, CBORValue) in [
            ("alg", "RS256"), ("alg", -8), ("alg", 12345), ("sig", "text"), ("certInfo", 1), ("pubArea", []),
        ] {
            var statement = valid
            statement[.text(name)] = value
            expectCode(.attestationInvalidStatement, "\(name)") {
                _ = try CraftedAttestation.verify(
                    TPMAttestation(), statement: statement, authenticatorData: Builder().authenticatorData,
                    context: CraftedAttestation.context(format: "tpm"))
            }
        }
        expectCode(.attestationInvalidStatement) {
            _ = try Self.builder { $0.extraMembers = [("extra", 1)] }.verify()
        }
    }

    @Test("§8.3: pubArea that is not a well-formed RSA or ECC TPMT_PUBLIC is refused")
    func malformedPubArea() {
        let valid = Builder().pubArea
        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("truncated", Array(valid.dropLast())),
            ("trailing byte", valid + [0]),
            ("keyedhash type", be16(0x0008) + valid.dropFirst(2)),
            ("unknown scheme", Array(valid[0..<12]) + be16(0x0099) + Array(valid[14...])),
            ("size past the end", Array(valid[0..<(valid.count - 34)]) + be16(0xFFFF)),
        ]
        for (label, bytes) in cases {
            expectCode(.attestationTPMPubAreaInvalid, "\(label)") {
                _ = try Self.builder { $0.pubAreaOverride = bytes }.verify()
            }
        }
        expectCode(.attestationTPMPubAreaInvalid, "unsupported nameAlg") {
            _ = try Self.builder { $0.nameAlgorithm = 0x0012 }.verify()
        }
    }

    @Test("§8.3: the key in pubArea must be the credential key")
    func publicKeyMismatch() {
        // Another key's pubArea, the credential stays the same.
        let other = Self.builder { $0.credentialKey = TestKeys.otherP256 }.pubArea
        expectCode(.attestationTPMPublicKeyMismatch) {
            _ = try Self.builder { $0.pubAreaOverride = other }.verify()
        }
        // An RSA pubArea for an EC credential.
        let rsa = Self.builder {
            $0.credentialKey = TestKeys.rsa2048
            $0.credentialAlgorithm = .rs256
        }.pubArea
        expectCode(.attestationTPMPublicKeyMismatch) {
            _ = try Self.builder { $0.pubAreaOverride = rsa }.verify()
        }
        // The right point on the wrong curve ID.
        var wrongCurve = Builder().pubArea
        wrongCurve[15] = 0x04
        expectCode(.attestationTPMPublicKeyMismatch) {
            _ = try Self.builder { $0.pubAreaOverride = wrongCurve }.verify()
        }
        // keyBits that disagree with the modulus.
        var keyBits = rsa
        keyBits[15] ^= 0x01
        expectCode(.attestationTPMPublicKeyMismatch) {
            _ = try Self.builder {
                $0.credentialKey = TestKeys.rsa2048
                $0.credentialAlgorithm = .rs256
                $0.pubAreaOverride = keyBits
            }.verify()
        }
    }

    @Test(
        "§8.3.1: the AIK certificate must be v3, subject-less, with a critical TPM SAN, the AIK EKU and cA false"
    )
    func aikRequirements() {
        let cases: [(String, (inout Builder) -> Void)] = [
            ("version 1", { $0.aikVersion = 1 }),
            ("subject", { $0.aikSubject = .init(commonName: "TPM") }),
            ("no SAN", { $0.includeSAN = false }),
            ("SAN not critical", { $0.sanCritical = false }),
            ("SAN without model", { $0.sanAttributes.remove(at: 1) }),
            ("SAN with an empty version", { $0.sanAttributes[2].1 = "" }),
            ("no EKU", { $0.extendedKeyUsage = nil }),
            ("wrong EKU", { $0.extendedKeyUsage = ["1.3.6.1.5.5.7.3.2"] }),
            ("no basicConstraints", { $0.basicConstraints = .absent }),
        ]
        for (label, change) in cases {
            expectCode(.attestationTPMCertificateInvalid, "\(label)") {
                _ = try Self.builder(change).verify()
            }
        }
        // A CA certificate as AIK: refused by the AIK rules whether or not the chain would accept it.
        expectCode(.attestationTPMCertificateInvalid) {
            _ = try Self.builder { $0.basicConstraints = .ca(pathLength: nil) }.verify()
        }
        expectCode(.attestationTPMCertificateInvalid, "malformed AAGUID extension") {
            _ = try Self.builder { $0.aaguidExtension = DERWriter.integer(5) }.verify()
        }
    }

    @Test(
        "§8.3: the AIK's AAGUID extension must equal authData's; without it the AAGUID's anchors are not used"
    )
    func aaguid() throws {
        expectCode(.attestationTPMAAGUIDMismatch) {
            _ = try Self.builder {
                $0.aaguidExtension = DERWriter.octetString(Array(repeating: 7, count: 16))
            }
            .verify()
        }
        // Anchors configured for the AAGUID only: used when the extension binds it, ignored otherwise.
        let anchors = StaticTrustAnchors(perAAGUID: [
            CraftedAttestation.aaguid: [CraftedAttestation.root.certificateDER]
        ])
        let context = AttestationContext(
            validationTime: CraftedAttestation.now, aaguid: CraftedAttestation.aaguid, anchors: anchors,
            metadata: nil)
        let bound = Builder()
        #expect(
            try CraftedAttestation.verify(
                TPMAttestation(), statement: bound.statement, authenticatorData: bound.authenticatorData,
                context: context
            ).trusted)
        let unbound = Self.builder { $0.aaguidExtension = nil }
        #expect(
            try !CraftedAttestation.verify(
                TPMAttestation(), statement: unbound.statement, authenticatorData: unbound.authenticatorData,
                context: context
            ).trusted)
    }

    @Test("§8.3: sig must verify over certInfo with the AIK key and alg")
    func signature() {
        expectCode(.attestationTPMSignatureInvalid) {
            _ = try Self.builder {
                $0.signatureOverride = TestKeys.rsa2048.sign([1, 2, 3], algorithm: .rsaPKCS1SHA256)
            }
            .verify()
        }
        // Signed by another key than the AIK's.
        let builder = Builder()
        expectCode(.attestationTPMSignatureInvalid) {
            _ = try Self.builder {
                $0.signatureOverride = TestKeys.otherRSA2048.sign(
                    builder.certInfo, algorithm: .rsaPKCS1SHA256)
            }.verify()
        }
        // alg that the AIK's key cannot make.
        expectCode(.attestationTPMSignatureInvalid) {
            _ = try Self.builder {
                $0.signatureOverride = TestKeys.rsa2048.sign(builder.certInfo, algorithm: .rsaPKCS1SHA256)
                $0.alg = .es256
            }.verify()
        }
    }

    @Test("§8.3: certInfo must be a TPM-generated TPM_ST_ATTEST_CERTIFY structure, exactly")
    func certInfoStructure() {
        let valid = Builder().certInfo
        let cases: [(String, (inout Builder) -> Void)] = [
            ("magic", { $0.magic = 0xFF54_4348 }),
            ("type quote", { $0.attestType = 0x8018 }),
            ("truncated", { $0.certInfoOverride = Array(valid.dropLast()) }),
            ("trailing", { $0.certInfoOverride = valid + [0] }),
            ("empty", { $0.certInfoOverride = [] }),
        ]
        for (label, change) in cases {
            expectCode(.attestationTPMCertInfoInvalid, "\(label)") { _ = try Self.builder(change).verify() }
        }
    }

    @Test("§8.3: extraData must be alg's hash of authData ‖ clientDataHash")
    func extraData() {
        let builder = Builder()
        let correct = Digest.hash(.sha256, builder.authenticatorData + CraftedAttestation.clientDataHash)
        let cases: [[UInt8]] = [
            [], Array(correct.dropLast()),
            Digest.hash(.sha384, builder.authenticatorData + CraftedAttestation.clientDataHash),
            Digest.hash(.sha256, builder.authenticatorData),
        ]
        for extraData in cases {
            expectCode(.attestationTPMExtraDataMismatch) {
                _ = try Self.builder { $0.extraDataOverride = extraData }.verify()
            }
        }
        // The right hash under the wrong algorithm: SHA-256 where RS1 implies SHA-1.
        expectCode(.attestationTPMExtraDataMismatch) {
            _ = try Self.builder {
                $0.alg = .rs1
                $0.extraDataOverride = correct
            }.verify()
        }
    }

    @Test("§8.3: attested.name must be pubArea's Name under its nameAlg")
    func name() {
        let pubArea = Builder().pubArea
        let cases: [[UInt8]] = [
            be16(0x000B) + Digest.hash(.sha256, pubArea + [0]),
            be16(0x000C) + Digest.hash(.sha256, pubArea),
            Digest.hash(.sha256, pubArea),
            [],
        ]
        for name in cases {
            expectCode(.attestationTPMNameMismatch) {
                _ = try Self.builder { $0.nameOverride = name }.verify()
            }
        }
    }

    @Test(
        "x5c: missing, empty or unparsable certificates are refused; an expired chain with an anchor is invalid"
    )
    func certificates() {
        var statement = Builder().statement
        statement["x5c"] = .array([])
        expectCode(.attestationCertificateInvalid) {
            _ = try CraftedAttestation.verify(
                TPMAttestation(), statement: statement, authenticatorData: Builder().authenticatorData,
                context: CraftedAttestation.context(format: "tpm"))
        }
        statement["x5c"] = .array([.bytes([0x30, 0x00])])
        expectCode(.attestationCertificateInvalid) {
            _ = try CraftedAttestation.verify(
                TPMAttestation(), statement: statement, authenticatorData: Builder().authenticatorData,
                context: CraftedAttestation.context(format: "tpm"))
        }
        let builder = Builder()
        expectCode(.attestationChainInvalid) {
            _ = try CraftedAttestation.verify(
                TPMAttestation(), statement: builder.statement, authenticatorData: builder.authenticatorData,
                context: CraftedAttestation.context(
                    format: "tpm", anchors: [CraftedAttestation.root.certificateDER],
                    at: CraftedAttestation.end.addingTimeInterval(86_400)))
        }
    }

    @Test("TPMT_PUBLIC and TPMS_ATTEST parsers expose the fields they read")
    func parsers() throws {
        let builder = Builder()
        let pubArea = try TPMPublicArea(bytes: builder.pubArea)
        #expect(pubArea.type == .ecc && pubArea.nameAlgorithm == .sha256)
        #expect(pubArea.objectAttributes == 0x0006_0472 && pubArea.authPolicy.isEmpty)
        guard case .ecc(let ecc) = pubArea.key else { Issue.record("not ECC"); return }
        #expect(ecc.curve == .p256 && ecc.x == TestKeys.p256.ecCoordinates.x)
        #expect(try pubArea.name().prefix(2) == [0x00, 0x0B])
        let certInfo = try TPMCertifyInfo(bytes: builder.certInfo)
        #expect(certInfo.extraData.count == 32 && certInfo.qualifiedSigner.count == 34)
        #expect(certInfo.attestedName == (try pubArea.name()))
        #expect(TPMAlgorithmID.sha384.description == "0x000C")
    }
}
