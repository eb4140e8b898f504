import CryptoCore
import Foundation
import Kernel
import TestSupport
import Testing

/// Parses a fixture; fixtures come from the openssl CLI, so failure is a finding, recorded by the caller.
private func load(_ pem: String) throws -> Certificate { try Certificate(pem: pem) }

/// The unix time of a UTC calendar date, for checking validity fields.
private func utc(_ year: Int, _ month: Int, _ day: Int) -> Date {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    return calendar.date(from: DateComponents(year: year, month: month, day: day))!
}

@Suite("CryptoCore X.509 certificates")
struct CertificateTests {
    typealias F = CertificateFixtures

    // MARK: Accessors against the openssl CLI's view

    @Test("every accessor of the CLI-made leaf matches what the CLI reports")
    func leafAccessors() throws {
        let leaf = try load(F.leafPEM)
        #expect(leaf.version == 3)
        // The top bit of c0 is set, so the DER INTEGER carries a leading zero the CLI does not print.
        #expect(leaf.serialNumber == [0x00] + Hex.decode(F.leafSerial)!)
        #expect(leaf.subject.attributes.map(\.oid) == ["2.5.4.6", "2.5.4.10", "2.5.4.11", "2.5.4.3"])
        #expect(leaf.subject.attributes.map(\.rdnIndex) == [0, 1, 2, 3])
        #expect(leaf.subject.country == "SE")
        #expect(leaf.subject.organization == "Portvakt Test")
        #expect(leaf.subject.organizationalUnit == "Authenticator Attestation")
        #expect(leaf.subject.commonName == "Portvakt Test Authenticator")
        #expect(leaf.issuer.commonName == "Portvakt Test Intermediate")
        #expect(leaf.issuer.organizationalUnit == "Attestation CA")
        #expect(
            leaf.subject.description
                == "C=SE, O=Portvakt Test, OU=Authenticator Attestation, CN=Portvakt Test Authenticator")
        #expect(leaf.notBefore == utc(2026, 1, 1))
        #expect(leaf.notAfter == utc(2031, 1, 1))
        #expect(leaf.publicKey.type == .ec(.p256))
        #expect(leaf.publicKey.derRepresentation == Hex.decode(F.leafSPKI))
        #expect(leaf.signatureAlgorithmOID == "1.2.840.113549.1.1.11")  // sha256WithRSAEncryption
        #expect(leaf.isCA == false)
        #expect(leaf.pathLengthConstraint == nil)
        #expect(leaf.keyUsage == .digitalSignature)
        #expect(leaf.extendedKeyUsage == ["1.3.6.1.5.5.7.3.2", "2.23.133.8.3"])
        #expect(!leaf.isSelfSigned)
        #expect(Hex.encode(leaf.fingerprintSHA256) == F.leafFingerprint)
        #expect(leaf.der == Array(Data(base64Encoded: Self.base64Body(F.leafPEM))!))
    }

    @Test("the CA certificates report CA flags, path length and key usage; the root is self-signed")
    func caAccessors() throws {
        let root = try load(F.rootPEM)
        let intermediate = try load(F.intermediatePEM)
        #expect(root.isSelfSigned && !intermediate.isSelfSigned)
        #expect(root.isCA == true && root.pathLengthConstraint == nil)
        #expect(intermediate.isCA == true && intermediate.pathLengthConstraint == 0)
        #expect(root.keyUsage == [.keyCertSign, .cRLSign])
        #expect(root.extendedKeyUsage == nil)
        #expect(root.publicKey.type == .ec(.p384))
        #expect(intermediate.publicKey.type == .rsa(bits: 2048))
        #expect(root.signatureAlgorithmOID == "1.2.840.10045.4.3.3")  // ecdsa-with-SHA384
        #expect(intermediate.signatureAlgorithmOID == "1.2.840.10045.4.3.3")
        #expect(root.serialNumber == Hex.decode(F.rootSerial))
        #expect(intermediate.serialNumber == Hex.decode(F.intermediateSerial))
        #expect(Hex.encode(root.fingerprintSHA256) == F.rootFingerprint)
        #expect(Hex.encode(intermediate.fingerprintSHA256) == F.intermediateFingerprint)
        #expect(root.publicKey.derRepresentation == Hex.decode(F.rootSPKI))
        #expect(intermediate.publicKey.derRepresentation == Hex.decode(F.intermediateSPKI))
        #expect(root.subject == root.issuer && intermediate.issuer.der == root.subject.der)
        // Equality is by encoding: a second parse of the same PEM is the same certificate.
        #expect(try load(F.rootPEM) == root && root != intermediate)
        #expect(Set([root, intermediate, try load(F.rootPEM)]).count == 2)
    }

    @Test("a version 1 certificate has no extensions and nil for every extension-derived accessor")
    func versionOne() throws {
        let v1 = try load(F.v1PEM)
        #expect(v1.version == 1)
        #expect(v1.extensions.isEmpty && v1.extensionOIDs.isEmpty)
        #expect(v1.isCA == nil && v1.pathLengthConstraint == nil && v1.keyUsage == nil)
        #expect(v1.extendedKeyUsage == nil && v1.subjectAlternativeName == nil)
        #expect(v1.serialNumber == [0x2a])
        #expect(Hex.encode(v1.fingerprintSHA256) == F.v1Fingerprint)
    }

    @Test("an Ed25519 self-signed certificate parses, with the pure Ed25519 signature OID")
    func ed25519() throws {
        let other = try load(F.otherRootPEM)
        #expect(other.publicKey.type == .ed25519)
        #expect(other.signatureAlgorithmOID == "1.3.101.112")
        #expect(other.isSelfSigned)
        #expect(other.subject.country == nil && other.subject.commonName == "Portvakt Unrelated Root")
        #expect(Hex.encode(other.fingerprintSHA256) == F.otherRootFingerprint)
    }

    @Test("verifySignature accepts the real issuer and refuses any other key")
    func signatures() throws {
        let root = try load(F.rootPEM)
        let intermediate = try load(F.intermediatePEM)
        let leaf = try load(F.leafPEM)
        let other = try load(F.otherRootPEM)
        #expect(leaf.verifySignature(issuer: intermediate))
        #expect(intermediate.verifySignature(issuer: root))
        #expect(root.verifySignature(issuer: root))
        #expect(!leaf.verifySignature(issuer: root))
        #expect(!intermediate.verifySignature(issuer: other))
        #expect(!root.verifySignature(issuer: leaf))
    }

    // MARK: Extensions

    @Test("extension lookup returns the critical flag and the DER value the attestation layer reads")
    func extensionLookup() throws {
        let leaf = try load(F.leafPEM)
        #expect(
            leaf.extensionOIDs == [
                "2.5.29.19", "2.5.29.15", "2.5.29.37", "1.3.6.1.4.1.45724.1.1.4", "2.5.29.17", "2.5.29.14",
                "2.5.29.35",
            ])
        let aaguid = try #require(leaf.extension(oid: Certificate.OID.fidoAAGUID))
        #expect(!aaguid.critical)
        #expect(try DERReader.single(aaguid.value).octetString() == Hex.decode(F.aaguid))
        #expect(leaf.extension(oid: Certificate.OID.keyUsage)?.critical == true)
        #expect(leaf.extension(oid: "1.2.840.113635.100.8.2") == nil)
        #expect(leaf.extension(oid: "2.5.29.17")?.value == leaf.subjectAlternativeName)
        #expect(leaf.extensions.count == 7)
    }

    @Test("the TPM-style subjectAltName holds a DNS name and a directoryName with TPM attributes")
    func subjectAlternativeName() throws {
        let san = try #require(try load(F.leafPEM).subjectAlternativeName)
        var names = try DERReader.single(san).contents()
        #expect(try names.readImplicit(2, as: .ia5String).string() == "authenticator.example")
        var directory = try names.readExplicit(4)
        var name = try directory.readSequence()
        var attributes: [String: String] = [:]
        while !name.isAtEnd {
            var rdn = try name.readSet()
            var pair = try rdn.readSequence()
            attributes[try pair.readObjectIdentifier()] = try pair.readString()
        }
        #expect(
            attributes == [
                "2.23.133.2.1": "id:4E544300", "2.23.133.2.2": "NPCT6xx", "2.23.133.2.3": "id:00070002",
            ])
        try names.finish()
    }

    @Test(
        "extra extensions written by the test CA come back byte for byte, Apple and Android shapes included")
    func customExtensions() throws {
        let ca = TestCertificateAuthority.root(
            name: .init(commonName: "Extensions Root"), notBefore: utc(2025, 1, 1), notAfter: utc(2035, 1, 1))
        let nonce = Digest.sha256("client data")
        let apple = DERWriter.sequence([DERWriter.explicit(1, DERWriter.octetString(nonce))])
        let android = DERWriter.sequence([
            DERWriter.integer(200), DERWriter.enumerated(1), DERWriter.integer(200), DERWriter.enumerated(1),
            DERWriter.octetString(Array("challenge".utf8)), DERWriter.octetString([]),
            DERWriter.sequence([DERWriter.explicit(1, DERWriter.set([DERWriter.integer(2)]))]),
            DERWriter.sequence([DERWriter.explicit(701, DERWriter.integer(1_767_225_600_000))]),
        ])
        let der = ca.issue(
            subject: .init(commonName: "Extensions Leaf"),
            subjectPublicKeyInfo: SoftwareKey.generate(.ec(.p256)).subjectPublicKeyInfo,
            basicConstraints: .absent, keyUsage: nil,
            extensions: [
                .init(oid: "1.2.840.113635.100.8.2", value: apple),
                .init(oid: "1.3.6.1.4.1.11129.2.1.17", critical: true, value: android),
            ])
        let leaf = try Certificate(der: der)
        #expect(leaf.isCA == nil && leaf.keyUsage == nil)
        let appleExtension = try #require(leaf.extension(oid: "1.2.840.113635.100.8.2"))
        #expect(!appleExtension.critical && appleExtension.value == apple)
        let androidExtension = try #require(leaf.extension(oid: "1.3.6.1.4.1.11129.2.1.17"))
        #expect(androidExtension.critical && androidExtension.value == android)
        var outer = DERReader(apple)
        var sequence = try outer.readSequence()
        var tagged = try sequence.readExplicit(1)
        #expect(try tagged.readOctetString() == nonce)
        // Android: skip to teeEnforced and read [701] creationDateTime.
        var description = try DERReader.single(android).contents()
        for _ in 0..<7 { _ = try description.readElement() }
        var teeEnforced = try description.readSequence()
        var created = try teeEnforced.readExplicit(701)
        #expect(try created.readInteger() == 1_767_225_600_000)
    }

    // MARK: PEM

    @Test("a PEM bundle yields its certificates in order; text around blocks is ignored")
    func pemBundle() throws {
        let bundle = "Root:\n\(F.rootPEM)\n\n# intermediate\r\n\(F.intermediatePEM)\n"
        let certificates = try Certificate.certificates(pem: bundle)
        #expect(
            certificates.map(\.subject.commonName) == ["Portvakt Test Root", "Portvakt Test Intermediate"])
        expectCode(.certificateMalformed, "two blocks for one") { _ = try Certificate(pem: bundle) }
    }

    @Test(
        "malformed PEM is crypto.certificate_malformed",
        arguments: [
            ("no block", "hello"),
            ("a private key block", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"),
            ("missing END", "-----BEGIN CERTIFICATE-----\nAAAA\n"),
            ("END without BEGIN", "-----END CERTIFICATE-----"),
            ("bad base64", "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----"),
            ("nested BEGIN", "-----BEGIN CERTIFICATE-----\n-----BEGIN CERTIFICATE-----"),
            ("base64 of garbage", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"),
        ])
    func malformedPEM(_ name: String, _ text: String) {
        expectCode(.certificateMalformed, Comment(rawValue: name)) {
            _ = try Certificate.certificates(pem: text)
        }
    }

    // MARK: Malformed DER

    @Test("trailing bytes, truncation, emptiness and oversize are refused as crypto.certificate_malformed")
    func malformedDER() throws {
        let der = try load(F.leafPEM).der
        expectCode(.certificateMalformed, "trailing byte") { _ = try Certificate(der: der + [0]) }
        expectCode(.certificateMalformed, "trailing certificate") { _ = try Certificate(der: der + der) }
        expectCode(.certificateMalformed, "truncated") { _ = try Certificate(der: Array(der.dropLast())) }
        expectCode(.certificateMalformed, "empty") { _ = try Certificate(der: []) }
        expectCode(.certificateMalformed, "oversized") {
            _ = try Certificate(der: [UInt8](repeating: 0x30, count: Certificate.maximumDERLength + 1))
        }
    }

    @Test("a duplicated extension is refused so extension(oid:) is never ambiguous")
    func duplicateExtension() throws {
        let key = SoftwareKey.generate(.ec(.p256))
        let der = TestCertificateAuthority.makeCertificate(
            subject: .init(commonName: "Duplicate"), subjectPublicKeyInfo: key.subjectPublicKeyInfo,
            issuer: .init(commonName: "Duplicate"), issuerKey: key, notBefore: utc(2025, 1, 1),
            notAfter: utc(2030, 1, 1), basicConstraints: .absent, keyUsage: nil,
            extensions: [
                .init(
                    oid: Certificate.OID.fidoAAGUID,
                    value: DERWriter.octetString([UInt8](repeating: 1, count: 16))),
                .init(
                    oid: Certificate.OID.fidoAAGUID,
                    value: DERWriter.octetString([UInt8](repeating: 2, count: 16))),
            ])
        expectCode(.certificateMalformed) { _ = try Certificate(der: der) }
    }

    @Test("a basicConstraints value that is not DER is refused")
    func malformedBasicConstraints() throws {
        let key = SoftwareKey.generate(.ec(.p256))
        // BOOLEAN 0x01 is BER's true, not DER's; OpenSSL accepts it, the strict reader does not.
        let der = TestCertificateAuthority.makeCertificate(
            subject: .init(commonName: "BER"), subjectPublicKeyInfo: key.subjectPublicKeyInfo,
            issuer: .init(commonName: "BER"), issuerKey: key, notBefore: utc(2025, 1, 1),
            notAfter: utc(2030, 1, 1), basicConstraints: .absent,
            extensions: [
                .init(
                    oid: Certificate.OID.basicConstraints, critical: true,
                    value: [0x30, 0x03, 0x01, 0x01, 0x01])
            ])
        expectCode(.certificateMalformed) { _ = try Certificate(der: der) }
    }

    @Test("an explicit cA FALSE (as BouncyCastle writes it) reads as an end-entity certificate")
    func explicitFalseBasicConstraints() throws {
        let key = SoftwareKey.generate(.ec(.p256))
        let der = TestCertificateAuthority.makeCertificate(
            subject: .init(commonName: "Explicit"), subjectPublicKeyInfo: key.subjectPublicKeyInfo,
            issuer: .init(commonName: "Explicit"), issuerKey: key, notBefore: utc(2025, 1, 1),
            notAfter: utc(2030, 1, 1), basicConstraints: .absent,
            extensions: [
                .init(
                    oid: Certificate.OID.basicConstraints,
                    value: DERWriter.sequence([DERWriter.boolean(false)]))
            ])
        #expect(try Certificate(der: der).isCA == false)
    }

    @Test("a subject key CryptoCore refuses (RSA-1024) fails the parse with the key's own code")
    func weakSubjectKey() throws {
        let ca = TestCertificateAuthority.root(
            name: .init(commonName: "Root"), notBefore: utc(2025, 1, 1), notAfter: utc(2035, 1, 1))
        let der = ca.issue(
            subject: .init(commonName: "Weak"),
            subjectPublicKeyInfo: SoftwareKey.generate(.rsa(bits: 1024)).subjectPublicKeyInfo)
        expectCode(.weakKey) { _ = try Certificate(der: der) }
    }

    // MARK: Fuzz

    @Test("20,000 random and bit-flipped certificates never crash the parser (seeded, reproducible)")
    func fuzz() throws {
        var random = SplitMix64(seed: 0x5836_3530_3946_555a)
        let seeds = try [F.leafPEM, F.intermediatePEM, F.rootPEM, F.otherRootPEM].map { try load($0).der }
        var parsed = 0
        for round in 0..<20_000 {
            var input: [UInt8]
            switch round % 4 {
            case 0:
                input = (0..<Int.random(in: 0...600, using: &random)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                }
            case 1:
                // A plausible SEQUENCE header over random contents reaches deeper into the parser.
                let body = (0..<Int.random(in: 0...300, using: &random)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                }
                input = DERWriter.sequence([body])
            default:
                input = seeds[round % seeds.count]
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    let index = Int.random(in: 0..<input.count, using: &random)
                    input[index] ^= UInt8(1) << UInt8.random(in: 0...7, using: &random)
                }
            }
            do {
                let certificate = try Certificate(der: input)
                // Whatever parses must be usable: walk every accessor.
                _ = certificate.extensionOIDs.compactMap { certificate.extension(oid: $0) }
                _ = certificate.verifySignature(issuer: certificate)
                _ = certificate.description
                parsed += 1
            } catch {
                // Every failure is a CryptoError (typed throws): nothing else to check.
            }
        }
        // Flips inside signatures and names leave parseable certificates, so some inputs must parse.
        #expect(parsed > 0)
    }

    /// The base64 between a PEM block's header and footer.
    private static func base64Body(_ pem: String) -> String {
        pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
    }
}
