import COpenSSL
import CryptoCore
import PasskeyCore

/// A test-only private key over OpenSSL EVP: generates, signs, and exports the public half in the raw
/// forms a COSE_Key carries. It is the signing side the relying-party code is tested against, and
/// will move to TestSupport when the software authenticator joins it.
///
/// Traps on OpenSSL failures: in tests a failed key generation is a broken environment, not a case.
/// Safe to share across tasks for the same reason `PublicKey` is: signing only reads the EVP_PKEY.
final class SoftwareKey: @unchecked Sendable {
    /// Which key to generate.
    enum Kind: Sendable, Hashable {
        case ec(ECCurve)
        case ed25519
        case rsa(bits: Int)
    }

    /// The owned `EVP_PKEY *` holding the private key.
    private let pkey: OpaquePointer
    /// What was generated.
    let kind: Kind

    private init(pkey: OpaquePointer, kind: Kind) {
        self.pkey = pkey
        self.kind = kind
    }

    deinit { EVP_PKEY_free(pkey) }

    /// Generates a fresh key of `kind` with OpenSSL's CSPRNG.
    static func generate(_ kind: Kind) -> SoftwareKey {
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
    func sign(_ data: [UInt8], algorithm: SignatureAlgorithm) -> [UInt8] {
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

    /// The EC public point's affine coordinates, each padded to the curve's coordinate length.
    var ecCoordinates: (x: [UInt8], y: [UInt8]) {
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
    var ed25519PublicKey: [UInt8] {
        var raw = [UInt8](repeating: 0, count: 32)
        var length = 32
        guard EVP_PKEY_get_raw_public_key(pkey, &raw, &length) == 1, length == 32 else {
            fatalError("could not export the Ed25519 key")
        }
        return raw
    }

    /// The RSA modulus and public exponent, big-endian without leading zeros.
    var rsaComponents: (n: [UInt8], e: [UInt8]) {
        (bigNumber("n"), bigNumber("e"))
    }

    /// The public key as DER SubjectPublicKeyInfo.
    var subjectPublicKeyInfo: [UInt8] {
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_PUBKEY(pkey, &out)
        guard length > 0, let out else { fatalError("i2d_PUBKEY failed") }
        defer { copenssl_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// The COSE_Key parameters of the public half, for the curve or key type generated.
    var coseParameters: COSEKey.Parameters {
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
    func coseMap(algorithm: COSEAlgorithm) -> CBORMap {
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

/// Keys generated once per test process; RSA generation is slow enough to share.
enum TestKeys {
    static let p256 = SoftwareKey.generate(.ec(.p256))
    static let p384 = SoftwareKey.generate(.ec(.p384))
    static let p521 = SoftwareKey.generate(.ec(.p521))
    static let ed25519 = SoftwareKey.generate(.ed25519)
    static let rsa2048 = SoftwareKey.generate(.rsa(bits: 2048))
    /// A second P-256 key, for wrong-key checks.
    static let otherP256 = SoftwareKey.generate(.ec(.p256))
    /// A second RSA key, for wrong-key checks.
    static let otherRSA2048 = SoftwareKey.generate(.rsa(bits: 2048))
    /// A key too small to accept.
    static let rsa1024 = SoftwareKey.generate(.rsa(bits: 1024))

    /// The key that signs for each algorithm, with the algorithm.
    static let byAlgorithm: [(COSEAlgorithm, SoftwareKey)] = [
        (.es256, p256), (.es384, p384), (.es512, p521), (.edDSA, ed25519),
        (.rs256, rsa2048), (.rs384, rsa2048), (.rs512, rsa2048), (.ps256, rsa2048), (.rs1, rsa2048),
    ]
}
