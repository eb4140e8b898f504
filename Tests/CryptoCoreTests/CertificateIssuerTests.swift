import CryptoCore
import Foundation
import Kernel
import TestSupport
import Testing

/// CertificateIssuer, SigningKey, PEM and Base64: what the BankID simulator's PKI is made of.
@Suite("CryptoCore certificate issuance")
struct CertificateIssuerTests {
    @Test("an issued server certificate chains to its CA for TLS server use")
    func issueAndValidate() throws {
        let now = Date()
        let caKey = try SigningKey.generate(.p256)
        let caName = CertificateIssuer.Name(country: "SE", commonName: "Issuer test CA")
        let caDER = try CertificateIssuer.makeCertificate(
            subject: caName, subjectPublicKeyInfo: caKey.subjectPublicKeyInfo, issuer: caName,
            issuerKey: caKey,
            notBefore: now.addingTimeInterval(-60), notAfter: now.addingTimeInterval(3600),
            basicConstraints: .ca(pathLength: 0), keyUsage: [.keyCertSign])
        let leafKey = try SigningKey.generate(.p256)
        let leafDER = try CertificateIssuer.makeCertificate(
            subject: CertificateIssuer.Name(commonName: "localhost"),
            subjectPublicKeyInfo: leafKey.subjectPublicKeyInfo,
            issuer: caName, issuerKey: caKey, notBefore: now.addingTimeInterval(-60),
            notAfter: now.addingTimeInterval(3600),
            extensions: [
                .subjectAltName(dnsNames: ["localhost"], ipAddresses: [[127, 0, 0, 1]]),
                .extendedKeyUsage([CertificateIssuer.Extension.serverAuth]),
            ])
        let ca = try Certificate(der: caDER)
        let leaf = try Certificate(pem: PEM.encode(leafDER, label: "CERTIFICATE"))
        let path = try CertificateChainValidator.validate(
            leaf: leaf, intermediates: [], anchors: [ca], at: now,
            purpose: .extendedKeyUsage(CertificateIssuer.Extension.serverAuth))
        #expect(path.count == 2)
        #expect(ca.isCA == true && leaf.isCA == false)
    }

    @Test("a signing key survives PKCS#8 PEM and its signatures verify")
    func keyRoundTrip() throws {
        let key = try SigningKey.generate(.p256)
        let again = try SigningKey(pkcs8PEM: key.pkcs8PEM)
        #expect(again.subjectPublicKeyInfo == key.subjectPublicKeyInfo)
        let message = Array("signed".utf8)
        let signature = try again.signSHA256(message)
        let publicKey = try PublicKey(derSubjectPublicKeyInfo: key.subjectPublicKeyInfo)
        #expect(publicKey.verify(signature: signature, data: message, algorithm: .ecdsaSHA256))
        #expect(throws: CryptoError.self) { try SigningKey(pkcs8DER: [0x30, 0x00]) }
    }

    @Test("a PKCS#12 bundle is DER and refuses a malformed certificate")
    func pkcs12() throws {
        let key = try SigningKey.generate(.p256)
        let name = CertificateIssuer.Name(commonName: "client")
        let der = try CertificateIssuer.makeCertificate(
            subject: name, subjectPublicKeyInfo: key.subjectPublicKeyInfo, issuer: name, issuerKey: key,
            notBefore: Date(), notAfter: Date().addingTimeInterval(60))
        let bundle = try CertificateIssuer.pkcs12(
            key: key, certificateDER: der, chainDER: [], friendlyName: "client", passphrase: "pass")
        #expect(bundle.first == 0x30 && bundle.count > der.count)
        #expect(throws: CryptoError.self) {
            try CertificateIssuer.pkcs12(
                key: key, certificateDER: [1, 2, 3], chainDER: [], friendlyName: "x", passphrase: "p")
        }
    }

    @Test("PEM wraps at 64 characters and reads back; Base64 decoding is strict")
    func encodings() {
        let bytes = [UInt8](0..<200)
        let pem = PEM.encode(bytes, label: "TEST")
        #expect(pem.split(separator: "\n").dropFirst().dropLast().allSatisfy { $0.count <= 64 })
        #expect(PEM.decode(pem, label: "TEST") == bytes)
        #expect(PEM.decode(pem, label: "OTHER") == nil)
        #expect(Base64.decode(Base64.encode(bytes)) == bytes)
        for bad in ["SGVq\n", "SGV", "SG-q", "SGVq=", " SGVq"] {
            #expect(Base64.decode(bad) == nil, "\(bad)")
        }
    }
}
