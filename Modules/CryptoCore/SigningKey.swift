import COpenSSL
import FoundationEssentials

/// A private key that signs: certificates (`CertificateIssuer`), PKCS#12 bundles and the
/// simulator's XML signatures. One owned `EVP_PKEY`, freed in `deinit`.
///
/// Safe to share across threads: OpenSSL signing only reads the key.
public final class SigningKey: @unchecked Sendable {
    /// Which key to generate.
    public enum Kind: Sendable, Hashable {
        /// ECDSA on P-256 (prime256v1), what the development PKI uses: small and fast to make.
        case p256
        /// RSA with a modulus of `bits` bits and exponent 65537.
        case rsa(bits: Int)
    }

    /// The owned `EVP_PKEY *`.
    let pkey: OpaquePointer

    private init(pkey: OpaquePointer) { self.pkey = pkey }

    deinit { EVP_PKEY_free(pkey) }

    /// Generates a fresh key with OpenSSL's CSPRNG.
    /// - Throws: `CryptoError.keyFailure` when OpenSSL cannot generate one.
    public static func generate(_ kind: Kind) throws(CryptoError) -> SigningKey {
        let typeName =
            switch kind {
            case .p256: "EC"
            case .rsa: "RSA"
            }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, typeName, nil) else {
            throw CryptoError(.keyFailure, "no \(typeName) key generator")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1 else { throw CryptoError(.keyFailure, "keygen init failed") }
        switch kind {
        case .p256:
            guard EVP_PKEY_CTX_set_group_name(context, "prime256v1") == 1 else {
                throw CryptoError(.keyFailure, "could not select P-256")
            }
        case .rsa(let bits):
            guard EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(bits)) == 1 else {
                throw CryptoError(.keyFailure, "could not set the RSA size")
            }
        }
        var pkey: OpaquePointer? = nil
        guard EVP_PKEY_generate(context, &pkey) == 1, let pkey else {
            throw CryptoError(.keyFailure, "key generation failed")
        }
        return SigningKey(pkey: pkey)
    }

    /// Reads an unencrypted PKCS#8 PrivateKeyInfo (DER), any algorithm OpenSSL knows.
    /// - Throws: `CryptoError.keyFailure` when the bytes are not one.
    public init(pkcs8DER der: [UInt8]) throws(CryptoError) {
        let info = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_PKCS8_PRIV_KEY_INFO(nil, &cursor, buffer.count)
        }
        guard let info else { throw CryptoError(.keyFailure, "not a PKCS#8 private key") }
        defer { PKCS8_PRIV_KEY_INFO_free(info) }
        guard let decoded = EVP_PKCS82PKEY(info) else {
            throw CryptoError(.keyFailure, "unusable PKCS#8 private key")
        }
        pkey = decoded
    }

    /// Reads a PEM "PRIVATE KEY" (unencrypted PKCS#8), as `pkcs8PEM` writes it.
    /// - Throws: `CryptoError.keyFailure` when the text holds no such block.
    public convenience init(pkcs8PEM pem: String) throws(CryptoError) {
        guard let der = PEM.decode(pem, label: "PRIVATE KEY") else {
            throw CryptoError(.keyFailure, "no PRIVATE KEY block")
        }
        try self.init(pkcs8DER: der)
    }

    /// The private key as unencrypted PKCS#8 DER. Secret: callers write it only to 0600 files.
    public var pkcs8DER: [UInt8] {
        guard let info = EVP_PKEY2PKCS8(pkey) else { fatalError("EVP_PKEY2PKCS8 failed") }
        defer { PKCS8_PRIV_KEY_INFO_free(info) }
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_PKCS8_PRIV_KEY_INFO(info, &out)
        guard length > 0, let out else { fatalError("i2d_PKCS8_PRIV_KEY_INFO failed") }
        defer { copenssl_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// The private key as a PEM "PRIVATE KEY" block (what GnuTLS and OpenSSL both read).
    public var pkcs8PEM: String { PEM.encode(pkcs8DER, label: "PRIVATE KEY") }

    /// The public half as DER SubjectPublicKeyInfo.
    public var subjectPublicKeyInfo: [UInt8] {
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_PUBKEY(pkey, &out)
        guard length > 0, let out else { fatalError("i2d_PUBKEY failed") }
        defer { copenssl_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// The digest certificates signed by this key use: the EC curve's own hash, SHA-256 for RSA,
    /// none for Ed25519 (which hashes internally).
    var certificateDigest: OpaquePointer? {
        if EVP_PKEY_is_a(pkey, "ED25519") == 1 { return nil }
        if EVP_PKEY_is_a(pkey, "EC") == 1 {
            switch EVP_PKEY_get_bits(pkey) {
            case 384: return EVP_sha384()
            case 521: return EVP_sha512()
            default: return EVP_sha256()
            }
        }
        return EVP_sha256()
    }

    /// Signs `data` with SHA-256 (ECDSA signatures in DER, RSA with PKCS#1 v1.5).
    /// - Throws: `CryptoError.keyFailure` when OpenSSL refuses.
    public func signSHA256(_ data: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError(.keyFailure, "no MD context") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit_ex(context, nil, "SHA256", nil, nil, pkey, nil) == 1 else {
            throw CryptoError(.keyFailure, "sign init failed")
        }
        var length = 0
        // EVP_DigestSign wants a non-null pointer even for empty input.
        let message = data.isEmpty ? [0] : data
        guard EVP_DigestSign(context, nil, &length, message, data.count) == 1 else {
            throw CryptoError(.keyFailure, "sign sizing failed")
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, data.count) == 1 else {
            throw CryptoError(.keyFailure, "sign failed")
        }
        return Array(signature.prefix(length))
    }
}

/// PEM armour (RFC 7468): base64 in 64-character lines between BEGIN and END lines.
public enum PEM {
    /// Wraps DER bytes in a PEM block with `label` (e.g. "CERTIFICATE").
    public static func encode(_ der: [UInt8], label: String) -> String {
        let base64 = Base64.encode(der)
        var lines = ["-----BEGIN \(label)-----"]
        var index = base64.startIndex
        while index < base64.endIndex {
            let end = base64.index(index, offsetBy: 64, limitedBy: base64.endIndex) ?? base64.endIndex
            lines.append(String(base64[index..<end]))
            index = end
        }
        lines.append("-----END \(label)-----")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The first block labelled `label` in `text`, decoded; nil when absent or not base64.
    public static func decode(_ text: String, label: String) -> [UInt8]? {
        let begin = "-----BEGIN \(label)-----"
        let end = "-----END \(label)-----"
        guard let start = text.firstRange(of: begin),
            let stop = text[start.upperBound...].firstRange(of: end)
        else { return nil }
        let body = text[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
        return Base64.decode(String(body))
    }
}

/// Standard base64 (RFC 4648 §4, with padding), the alphabet BankID and PEM use.
public enum Base64 {
    /// Encodes with padding.
    public static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
    }

    /// Decodes strictly: padding required, no whitespace, nothing outside the alphabet.
    public static func decode(_ text: String) -> [UInt8]? {
        let allowed = text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"),
                UInt8(ascii: "="):
                true
            default: false
            }
        }
        guard allowed, text.utf8.count % 4 == 0 else { return nil }
        return Data(base64Encoded: text).map { [UInt8]($0) }
    }
}
