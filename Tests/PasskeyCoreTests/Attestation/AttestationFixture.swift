import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

/// Certificates and relying parties for the software-authenticator attestation tests: a throwaway
/// root and intermediate valid around `Fixture.now`, attestation keys, and certificates that keep or
/// break one rule each.
enum AttestationFixture {
    static let start = Fixture.now.addingTimeInterval(-365 * 86_400)
    static let end = Fixture.now.addingTimeInterval(4 * 365 * 86_400)
    static let root = TestCertificateAuthority.root(
        name: .init(country: "SE", organization: "Portvakt Test", commonName: "Attestation Root"),
        notBefore: start,
        notAfter: end)
    static let intermediate = root.intermediate(
        name: .init(country: "SE", organization: "Portvakt Test", commonName: "Attestation CA"))
    /// A root no relying party here trusts.
    static let untrustedRoot = TestCertificateAuthority.root(
        name: .init(country: "SE", organization: "Rogue", commonName: "Rogue Root"), notBefore: start,
        notAfter: end)
    static let attestationKey = SoftwareKey.generate(.ec(.p256))

    /// The subject §8.2.1 requires.
    static let packedSubject = TestCertificateAuthority.Name(
        country: "SE", organization: "Portvakt Test", organizationalUnit: "Authenticator Attestation",
        commonName: "Test Authenticator")

    /// The id-fido-gen-ce-aaguid extension for `aaguid`.
    static func aaguidExtension(_ aaguid: UUID = SoftwareAuthenticator.testAAGUID, critical: Bool = false)
        -> TestCertificateAuthority.Extension
    {
        .init(
            oid: Certificate.OID.fidoAAGUID, critical: critical,
            value: DERWriter.octetString(withUnsafeBytes(of: aaguid.uuid) { Array($0) }))
    }

    /// A packed attestation certificate from the intermediate; each parameter breaks one rule.
    static func packedLeaf(
        subject: TestCertificateAuthority.Name = packedSubject,
        basicConstraints: TestCertificateAuthority.BasicConstraints = .endEntity,
        extensions: [TestCertificateAuthority.Extension] = [aaguidExtension()],
        key: SoftwareKey = attestationKey,
        issuer: TestCertificateAuthority = intermediate
    ) -> [UInt8] {
        issuer.issue(
            subject: subject, subjectPublicKeyInfo: key.subjectPublicKeyInfo,
            basicConstraints: basicConstraints,
            extensions: extensions)
    }

    /// packed x5c attestation with `x5c` (a valid leaf and the intermediate by default).
    static func packed(
        x5c: [[UInt8]] = [packedLeaf(), intermediate.certificateDER], key: SoftwareKey = attestationKey,
        algorithm: COSEAlgorithm = .es256
    ) -> SoftwareAttestation {
        .packed(key: key, algorithm: algorithm, x5c: x5c)
    }

    /// A relying party with `anchors` per format and `policy`.
    static func relyingParty(
        anchors: [String: [[UInt8]]] = [:], perAAGUID: [UUID: [[UInt8]]] = [:],
        policy: RelyingParty.AttestationPolicy = .acceptUntrusted
    ) -> RelyingParty {
        var rp = Fixture.relyingParty
        rp.attestationPolicy = policy
        rp.trustAnchors = CombinedTrustAnchors([
            BundledTrustAnchors(), StaticTrustAnchors(perFormat: anchors, perAAGUID: perAAGUID),
        ])
        return rp
    }

    /// Registers `credential` with `attestation`, optionally editing the finished attStmt.
    static func register(
        _ attestation: SoftwareAttestation, credential: SoftwareCredential = Fixture.es256,
        relyingParty: RelyingParty = relyingParty(), edit: (@Sendable (inout CBORValue) -> Void)? = nil
    ) throws(PasskeyError) -> VerifiedRegistration {
        try Fixture.register(
            credential,
            behaviour: behaviour {
                $0.attestation = attestation
                $0.editAttestationStatement = edit
            }, relyingParty: relyingParty)
    }
}

/// Sets (or with nil removes) the member `name` of a map attStmt.
func setMember(_ statement: inout CBORValue, _ name: String, _ value: CBORValue?) {
    guard case .map(let map) = statement else { return }
    var pairs = map.entries.filter { $0.key != .text(name) }.map { ($0.key, $0.value) }
    if let value { pairs.append((.text(name), value)) }
    statement = .map(CBORMap(uniqueKeysWithValues: pairs))
}

/// Flips one bit of the byte-string member `name` of a map attStmt.
func damageMember(_ statement: inout CBORValue, _ name: String) {
    guard case .map(let map) = statement, case .bytes(var bytes)? = map[name: name] else { return }
    bytes[bytes.count / 2] ^= 0x01
    setMember(&statement, name, .bytes(bytes))
}
