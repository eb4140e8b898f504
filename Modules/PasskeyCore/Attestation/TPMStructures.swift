public import CryptoCore

/// A TPM 2.0 algorithm identifier (TPM 2.0 Part 2 §6.3, `TPM_ALG_ID`).
///
/// A struct over the raw value rather than an enum: a TPM may name algorithms this code does not
/// know, and the parsers must be able to report them instead of failing to represent them.
public struct TPMAlgorithmID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The two-byte identifier as the TPM writes it.
    public let rawValue: UInt16

    /// Wraps an identifier.
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// TPM_ALG_RSA: an RSA key.
    public static let rsa = TPMAlgorithmID(rawValue: 0x0001)
    /// TPM_ALG_SHA1.
    public static let sha1 = TPMAlgorithmID(rawValue: 0x0004)
    /// TPM_ALG_SHA256.
    public static let sha256 = TPMAlgorithmID(rawValue: 0x000B)
    /// TPM_ALG_SHA384.
    public static let sha384 = TPMAlgorithmID(rawValue: 0x000C)
    /// TPM_ALG_SHA512.
    public static let sha512 = TPMAlgorithmID(rawValue: 0x000D)
    /// TPM_ALG_NULL: "no algorithm" in schemes and symmetric definitions.
    public static let null = TPMAlgorithmID(rawValue: 0x0010)
    /// TPM_ALG_ECC: an elliptic-curve key.
    public static let ecc = TPMAlgorithmID(rawValue: 0x0023)

    /// The digest a name algorithm stands for; nil for anything that is not a hash Portvakt computes.
    public var digest: DigestAlgorithm? {
        switch self {
        case .sha1: .sha1
        case .sha256: .sha256
        case .sha384: .sha384
        case .sha512: .sha512
        default: nil
        }
    }

    /// Hex, as the TPM specification lists identifiers ("0x000B").
    public var description: String {
        let digits = String(rawValue, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: 4 - digits.count) + digits
    }
}

/// A signing, key-exchange or key-derivation scheme inside `TPMT_PUBLIC` parameters (a `TPMT_*_SCHEME`
/// or `TPMT_SYM_DEF_OBJECT`), kept as read so callers can apply their own policy.
public struct TPMScheme: Hashable, Sendable {
    /// The scheme or symmetric algorithm; `.null` when none is set.
    public let algorithm: TPMAlgorithmID
    /// The hash the scheme uses, when its details carry one.
    public let hashAlgorithm: TPMAlgorithmID?
    /// ECDAA's count, or a symmetric definition's key bits; nil otherwise.
    public let count: UInt16?
    /// A symmetric definition's mode; nil otherwise.
    public let mode: TPMAlgorithmID?

    /// No scheme (TPM_ALG_NULL).
    public static let none = TPMScheme(algorithm: .null, hashAlgorithm: nil, count: nil, mode: nil)
}

/// A parsed `TPMT_PUBLIC` (TPM 2.0 Part 2 §12.2.4): the TPM's description of the credential key.
///
/// Only RSA and ECC objects are accepted, because only they can hold a WebAuthn credential key.
/// Parsing is strict: every length is checked against the bytes present before it is used, unknown
/// scheme identifiers are refused (their details have unknown sizes), and no byte may follow the
/// structure. Garbage input throws `attestation.tpm_pub_area_invalid`, never traps.
public struct TPMPublicArea: Hashable, Sendable {
    /// The key-specific half of `parameters` and `unique`.
    public enum Key: Hashable, Sendable {
        /// TPMS_RSA_PARMS and TPM2B_PUBLIC_KEY_RSA.
        case rsa(RSA)
        /// TPMS_ECC_PARMS and TPMS_ECC_POINT.
        case ecc(ECC)
    }

    /// An RSA object's parameters and modulus.
    public struct RSA: Hashable, Sendable {
        /// The signing or encryption scheme.
        public let scheme: TPMScheme
        /// The declared modulus size in bits.
        public let keyBits: UInt16
        /// The exponent as written; 0 means the default 65537 (Part 2 §12.2.3.5).
        public let exponent: UInt32
        /// The modulus n, big-endian, from `unique`.
        public let modulus: [UInt8]

