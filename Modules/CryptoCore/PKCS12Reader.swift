import COpenSSL

/// Reads PKCS#12 bundles (the form banks issue BankID RP certificates in), for what Portvakt needs
/// to know about its own certificate without handing it to TLS: the leaf and its validity.
public enum PKCS12Reader {
    /// The end-entity certificate in a PKCS#12 bundle.
    /// - Parameters:
    ///   - der: the bundle's bytes (a `.p12` / `.pfx` file).
    ///   - passphrase: the bundle's passphrase; used, never reported.
    /// - Returns: the certificate that belongs to the bundle's private key.
    /// - Throws: `CryptoError(.certificateMalformed)` when the bytes are not PKCS#12, the passphrase
    ///   is wrong (the MAC does not verify), or the bundle holds no certificate.
    public static func certificate(der: [UInt8], passphrase: String) throws(CryptoError) -> Certificate {
        let bundle = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var cursor = buffer.baseAddress
            return d2i_PKCS12(nil, &cursor, buffer.count)
        }
        guard let bundle else { throw CryptoError(.certificateMalformed, "not a PKCS#12 bundle") }
        defer { PKCS12_free(bundle) }
        var key: OpaquePointer?
        var leaf: OpaquePointer?
        var chain: OpaquePointer?
        // PKCS12_parse checks the MAC first, so a wrong passphrase fails here rather than yielding garbage.
        guard PKCS12_parse(bundle, passphrase, &key, &leaf, &chain) == 1 else {
            ERR_clear_error()
            throw CryptoError(
                .certificateMalformed, "the PKCS#12 bundle could not be opened (wrong passphrase?)")
        }
        // Only the certificate is wanted: the private key is freed at once.
        EVP_PKEY_free(key)
        if let chain { OPENSSL_sk_pop_free(chain, { X509_free(OpaquePointer($0)) }) }
        guard let leaf else {
            throw CryptoError(.certificateMalformed, "the PKCS#12 bundle holds no certificate")
        }
        defer { X509_free(leaf) }
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_X509(leaf, &out)
        guard length > 0, let out else { throw CryptoError(.x509Failure, "i2d_X509 failed") }
        defer { copenssl_free(out) }
        return try Certificate(der: Array(UnsafeBufferPointer(start: out, count: Int(length))))
    }
}
