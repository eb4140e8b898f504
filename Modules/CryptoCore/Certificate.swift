import COpenSSL
public import FoundationEssentials
import Glibc
import Kernel

/// A parsed X.509 certificate, held as an OpenSSL `X509` for signature and chain checks.
///
/// Every field is decoded once, at construction, into Swift values; afterwards the certificate is
/// only read, which is why it is `Sendable`. OpenSSL caches a certificate's extension flags lazily on
/// first use; construction triggers that cache, so concurrent chain validations never write to it.
///
/// Construction is strict where a lenient parse would change what the certificate means: exactly one
/// certificate and no trailing bytes, no duplicate extensions, extensions OpenSSL itself can decode,
/// the outer and inner signature algorithms equal, and a public key `PublicKey` accepts (so an RSA
/// key under 2048 bits fails with `crypto.weak_key`).
public final class Certificate: @unchecked Sendable {
    /// The largest encoding accepted: real attestation and metadata certificates are under 4 KiB.
    public static let maximumDERLength = 64 * 1024

    /// The owned `X509 *`; never nil, freed in `deinit`, never handed out of CryptoCore.
    let x509: OpaquePointer

    /// The DER encoding, exactly the bytes the certificate was built from.
    public let der: [UInt8]
    /// The X.509 version: 1, 2 or 3.
    public let version: Int
    /// The serial number as the big-endian two's-complement INTEGER contents.
    public let serialNumber: [UInt8]
    /// Who the certificate is about.
    public let subject: DistinguishedName
    /// Who signed it.
    public let issuer: DistinguishedName
    /// The start of the validity period.
    public let notBefore: Date
    /// The end of the validity period (inclusive, as RFC 5280 says).
    public let notAfter: Date
    /// The subject public key, already validated.
    public let publicKey: PublicKey
    /// The extensions in encoding order; OIDs are unique.
    public let extensions: [Extension]
    /// The outer signatureAlgorithm OID ("1.2.840.10045.4.3.2" for ecdsa-with-SHA256).
    public let signatureAlgorithmOID: String
    /// True when issuer equals subject and the certificate's signature verifies under its own key.
    public let isSelfSigned: Bool
    /// The basicConstraints cA flag; nil when the extension is absent (which is not the same as false).
    public let isCA: Bool?
    /// The basicConstraints pathLenConstraint; nil when absent.
    public let pathLengthConstraint: Int?
    /// The keyUsage bits; nil when the extension is absent.
    public let keyUsage: KeyUsage?
    /// The extendedKeyUsage purposes as dotted OIDs; nil when the extension is absent.
    public let extendedKeyUsage: [String]?
    /// SHA-256 of `der`, the usual certificate fingerprint.
    public let fingerprintSHA256: [UInt8]

    /// One certificate extension.
    public struct Extension: Hashable, Sendable {
        /// The extnID in dotted form.
        public let oid: String
        /// The critical flag.
        public let critical: Bool
        /// The extnValue OCTET STRING's contents: the extension's own DER encoding.
        public let value: [UInt8]
    }

    /// The keyUsage extension's bits (RFC 5280 §4.2.1.3).
    public struct KeyUsage: OptionSet, Hashable, Sendable {
        public let rawValue: UInt16
        /// Creates key usage bits.
        public init(rawValue: UInt16) { self.rawValue = rawValue }

        /// digitalSignature (bit 0): what attestation keys need.
        public static let digitalSignature = KeyUsage(rawValue: 1 << 0)
        /// nonRepudiation / contentCommitment (bit 1).
        public static let nonRepudiation = KeyUsage(rawValue: 1 << 1)
        /// keyEncipherment (bit 2).
        public static let keyEncipherment = KeyUsage(rawValue: 1 << 2)
        /// dataEncipherment (bit 3).
        public static let dataEncipherment = KeyUsage(rawValue: 1 << 3)
        /// keyAgreement (bit 4).
        public static let keyAgreement = KeyUsage(rawValue: 1 << 4)
        /// keyCertSign (bit 5): the key signs certificates.
        public static let keyCertSign = KeyUsage(rawValue: 1 << 5)
        /// cRLSign (bit 6).
        public static let cRLSign = KeyUsage(rawValue: 1 << 6)
        /// encipherOnly (bit 7).
        public static let encipherOnly = KeyUsage(rawValue: 1 << 7)
        /// decipherOnly (bit 8).
        public static let decipherOnly = KeyUsage(rawValue: 1 << 8)
    }

