import COpenSSL
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
    public struct Name: Sendable, Hashable {
        /// countryName (two letters).
        public var country: String?
        /// organizationName.
        public var organization: String?
        /// organizationalUnitName.
        public var organizationalUnit: String?
        /// commonName.
        public var commonName: String?

        /// Creates a name; all attributes optional.
        public init(
            country: String? = nil, organization: String? = nil, organizationalUnit: String? = nil,
            commonName: String? = nil
        ) {
            self.country = country
            self.organization = organization
            self.organizationalUnit = organizationalUnit
            self.commonName = commonName
        }
    }

    /// An extension to add as given: extnID, critical flag, and the extnValue contents (DER).
    public struct Extension: Sendable, Hashable {
        /// The extension OID in dotted form.
        public var oid: String
        /// The critical flag.
        public var critical: Bool
        /// The extension value's DER (what goes inside the extnValue OCTET STRING).
        public var value: [UInt8]

        /// Creates an extension.
        public init(oid: String, critical: Bool = false, value: [UInt8]) {
            self.oid = oid
            self.critical = critical
            self.value = value
        }
    }

    /// What basicConstraints extension to write.
    public enum BasicConstraints: Sendable, Hashable {
        /// No basicConstraints extension at all.
        case absent
        /// `cA` false, written as OpenSSL does (an empty SEQUENCE).
        case endEntity
        /// `cA` true with an optional pathLenConstraint; marked critical as RFC 5280 requires for CAs.
        case ca(pathLength: Int?)
    }

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
        guard let x509 = X509_new() else { fatalError("X509_new failed") }
        defer { X509_free(x509) }
        check(X509_set_version(x509, version - 1), "set version")
        check(ASN1_INTEGER_set_uint64(X509_get_serialNumber(x509), serialNumber), "set serial")
        setName(subject, X509_set_subject_name, x509)
        setName(issuer, X509_set_issuer_name, x509)
        setTime(notBefore, X509_set1_notBefore, x509)
        setTime(notAfter, X509_set1_notAfter, x509)
        setPublicKey(subjectPublicKeyInfo, x509)

        var all: [Extension] = []
        switch basicConstraints {
        case .absent: break
        case .endEntity:
            all.append(Extension(oid: Certificate.OID.basicConstraints, value: TestDER.sequence([])))
        case .ca(let pathLength):
            let fields = [TestDER.boolean(true)] + (pathLength.map { [TestDER.integer($0)] } ?? [])
            all.append(
                Extension(
                    oid: Certificate.OID.basicConstraints, critical: true, value: TestDER.sequence(fields)))
        }
        if let keyUsage {
            all.append(Extension(oid: Certificate.OID.keyUsage, critical: true, value: encode(keyUsage)))
        }
        all += extensions
        precondition(version == 3 || all.isEmpty, "only version 3 certificates carry extensions")
        for item in all { addExtension(item, x509) }

        let digest: OpaquePointer? =
            switch issuerKey.kind {
            case .ec(.p384): EVP_sha384()
            case .ec(.p521): EVP_sha512()
            case .ec, .rsa: EVP_sha256()
            // Ed25519 hashes internally; OpenSSL requires no digest for it.
            case .ed25519: nil
            }
        guard X509_sign(x509, issuerKey.pkey, digest) > 0 else { fatalError("X509_sign failed") }
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_X509(x509, &out)
        guard length > 0, let out else { fatalError("i2d_X509 failed") }
        defer { copenssl_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    // MARK: OpenSSL helpers (each traps: failure is a broken test environment)

    private static func check(_ status: Int32, _ what: String) {
        guard status == 1 else { fatalError("OpenSSL failed to \(what)") }
    }

    /// Builds an X509_NAME from `name` and hands it to `setter`, which copies it.
    private static func setName(
        _ name: Name, _ setter: (OpaquePointer?, OpaquePointer?) -> Int32, _ x509: OpaquePointer
    ) {
        guard let built = X509_NAME_new() else { fatalError("X509_NAME_new failed") }
        defer { X509_NAME_free(built) }
        let parts = [
            ("C", name.country), ("O", name.organization), ("OU", name.organizationalUnit),
            ("CN", name.commonName),
        ]
        for case (let field, let value?) in parts {
            // MBSTRING_UTF8 lets OpenSSL pick the string type each attribute's table wants
            // (PrintableString for C, UTF8String otherwise).
            let bytes = Array(value.utf8)
            check(
                X509_NAME_add_entry_by_txt(built, field, MBSTRING_UTF8, bytes, Int32(bytes.count), -1, 0),
                "add \(field)")
        }
        check(setter(x509, built), "set a name")
    }

    /// Sets a validity time; ASN1_TIME_set picks UTCTime before 2050 and GeneralizedTime after.
    private static func setTime(
        _ date: Date, _ setter: (OpaquePointer?, UnsafePointer<ASN1_TIME>?) -> Int32, _ x509: OpaquePointer
    ) {
        guard let time = ASN1_TIME_set(nil, time_t(date.timeIntervalSince1970.rounded(.down))) else {
            fatalError("ASN1_TIME_set failed")
        }
        defer { ASN1_TIME_free(time) }
        check(setter(x509, time), "set a validity time")
    }

    /// Decodes the SubjectPublicKeyInfo and sets it as the certificate's key.
    private static func setPublicKey(_ spki: [UInt8], _ x509: OpaquePointer) {
        let pkey = spki.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let pkey else { fatalError("the subject public key is not a SubjectPublicKeyInfo") }
        defer { EVP_PKEY_free(pkey) }
        check(X509_set_pubkey(x509, pkey), "set the public key")
    }

    /// Adds one extension from its OID, flag and DER value.
    private static func addExtension(_ item: Extension, _ x509: OpaquePointer) {
        guard let object = OBJ_txt2obj(item.oid, 1), let octets = ASN1_OCTET_STRING_new() else {
            fatalError("bad extension OID \(item.oid)")
        }
        defer {
            ASN1_OBJECT_free(object)
            ASN1_OCTET_STRING_free(octets)
        }
        check(ASN1_OCTET_STRING_set(octets, item.value, Int32(item.value.count)), "set an extension value")
        guard let created = X509_EXTENSION_create_by_OBJ(nil, object, item.critical ? 1 : 0, octets) else {
            fatalError("X509_EXTENSION_create_by_OBJ failed")
        }
        defer { X509_EXTENSION_free(created) }
        check(X509_add_ext(x509, created, -1), "add an extension")
    }

    /// keyUsage as a DER named-bit BIT STRING: trailing zero bits dropped, as DER requires.
    private static func encode(_ usage: Certificate.KeyUsage) -> [UInt8] {
        let highest = (0..<9).last { usage.rawValue & (1 << $0) != 0 }
        guard let highest else { return TestDER.bitString([]) }
        var bytes = [UInt8](repeating: 0, count: highest / 8 + 1)
        for bit in 0...highest where usage.rawValue & (1 << bit) != 0 {
            bytes[bit / 8] |= 0x80 >> UInt8(bit % 8)
        }
        return TestDER.bitString(bytes, unusedBits: UInt8(7 - highest % 8))
    }
}
