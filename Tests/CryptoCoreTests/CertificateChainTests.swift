import CryptoCore
import Foundation
import Kernel
import TestSupport
import Testing

/// A UTC instant from its calendar date.
private func utc(_ year: Int, _ month: Int, _ day: Int) -> Date {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    return calendar.date(from: DateComponents(year: year, month: month, day: day))!
}

/// The CLI-made fixture chain, parsed once.
enum CLIChain {
    static let root = try! Certificate(pem: CertificateFixtures.rootPEM)
    static let intermediate = try! Certificate(pem: CertificateFixtures.intermediatePEM)
    static let leaf = try! Certificate(pem: CertificateFixtures.leafPEM)
    static let v1 = try! Certificate(pem: CertificateFixtures.v1PEM)
    static let otherRoot = try! Certificate(pem: CertificateFixtures.otherRootPEM)
    /// Inside the validity of root, intermediate and leaf (not of v1, which ends 2027-01-01).
    static let now = utc(2027, 6, 1)
}

/// A three-level chain made by the test CA, with every key type on the path.
struct CAChain {
    let root: TestCertificateAuthority
    let intermediate: TestCertificateAuthority
    let leafKey = SoftwareKey.generate(.ec(.p384))

    init(rootPathLength: Int? = nil) {
        root = .root(
            name: .init(country: "SE", organization: "Portvakt Test", commonName: "CA Root"),
            key: .generate(.ed25519), notBefore: utc(2025, 1, 1), notAfter: utc(2045, 1, 1),
            pathLength: rootPathLength)
        intermediate = root.intermediate(
            name: .init(country: "SE", organization: "Portvakt Test", commonName: "CA Intermediate"),
            key: .generate(.rsa(bits: 2048)), notBefore: utc(2025, 1, 1), notAfter: utc(2030, 1, 1))
    }

    /// A packed-attestation style leaf issued by the intermediate.
    func leaf(
        basicConstraints: TestCertificateAuthority.BasicConstraints = .endEntity,
        keyUsage: Certificate.KeyUsage? = .digitalSignature,
        extensions: [TestCertificateAuthority.Extension] = []
    ) throws -> Certificate {
        try Certificate(
            der: intermediate.issue(
                subject: .init(
                    country: "SE", organization: "Portvakt Test",
                    organizationalUnit: "Authenticator Attestation",
                    commonName: "CA Leaf"),
                subjectPublicKeyInfo: leafKey.subjectPublicKeyInfo, notBefore: utc(2026, 1, 1),
                notAfter: utc(2029, 1, 1), basicConstraints: basicConstraints, keyUsage: keyUsage,
                extensions: extensions))
    }
}

@Suite("CryptoCore certificate chain validation")
struct CertificateChainTests {
    typealias C = CLIChain

    // MARK: The CLI-made chain

    @Test("a valid three-level chain at a time inside every validity period returns leaf → anchor")
    func validChain() throws {
        let path = try CertificateChainValidator.validate(
            leaf: C.leaf, intermediates: [C.intermediate], anchors: [C.root], at: C.now)
        #expect(path.map(\.fingerprintSHA256) == [C.leaf, C.intermediate, C.root].map(\.fingerprintSHA256))
        // The returned objects are the caller's own.
        #expect(path[0] === C.leaf && path[1] === C.intermediate && path[2] === C.root)
    }

    @Test("unrelated certificates among the intermediates and anchors do not disturb path building")
    func unrelatedCertificates() throws {
        let path = try CertificateChainValidator.validate(
            leaf: C.leaf, intermediates: [C.v1, C.otherRoot, C.intermediate], anchors: [C.otherRoot, C.root],
            at: C.now)
        #expect(path.count == 3 && path.last === C.root)
    }

    @Test("the leaf past its notAfter at a later injected time is crypto.certificate_expired")
    func expired() {
        expectCode(.certificateExpired) {
            _ = try CertificateChainValidator.validate(
                leaf: C.leaf, intermediates: [C.intermediate], anchors: [C.root], at: utc(2031, 1, 2))
        }
    }

    @Test("the leaf before its notBefore is crypto.certificate_not_yet_valid")
    func notYetValid() {
        expectCode(.certificateNotYetValid) {
            _ = try CertificateChainValidator.validate(
                leaf: C.leaf, intermediates: [C.intermediate], anchors: [C.root], at: utc(2025, 6, 1))
        }
    }