    /// Well-known extension OIDs.
    public enum OID {
        /// basicConstraints.
        public static let basicConstraints = "2.5.29.19"
        /// keyUsage.
        public static let keyUsage = "2.5.29.15"
        /// extendedKeyUsage.
        public static let extendedKeyUsage = "2.5.29.37"
        /// subjectAltName.
        public static let subjectAlternativeName = "2.5.29.17"
        /// FIDO id-fido-gen-ce-aaguid: an OCTET STRING holding the 16-byte AAGUID.
        public static let fidoAAGUID = "1.3.6.1.4.1.45724.1.1.4"
    }

    // MARK: Construction

    /// Parses one DER certificate.
    ///
    /// - Parameter der: Exactly one certificate; trailing bytes are refused.
    /// - Throws: `crypto.certificate_malformed` for anything that is not one well-formed certificate,
    ///   or the code `PublicKey(derSubjectPublicKeyInfo:)` gives for an unacceptable subject key.
    public convenience init(der: [UInt8]) throws(CryptoError) {
        let x509 = try Self.decode(der)
        let fields: Fields
        do throws(CryptoError) {
            fields = try Fields(x509)
        } catch {
            X509_free(x509)
            throw error
        }
        self.init(owning: x509, der: der, fields: fields)
    }

    /// Parses exactly one PEM `CERTIFICATE` block; text around it is ignored, as RFC 7468 allows.
    ///
    /// - Throws: `crypto.certificate_malformed` unless the text holds exactly one certificate block.
    public convenience init(pem: String) throws(CryptoError) {
        let blocks = try Self.pemBlocks(pem)
        guard blocks.count == 1 else {
            throw CryptoError(.certificateMalformed, "expected one PEM certificate, found \(blocks.count)")
        }
        try self.init(der: blocks[0])
    }

    /// Parses a PEM bundle of one or more `CERTIFICATE` blocks, in order.
    ///
    /// - Throws: `crypto.certificate_malformed` for an empty bundle, a block of another type (a private
    ///   key in a trust bundle is a mistake worth stopping for), bad base64, or a bad certificate.
    public static func certificates(pem: String) throws(CryptoError) -> [Certificate] {
        let blocks = try pemBlocks(pem)
        guard !blocks.isEmpty else {
            throw CryptoError(.certificateMalformed, "the PEM text holds no certificate")
        }
        var result: [Certificate] = []
        for block in blocks { result.append(try Certificate(der: block)) }
        return result
    }

    private init(owning x509: OpaquePointer, der: [UInt8], fields: Fields) {
        self.x509 = x509
        self.der = der
        version = fields.version
        serialNumber = fields.serialNumber
        subject = fields.subject
        issuer = fields.issuer
        notBefore = fields.notBefore
        notAfter = fields.notAfter
        publicKey = fields.publicKey
        extensions = fields.extensions
        signatureAlgorithmOID = fields.signatureAlgorithmOID
        isSelfSigned = fields.isSelfSigned
        isCA = fields.isCA
        pathLengthConstraint = fields.pathLengthConstraint
        keyUsage = fields.keyUsage
        extendedKeyUsage = fields.extendedKeyUsage
        fingerprintSHA256 = Digest.sha256(der)
    }

    deinit { X509_free(x509) }

    // MARK: Accessors

    /// The extension `oid`: its critical flag and extnValue contents (DER, ready for `DERReader`).
    public func `extension`(oid: String) -> (critical: Bool, value: [UInt8])? {
        extensions.first { $0.oid == oid }.map { ($0.critical, $0.value) }
    }

    /// The extension OIDs in encoding order.
    public var extensionOIDs: [String] { extensions.map(\.oid) }

    /// The raw subjectAltName extension value (a DER `GeneralNames` SEQUENCE); nil when absent.
    ///
    /// Left raw because its users need different parts: TPM reads a directoryName holding the TPM
    /// manufacturer, model and version attributes (2.23.133.2.1/2/3).
    public var subjectAlternativeName: [UInt8]? { `extension`(oid: OID.subjectAlternativeName)?.value }

