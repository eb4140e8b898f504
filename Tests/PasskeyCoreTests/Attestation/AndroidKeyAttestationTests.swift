import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

/// The android-key format (§8.4) against crafted statements: every rule refused with its code.
@Suite("android-key attestation")
struct AndroidKeyAttestationTests {
    typealias Builder = AndroidKeyStatementBuilder

    static func builder(_ change: (inout Builder) -> Void) -> Builder {
        var value = Builder()
        change(&value)
        return value
    }

    @Test(
        "§8.4: a TEE-backed key verifies as basic, trusted only with the anchor",
        arguments: [COSEAlgorithm.es256, .rs256])
    func valid(algorithm: COSEAlgorithm) throws {
        let builder = Self.builder {
            $0.credentialAlgorithm = algorithm
            $0.alg = algorithm
            $0.credentialKey = algorithm == .rs256 ? TestKeys.rsa2048 : TestKeys.p256
        }
        let trusted = try builder.verify()
        #expect(trusted.type == .basic && trusted.trusted && trusted.trustPath.count == 2)
        #expect(trusted.anchorsUsed?.contains("Attestation Test Root") == true)
        let untrusted = try builder.verify(anchored: false)
        #expect(!untrusted.trusted && untrusted.anchorsUsed == nil)
    }

    @Test("§8.4 syntax: alg, sig and x5c with their types, and nothing else")
    func syntax() {
        let valid = Builder().statement
        for name in ["alg", "sig", "x5c"] {
            var statement = CBORMap()
            for entry in valid where entry.key != .text(name) { statement[entry.key] = entry.value }
            expectCode(
                name == "x5c" ? .attestationInvalidStatement : .attestationInvalidStatement, "without \(name)"
            ) {
                _ = try CraftedAttestation.verify(
                    AndroidKeyAttestation(), statement: statement,
                    authenticatorData: Builder().authenticatorData,
                    context: CraftedAttestation.context(format: "android-key"))
            }
        }
        for (name, value): (String, CBORValue) in [("alg", 99), ("alg", "ES256"), ("sig", 1)] {
            var statement = valid
            statement[.text(name)] = value
            expectCode(.attestationInvalidStatement, "\(name)") {
                _ = try CraftedAttestation.verify(
                    AndroidKeyAttestation(), statement: statement,
                    authenticatorData: Builder().authenticatorData,
                    context: CraftedAttestation.context(format: "android-key"))
            }
        }
        expectCode(.attestationInvalidStatement) {
            _ = try Self.builder { $0.extraMembers = [("ver", "1")] }.verify()
        }
    }

    @Test("§8.4: sig must verify over authData ‖ clientDataHash with the leaf key and alg")
    func signature() {
        expectCode(.attestationAndroidKeySignatureInvalid) {
            _ = try Self.builder { $0.signingKey = TestKeys.otherP256 }.verify()
        }
        expectCode(.attestationAndroidKeySignatureInvalid) {
            _ = try Self.builder { $0.alg = .es384 }.verify()
        }
    }

    @Test("§8.4: the leaf key must be the credential key")
    func publicKey() {
        // The certificate and signature belong to another key than the one in authData.
        expectCode(.attestationAndroidKeyPublicKeyMismatch) {
            _ = try Self.builder {
                $0.certificateKey = TestKeys.otherP256
                $0.signingKey = TestKeys.otherP256
            }.verify()
        }
    }

    @Test("§8.4: the key description must be present and well formed")
    func keyDescription() {
        expectCode(.attestationAndroidKeyDescriptionInvalid) {
            _ = try Self.builder { $0.includeKeyDescription = false }.verify()
        }
        let valid = Builder().keyDescription
        let list = Builder.Authorizations().encoded
        let cases: [(String, [UInt8])] = [
            ("not a sequence", DERWriter.octetString([1])),
            ("trailing element", DERWriter.sequence([Array(valid.dropFirst(2)), DERWriter.null])),
            (
                "missing teeEnforced",
                DERWriter.sequence([
                    DERWriter.integer(3), DERWriter.enumerated(1), DERWriter.integer(4),
                    DERWriter.enumerated(1),
                    DERWriter.octetString([]), DERWriter.octetString([]), list,
                ])
            ),
            (
                "security level not ENUMERATED",
                DERWriter.sequence([
                    DERWriter.integer(3), DERWriter.integer(1), DERWriter.integer(4), DERWriter.enumerated(1),
                    DERWriter.octetString([]), DERWriter.octetString([]), list, list,
                ])
            ),
        ]
        for (label, bytes) in cases {
            expectCode(.attestationAndroidKeyDescriptionInvalid, "\(label)") {
                _ = try Self.builder { $0.keyDescriptionOverride = bytes }.verify()
            }
        }
        let listCases: [(String, [(UInt32, [UInt8])])] = [
            ("repeated tag", [(2, DERWriter.integer(3)), (2, DERWriter.integer(1))]),
            ("two elements under one tag", [(5, DERWriter.integer(3) + DERWriter.integer(4))]),
            ("purpose not a SET", [(1, DERWriter.integer(2))]),
            ("origin not an INTEGER", [(702, DERWriter.null)]),
            ("allApplications not NULL", [(600, DERWriter.integer(0))]),
        ]
        for (label, others) in listCases {
            expectCode(.attestationAndroidKeyDescriptionInvalid, "\(label)") {
                _ = try Self.builder { $0.softwareEnforced.others = others }.verify()
            }
        }
    }