    @Test("an anchor that signed nothing on the path is crypto.chain_untrusted")
    func wrongAnchor() {
        expectCode(.chainUntrusted) {
            _ = try CertificateChainValidator.validate(
                leaf: C.leaf, intermediates: [C.intermediate], anchors: [C.otherRoot], at: C.now)
        }
    }

    @Test("a self-signed root offered only among the intermediates does not make the chain trusted")
    func rootOnlyInIntermediates() {
        expectCode(.chainUntrusted) {
            _ = try CertificateChainValidator.validate(
                leaf: C.leaf, intermediates: [C.intermediate, C.root], anchors: [C.otherRoot], at: C.now)
        }
        // A self-signed leaf is not its own anchor either, unless the caller says so.
        expectCode(.chainUntrusted) {
            _ = try CertificateChainValidator.validate(
                leaf: C.root, intermediates: [], anchors: [C.otherRoot], at: C.now)
        }
    }

    @Test("no anchors at all is crypto.chain_untrusted")
    func noAnchors() {
        expectCode(.chainUntrusted) {
            _ = try CertificateChainValidator.validate(
                leaf: C.leaf, intermediates: [C.intermediate, C.root], anchors: [], at: C.now)
        }
    }

    @Test("a tampered leaf signature is crypto.chain_invalid_signature")
    func tamperedSignature() throws {
        var der = C.leaf.der
        // The last byte lies inside the signature BIT STRING: the certificate still parses.
        der[der.count - 1] ^= 0x01
        let tampered = try Certificate(der: der)
        #expect(!tampered.verifySignature(issuer: C.intermediate))
        expectCode(.chainInvalidSignature) {
            _ = try CertificateChainValidator.validate(
                leaf: tampered, intermediates: [C.intermediate], anchors: [C.root], at: C.now)
        }
    }

    @Test("a partial chain ending at an intermediate given explicitly as an anchor is trusted")
    func partialChain() throws {
        let path = try CertificateChainValidator.validate(
            leaf: C.leaf, intermediates: [], anchors: [C.intermediate], at: C.now)
        #expect(path.count == 2 && path[0] === C.leaf && path[1] === C.intermediate)
        // The leaf itself as an anchor is a pin: a path of one.
        let pinned = try CertificateChainValidator.validate(
            leaf: C.leaf, intermediates: [], anchors: [C.leaf], at: C.now)
        #expect(pinned.count == 1)
    }

    @Test("a version 1 leaf validates: only issuing certificates must be CAs")
    func versionOneLeaf() throws {
        let path = try CertificateChainValidator.validate(
            leaf: C.v1, intermediates: [], anchors: [C.root], at: utc(2026, 6, 1))
        #expect(path.count == 2)
    }

