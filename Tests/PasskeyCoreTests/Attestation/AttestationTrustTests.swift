import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

/// The shared x5c helper: parsing, bounds, and trust decided only by anchors from the context.
@Suite("Attestation trust (x5c)")
struct AttestationTrustTests {
    static let start = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01
    static let end = start.addingTimeInterval(5 * 365 * 86_400)
    static let now = start.addingTimeInterval(86_400)
    static let aaguid = UUID(uuidString: "0ea242b4-43c4-4a1b-8b17-dd6d0b6baec6")!

    static let root = TestCertificateAuthority.root(
        name: .init(country: "SE", organization: "Test Vendor", commonName: "Test Attestation Root"),
        notBefore: start, notAfter: end)
    static let intermediate = root.intermediate(
        name: .init(organization: "Test Vendor", commonName: "Test CA"))
    static let otherRoot = TestCertificateAuthority.root(
        name: .init(organization: "Elsewhere", commonName: "Unrelated Root"), notBefore: start, notAfter: end)
    static let leafKey = SoftwareKey.generate(.ec(.p256))
    static let leaf = intermediate.issue(
        subject: .init(
            country: "SE", organization: "Test Vendor", organizationalUnit: "Authenticator Attestation",
            commonName: "Leaf"),
        subjectPublicKeyInfo: leafKey.subjectPublicKeyInfo)

    static func context(
        perFormat: [String: [[UInt8]]] = [:], perAAGUID: [UUID: [[UInt8]]] = [:],
        metadata: (any AuthenticatorMetadataSource)? = nil, at time: Date = now
    ) -> AttestationContext {
        AttestationContext(
            validationTime: time, aaguid: aaguid,
            anchors: StaticTrustAnchors(perFormat: perFormat, perAAGUID: perAAGUID), metadata: metadata)
    }

    @Test("a chain to the format's configured root is trusted and names that root")
    func trustedThroughFormatAnchor() throws {
        let result = try AttestationTrust.evaluate(
            x5c: [Self.leaf, Self.intermediate.certificateDER], format: "packed",
            context: Self.context(perFormat: ["packed": [Self.root.certificateDER]]), bindsAAGUID: false)
        #expect(result.trusted)
        #expect(result.leaf.der == Self.leaf)
        #expect(result.anchor?.contains("Test Attestation Root") == true)
    }

    @Test("no anchors, or anchors of another format, give trusted=false and no error")
    func untrustedWithoutAnchors() throws {
        let x5c = [Self.leaf, Self.intermediate.certificateDER]
        let none = try AttestationTrust.evaluate(
            x5c: x5c, format: "packed", context: Self.context(), bindsAAGUID: false)
        #expect(!none.trusted && none.anchor == nil)
        let other = try AttestationTrust.evaluate(
            x5c: x5c, format: "packed",
            context: Self.context(perFormat: ["apple": [Self.root.certificateDER]]),
            bindsAAGUID: false)
        #expect(!other.trusted)
    }

    @Test("a self-signed root carried inside x5c is never an anchor")
    func selfSignedRootInX5CIsNotAnAnchor() throws {
        let x5c = [Self.leaf, Self.intermediate.certificateDER, Self.root.certificateDER]
        let result = try AttestationTrust.evaluate(
            x5c: x5c, format: "packed",
            context: Self.context(perFormat: ["packed": [Self.otherRoot.certificateDER]]),
            bindsAAGUID: false)
        #expect(!result.trusted)
        // The same chain is trusted once the root comes from configuration.
        let configured = try AttestationTrust.evaluate(
            x5c: x5c, format: "packed",
            context: Self.context(perFormat: ["packed": [Self.root.certificateDER]]),
            bindsAAGUID: false)
        #expect(configured.trusted)
    }

    @Test("AAGUID anchors (configuration and metadata) count only when the format bound the AAGUID")
    func aaguidAnchorsNeedBinding() throws {
        let x5c = [Self.leaf, Self.intermediate.certificateDER]
        let byConfiguration = Self.context(perAAGUID: [Self.aaguid: [Self.root.certificateDER]])
        #expect(
            try !AttestationTrust.evaluate(
                x5c: x5c, format: "packed", context: byConfiguration, bindsAAGUID: false
            )
            .trusted)
        #expect(
            try AttestationTrust.evaluate(
                x5c: x5c, format: "packed", context: byConfiguration, bindsAAGUID: true
            )
            .trusted)
        let metadata = InMemoryMetadataSource(entries: [
            Self.aaguid: AuthenticatorMetadata(
                name: "Test", attestationRootCertificates: [Self.root.certificateDER])
        ])
        #expect(
            try AttestationTrust.evaluate(
                x5c: x5c, format: "packed", context: Self.context(metadata: metadata), bindsAAGUID: true
            ).trusted)
    }

    @Test("attestation.chain_invalid: a chain that reaches an anchor but is expired at the validation time")
    func expiredChainReachingAnAnchorIsRefused() {
        expectCode(.attestationChainInvalid) {
            _ = try AttestationTrust.evaluate(
                x5c: [Self.leaf, Self.intermediate.certificateDER], format: "packed",
                context: Self.context(
                    perFormat: ["packed": [Self.root.certificateDER]], at: Self.end.addingTimeInterval(86_400)
                ),
                bindsAAGUID: false)
        }
    }

    @Test("attestation.chain_invalid: a leaf naming the anchor as issuer but signed by another key")
    func forgedLeafIsRefused() {
        let forger = SoftwareKey.generate(.ec(.p256))
        let forged = TestCertificateAuthority.makeCertificate(
            subject: .init(commonName: "Forged"), subjectPublicKeyInfo: Self.leafKey.subjectPublicKeyInfo,
            issuer: Self.root.name, issuerKey: forger, notBefore: Self.start, notAfter: Self.end,
            basicConstraints: .endEntity, keyUsage: .digitalSignature, extensions: [], serialNumber: 7)
        expectCode(.attestationChainInvalid) {
            _ = try AttestationTrust.evaluate(
                x5c: [forged], format: "packed",
                context: Self.context(perFormat: ["packed": [Self.root.certificateDER]]),
                bindsAAGUID: false)
        }
    }

    @Test("attestation.certificate_invalid: x5c that is not 1 to 8 parseable DER certificates")
    func malformedX5C() throws {
        #expect(try AttestationTrust.x5c(in: ["alg": -7]) == nil)
        #expect(try AttestationTrust.x5c(in: ["x5c": [.bytes(Self.leaf)]]) == [Self.leaf])
        let statements: [CBORMap] = [
            ["x5c": .bytes(Self.leaf)],
            ["x5c": [.text("MIIB")]],
            ["x5c": []],
            ["x5c": .array(Array(repeating: .bytes(Self.leaf), count: 9))],
        ]
        for statement in statements {
            expectCode(.attestationCertificateInvalid) { _ = try AttestationTrust.x5c(in: statement) }
        }
        expectCode(.attestationCertificateInvalid) { _ = try AttestationTrust.certificates(x5c: []) }
        expectCode(.attestationCertificateInvalid) {
            _ = try AttestationTrust.evaluate(
                x5c: [Self.leaf, [0x30, 0x03, 0x02, 0x01, 0x01]], format: "packed", context: Self.context(),
                bindsAAGUID: false)
        }
    }

    @Test("config.invalid: a configured anchor that is not a certificate")
    func malformedConfiguredAnchor() {
        expectCode(.configInvalid) {
            _ = try AttestationTrust.evaluate(
                x5c: [Self.leaf], format: "packed",
                context: Self.context(perFormat: ["packed": [[0x30, 0x00]]]),
                bindsAAGUID: false)
        }
    }
}
