public import CryptoCore
public import Foundation

/// A throwaway certificate authority over OpenSSL, for tests of certificate parsing, chain validation
/// and attestation formats (packed x5c, fido-u2f, apple, android-key, tpm).
///
/// A value is one CA: its key and its certificate. `root` makes a self-signed one, `intermediate` a
/// CA it signs, `issue` any certificate it signs; `makeCertificate` is the general form underneath,
/// for certificates no well-behaved CA would issue (a CA without basicConstraints, version 1, an
/// issuer name that does not match). Everything returns DER. Traps on OpenSSL failures: in tests
/// they mean a broken environment or a broken test, not a case to handle.
public struct TestCertificateAuthority: Sendable {
    /// The subject or issuer attributes a test chooses; each is added only when non-nil, in C, O, OU,
    /// CN order (packed attestation wants all four, TPM an empty subject).
    public typealias Name = CertificateIssuer.Name

    /// An extension to add as given: extnID, critical flag, and the extnValue contents (DER).
    public typealias Extension = CertificateIssuer.Extension

    /// What basicConstraints extension to write.
    public typealias BasicConstraints = CertificateIssuer.BasicConstraints

    /// The CA's private key.
    public let key: SoftwareKey
    /// The CA's subject, which is the issuer name of what it signs.
    public let name: Name
    /// The CA's certificate, DER.
    public let certificateDER: [UInt8]

    /// The CA's certificate, parsed by CryptoCore.
    public var certificate: Certificate {
        // Made by OpenSSL a moment ago; a parse failure here is a CryptoCore bug the test should show.
        do { return try Certificate(der: certificateDER) } catch {
            fatalError("generated CA certificate: \(error)")
        }
    }

    /// Makes a self-signed root CA.
    ///
    /// - Parameters:
    ///   - name: The root's subject (and issuer).
    ///   - key: The root's key; a fresh P-256 key by default.
    ///   - notBefore: Start of validity.
    ///   - notAfter: End of validity.
    ///   - pathLength: The basicConstraints pathLenConstraint, none by default.
    public static func root(
        name: Name, key: SoftwareKey = .generate(.ec(.p256)), notBefore: Date, notAfter: Date,
        pathLength: Int? = nil
    ) -> TestCertificateAuthority {
        let der = makeCertificate(
            subject: name, subjectPublicKeyInfo: key.subjectPublicKeyInfo, issuer: name, issuerKey: key,
            notBefore: notBefore, notAfter: notAfter, basicConstraints: .ca(pathLength: pathLength),
            keyUsage: [.keyCertSign, .cRLSign])
        return TestCertificateAuthority(key: key, name: name, certificateDER: der)
    }

    /// Makes an intermediate CA signed by this one.
    ///
    /// - Parameters as in `root`; the intermediate's validity defaults to this CA's.
    public func intermediate(
        name: Name, key: SoftwareKey = .generate(.ec(.p256)), notBefore: Date? = nil, notAfter: Date? = nil,
        pathLength: Int? = nil
    ) -> TestCertificateAuthority {
        let parent = certificate
        let der = issue(
            subject: name, subjectPublicKeyInfo: key.subjectPublicKeyInfo,
            notBefore: notBefore ?? parent.notBefore, notAfter: notAfter ?? parent.notAfter,
            basicConstraints: .ca(pathLength: pathLength), keyUsage: [.keyCertSign, .cRLSign])
        return TestCertificateAuthority(key: key, name: name, certificateDER: der)
    }

    /// Issues a certificate signed by this CA.
    ///
    /// - Parameters:
    ///   - subject: The certificate's subject.
    ///   - subjectPublicKeyInfo: The subject key as DER SubjectPublicKeyInfo (`SoftwareKey.subjectPublicKeyInfo`).
    ///   - notBefore: Start of validity; this CA's by default.
    ///   - notAfter: End of validity; this CA's by default.
    ///   - basicConstraints: `.endEntity` by default.
    ///   - keyUsage: digitalSignature by default; nil writes no keyUsage extension.
    ///   - extensions: Further extensions, added after the standard ones in the order given.
    ///   - serialNumber: Random by default.
    /// - Returns: The certificate's DER.
    public func issue(
        subject: Name, subjectPublicKeyInfo: [UInt8], notBefore: Date? = nil, notAfter: Date? = nil,
        basicConstraints: BasicConstraints = .endEntity,
        keyUsage: Certificate.KeyUsage? = .digitalSignature, extensions: [Extension] = [],
        serialNumber: UInt64 = .random(in: 1...(UInt64.max >> 1))
    ) -> [UInt8] {
        let parent = certificate
        return Self.makeCertificate(
            subject: subject, subjectPublicKeyInfo: subjectPublicKeyInfo, issuer: name, issuerKey: key,
            notBefore: notBefore ?? parent.notBefore, notAfter: notAfter ?? parent.notAfter,
            basicConstraints: basicConstraints, keyUsage: keyUsage, extensions: extensions,
            serialNumber: serialNumber)
    }

    /// Makes any certificate: the general form the methods above use.
    ///
    /// - Parameters:
    ///   - subject: The subject name.
    ///   - subjectPublicKeyInfo: The subject key, DER SubjectPublicKeyInfo.
    ///   - issuer: The issuer name written into the certificate.
    ///   - issuerKey: The key that signs (SHA-256/384/512 by EC curve, SHA-256 for RSA, pure Ed25519).
    ///   - notBefore: Start of validity.
    ///   - notAfter: End of validity.
    ///   - basicConstraints: Which basicConstraints to write.
    ///   - keyUsage: The keyUsage bits, written critical; nil for none.
    ///   - extensions: Further extensions in order.
    ///   - serialNumber: The serial number.
    ///   - version: 3, or 1 for a certificate without extensions.
    /// - Returns: The certificate's DER.
    public static func makeCertificate(
        subject: Name, subjectPublicKeyInfo: [UInt8], issuer: Name, issuerKey: SoftwareKey,
        notBefore: Date, notAfter: Date, basicConstraints: BasicConstraints = .endEntity,
        keyUsage: Certificate.KeyUsage? = .digitalSignature, extensions: [Extension] = [],
        serialNumber: UInt64 = .random(in: 1...(UInt64.max >> 1)), version: Int = 3
    ) -> [UInt8] {
        // One issuer serves the product's development PKI and the tests; a failure here is a
        // broken test or environment, so it traps.
        do {
            return try CertificateIssuer.makeCertificate(
                subject: subject, subjectPublicKeyInfo: subjectPublicKeyInfo, issuer: issuer,
                issuerKey: issuerKey.signingKey, notBefore: notBefore, notAfter: notAfter,
                basicConstraints: basicConstraints, keyUsage: keyUsage, extensions: extensions,
                serialNumber: serialNumber, version: version)
        } catch {
            fatalError("certificate issuance failed: \(error)")
        }
    }
}
