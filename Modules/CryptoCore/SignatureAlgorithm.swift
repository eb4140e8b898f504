public import MLDSA

/// The elliptic curves Portvakt accepts for ECDSA keys (the NIST prime curves WebAuthn registers).
public enum ECCurve: Sendable, Hashable, CaseIterable {
    case p256, p384, p521

    /// The length in bytes of one affine coordinate (x or y) of a point on the curve.
    public var coordinateByteCount: Int {
        switch self {
        case .p256: 32
        case .p384: 48
        // 521 bits round up to 66 bytes; the top byte holds a single bit.
        case .p521: 66
        }
    }

    /// OpenSSL's group name, the value of the "group" key parameter.
    var groupName: String {
        switch self {
        case .p256: "prime256v1"
        case .p384: "secp384r1"
        case .p521: "secp521r1"
        }
    }

    /// The curve OpenSSL names `groupName`, nil for any curve Portvakt does not accept.
    init?(groupName: String) {
        // OpenSSL reports the SEC/X9.62 names, but NIST aliases are accepted in case a provider uses them.
        switch groupName {
        case "prime256v1", "P-256": self = .p256
        case "secp384r1", "P-384": self = .p384
        case "secp521r1", "P-521": self = .p521
        default: return nil
        }
    }
}

/// The kind of a public key, with the detail that decides which signatures it can check.
public enum PublicKeyType: Sendable, Hashable {
    /// An ECDSA key on a NIST prime curve.
    case ec(ECCurve)
    /// An RSA key with a modulus of `bits` bits.
    case rsa(bits: Int)
    /// An Ed25519 key (RFC 8032).
    case ed25519
    /// An ML-DSA key (FIPS 204) of one parameter set.
    case mlDSA(MLDSAParameterSet)
}

/// The signature schemes `PublicKey.verify` checks: every algorithm WebAuthn relying parties meet.
public enum SignatureAlgorithm: Sendable, Hashable, CaseIterable {
    /// ECDSA over SHA-256 with an ASN.1 DER `Ecdsa-Sig-Value` signature.
    case ecdsaSHA256
    /// ECDSA over SHA-384 with a DER signature.
    case ecdsaSHA384
    /// ECDSA over SHA-512 with a DER signature.
    case ecdsaSHA512
    /// RSASSA-PKCS1-v1_5 over SHA-1; only for old authenticators that register RS1.
    case rsaPKCS1SHA1
    /// RSASSA-PKCS1-v1_5 over SHA-256.
    case rsaPKCS1SHA256
    /// RSASSA-PKCS1-v1_5 over SHA-384.
    case rsaPKCS1SHA384
    /// RSASSA-PKCS1-v1_5 over SHA-512.
    case rsaPKCS1SHA512
    /// RSASSA-PSS over SHA-256, MGF1 with SHA-256, salt length equal to the digest length (32).
    case rsaPSSSHA256
    /// Pure Ed25519 (RFC 8032): the message is signed directly, without a prehash.
    case ed25519
    /// Pure ML-DSA-44 (FIPS 204 Algorithm 3) with an empty context string, as COSE uses it.
    case mlDSA44
    /// Pure ML-DSA-65 with an empty context string.
    case mlDSA65
    /// Pure ML-DSA-87 with an empty context string.
    case mlDSA87

    /// The ML-DSA parameter set of the scheme, nil for the others.
    public var mlDSAParameterSet: MLDSAParameterSet? {
        switch self {
        case .mlDSA44: .mlDSA44
        case .mlDSA65: .mlDSA65
        case .mlDSA87: .mlDSA87
        default: nil
        }
    }

    /// OpenSSL's digest name for the scheme, nil for Ed25519 and ML-DSA, which hash internally.
    var digestName: String? {
        switch self {
        case .ecdsaSHA256, .rsaPKCS1SHA256, .rsaPSSSHA256: "SHA256"
        case .ecdsaSHA384, .rsaPKCS1SHA384: "SHA384"
        case .ecdsaSHA512, .rsaPKCS1SHA512: "SHA512"
        case .rsaPKCS1SHA1: "SHA1"
        case .ed25519, .mlDSA44, .mlDSA65, .mlDSA87: nil
        }
    }

    /// The digest the scheme signs, nil for Ed25519 and ML-DSA, which hash internally.
    var digest: DigestAlgorithm? {
        switch self {
        case .ecdsaSHA256, .rsaPKCS1SHA256, .rsaPSSSHA256: .sha256
        case .ecdsaSHA384, .rsaPKCS1SHA384: .sha384
        case .ecdsaSHA512, .rsaPKCS1SHA512: .sha512
        case .rsaPKCS1SHA1: .sha1
        case .ed25519, .mlDSA44, .mlDSA65, .mlDSA87: nil
        }
    }

    /// True when a key of `type` can produce signatures under this scheme.
    public func accepts(_ type: PublicKeyType) -> Bool {
        // The curve is deliberately not tied to the hash here: COSE binds them, X.509 does not. An
        // ML-DSA parameter set is part of the algorithm, so it is tied.
        switch (self, type) {
        case (.ecdsaSHA256, .ec), (.ecdsaSHA384, .ec), (.ecdsaSHA512, .ec): true
        case (.rsaPKCS1SHA1, .rsa), (.rsaPKCS1SHA256, .rsa), (.rsaPKCS1SHA384, .rsa),
            (.rsaPKCS1SHA512, .rsa), (.rsaPSSSHA256, .rsa):
            true
        case (.ed25519, .ed25519): true
        case (.mlDSA44, .mlDSA(let set)), (.mlDSA65, .mlDSA(let set)), (.mlDSA87, .mlDSA(let set)):
            set == mlDSAParameterSet
        default: false
        }
    }
}
