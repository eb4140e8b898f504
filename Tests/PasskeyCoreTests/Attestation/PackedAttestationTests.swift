import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

private typealias A = AttestationFixture

@Suite("packed attestation (§8.2)")
struct PackedAttestationTests {
    @Test("§8.2 self: registers for every algorithm, type self, never trusted", arguments: Fixture.algorithms)
    func selfAttestation(_ algorithm: COSEAlgorithm) throws {
        let credential = try #require(Fixture.credentials[algorithm])
        let result = try A.register(.packedSelf, credential: credential)
        #expect(result.attestationFormat == "packed")
        #expect(result.attestationType == .selfAttestation)
        #expect(!result.attestationTrusted && result.attestationTrustPath.isEmpty)
        expectCode(.attestationUntrusted) {
            _ = try A.register(
                .packedSelf, credential: credential, relyingParty: A.relyingParty(policy: .requireTrusted))
        }
    }

    @Test("§8.2 self: alg must be the credential key's algorithm")
    func selfWrongAlgorithm() {
        expectCode(.attestationAlgorithmMismatch) {
            _ = try A.register(.packedSelf) { setMember(&$0, "alg", .integer(COSEAlgorithm.es384.rawValue)) }
        }
    }

    @Test("§8.2 self and x5c: a damaged sig is refused")
    func badSignature() {
        expectCode(.attestationSignatureInvalid) {
            _ = try A.register(.packedSelf) { damageMember(&$0, "sig") }
        }
        expectCode(.attestationSignatureInvalid) {
            _ = try A.register(A.packed()) { damageMember(&$0, "sig") }
        }
        // A valid signature by a key other than the certificate's.
        expectCode(.attestationSignatureInvalid) {
            _ = try A.register(A.packed(key: SoftwareKey.generate(.ec(.p256))))
        }
    }

    @Test("§8.2 x5c: basic attestation, trusted through the format's configured root, trust path is x5c")
    func basicTrusted() throws {
        let x5c = [A.packedLeaf(), A.intermediate.certificateDER]
        let result = try A.register(
            A.packed(x5c: x5c), relyingParty: A.relyingParty(anchors: ["packed": [A.root.certificateDER]]))
        #expect(result.attestationType == .basic)
        #expect(result.attestationTrusted)
        #expect(result.attestationTrustPath == x5c)
        #expect(result.attestationAnchor?.contains("Attestation Root") == true)
        let strict = A.relyingParty(anchors: ["packed": [A.root.certificateDER]], policy: .requireTrusted)
        #expect(try A.register(A.packed(x5c: x5c), relyingParty: strict).attestationTrusted)
    }

    @Test("§8.2 x5c: P-384, P-521, Ed25519 and RSA attestation keys sign under their alg")
    func otherAttestationKeys() throws {
        let cases: [(SoftwareKey.Kind, COSEAlgorithm)] = [
            (.ec(.p384), .es384), (.ec(.p521), .es512), (.ed25519, .edDSA), (.rsa(bits: 2048), .rs256),
            (.rsa(bits: 2048), .ps256),
        ]
        for (kind, algorithm) in cases {
            let key = SoftwareKey.generate(kind)
            let result = try A.register(
                A.packed(
                    x5c: [A.packedLeaf(key: key), A.intermediate.certificateDER], key: key,
                    algorithm: algorithm),
                relyingParty: A.relyingParty(anchors: ["packed": [A.root.certificateDER]]))
            #expect(result.attestationTrusted, "\(algorithm)")
        }
    }

