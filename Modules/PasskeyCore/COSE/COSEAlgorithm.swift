public import CryptoCore
public import MLDSA

/// The COSE signature algorithms PasskeyCore verifies, with their IANA "COSE Algorithms" values.
///
/// These are the values a relying party lists in `pubKeyCredParams` and finds under label 3 of a
/// credential public key (RFC 9053, RFC 8230, RFC 8812, WebAuthn L3 §5.8.5, and for ML-DSA
/// draft-ietf-cose-dilithium, whose values IANA has registered).
public enum COSEAlgorithm: Int64, Sendable, Hashable, CaseIterable {
    /// ECDSA with SHA-256 on P-256 (WebAuthn binds ES256 to P-256).
    case es256 = -7
    /// EdDSA; PasskeyCore accepts it with Ed25519 only.
    case edDSA = -8
    /// ECDSA with SHA-384 on P-384.
    case es384 = -35
    /// ECDSA with SHA-512 on P-521.
    case es512 = -36
    /// RSASSA-PSS with SHA-256 (salt length 32).
    case ps256 = -37
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    case rs256 = -257
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    case rs384 = -258
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    case rs512 = -259
    /// RSASSA-PKCS1-v1_5 with SHA-1, registered by RFC 8812 for old TPM authenticators only.
    case rs1 = -65535
    /// ML-DSA-44 (FIPS 204), pure, empty context: a post-quantum signature, key type AKP.
    case mlDSA44 = -48
    /// ML-DSA-65 (FIPS 204), pure, empty context.
    case mlDSA65 = -49
    /// ML-DSA-87 (FIPS 204), pure, empty context.
    case mlDSA87 = -50

    /// The name IANA's "COSE Algorithms" registry gives the algorithm ("ES256", "ML-DSA-65"),
    /// also the name configuration uses.
    public var name: String {
        switch self {
        case .es256: "ES256"
        case .edDSA: "EdDSA"
        case .es384: "ES384"
        case .es512: "ES512"
        case .ps256: "PS256"
        case .rs256: "RS256"
        case .rs384: "RS384"
        case .rs512: "RS512"
        case .rs1: "RS1"
        case .mlDSA44: "ML-DSA-44"
        case .mlDSA65: "ML-DSA-65"
        case .mlDSA87: "ML-DSA-87"
        }
    }

    /// The algorithm IANA names `name` ("ES256", "ML-DSA-65"), nil for any other text.
    public init?(name: String) {
        guard let match = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = match
    }

    /// The CryptoCore scheme that checks signatures of this algorithm.
    public var signatureAlgorithm: SignatureAlgorithm {
        switch self {
        case .es256: .ecdsaSHA256
        case .es384: .ecdsaSHA384
        case .es512: .ecdsaSHA512
        case .edDSA: .ed25519
        case .ps256: .rsaPSSSHA256
        case .rs256: .rsaPKCS1SHA256
        case .rs384: .rsaPKCS1SHA384
        case .rs512: .rsaPKCS1SHA512
        case .rs1: .rsaPKCS1SHA1
        case .mlDSA44: .mlDSA44
        case .mlDSA65: .mlDSA65
        case .mlDSA87: .mlDSA87
        }
    }

    /// The key type a key of this algorithm must have.
    public var keyType: COSEKeyType {
        switch self {
        case .es256, .es384, .es512: .ec2
        case .edDSA: .okp
        case .ps256, .rs256, .rs384, .rs512, .rs1: .rsa
        case .mlDSA44, .mlDSA65, .mlDSA87: .akp
        }
    }

    /// The one curve this algorithm is used with, nil for RSA and ML-DSA.
    ///
    /// RFC 9053 lets ES256 name any curve, but WebAuthn L3 §5.8.5 pins each ECDSA algorithm to the
    /// curve of matching strength, and accepting ES256 on P-521 would only add untested combinations.
    public var curve: COSECurve? {
        switch self {
        case .es256: .p256
        case .es384: .p384
        case .es512: .p521
        case .edDSA: .ed25519
        case .ps256, .rs256, .rs384, .rs512, .rs1, .mlDSA44, .mlDSA65, .mlDSA87: nil
        }
    }

    /// The ML-DSA parameter set of an ML-DSA algorithm, nil for the others.
    public var mlDSAParameterSet: MLDSAParameterSet? { signatureAlgorithm.mlDSAParameterSet }
}

/// The COSE key types (label 1, `kty`) PasskeyCore understands (RFC 9053 §7, RFC 8230 §4,
/// draft-ietf-cose-dilithium §4).
public enum COSEKeyType: Int64, Sendable, Hashable, CaseIterable {
    /// Octet key pair: Edwards curves.
    case okp = 1
    /// Elliptic curve keys with x and y coordinates.
    case ec2 = 2
    /// RSA keys.
    case rsa = 3
    /// Algorithm key pair: a key whose algorithm fixes its whole form, here ML-DSA's public key.
    case akp = 7
}

/// The COSE elliptic curves (label -1, `crv`) PasskeyCore accepts (RFC 9053 §7.1).
public enum COSECurve: Int64, Sendable, Hashable, CaseIterable {
    /// NIST P-256, for EC2 keys.
    case p256 = 1
    /// NIST P-384, for EC2 keys.
    case p384 = 2
    /// NIST P-521, for EC2 keys.
    case p521 = 3
    /// Ed25519, for OKP keys.
    case ed25519 = 6

    /// The key type the curve belongs to.
    public var keyType: COSEKeyType {
        switch self {
        case .p256, .p384, .p521: .ec2
        case .ed25519: .okp
        }
    }

    /// The CryptoCore curve for EC2 curves, nil for Ed25519.
    public var ecCurve: ECCurve? {
        switch self {
        case .p256: .p256
        case .p384: .p384
        case .p521: .p521
        case .ed25519: nil
        }
    }

    /// The exact length of each coordinate (EC2) or of the key (OKP), in bytes.
    public var coordinateByteCount: Int {
        ecCurve?.coordinateByteCount ?? 32
    }
}
