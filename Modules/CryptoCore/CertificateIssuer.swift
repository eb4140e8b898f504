import COpenSSL
public import FoundationEssentials

/// Issues X.509 certificates over OpenSSL: the development PKI of the BankID simulator and the
/// throwaway authorities of the tests both build certificates here, so there is one issuer.
///
/// Everything returns DER. No policy is applied: callers choose names, validity and extensions,
/// including ones no well-behaved CA would issue (tests need those).
public enum CertificateIssuer {
    /// The subject or issuer attributes; each is added only when non-nil, in C, O, OU, CN order.
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

        /// subjectAltName with DNS names and IP addresses (4 or 16 bytes each).
        public static func subjectAltName(dnsNames: [String], ipAddresses: [[UInt8]]) -> Extension {
            // GeneralName: dNSName [2] IA5String, iPAddress [7] OCTET STRING, both implicit.
            let names =
                dnsNames.map { DERWriter.element(0x82, Array($0.utf8)) }
                + ipAddresses.map { DERWriter.element(0x87, $0) }
            return Extension(oid: "2.5.29.17", value: DERWriter.sequence(names))
        }

        /// extendedKeyUsage with the given purpose OIDs (e.g. `serverAuth`, `clientAuth`).
        public static func extendedKeyUsage(_ purposes: [String]) -> Extension {
            Extension(oid: "2.5.29.37", value: DERWriter.sequence(purposes.map(DERWriter.objectIdentifier)))
        }

        /// id-kp-serverAuth.
        public static let serverAuth = "1.3.6.1.5.5.7.3.1"
        /// id-kp-clientAuth.
        public static let clientAuth = "1.3.6.1.5.5.7.3.2"
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