        /// The exponent the key actually uses: 65537 when the TPM wrote 0.
        public var effectiveExponent: UInt32 { exponent == 0 ? 65537 : exponent }
    }

    /// An ECC object's parameters and public point.
    public struct ECC: Hashable, Sendable {
        /// The signing or key-exchange scheme.
        public let scheme: TPMScheme
        /// The TPM_ECC_CURVE identifier (0x0003 NIST P-256, 0x0004 P-384, 0x0005 P-521).
        public let curveID: UInt16
        /// The key derivation scheme.
        public let kdf: TPMScheme
        /// The x coordinate, big-endian, as written.
        public let x: [UInt8]
        /// The y coordinate, big-endian, as written.
        public let y: [UInt8]

        /// The CryptoCore curve for `curveID`, nil for curves WebAuthn cannot use.
        public var curve: ECCurve? {
            switch curveID {
            case 0x0003: .p256
            case 0x0004: .p384
            case 0x0005: .p521
            default: nil
            }
        }
    }

    /// The object type: `.rsa` or `.ecc`.
    public let type: TPMAlgorithmID
    /// The algorithm the object's Name is computed with.
    public let nameAlgorithm: TPMAlgorithmID
    /// TPMA_OBJECT bits (fixedTPM, sign, …), kept for risk engines; WebAuthn does not constrain them.
    public let objectAttributes: UInt32
    /// The authorization policy digest (may be empty).
    public let authPolicy: [UInt8]
    /// The symmetric definition; a signing key has none.
    public let symmetric: TPMScheme
    /// The key parameters and public value.
    public let key: Key
    /// The exact bytes parsed, over which the Name is computed.
    public let bytes: [UInt8]

    /// Parses a `TPMT_PUBLIC`.
    ///
    /// - Parameter bytes: The pubArea from the attestation statement, without a TPM2B size prefix.
    /// - Throws: `attestation.tpm_pub_area_invalid` for truncated, oversized, unsupported or trailing input.
    public init(bytes: [UInt8]) throws(PasskeyError) {
        var reader = TPMReader(bytes, code: .attestationTPMPubAreaInvalid, what: "pubArea")
        type = TPMAlgorithmID(rawValue: try reader.uint16("type"))
        nameAlgorithm = TPMAlgorithmID(rawValue: try reader.uint16("nameAlg"))
        objectAttributes = try reader.uint32("objectAttributes")
        authPolicy = try reader.sized("authPolicy")
        symmetric = try reader.symmetricDefinition()
        switch type {
        case .rsa:
            let scheme = try reader.scheme(Self.rsaSchemes, "RSA scheme")
            let keyBits = try reader.uint16("keyBits")
            let exponent = try reader.uint32("exponent")
            let modulus = try reader.sized("unique")
            key = .rsa(RSA(scheme: scheme, keyBits: keyBits, exponent: exponent, modulus: modulus))
        case .ecc:
            let scheme = try reader.scheme(Self.eccSchemes, "ECC scheme")
            let curveID = try reader.uint16("curveID")
            let kdf = try reader.scheme(Self.kdfSchemes, "KDF scheme")
            let x = try reader.sized("unique.x")
            let y = try reader.sized("unique.y")
            key = .ecc(ECC(scheme: scheme, curveID: curveID, kdf: kdf, x: x, y: y))
        default:
            throw PasskeyError(.attestationTPMPubAreaInvalid, "pubArea type \(type) is neither RSA nor ECC")
        }
        try reader.finish()
        self.bytes = bytes
    }

    /// The object's Name (TPM 2.0 Part 1 §16): nameAlg ‖ H_nameAlg(TPMT_PUBLIC).
    ///
    /// - Throws: `attestation.tpm_pub_area_invalid` when nameAlg is not SHA-1 or SHA-2.
    public func name() throws(PasskeyError) -> [UInt8] {
        guard let digest = nameAlgorithm.digest else {
            throw PasskeyError(
                .attestationTPMPubAreaInvalid, "pubArea nameAlg \(nameAlgorithm) is not a supported hash")
        }
        return [UInt8(nameAlgorithm.rawValue >> 8), UInt8(nameAlgorithm.rawValue & 0xFF)]
            + Digest.hash(digest, bytes)
    }