    @Test("a prebuilt TrustStore serves many concurrent validations")
    func concurrentValidations() async throws {
        let store = try TrustStore(anchors: [C.root])
        let results = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<64 {
                group.addTask {
                    let at = index % 2 == 0 ? C.now : utc(2031, 6, 1)
                    do {
                        _ = try CertificateChainValidator.validate(
                            leaf: C.leaf, intermediates: [C.intermediate], trustStore: store, at: at)
                        return index % 2 == 0
                    } catch {
                        return index % 2 == 1 && (error as? CryptoError)?.code == .certificateExpired
                    }
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.count == 64 && results.allSatisfy { $0 })
    }

    // MARK: Chains from the test CA

    @Test("an Ed25519 → RSA → P-384 chain from the test CA validates")
    func testCAChain() throws {
        let chain = CAChain()
        let leaf = try chain.leaf()
        let path = try CertificateChainValidator.validate(
            leaf: leaf, intermediates: [chain.intermediate.certificate], anchors: [chain.root.certificate],
            at: utc(2027, 1, 1))
        #expect(path.map(\.subject.commonName) == ["CA Leaf", "CA Intermediate", "CA Root"])
        #expect(leaf.publicKey.type == .ec(.p384))
    }

    @Test("an attestation leaf without basicConstraints and with unusual key usage still validates")
    func attestationLeafQuirks() throws {
        let chain = CAChain()
        let leaf = try chain.leaf(basicConstraints: .absent, keyUsage: [.keyAgreement, .dataEncipherment])
        #expect(leaf.isCA == nil)
        _ = try CertificateChainValidator.validate(
            leaf: leaf, intermediates: [chain.intermediate.certificate], anchors: [chain.root.certificate],
            at: utc(2027, 1, 1))
    }

    @Test("an intermediate without basicConstraints cA cannot issue: crypto.chain_invalid")
    func intermediateNotCA() throws {
        let chain = CAChain()
        let notCAKey = SoftwareKey.generate(.ec(.p256))
        let notCA = try Certificate(
            der: chain.root.issue(
                subject: .init(commonName: "Not a CA"), subjectPublicKeyInfo: notCAKey.subjectPublicKeyInfo,
                basicConstraints: .absent, keyUsage: nil))
        let leafKey = SoftwareKey.generate(.ec(.p256))
        let leaf = try Certificate(
            der: TestCertificateAuthority.makeCertificate(
                subject: .init(commonName: "Leaf"), subjectPublicKeyInfo: leafKey.subjectPublicKeyInfo,
                issuer: .init(commonName: "Not a CA"), issuerKey: notCAKey, notBefore: utc(2026, 1, 1),
                notAfter: utc(2029, 1, 1)))
        expectCode(.chainInvalid) {
            _ = try CertificateChainValidator.validate(
                leaf: leaf, intermediates: [notCA], anchors: [chain.root.certificate], at: utc(2027, 1, 1))
        }
    }

    @Test("a root's pathLenConstraint of 0 forbids an intermediate below it: crypto.chain_invalid")
    func pathLengthExceeded() throws {
        let chain = CAChain(rootPathLength: 0)
        expectCode(.chainInvalid) {
            _ = try CertificateChainValidator.validate(
                leaf: try chain.leaf(), intermediates: [chain.intermediate.certificate],
                anchors: [chain.root.certificate], at: utc(2027, 1, 1))
        }
    }

    @Test(
        "a path longer than maximumIntermediates, or too many offered intermediates, is crypto.chain_invalid")
    func tooLong() throws {
        let chain = CAChain()
        let leaf = try chain.leaf()
        expectCode(.chainInvalid) {
            _ = try CertificateChainValidator.validate(
                leaf: leaf, intermediates: [chain.intermediate.certificate],
                anchors: [chain.root.certificate],
                at: utc(2027, 1, 1), maximumIntermediates: 0)
        }
        let many = [Certificate](
            repeating: chain.intermediate.certificate,
            count: CertificateChainValidator.maximumOfferedIntermediates + 1)
        expectCode(.chainInvalid) {
            _ = try CertificateChainValidator.validate(
                leaf: leaf, intermediates: many, anchors: [chain.root.certificate], at: utc(2027, 1, 1))
        }
    }

    @Test("an expired intermediate fails the chain even while the leaf is valid")
    func expiredIntermediate() throws {
        let chain = CAChain()
        let leaf = try Certificate(
            der: chain.intermediate.issue(
                subject: .init(commonName: "Long leaf"),
                subjectPublicKeyInfo: chain.leafKey.subjectPublicKeyInfo,
                notBefore: utc(2026, 1, 1), notAfter: utc(2040, 1, 1)))
        expectCode(.certificateExpired) {
            _ = try CertificateChainValidator.validate(
                leaf: leaf, intermediates: [chain.intermediate.certificate],
                anchors: [chain.root.certificate],
                at: utc(2031, 1, 1))
        }
    }

    @Test("an unknown critical extension on the leaf is crypto.chain_invalid")
    func unknownCriticalExtension() throws {
        let chain = CAChain()
        let leaf = try chain.leaf(extensions: [
            .init(oid: "1.3.6.1.4.1.99999.1", critical: true, value: DERWriter.null)
        ])
        expectCode(.chainInvalid) {
            _ = try CertificateChainValidator.validate(
                leaf: leaf, intermediates: [chain.intermediate.certificate],
                anchors: [chain.root.certificate],
                at: utc(2027, 1, 1))
        }
    }

    @Test("purpose .extendedKeyUsage requires the OID in the leaf: TPM's AIK purpose 2.23.133.8.3")
    func extendedKeyUsagePurpose() throws {
        let chain = CAChain()
        let tpmEKU = TestCertificateAuthority.Extension(
            oid: Certificate.OID.extendedKeyUsage,
            value: DERWriter.sequence([DERWriter.objectIdentifier("2.23.133.8.3")]))
        let aik = try chain.leaf(extensions: [tpmEKU])
        let plain = try chain.leaf()
        let anchors = [chain.root.certificate]
        let intermediates = [chain.intermediate.certificate]
        _ = try CertificateChainValidator.validate(
            leaf: aik, intermediates: intermediates, anchors: anchors, at: utc(2027, 1, 1),
            purpose: .extendedKeyUsage("2.23.133.8.3"))
        expectCode(.chainPurposeMismatch) {
            _ = try CertificateChainValidator.validate(
                leaf: plain, intermediates: intermediates, anchors: anchors, at: utc(2027, 1, 1),
                purpose: .extendedKeyUsage("2.23.133.8.3"))
        }
    }

    @Test(
        "the test CA signs and issues with every key type, and CryptoCore verifies each certificate",
        arguments: [
            SoftwareKey.Kind.ec(.p256), .ec(.p384), .ec(.p521), .ed25519, .rsa(bits: 2048),
        ])
    func everyKeyType(kind: SoftwareKey.Kind) throws {
        let root = TestCertificateAuthority.root(
            name: .init(commonName: "Root \(kind)"), key: .generate(kind), notBefore: utc(2025, 1, 1),
            notAfter: utc(2035, 1, 1))
        let subjectKey = SoftwareKey.generate(kind)
        let leaf = try Certificate(
            der: root.issue(
                subject: .init(commonName: "Leaf"), subjectPublicKeyInfo: subjectKey.subjectPublicKeyInfo))
        #expect(root.certificate.isSelfSigned && root.certificate.isCA == true)
        #expect(leaf.verifySignature(issuer: root.certificate))
        #expect(leaf.publicKey.derRepresentation == subjectKey.subjectPublicKeyInfo)
        // The key signs data that the certificate's public key then verifies.
        let message = Array("attestation".utf8)
        let algorithm = subjectKey.defaultSignatureAlgorithm
        #expect(
            leaf.publicKey.verify(
                signature: subjectKey.sign(message, algorithm: algorithm), data: message, algorithm: algorithm
            ))
        _ = try CertificateChainValidator.validate(
            leaf: leaf, intermediates: [], anchors: [root.certificate], at: utc(2030, 1, 1))
    }