    /// True when `issuer`'s public key verifies this certificate's signature.
    ///
    /// Checks the signature only: names, validity and CA flags are the chain validator's business.
    public func verifySignature(issuer: Certificate) -> Bool {
        let ok = X509_verify(x509, issuer.publicKey.pkey) == 1
        // A failed verification leaves an entry on OpenSSL's per-thread error queue; later calls must
        // not see it.
        if !ok { ERR_clear_error() }
        return ok
    }

    // MARK: Decoding

    /// d2i's the bytes, refusing empty, oversized or trailing input. The caller owns the result.
    private static func decode(_ der: [UInt8]) throws(CryptoError) -> OpaquePointer {
        guard !der.isEmpty, der.count <= maximumDERLength else {
            throw CryptoError(
                .certificateMalformed, "a certificate is 1 to \(maximumDERLength) bytes, got \(der.count)")
        }
        var consumed = 0
        let parsed = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let x509 = d2i_X509(nil, &cursor, buffer.count)
            // d2i advances the cursor past what it used, which is how trailing bytes are seen.
            if let cursor, let base = buffer.baseAddress { consumed = cursor - base }
            return x509
        }
        guard let x509 = parsed else {
            ERR_clear_error()
            throw CryptoError(.certificateMalformed, "the bytes are not a DER X.509 certificate")
        }
        guard consumed == der.count else {
            X509_free(x509)
            throw CryptoError(
                .certificateMalformed, "\(der.count - consumed) bytes follow the certificate")
        }
        return x509
    }

    /// Splits PEM text into the DER of its CERTIFICATE blocks.
    private static func pemBlocks(_ text: String) throws(CryptoError) -> [[UInt8]] {
        var blocks: [[UInt8]] = []
        var body: String? = nil
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let line = rawLine.trimmingWhitespace()
            if line.hasPrefix("-----BEGIN ") {
                guard body == nil, line == "-----BEGIN CERTIFICATE-----" else {
                    throw CryptoError(.certificateMalformed, "unexpected PEM line \"\(line.prefix(40))\"")
                }
                body = ""
            } else if line.hasPrefix("-----END ") {
                guard let base64 = body, line == "-----END CERTIFICATE-----" else {
                    throw CryptoError(.certificateMalformed, "unexpected PEM line \"\(line.prefix(40))\"")
                }
                // Foundation's strict decoder: padding required, no stray characters.
                guard let data = Data(base64Encoded: base64) else {
                    throw CryptoError(.certificateMalformed, "a PEM certificate block is not base64")
                }
                blocks.append([UInt8](data))
                body = nil
            } else if body != nil {
                body! += line
            }
        }
        guard body == nil else {
            throw CryptoError(.certificateMalformed, "a PEM certificate block has no END line")
        }
        return blocks
    }

    /// Every field, decoded before the certificate object exists so a failure frees one pointer only.
    private struct Fields {
        var version: Int
        var serialNumber: [UInt8]
        var subject: DistinguishedName
        var issuer: DistinguishedName
        var notBefore: Date
        var notAfter: Date
        var publicKey: PublicKey
        var extensions: [Extension]
        var signatureAlgorithmOID: String
        var isSelfSigned: Bool
        var isCA: Bool? = nil
        var pathLengthConstraint: Int? = nil
        var keyUsage: KeyUsage? = nil
        var extendedKeyUsage: [String]? = nil

        init(_ x509: OpaquePointer) throws(CryptoError) {
            // Filling OpenSSL's extension cache now is what makes later concurrent use read-only; it
            // fails when OpenSSL cannot decode an extension it relies on, which would fail every chain.
            guard X509_check_purpose(x509, -1, 0) == 1 else {
                ERR_clear_error()
                throw CryptoError(.certificateMalformed, "OpenSSL cannot decode the certificate's extensions")
            }
            let rawVersion = X509_get_version(x509)
            guard (0...2).contains(rawVersion) else {
                throw CryptoError(.certificateMalformed, "unknown X.509 version \(rawVersion + 1)")
            }
            version = rawVersion + 1
            serialNumber = try Self.serial(x509)
            subject = try Self.name(X509_get_subject_name(x509))
            issuer = try Self.name(X509_get_issuer_name(x509))
            notBefore = try Self.date(X509_get0_notBefore(x509))
            notAfter = try Self.date(X509_get0_notAfter(x509))
            signatureAlgorithmOID = try Self.signatureAlgorithm(x509)
            extensions = try Self.extensions(x509)
            publicKey = try Self.publicKey(x509)
            // X509_self_signed compares names and key identifiers, then checks the signature itself.
            isSelfSigned = X509_self_signed(x509, 1) == 1
            ERR_clear_error()
            try decodeKnownExtensions()
        }

        /// Reads basicConstraints, keyUsage and extendedKeyUsage with the strict DER reader.
        private mutating func decodeKnownExtensions() throws(CryptoError) {
            do throws(CryptoError) {
                for item in extensions {
                    switch item.oid {
                    case OID.basicConstraints:
                        var outer = DERReader(item.value)
                        var sequence = try outer.readSequence()
                        // cA is DEFAULT FALSE; an explicit FALSE is not DER but is common (BouncyCastle
                        // writes it) and means the same, so it is accepted.
                        isCA = try sequence.readOptionalElement(.boolean)?.boolean() ?? false
                        if let length = try sequence.readOptionalElement(.integer)?.integer() {
                            guard length >= 0 else {
                                throw CryptoError(.derMalformed, "pathLenConstraint is negative")
                            }
                            pathLengthConstraint = length
                        }
                        try sequence.finish()
                        try outer.finish()
                    case OID.keyUsage:
                        let bits = try DERReader.single(item.value).bitString()
                        var usage: UInt16 = 0
                        for bit in 0..<9 where bits.isSet(bit) { usage |= 1 << UInt16(bit) }
                        keyUsage = KeyUsage(rawValue: usage)
                    case OID.extendedKeyUsage:
                        var sequence = try DERReader.single(item.value).contents()
                        var purposes: [String] = []
                        while !sequence.isAtEnd { purposes.append(try sequence.readObjectIdentifier()) }
                        extendedKeyUsage = purposes
                    default:
                        break
                    }
                }
            } catch {
                throw CryptoError(.certificateMalformed, "a standard extension is malformed: \(error)")
            }
        }

        /// The serial's INTEGER contents, via OpenSSL's encoding and the DER reader.
        private static func serial(_ x509: OpaquePointer) throws(CryptoError) -> [UInt8] {
            let encoded = try encode { out in i2d_ASN1_INTEGER(X509_get0_serialNumber(x509), out) }
            do throws(CryptoError) {
                return try DERReader.single(encoded).integerBytes()
            } catch {
                throw CryptoError(.certificateMalformed, "the serial number is malformed: \(error)")
            }
        }

        /// Decodes an `X509_NAME` (borrowed from the certificate) into ordered attributes.
        private static func name(_ name: OpaquePointer?) throws(CryptoError) -> DistinguishedName {
            guard let name else { throw CryptoError(.certificateMalformed, "the certificate lacks a name") }
            var attributes: [DistinguishedName.Attribute] = []
            for index in 0..<X509_NAME_entry_count(name) {
                guard let entry = X509_NAME_get_entry(name, index),
                    let oid = objectIdentifier(X509_NAME_ENTRY_get_object(entry)),
                    let value = utf8(X509_NAME_ENTRY_get_data(entry))
                else {
                    throw CryptoError(.certificateMalformed, "name attribute \(index) cannot be decoded")
                }
                attributes.append(.init(oid: oid, value: value, rdnIndex: Int(X509_NAME_ENTRY_set(entry))))
            }
            let der = try encode { out in i2d_X509_NAME(name, out) }
            return DistinguishedName(attributes: attributes, der: der)
        }

        /// Converts any ASN.1 string type to UTF-8 (BMPString and T61String included); nil on failure.
        private static func utf8(_ string: UnsafeMutablePointer<ASN1_STRING>?) -> String? {
            var out: UnsafeMutablePointer<UInt8>? = nil
            let length = ASN1_STRING_to_UTF8(&out, string)
            guard length >= 0, let out else {
                ERR_clear_error()
                return nil
            }
            defer { copenssl_free(out) }
            return String(validating: UnsafeBufferPointer(start: out, count: Int(length)), as: UTF8.self)
        }

        /// An `ASN1_TIME` as a `Date`, through a broken-down UTC time.
        private static func date(_ time: UnsafePointer<ASN1_TIME>?) throws(CryptoError) -> Date {
            var parts = tm()
            guard let time, ASN1_TIME_to_tm(time, &parts) == 1 else {
                ERR_clear_error()
                throw CryptoError(.certificateMalformed, "a validity time cannot be decoded")
            }
            // timegm reads the fields as UTC, which ASN1_TIME_to_tm has normalised them to.
            return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
        }

        /// The outer signature algorithm OID, after checking it equals the one inside the signed part.
        private static func signatureAlgorithm(_ x509: OpaquePointer) throws(CryptoError) -> String {
            var algorithm: UnsafePointer<X509_ALGOR>? = nil
            X509_get0_signature(nil, &algorithm, x509)
            // RFC 5280 §4.1.1.2: the two must match, or the unsigned outer field could lie about the signature.
            guard let algorithm, X509_ALGOR_cmp(algorithm, X509_get0_tbs_sigalg(x509)) == 0 else {
                throw CryptoError(.certificateMalformed, "the outer and signed signature algorithms differ")
            }
            var object: OpaquePointer? = nil
            X509_ALGOR_get0(&object, nil, nil, algorithm)
            guard let oid = objectIdentifier(object) else {
                throw CryptoError(.certificateMalformed, "the signature algorithm cannot be decoded")
            }
            return oid
        }

        /// The extensions in order, refusing duplicates (RFC 5280 §4.2) so lookups by OID are unambiguous.
        private static func extensions(_ x509: OpaquePointer) throws(CryptoError) -> [Extension] {
            var result: [Extension] = []
            var seen = Set<String>()
            for index in 0..<X509_get_ext_count(x509) {
                guard let item = X509_get_ext(x509, index),
                    let oid = objectIdentifier(X509_EXTENSION_get_object(item)),
                    let data = X509_EXTENSION_get_data(item)
                else {
                    throw CryptoError(.certificateMalformed, "extension \(index) cannot be decoded")
                }
                guard seen.insert(oid).inserted else {
                    throw CryptoError(.certificateMalformed, "extension \(oid) appears twice")
                }
                let length = Int(ASN1_STRING_length(data))
                let value =
                    length == 0
                    ? [] : Array(UnsafeBufferPointer(start: ASN1_STRING_get0_data(data), count: length))
                result.append(
                    Extension(oid: oid, critical: X509_EXTENSION_get_critical(item) == 1, value: value))
            }
            return result
        }

        /// The subject key, re-encoded as SubjectPublicKeyInfo and checked by `PublicKey`.
        private static func publicKey(_ x509: OpaquePointer) throws(CryptoError) -> PublicKey {
            let spki = try encode { out in i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x509), out) }
            return try PublicKey(derSubjectPublicKeyInfo: spki)
        }

        /// An OID in dotted form (never a short name, which would vary with OpenSSL's object table).
        private static func objectIdentifier(_ object: OpaquePointer?) -> String? {
            guard let object else { return nil }
            var buffer = [CChar](repeating: 0, count: 128)
            let needed = Int(OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1))
            guard needed > 0 else { return nil }
            // OBJ_obj2txt returns the full length even when it truncated; retry with room for it.
            if needed >= buffer.count {
                buffer = [CChar](repeating: 0, count: needed + 1)
                guard OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1) == needed else { return nil }
            }
            return String(decoding: buffer[..<needed].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }

        /// Runs an i2d function that allocates its output and returns the bytes.
        private static func encode(
            _ i2d: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>) -> Int32
        ) throws(CryptoError) -> [UInt8] {
            var out: UnsafeMutablePointer<UInt8>? = nil
            let length = i2d(&out)
            guard length > 0, let out else {
                ERR_clear_error()
                throw CryptoError(.x509Failure, "OpenSSL could not encode a certificate field")
            }
            defer { copenssl_free(out) }
            return Array(UnsafeBufferPointer(start: out, count: Int(length)))
        }
    }
}

extension Certificate: Hashable {
    /// Certificates are equal when their DER encodings are: the same certificate parsed twice is one.
    public static func == (lhs: Certificate, rhs: Certificate) -> Bool { lhs.der == rhs.der }

    /// Hashes the fingerprint, which already summarises the whole encoding.
    public func hash(into hasher: inout Hasher) { hasher.combine(fingerprintSHA256) }
}

extension Certificate: CustomStringConvertible {
    /// Subject, issuer and fingerprint prefix: enough to tell certificates apart in logs.
    public var description: String {
        "Certificate(subject: \(subject), issuer: \(issuer), sha256: \(Hex.encode(fingerprintSHA256.prefix(8))))"
    }
}