    // The schemes whose details have a known size. Each maps to whether the details carry a hash
    // algorithm and an ECDAA count (Part 2 §11.2: TPMU_ASYM_SCHEME, TPMU_KDF_SCHEME).
    private static let rsaSchemes: [UInt16: (hash: Bool, count: Bool)] = [
        0x0014: (true, false),  // RSASSA
        0x0015: (false, false),  // RSAES: no details
        0x0016: (true, false),  // RSAPSS
        0x0017: (true, false),  // OAEP
    ]
    private static let eccSchemes: [UInt16: (hash: Bool, count: Bool)] = [
        0x0018: (true, false),  // ECDSA
        0x0019: (true, false),  // ECDH
        0x001A: (true, true),  // ECDAA
        0x001B: (true, false),  // SM2
        0x001C: (true, false),  // ECSCHNORR
        0x001D: (true, false),  // ECMQV
    ]
    private static let kdfSchemes: [UInt16: (hash: Bool, count: Bool)] = [
        0x0007: (true, false),  // MGF1
        0x0020: (true, false),  // KDF1_SP800_56A
        0x0021: (true, false),  // KDF2
        0x0022: (true, false),  // KDF1_SP800_108
    ]
}

/// A parsed `TPMS_ATTEST` of type `TPM_ST_ATTEST_CERTIFY` (TPM 2.0 Part 2 §10.12.8 and §10.12.3):
/// what the TPM signed about the credential key.
///
/// The magic value and the structure type are checked while parsing, because any other structure
/// would put different fields where `attested` is read. Every size is bounded by the input;
/// garbage throws `attestation.tpm_cert_info_invalid`, never traps.
public struct TPMCertifyInfo: Hashable, Sendable {
    /// TPM_GENERATED_VALUE: marks a structure the TPM itself created.
    public static let generatedValue: UInt32 = 0xFF54_4347
    /// TPM_ST_ATTEST_CERTIFY: the structure certifies a loaded object.
    public static let attestCertify: UInt16 = 0x8017

    /// The signing key's qualified name (possibly obfuscated; WebAuthn ignores it).
    public let qualifiedSigner: [UInt8]
    /// The caller's data: for WebAuthn, the hash of authenticatorData ‖ clientDataHash.
    public let extraData: [UInt8]
    /// TPMS_CLOCK_INFO.clock (possibly obfuscated).
    public let clock: UInt64
    /// TPMS_CLOCK_INFO.resetCount.
    public let resetCount: UInt32
    /// TPMS_CLOCK_INFO.restartCount.
    public let restartCount: UInt32
    /// TPMS_CLOCK_INFO.safe as read (1 = yes when not obfuscated).
    public let safe: UInt8
    /// The TPM firmware version (vendor-specific).
    public let firmwareVersion: UInt64
    /// TPMS_CERTIFY_INFO.name: the certified object's Name, nameAlg ‖ digest.
    public let attestedName: [UInt8]
    /// TPMS_CERTIFY_INFO.qualifiedName.
    public let attestedQualifiedName: [UInt8]

    /// Parses a `TPMS_ATTEST` and checks it is a certify structure the TPM generated.
    ///
    /// - Parameter bytes: certInfo from the attestation statement.
    /// - Throws: `attestation.tpm_cert_info_invalid` for a wrong magic or type, truncation or trailing bytes.
    public init(bytes: [UInt8]) throws(PasskeyError) {
        var reader = TPMReader(bytes, code: .attestationTPMCertInfoInvalid, what: "certInfo")
        guard try reader.uint32("magic") == Self.generatedValue else {
            throw PasskeyError(.attestationTPMCertInfoInvalid, "certInfo magic is not TPM_GENERATED_VALUE")
        }
        guard try reader.uint16("type") == Self.attestCertify else {
            throw PasskeyError(.attestationTPMCertInfoInvalid, "certInfo type is not TPM_ST_ATTEST_CERTIFY")
        }
        qualifiedSigner = try reader.sized("qualifiedSigner")
        extraData = try reader.sized("extraData")
        clock = try reader.uint64("clock")
        resetCount = try reader.uint32("resetCount")
        restartCount = try reader.uint32("restartCount")
        // Kept as read, not checked against TPMI_YES_NO: a privacy-preserving AIK obfuscates clockInfo
        // (§8.3 says to ignore it), so any byte may appear here; the §16 vector has one.
        safe = try reader.uint8("safe")
        firmwareVersion = try reader.uint64("firmwareVersion")
        attestedName = try reader.sized("attested.name")
        attestedQualifiedName = try reader.sized("attested.qualifiedName")
        try reader.finish()
    }
}