    @Test("the test CA writes version 1 certificates and exact validity times")
    func versionOneFromTestCA() throws {
        let key = SoftwareKey.generate(.ec(.p256))
        let start = Date(timeIntervalSince1970: 1_767_225_600)
        let end = Date(timeIntervalSince1970: 2_556_144_000)  // 2051: a GeneralizedTime
        let certificate = try Certificate(
            der: TestCertificateAuthority.makeCertificate(
                subject: .init(country: "SE", commonName: "V1"),
                subjectPublicKeyInfo: key.subjectPublicKeyInfo,
                issuer: .init(country: "SE", commonName: "V1"), issuerKey: key, notBefore: start,
                notAfter: end,
                basicConstraints: .absent, keyUsage: nil, serialNumber: 7, version: 1))
        #expect(certificate.version == 1 && certificate.serialNumber == [7])
        #expect(certificate.notBefore == start && certificate.notAfter == end)
        #expect(certificate.isSelfSigned)
    }

    @Test("every chain error code is exercised by a test above")
    func everyCodeCovered() {
        let covered: Set<CryptoError.Code> = [
            .chainUntrusted, .certificateExpired, .certificateNotYetValid, .chainInvalidSignature,
            .chainInvalid,
            .chainPurposeMismatch,
        ]
        let chainCodes = CryptoError.Code.allCases.filter {
            $0.rawValue.hasPrefix("crypto.chain_") || $0.rawValue.hasPrefix("crypto.certificate_")
        }
        // certificate_malformed belongs to parsing (CertificateTests); the rest to validation.
        #expect(Set(chainCodes).subtracting([.certificateMalformed]) == covered)
    }
}
