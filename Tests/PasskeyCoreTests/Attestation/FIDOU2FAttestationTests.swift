import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

private typealias A = AttestationFixture

@Suite("fido-u2f attestation (§8.6)")
struct FIDOU2FAttestationTests {
    /// A U2F batch certificate: any subject, a P-256 key.
    static func certificate(_ key: SoftwareKey = A.attestationKey) -> [UInt8] {
        A.intermediate.issue(
            subject: .init(commonName: "U2F Batch"), subjectPublicKeyInfo: key.subjectPublicKeyInfo)
    }

    @Test("§8.6: an ES256 credential registers, type basic, trusted only through a fido-u2f anchor")
    func registers() throws {
        let x5c = [Self.certificate()]
        let trusted = try A.register(
            .fidoU2F(key: A.attestationKey, x5c: x5c),
            relyingParty: A.relyingParty(anchors: [
                "fido-u2f": [A.root.certificateDER, A.intermediate.certificateDER]
            ]))
        #expect(trusted.attestationFormat == "fido-u2f")
        #expect(trusted.attestationType == .basic)
        #expect(trusted.attestationTrusted)
        #expect(trusted.attestationTrustPath == x5c)
        // The AAGUID is the client's, never bound by a U2F certificate: AAGUID anchors do not apply.
        let byAAGUID = A.relyingParty(perAAGUID: [
            SoftwareAuthenticator.testAAGUID: [A.intermediate.certificateDER]
        ])
        #expect(
            try !A.register(.fidoU2F(key: A.attestationKey, x5c: x5c), relyingParty: byAAGUID)
                .attestationTrusted)
        expectCode(.attestationUntrusted) {
            _ = try A.register(
                .fidoU2F(key: A.attestationKey, x5c: x5c),
                relyingParty: A.relyingParty(policy: .requireTrusted))
        }
    }

    @Test(
        "§8.6 step 4: a credential key that is not EC2 P-256 is refused",
        arguments: [COSEAlgorithm.es384, .edDSA, .rs256])
    func nonP256Credential(_ algorithm: COSEAlgorithm) throws {
        let credential = try #require(Fixture.credentials[algorithm])
        // The authenticator cannot even build the message for a non-EC key, so the statement is
        // borrowed from a valid ES256 registration: the key check must come first either way.
        expectCode(.attestationAlgorithmMismatch) {
            _ = try Self.register(statement: Self.statement(for: Fixture.es256), credential: credential)
        }
    }

    @Test("§8.6 step 2: an attestation certificate key that is not EC P-256 is refused")
    func nonP256Certificate() {
        let key = SoftwareKey.generate(.ec(.p384))
        expectCode(.attestationCertificateRequirements) {
            _ = try A.register(.fidoU2F(key: key, x5c: [Self.certificate(key)]))
        }
    }

    @Test("§8.6 step 2: x5c must hold exactly one certificate")
    func exactlyOneCertificate() {
        expectCode(.attestationInvalidStatement) {
            _ = try A.register(
                .fidoU2F(key: A.attestationKey, x5c: [Self.certificate(), A.intermediate.certificateDER]))
        }
    }

    @Test("§8.6 step 6: a damaged signature, or one over another credential ID, is refused")
    func badSignature() {
        expectCode(.attestationSignatureInvalid) {
            _ = try A.register(.fidoU2F(key: A.attestationKey, x5c: [Self.certificate()])) {
                damageMember(&$0, "sig")
            }
        }
        // Signed over other authenticator data and client data.
        expectCode(.attestationSignatureInvalid) {
            _ = try Self.register(statement: Self.statement(for: Fixture.es256))
        }
    }

    @Test("§8.6 syntax: exactly x5c and sig")
    func syntax() {
        let edits: [@Sendable (inout CBORValue) -> Void] = [
            { setMember(&$0, "sig", nil) }, { setMember(&$0, "x5c", nil) }, { setMember(&$0, "alg", -7) },
        ]
        for edit in edits {
            expectCode(.attestationInvalidStatement) {
                _ = try A.register(.fidoU2F(key: A.attestationKey, x5c: [Self.certificate()]), edit: edit)
            }
        }
    }

    /// A well-formed fido-u2f attStmt for `credential`, signed over zeros instead of this ceremony.
    static func statement(for credential: SoftwareCredential) -> CBORMap {
        let made = SoftwareAttestation.fidoU2F(key: A.attestationKey, x5c: [certificate()]).make(
            credential: credential, authenticatorData: Array(repeating: 0, count: 37),
            clientDataHash: Array(repeating: 0, count: 32))
        guard case .map(let map) = made.statement else { fatalError("fido-u2f attStmt is a map") }
        return map
    }

    /// Registers `credential` with a fixed fido-u2f attStmt.
    static func register(statement: CBORMap, credential: SoftwareCredential = Fixture.es256)
        throws(PasskeyError)
        -> VerifiedRegistration
    {
        try Fixture.register(
            credential,
            behaviour: behaviour {
                $0.attestationFormat = "fido-u2f"
                $0.attestationStatement = statement
            })
    }
}