/// A big-endian cursor over TPM marshalled data that checks every read against the bytes left.
struct TPMReader {
    private let bytes: [UInt8]
    private var position = 0
    private let code: PasskeyError.Code
    private let what: String

    init(_ bytes: [UInt8], code: PasskeyError.Code, what: String) {
        self.bytes = bytes
        self.code = code
        self.what = what
    }

    /// Takes `count` bytes, or throws naming the field that ran past the end.
    private mutating func take(_ count: Int, _ field: String) throws(PasskeyError) -> ArraySlice<UInt8> {
        guard count <= bytes.count - position else {
            throw PasskeyError(
                code, "\(what) ends inside \(field): \(count) bytes needed, \(bytes.count - position) left")
        }
        defer { position += count }
        return bytes[position..<position + count]
    }

    /// Reads a big-endian unsigned integer of `width` bytes.
    private mutating func unsigned(_ width: Int, _ field: String) throws(PasskeyError) -> UInt64 {
        try take(width, field).reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func uint8(_ field: String) throws(PasskeyError) -> UInt8 { UInt8(try unsigned(1, field)) }
    mutating func uint16(_ field: String) throws(PasskeyError) -> UInt16 { UInt16(try unsigned(2, field)) }
    mutating func uint32(_ field: String) throws(PasskeyError) -> UInt32 { UInt32(try unsigned(4, field)) }
    mutating func uint64(_ field: String) throws(PasskeyError) -> UInt64 { try unsigned(8, field) }

    /// Reads a TPM2B: a two-byte size, then that many bytes.
    mutating func sized(_ field: String) throws(PasskeyError) -> [UInt8] {
        let count = Int(try uint16("\(field) size"))
        return Array(try take(count, field))
    }

    /// Reads a TPMT_SYM_DEF_OBJECT: an algorithm, then key bits and mode unless it is TPM_ALG_NULL.
    mutating func symmetricDefinition() throws(PasskeyError) -> TPMScheme {
        let algorithm = TPMAlgorithmID(rawValue: try uint16("symmetric"))
        guard algorithm != .null else { return .none }
        let keyBits = try uint16("symmetric keyBits")
        let mode = TPMAlgorithmID(rawValue: try uint16("symmetric mode"))
        return TPMScheme(algorithm: algorithm, hashAlgorithm: nil, count: keyBits, mode: mode)
    }

    /// Reads a scheme whose details' layout `known` gives; an unknown scheme cannot be skipped safely.
    mutating func scheme(_ known: [UInt16: (hash: Bool, count: Bool)], _ field: String) throws(PasskeyError)
        -> TPMScheme
    {
        let raw = try uint16(field)
        guard raw != TPMAlgorithmID.null.rawValue else { return .none }
        guard let layout = known[raw] else {
            throw PasskeyError(
                code, "\(what) \(field) \(TPMAlgorithmID(rawValue: raw)) is not a known scheme")
        }
        let hash = layout.hash ? TPMAlgorithmID(rawValue: try uint16("\(field) hashAlg")) : nil
        let count = layout.count ? try uint16("\(field) count") : nil
        return TPMScheme(
            algorithm: TPMAlgorithmID(rawValue: raw), hashAlgorithm: hash, count: count, mode: nil)
    }

    /// Throws unless every byte was read: a trailing byte means a structure this parser misread.
    func finish() throws(PasskeyError) {
        guard position == bytes.count else {
            throw PasskeyError(code, "\(bytes.count - position) bytes follow the \(what) structure")
        }
    }
}
