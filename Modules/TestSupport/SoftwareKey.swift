import COpenSSL
public import CryptoCore
public import PasskeyCore

/// A test-only private key over OpenSSL EVP: generates, signs, and exports the public half in the raw
/// forms a COSE_Key carries and as SubjectPublicKeyInfo. It is the signing side the relying-party
/// code is tested against, and the issuer key of `TestCertificateAuthority`.
///
/// Traps on OpenSSL failures: in tests a failed key generation is a broken environment, not a case.
/// Safe to share across tasks for the same reason `PublicKey` is: signing only reads the EVP_PKEY.
public final class SoftwareKey: @unchecked Sendable {
    /// Which key to generate.
    public enum Kind: Sendable, Hashable {
        /// ECDSA on a NIST curve.
        case ec(ECCurve)
        /// Ed25519.
        case ed25519
        /// RSA with a modulus of `bits` bits (public exponent 65537).
        case rsa(bits: Int)
    }

    /// The owned `EVP_PKEY *` holding the private key; the certificate authority signs with it.
    let pkey: OpaquePointer
    /// What was generated.
    public let kind: Kind

    private init(pkey: OpaquePointer, kind: Kind) {
        self.pkey = pkey
        self.kind = kind
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Generates a fresh key of `kind` with OpenSSL's CSPRNG.
    public static func generate(_ kind: Kind) -> SoftwareKey {
        let typeName =
            switch kind {
            case .ec: "EC"
            case .ed25519: "ED25519"
            case .rsa: "RSA"
            }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, typeName, nil) else {
            fatalError("no \(typeName) keygen")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1 else { fatalError("keygen init failed") }
        switch kind {
        case .ec(let curve):
            let name =
                switch curve {
                case .p256: "prime256v1"
                case .p384: "secp384r1"
                case .p521: "secp521r1"
                }
            guard EVP_PKEY_CTX_set_group_name(context, name) == 1 else { fatalError("set group failed") }
        case .rsa(let bits):
            guard EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(bits)) == 1 else {
                fatalError("set bits failed")
            }
        case .ed25519:
            break
        }
        var pkey: OpaquePointer? = nil
        guard EVP_PKEY_generate(context, &pkey) == 1, let pkey else { fatalError("key generation failed") }
        return SoftwareKey(pkey: pkey, kind: kind)
    }