    @Test("§8.2 x5c: a chain to an untrusted root is untrusted, and refused under requireTrusted")
    func untrustedRoot() throws {
        let rogueCA = A.untrustedRoot.intermediate(name: .init(commonName: "Rogue CA"))
        let x5c = [A.packedLeaf(issuer: rogueCA), rogueCA.certificateDER]
        let anchors = ["packed": [A.root.certificateDER]]
        #expect(
            try !A.register(A.packed(x5c: x5c), relyingParty: A.relyingParty(anchors: anchors))
                .attestationTrusted)
        expectCode(.attestationUntrusted) {
            _ = try A.register(
                A.packed(x5c: x5c), relyingParty: A.relyingParty(anchors: anchors, policy: .requireTrusted))
        }
    }

    @Test("§8.2 x5c: a self-signed root carried inside x5c is not trusted")
    func selfSignedRootInX5C() throws {
        let rogueCA = A.untrustedRoot.intermediate(name: .init(commonName: "Rogue CA"))
        let x5c = [A.packedLeaf(issuer: rogueCA), rogueCA.certificateDER, A.untrustedRoot.certificateDER]
        let result = try A.register(
            A.packed(x5c: x5c), relyingParty: A.relyingParty(anchors: ["packed": [A.root.certificateDER]]))
        #expect(!result.attestationTrusted)
        // Even the genuine root in x5c does nothing without configuration.
        let genuine = [A.packedLeaf(), A.intermediate.certificateDER, A.root.certificateDER]
        #expect(try !A.register(A.packed(x5c: genuine)).attestationTrusted)
    }

    @Test("§8.2 x5c: AAGUID anchors apply only when the certificate carries the matching AAGUID")
    func aaguidBinding() throws {
        let perAAGUID = [SoftwareAuthenticator.testAAGUID: [A.root.certificateDER]]
        let bound = [A.packedLeaf(), A.intermediate.certificateDER]
        #expect(
            try A.register(A.packed(x5c: bound), relyingParty: A.relyingParty(perAAGUID: perAAGUID))
                .attestationTrusted)
        let unbound = [A.packedLeaf(extensions: []), A.intermediate.certificateDER]
        #expect(
            try !A.register(A.packed(x5c: unbound), relyingParty: A.relyingParty(perAAGUID: perAAGUID))
                .attestationTrusted)
    }

    @Test("§8.2.1: the attestation certificate's subject, version and basicConstraints are enforced")
    func certificateRequirements() {
        let subjects: [TestCertificateAuthority.Name] = [
            .init(
                country: "SE", organization: "Portvakt Test", organizationalUnit: "Engineering",
                commonName: "X"),
            .init(country: "SE", organization: "Portvakt Test", commonName: "X"),
            .init(
                organization: "Portvakt Test", organizationalUnit: "Authenticator Attestation",
                commonName: "X"),
            .init(
                country: "S1", organization: "P", organizationalUnit: "Authenticator Attestation",
                commonName: "X"),
            .init(
                country: "se", organization: "P", organizationalUnit: "Authenticator Attestation",
                commonName: "X"),
            .init(country: "SE", organizationalUnit: "Authenticator Attestation", commonName: "X"),
            .init(country: "SE", organization: "P", organizationalUnit: "Authenticator Attestation"),
        ]
        for subject in subjects {
            expectCode(.attestationCertificateRequirements, "\(subject)") {
                _ = try A.register(
                    A.packed(x5c: [A.packedLeaf(subject: subject), A.intermediate.certificateDER]))
            }
        }
        for constraints: TestCertificateAuthority.BasicConstraints in [.ca(pathLength: nil), .absent] {
            expectCode(.attestationCertificateRequirements, "\(constraints)") {
                _ = try A.register(
                    A.packed(x5c: [
                        A.packedLeaf(basicConstraints: constraints), A.intermediate.certificateDER,
                    ]))
            }
        }
        let version1 = TestCertificateAuthority.makeCertificate(
            subject: A.packedSubject, subjectPublicKeyInfo: A.attestationKey.subjectPublicKeyInfo,
            issuer: A.intermediate.name, issuerKey: A.intermediate.key, notBefore: A.start, notAfter: A.end,
            basicConstraints: .absent, keyUsage: nil, version: 1)
        expectCode(.attestationCertificateRequirements) { _ = try A.register(A.packed(x5c: [version1])) }
    }

    @Test("§8.2.1: a critical or malformed id-fido-gen-ce-aaguid extension is refused")
    func aaguidExtensionRules() {
        expectCode(.attestationCertificateRequirements) {
            _ = try A.register(A.packed(x5c: [A.packedLeaf(extensions: [A.aaguidExtension(critical: true)])]))
        }
        let notOctetString = TestCertificateAuthority.Extension(
            oid: Certificate.OID.fidoAAGUID, value: DERWriter.integer(7))
        expectCode(.attestationCertificateRequirements) {
            _ = try A.register(A.packed(x5c: [A.packedLeaf(extensions: [notOctetString])]))
        }
    }

    @Test("§8.2: an id-fido-gen-ce-aaguid that is not authData's AAGUID is refused")
    func aaguidMismatch() {
        let other = UUID(uuidString: "00000000-0000-0000-0000-000000000001")!
        expectCode(.attestationAAGUIDMismatch) {
            _ = try A.register(A.packed(x5c: [A.packedLeaf(extensions: [A.aaguidExtension(other)])]))
        }
    }

    @Test("§8.2 x5c: alg must fit the certificate's key; unknown algs and ECDAA are unsupported")
    func algorithms() {
        expectCode(.attestationAlgorithmMismatch) {
            _ = try A.register(A.packed()) { setMember(&$0, "alg", .integer(COSEAlgorithm.rs256.rawValue)) }
        }
        expectCode(.attestationUnsupportedAlgorithm) {
            _ = try A.register(A.packed()) { setMember(&$0, "alg", .integer(-53)) }
        }
        expectCode(.attestationUnsupportedAlgorithm) {
            _ = try A.register(.packedSelf) { setMember(&$0, "ecdaaKeyId", .bytes([1, 2, 3])) }
        }
    }

    @Test("§8.2 syntax: alg and sig required with the right types, no other members")
    func syntax() {
        let edits: [@Sendable (inout CBORValue) -> Void] = [
            { setMember(&$0, "sig", nil) }, { setMember(&$0, "alg", nil) },
            { setMember(&$0, "alg", .text("ES256")) },
            { setMember(&$0, "sig", .text("x")) }, { setMember(&$0, "extra", 1) },
        ]
        for edit in edits {
            expectCode(.attestationInvalidStatement) { _ = try A.register(.packedSelf, edit: edit) }
        }
        expectCode(.attestationCertificateInvalid) { _ = try A.register(A.packed(x5c: [])) }
        expectCode(.attestationCertificateInvalid) { _ = try A.register(A.packed(x5c: [[0x30, 0x00]])) }
    }

    @Test("attestation.chain_invalid: an x5c that reaches the anchor but has expired is refused")
    func expiredChain() {
        let expired = A.intermediate.issue(
            subject: A.packedSubject, subjectPublicKeyInfo: A.attestationKey.subjectPublicKeyInfo,
            notBefore: A.start, notAfter: Fixture.now.addingTimeInterval(-86_400),
            extensions: [A.aaguidExtension()])
        expectCode(.attestationChainInvalid) {
            _ = try A.register(
                A.packed(x5c: [expired, A.intermediate.certificateDER]),
                relyingParty: A.relyingParty(anchors: ["packed": [A.root.certificateDER]]))
        }
    }
}