    @Test("§8.4: attestationChallenge must be clientDataHash")
    func challenge() {
        for challenge in [
            [], Array(CraftedAttestation.clientDataHash.dropLast()), Array(repeating: 0, count: 32),
        ] {
            expectCode(.attestationAndroidKeyChallengeMismatch) {
                _ = try Self.builder { $0.challenge = challenge }.verify()
            }
        }
    }

    @Test("§8.4: allApplications in either list is refused, under every policy")
    func allApplications() {
        for policy in AndroidKeyAttestation.AuthorizationPolicy.allCases {
            expectCode(.attestationAndroidKeyAllApplications, "tee \(policy)") {
                _ = try Self.builder { $0.teeEnforced.allApplications = true }.verify(policy: policy)
            }
            expectCode(.attestationAndroidKeyAllApplications, "software \(policy)") {
                _ = try Self.builder { $0.softwareEnforced.allApplications = true }.verify(policy: policy)
            }
        }
    }

    @Test("§8.4: origin generated and purpose sign must be in teeEnforced by default")
    func teeAuthorizations() throws {
        let cases: [(String, (inout Builder) -> Void)] = [
            ("imported", { $0.teeEnforced.origin = 2 }),
            ("no origin", { $0.teeEnforced.origin = nil }),
            ("verify-only purpose", { $0.teeEnforced.purposes = [3] }),
            ("no purpose", { $0.teeEnforced.purposes = nil }),
            ("empty purpose set", { $0.teeEnforced.purposes = [] }),
        ]
        for (label, change) in cases {
            expectCode(.attestationAndroidKeyAuthorizationInvalid, "\(label)") {
                _ = try Self.builder(change).verify()
            }
        }
        // A software-backed key: everything in softwareEnforced, teeEnforced empty.
        let software = Self.builder {
            $0.softwareEnforced = .init()
            $0.teeEnforced = .empty
        }
        expectCode(.attestationAndroidKeyAuthorizationInvalid) { _ = try software.verify() }
        // Allowed when the policy says so, and still checked there.
        #expect(try software.verify(policy: .softwareAllowed).type == .basic)
        expectCode(.attestationAndroidKeyAuthorizationInvalid) {
            _ = try Self.builder {
                $0.softwareEnforced = .init(origin: 3)
                $0.teeEnforced = .empty
            }.verify(policy: .softwareAllowed)
        }
        // An imported origin in one list is not outweighed by a generated one in the other.
        expectCode(.attestationAndroidKeyAuthorizationInvalid) {
            _ = try Self.builder { $0.softwareEnforced = .init(origin: 2) }.verify(policy: .softwareAllowed)
        }
        // ifStated: absence passes, a stated wrong value does not.
        _ = try Self.builder {
            $0.teeEnforced = .empty
        }.verify(policy: .ifStated)
        expectCode(.attestationAndroidKeyAuthorizationInvalid) {
            _ = try Self.builder { $0.teeEnforced.purposes = [3] }.verify(policy: .ifStated)
        }
    }

    @Test("the key description parser exposes the fields it reads")
    func parser() throws {
        let description = try AndroidKeyDescription(extensionValue: Builder().keyDescription)
        #expect(description.attestationVersion == 200 && description.keymasterVersion == 200)
        #expect(description.attestationSecurityLevel == .trustedEnvironment)
        #expect(description.attestationChallenge == CraftedAttestation.clientDataHash)
        #expect(description.teeEnforced.purposes == [2] && description.teeEnforced.origin == 0)
        #expect(description.teeEnforced.tags == [1, 2, 10, 702])
        #expect(description.softwareEnforced.tags.isEmpty && !description.softwareEnforced.allApplications)
    }

    @Test(
        "bundled Google roots parse, are self-signed CAs, match their published fingerprints, and are anchors"
    )
    func bundledRoots() throws {
        let published = [
            "1ef1a04b8ba58ab94589ac498c8982a783f24ea7307e0159a0c3a73b377d87cc",
            "ab6641178a36e179aa0c1cdddf9a16eb45fa20943e2b8cd7c7c05c26cf8b487a",
            "cedb1cb6dc896ae5ec797348bce9286753c2b38ee71ce0fbe34a9a1248800dfc",
        ]
        let roots = try BundledAttestationRoots.googleHardwareAttestation.map { try Certificate(der: $0) }
        #expect(roots.map { Hex.encode($0.fingerprintSHA256) } == published)
        for root in roots {
            #expect(root.isSelfSigned && root.isCA == true)
            #expect(root.subject.description.contains("f92009e853b6b045"))
        }
        let globalSign = try BundledAttestationRoots.globalSignRootCA.map { try Certificate(der: $0) }
        #expect(
            globalSign.map { Hex.encode($0.fingerprintSHA256) }
                == ["ebd41040e4bb3ec742c9e381d31ef2a41a48b6685c96e7cef3c1df6cd4331c99"])
        #expect(globalSign[0].isSelfSigned && globalSign[0].subject.commonName == "GlobalSign Root CA")
        // The bundled roots are offered as android-key anchors unless turned off (a test chain still
        // does not reach them, so it stays untrusted either way).
        #expect(try !Builder().verify(anchored: false).trusted)
    }
}
