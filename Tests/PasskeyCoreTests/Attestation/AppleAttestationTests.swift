import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

private typealias A = AttestationFixture

@Suite("apple attestation (§8.8) and bundled anchors")
struct AppleAttestationTests {
    /// An Apple-style anonymization CA under the test root.
    static let anonymizationCA = A.root.intermediate(
        name: .init(organization: "Portvakt Test", commonName: "Anon CA"))
    static let apple = SoftwareAttestation.apple(ca: anonymizationCA, chain: [anonymizationCA.certificateDER])

    @Test("§8.8: the credential certificate carries the nonce and the credential key; type anonCA")
    func registers() throws {
        let trusted = try A.register(
            Self.apple, relyingParty: A.relyingParty(anchors: ["apple": [A.root.certificateDER]]))
        #expect(trusted.attestationFormat == "apple")
        #expect(trusted.attestationType == .anonymizationCA)
        #expect(trusted.attestationTrusted)
        #expect(trusted.attestationTrustPath.count == 2)
        // The bundled Apple root does not vouch for a test CA, and a packed anchor does not apply.
        #expect(try !A.register(Self.apple).attestationTrusted)
        #expect(
            try !A.register(
                Self.apple, relyingParty: A.relyingParty(anchors: ["packed": [A.root.certificateDER]])
            )
            .attestationTrusted)
        expectCode(.attestationUntrusted) {
            _ = try A.register(Self.apple, relyingParty: A.relyingParty(policy: .requireTrusted))
        }
    }

    @Test("§8.8 step 4: a nonce that is not SHA-256(authData ‖ clientDataHash) is refused")
    func nonceMismatch() {
        let wrong = SoftwareAttestation.apple(
            ca: Self.anonymizationCA, chain: [], nonce: Digest.sha256(Array("another ceremony".utf8)))
        expectCode(.attestationNonceMismatch) { _ = try A.register(wrong) }
    }

    @Test("§8.8 step 5: a certificate for a key other than the credential's is refused")
    func keyMismatch() {
        let wrong = SoftwareAttestation.apple(
            ca: Self.anonymizationCA, chain: [], certifiedKey: A.attestationKey)
        expectCode(.attestationPublicKeyMismatch) { _ = try A.register(wrong) }
    }

    @Test("§8.8: a certificate without the nonce extension, or with a malformed one, is refused")
    func nonceExtensionRequired() {
        let plain = Self.anonymizationCA.issue(
            subject: .init(commonName: "No nonce"),
            subjectPublicKeyInfo: Fixture.es256.publicKey.publicKey.derRepresentation)
        expectCode(.attestationCertificateRequirements) {
            _ = try A.register(Self.apple) { setMember(&$0, "x5c", [.bytes(plain)]) }
        }
        let malformed = Self.anonymizationCA.issue(
            subject: .init(commonName: "Bad nonce"),
            subjectPublicKeyInfo: Fixture.es256.publicKey.publicKey.derRepresentation,
            extensions: [
                .init(oid: AppleAttestation.nonceExtensionOID, value: DERWriter.octetString([1, 2]))
            ])
        expectCode(.attestationCertificateRequirements) {
            _ = try A.register(Self.apple) { setMember(&$0, "x5c", [.bytes(malformed)]) }
        }
    }

    @Test("§8.8 syntax: exactly x5c")
    func syntax() {
        expectCode(.attestationInvalidStatement) {
            _ = try A.register(Self.apple) { setMember(&$0, "alg", -7) }
        }
        expectCode(.attestationInvalidStatement) {
            _ = try A.register(Self.apple) { setMember(&$0, "x5c", nil) }
        }
    }

    @Test(
        "bundled: the Apple WebAuthn Root CA parses, is self-signed, valid to 2045, and pinned by fingerprint"
    )
    func bundledAppleRoot() throws {
        let root = try Certificate(der: BundledTrustAnchors.appleWebAuthnRootCA)
        #expect(root.subject.commonName == "Apple WebAuthn Root CA")
        #expect(root.subject.organization == "Apple Inc.")
        #expect(root.isSelfSigned)
        #expect(root.isCA == true)
        #expect(root.publicKey.type == .ec(.p384))
        #expect(root.notAfter == Date(timeIntervalSince1970: 2_373_148_800))  // 2045-03-15T00:00:00Z
        #expect(
            Hex.encode(root.fingerprintSHA256)
                == "0915dd5c07a28db549d1f677bb5a75d4bfbe9561a773424327762e9e02f9bb29")
        #expect(
            BundledTrustAnchors().anchors(forFormat: "apple") == [BundledTrustAnchors.appleWebAuthnRootCA])
        #expect(BundledTrustAnchors().anchors(forFormat: "packed").isEmpty)
        #expect(BundledTrustAnchors().anchors(forAAGUID: SoftwareAuthenticator.testAAGUID).isEmpty)
    }

    @Test(
        "combined anchors: every source's anchors in order, duplicates once; the relying party bundles Apple's"
    )
    func combinedAnchors() {
        let configured = StaticTrustAnchors(
            perFormat: ["apple": [BundledTrustAnchors.appleWebAuthnRootCA, A.root.certificateDER]],
            perAAGUID: [SoftwareAuthenticator.testAAGUID: [A.root.certificateDER]])
        let combined = CombinedTrustAnchors([BundledTrustAnchors(), configured])
        #expect(
            combined.anchors(forFormat: "apple") == [
                BundledTrustAnchors.appleWebAuthnRootCA, A.root.certificateDER,
            ])
        #expect(combined.anchors(forAAGUID: SoftwareAuthenticator.testAAGUID) == [A.root.certificateDER])
        #expect(
            Fixture.relyingParty.trustAnchors.anchors(forFormat: "apple") == [
                BundledTrustAnchors.appleWebAuthnRootCA
            ])
    }
}