    /// Signs `data` under `algorithm`, as an authenticator would (DER for ECDSA).
    public func sign(_ data: [UInt8], algorithm: SignatureAlgorithm) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { fatalError("no MD context") }
        defer { EVP_MD_CTX_free(context) }
        var keyContext: OpaquePointer? = nil
        let digest: String? =
            switch algorithm {
            case .ecdsaSHA256, .rsaPKCS1SHA256, .rsaPSSSHA256: "SHA256"
            case .ecdsaSHA384, .rsaPKCS1SHA384: "SHA384"
            case .ecdsaSHA512, .rsaPKCS1SHA512: "SHA512"
            case .rsaPKCS1SHA1: "SHA1"
            case .ed25519: nil
            // No software key is an ML-DSA key (see SoftwareAuthenticator.keyKind).
            case .mlDSA44, .mlDSA65, .mlDSA87: fatalError("a software key cannot sign \(algorithm)")
            }
        let initialised =
            if let digest {
                EVP_DigestSignInit_ex(context, &keyContext, digest, nil, nil, pkey, nil)
            } else {
                EVP_DigestSignInit_ex(context, &keyContext, nil, nil, nil, pkey, nil)
            }
        guard initialised == 1 else { fatalError("sign init failed for \(algorithm) on \(kind)") }
        if algorithm == .rsaPSSSHA256 {
            guard EVP_PKEY_CTX_set_rsa_padding(keyContext, RSA_PKCS1_PSS_PADDING) == 1,
                EVP_PKEY_CTX_set_rsa_pss_saltlen(keyContext, RSA_PSS_SALTLEN_DIGEST) == 1
            else { fatalError("PSS setup failed") }
        }
        // One-shot signing: ask for the maximum length first, then sign and trim to the actual length.
        var length = 0
        let message = data.isEmpty ? [0] : data
        guard EVP_DigestSign(context, nil, &length, message, data.count) == 1 else {
            fatalError("sign sizing failed")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, data.count) == 1 else {
            fatalError("sign failed")
        }
        return Array(signature.prefix(length))
    }

    /// The signature scheme a certificate or attestation made with this key uses by default: ECDSA with
    /// the curve's own hash, RSA PKCS#1 v1.5 with SHA-256, or Ed25519.
    public var defaultSignatureAlgorithm: SignatureAlgorithm {
        switch kind {
        case .ec(.p256): .ecdsaSHA256
        case .ec(.p384): .ecdsaSHA384
        case .ec(.p521): .ecdsaSHA512
        case .rsa: .rsaPKCS1SHA256
        case .ed25519: .ed25519
        }
    }

    /// The public half as a CryptoCore `PublicKey`, for verifying what this key signed.
    public var publicKey: PublicKey {
        // The SPKI comes from OpenSSL itself, so failing to read it back is a broken environment.
        guard let key = try? PublicKey(derSubjectPublicKeyInfo: subjectPublicKeyInfo) else {
            fatalError("CryptoCore refused a generated \(kind) key")
        }
        return key
    }

    /// The EC public point's affine coordinates, each padded to the curve's coordinate length.
    public var ecCoordinates: (x: [UInt8], y: [UInt8]) {
        guard case .ec(let curve) = kind else { fatalError("not an EC key") }
        let size = curve.coordinateByteCount
        var point = [UInt8](repeating: 0, count: 1 + 2 * size)
        var length = 0
        // "encoded-pub-key" is the SEC 1 point, uncompressed unless asked otherwise.
        guard EVP_PKEY_get_octet_string_param(pkey, "encoded-pub-key", &point, point.count, &length) == 1,
            length == point.count, point[0] == 0x04
        else { fatalError("could not export the EC point") }
        return (Array(point[1...size]), Array(point[(1 + size)...]))
    }

    /// The 32-byte Ed25519 public key.
    public var ed25519PublicKey: [UInt8] {
        var raw = [UInt8](repeating: 0, count: 32)
        var length = 32
        guard EVP_PKEY_get_raw_public_key(pkey, &raw, &length) == 1, length == 32 else {
            fatalError("could not export the Ed25519 key")
        }
        return raw
    }

    /// The RSA modulus and public exponent, big-endian without leading zeros.
    public var rsaComponents: (n: [UInt8], e: [UInt8]) {
        (bigNumber("n"), bigNumber("e"))
    }

    /// The same private key as CryptoCore's `SigningKey`, which `CertificateIssuer` signs with.
    public var signingKey: SigningKey {
        guard let info = EVP_PKEY2PKCS8(pkey) else { fatalError("EVP_PKEY2PKCS8 failed") }
        defer { PKCS8_PRIV_KEY_INFO_free(info) }
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_PKCS8_PRIV_KEY_INFO(info, &out)
        guard length > 0, let out else { fatalError("i2d_PKCS8_PRIV_KEY_INFO failed") }
        defer { copenssl_free(out) }
        do {
            return try SigningKey(pkcs8DER: Array(UnsafeBufferPointer(start: out, count: Int(length))))
        } catch {
            fatalError("CryptoCore refused a generated \(kind) key")
        }
    }

    /// The public key as DER SubjectPublicKeyInfo.
    public var subjectPublicKeyInfo: [UInt8] {
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_PUBKEY(pkey, &out)
        guard length > 0, let out else { fatalError("i2d_PUBKEY failed") }
        defer { copenssl_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// The COSE_Key parameters of the public half, for the curve or key type generated.
    public var coseParameters: COSEKey.Parameters {
        switch kind {
        case .ec(let curve):
            let (x, y) = ecCoordinates
            let coseCurve: COSECurve =
                switch curve {
                case .p256: .p256
                case .p384: .p384
                case .p521: .p521
                }
            return .ec2(curve: coseCurve, x: x, y: y)
        case .ed25519:
            return .okp(curve: .ed25519, x: ed25519PublicKey)
        case .rsa:
            let (n, e) = rsaComponents
            return .rsa(n: n, e: e)
        }
    }

    /// The public half as a COSE_Key map, for tests that then damage it.
    public func coseMap(algorithm: COSEAlgorithm) -> CBORMap {
        var map: CBORMap = [1: .integer(algorithm.keyType.rawValue), 3: .integer(algorithm.rawValue)]
        switch coseParameters {
        case .ec2(let curve, let x, let y):
            map[-1] = .integer(curve.rawValue)
            map[-2] = .bytes(x)
            map[-3] = .bytes(y)
        case .okp(let curve, let x):
            map[-1] = .integer(curve.rawValue)
            map[-2] = .bytes(x)
        case .rsa(let n, let e):
            map[-1] = .bytes(n)
            map[-2] = .bytes(e)
        case .akp(let publicKey):
            map[-1] = .bytes(publicKey)
        }
        return map
    }

    /// Reads a big-number key parameter as big-endian bytes.
    private func bigNumber(_ name: String) -> [UInt8] {
        var number: OpaquePointer? = nil
        guard EVP_PKEY_get_bn_param(pkey, name, &number) == 1, let number else { fatalError("no \(name)") }
        defer { BN_free(number) }
        // BN_num_bytes is a macro; the bit count rounded up is the same thing.
        var out = [UInt8](repeating: 0, count: (Int(BN_num_bits(number)) + 7) / 8)
        _ = BN_bn2bin(number, &out)
        return out
    }
}