    /// Makes a certificate.
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
    ///   - extensions: Further extensions, after the standard ones, in order.
    ///   - serialNumber: The serial number.
    ///   - version: 3, or 1 for a certificate without extensions.
    /// - Returns: The certificate's DER.
    /// - Throws: `CryptoError.x509Failure` when OpenSSL refuses a part (a bad OID, a bad key).
    public static func makeCertificate(
        subject: Name, subjectPublicKeyInfo: [UInt8], issuer: Name, issuerKey: SigningKey,
        notBefore: Date, notAfter: Date, basicConstraints: BasicConstraints = .endEntity,
        keyUsage: Certificate.KeyUsage? = .digitalSignature, extensions: [Extension] = [],
        serialNumber: UInt64 = .random(in: 1...(UInt64.max >> 1)), version: Int = 3
    ) throws(CryptoError) -> [UInt8] {
        guard let x509 = X509_new() else { throw CryptoError(.x509Failure, "X509_new failed") }
        defer { X509_free(x509) }
        try check(X509_set_version(x509, version - 1), "set the version")
        try check(ASN1_INTEGER_set_uint64(X509_get_serialNumber(x509), serialNumber), "set the serial")
        try setName(subject, X509_set_subject_name, x509)
        try setName(issuer, X509_set_issuer_name, x509)
        try setTime(notBefore, X509_set1_notBefore, x509)
        try setTime(notAfter, X509_set1_notAfter, x509)
        try setPublicKey(subjectPublicKeyInfo, x509)

        var all: [Extension] = []
        switch basicConstraints {
        case .absent: break
        case .endEntity:
            all.append(Extension(oid: Certificate.OID.basicConstraints, value: DERWriter.sequence([])))
        case .ca(let pathLength):
            let fields = [DERWriter.boolean(true)] + (pathLength.map { [DERWriter.integer($0)] } ?? [])
            all.append(
                Extension(
                    oid: Certificate.OID.basicConstraints, critical: true, value: DERWriter.sequence(fields)))
        }
        if let keyUsage {
            all.append(Extension(oid: Certificate.OID.keyUsage, critical: true, value: encode(keyUsage)))
        }
        all += extensions
        guard version == 3 || all.isEmpty else {
            throw CryptoError(.x509Failure, "only version 3 certificates carry extensions")
        }
        for item in all { try addExtension(item, x509) }

        guard X509_sign(x509, issuerKey.pkey, issuerKey.certificateDigest) > 0 else {
            throw CryptoError(.x509Failure, "X509_sign failed")
        }
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_X509(x509, &out)
        guard length > 0, let out else { throw CryptoError(.x509Failure, "i2d_X509 failed") }
        defer { copenssl_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// Bundles a key, its certificate and the chain above it as PKCS#12 (OpenSSL 3 defaults:
    /// AES-256-CBC with PBKDF2, SHA-256 MAC), the form banks hand BankID certificates out in.
    ///
    /// - Parameters:
    ///   - key: The private key.
    ///   - certificateDER: The key's certificate.
    ///   - chainDER: CA certificates to include.
    ///   - friendlyName: The bag's friendly name.
    ///   - passphrase: Protects the key and the MAC.
    /// - Returns: The PKCS#12 DER.
    /// - Throws: `CryptoError.x509Failure` when OpenSSL refuses.
    public static func pkcs12(
        key: SigningKey, certificateDER: [UInt8], chainDER: [[UInt8]], friendlyName: String,
        passphrase: String
    ) throws(CryptoError) -> [UInt8] {
        let certificate = try decodeX509(certificateDER)
        defer { X509_free(certificate) }
        guard let chain = OPENSSL_sk_new_null() else { throw CryptoError(.x509Failure, "no stack") }
        defer { OPENSSL_sk_pop_free(chain, { X509_free(OpaquePointer($0)) }) }
        for der in chainDER {
            let item = try decodeX509(der)
            guard OPENSSL_sk_push(chain, UnsafeRawPointer(item)) > 0 else {
                X509_free(item)
                throw CryptoError(.x509Failure, "could not build the chain")
            }
        }
        guard
            let bundle = PKCS12_create(
                passphrase, friendlyName, key.pkey, certificate, chain, 0, 0, 0, 0, 0)
        else { throw CryptoError(.x509Failure, "PKCS12_create failed") }
        defer { PKCS12_free(bundle) }
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_PKCS12(bundle, &out)
        guard length > 0, let out else { throw CryptoError(.x509Failure, "i2d_PKCS12 failed") }
        defer { copenssl_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    // MARK: OpenSSL helpers

    private static func decodeX509(_ der: [UInt8]) throws(CryptoError) -> OpaquePointer {
        let decoded = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_X509(nil, &cursor, buffer.count)
        }
        guard let decoded else { throw CryptoError(.certificateMalformed, "not a DER certificate") }
        return decoded
    }

    private static func check(_ status: Int32, _ what: String) throws(CryptoError) {
        guard status == 1 else { throw CryptoError(.x509Failure, "OpenSSL failed to \(what)") }
    }

    /// Builds an X509_NAME from `name` and hands it to `setter`, which copies it.
    private static func setName(
        _ name: Name, _ setter: (OpaquePointer?, OpaquePointer?) -> Int32, _ x509: OpaquePointer
    ) throws(CryptoError) {
        guard let built = X509_NAME_new() else { throw CryptoError(.x509Failure, "X509_NAME_new failed") }
        defer { X509_NAME_free(built) }
        let parts = [
            ("C", name.country), ("O", name.organization), ("OU", name.organizationalUnit),
            ("CN", name.commonName),
        ]
        for case (let field, let value?) in parts {
            // MBSTRING_UTF8 lets OpenSSL pick the string type each attribute's table wants
            // (PrintableString for C, UTF8String otherwise).
            let bytes = Array(value.utf8)
            try check(
                X509_NAME_add_entry_by_txt(built, field, MBSTRING_UTF8, bytes, Int32(bytes.count), -1, 0),
                "add \(field)")
        }
        try check(setter(x509, built), "set a name")
    }

    /// Sets a validity time; ASN1_TIME_set picks UTCTime before 2050 and GeneralizedTime after.
    private static func setTime(
        _ date: Date, _ setter: (OpaquePointer?, UnsafePointer<ASN1_TIME>?) -> Int32, _ x509: OpaquePointer
    ) throws(CryptoError) {
        guard let time = ASN1_TIME_set(nil, time_t(date.timeIntervalSince1970.rounded(.down))) else {
            throw CryptoError(.x509Failure, "ASN1_TIME_set failed")
        }
        defer { ASN1_TIME_free(time) }
        try check(setter(x509, time), "set a validity time")
    }

    /// Decodes the SubjectPublicKeyInfo and sets it as the certificate's key.
    private static func setPublicKey(_ spki: [UInt8], _ x509: OpaquePointer) throws(CryptoError) {
        let pkey = spki.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let pkey else { throw CryptoError(.invalidPublicKey, "not a SubjectPublicKeyInfo") }
        defer { EVP_PKEY_free(pkey) }
        try check(X509_set_pubkey(x509, pkey), "set the public key")
    }

    /// Adds one extension from its OID, flag and DER value.
    private static func addExtension(_ item: Extension, _ x509: OpaquePointer) throws(CryptoError) {
        guard let object = OBJ_txt2obj(item.oid, 1) else {
            throw CryptoError(.x509Failure, "bad extension OID \(item.oid)")
        }
        defer { ASN1_OBJECT_free(object) }
        guard let octets = ASN1_OCTET_STRING_new() else { throw CryptoError(.x509Failure, "no octet string") }
        defer { ASN1_OCTET_STRING_free(octets) }
        try check(
            ASN1_OCTET_STRING_set(octets, item.value, Int32(item.value.count)), "set an extension value")
        guard let created = X509_EXTENSION_create_by_OBJ(nil, object, item.critical ? 1 : 0, octets) else {
            throw CryptoError(.x509Failure, "X509_EXTENSION_create_by_OBJ failed")
        }
        defer { X509_EXTENSION_free(created) }
        try check(X509_add_ext(x509, created, -1), "add an extension")
    }

    /// keyUsage as a DER named-bit BIT STRING: trailing zero bits dropped, as DER requires.
    private static func encode(_ usage: Certificate.KeyUsage) -> [UInt8] {
        let highest = (0..<9).last { usage.rawValue & (1 << $0) != 0 }
        guard let highest else { return DERWriter.element(0x03, [0]) }
        var bytes = [UInt8](repeating: 0, count: highest / 8 + 1)
        for bit in 0...highest where usage.rawValue & (1 << bit) != 0 {
            bytes[bit / 8] |= 0x80 >> UInt8(bit % 8)
        }
        return DERWriter.element(0x03, [UInt8(7 - highest % 8)] + bytes)
    }
}
