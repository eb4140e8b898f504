import COpenSSL

/// Authenticated encryption with AES-256-GCM (NIST SP 800-38D): what keeps a secret at rest
/// under a key the database never holds (the access-token signing keys under
/// `PORTVAKT_ACCESS_TOKEN_KEY`).
///
/// A box is `nonce (12) ‖ ciphertext ‖ tag (16)`. The associated data is authenticated, not
/// stored: a box opens only with the same key *and* the same associated data, so a sealed value
/// moved to another row (another key id as the data) does not open there.
public enum SealedBox {
    /// The key size: AES-256.
    public static let keyByteCount = 32
    /// GCM's recommended nonce size.
    public static let nonceByteCount = 12
    /// The full 128-bit tag.
    public static let tagByteCount = 16

    /// Seals `plaintext` under `key`, authenticating `associatedData` too.
    /// - Parameter nonce: 12 bytes never used before with this key (random: `RandomSource.bytes`).
    /// - Throws: `CryptoError(.keyFailure)` for a key or nonce of the wrong size, or when OpenSSL
    ///   refuses.
    public static func seal(
        _ plaintext: [UInt8], key: [UInt8], nonce: [UInt8], associatedData: [UInt8]
    ) throws(CryptoError) -> [UInt8] {
        guard key.count == keyByteCount, nonce.count == nonceByteCount else {
            throw CryptoError(.keyFailure, "AES-256-GCM needs a 32-byte key and a 12-byte nonce")
        }
        guard let context = EVP_CIPHER_CTX_new() else { throw CryptoError(.keyFailure, "no cipher context") }
        defer { EVP_CIPHER_CTX_free(context) }
        guard EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce) == 1 else {
            throw CryptoError(.keyFailure, "AES-GCM init failed")
        }
        var length: Int32 = 0
        if !associatedData.isEmpty {
            guard EVP_EncryptUpdate(context, nil, &length, associatedData, Int32(associatedData.count)) == 1
            else { throw CryptoError(.keyFailure, "AES-GCM associated data failed") }
        }
        // GCM is a stream mode: the ciphertext is as long as the plaintext (one spare block for
        // OpenSSL's bookkeeping).
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
        var written: Int32 = 0
        if !plaintext.isEmpty {
            guard EVP_EncryptUpdate(context, &ciphertext, &written, plaintext, Int32(plaintext.count)) == 1
            else { throw CryptoError(.keyFailure, "AES-GCM encryption failed") }
        }
        var final: Int32 = 0
        let finished = ciphertext.withUnsafeMutableBufferPointer { buffer in
            EVP_EncryptFinal_ex(context, buffer.baseAddress! + Int(written), &final)
        }
        guard finished == 1 else { throw CryptoError(.keyFailure, "AES-GCM final failed") }
        var tag = [UInt8](repeating: 0, count: tagByteCount)
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, Int32(tagByteCount), &tag) == 1 else {
            throw CryptoError(.keyFailure, "AES-GCM tag failed")
        }
        return nonce + ciphertext.prefix(Int(written + final)) + tag
    }

    /// Opens a box `seal` made with the same key and associated data.
    /// - Throws: `CryptoError(.sealedBoxUnopenable)` for a wrong key, other associated data, a
    ///   changed or truncated box; `.keyFailure` for a key of the wrong size.
    public static func open(_ box: [UInt8], key: [UInt8], associatedData: [UInt8]) throws(CryptoError)
        -> [UInt8]
    {
        guard key.count == keyByteCount else {
            throw CryptoError(.keyFailure, "AES-256-GCM needs a 32-byte key")
        }
        guard box.count >= nonceByteCount + tagByteCount else {
            throw CryptoError(.sealedBoxUnopenable, "the sealed box is too short")
        }
        let nonce = Array(box[..<nonceByteCount])
        let ciphertext = Array(box[nonceByteCount..<(box.count - tagByteCount)])
        var tag = Array(box[(box.count - tagByteCount)...])
        guard let context = EVP_CIPHER_CTX_new() else { throw CryptoError(.keyFailure, "no cipher context") }
        defer { EVP_CIPHER_CTX_free(context) }
        guard EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce) == 1 else {
            throw CryptoError(.keyFailure, "AES-GCM init failed")
        }
        var length: Int32 = 0
        if !associatedData.isEmpty {
            guard EVP_DecryptUpdate(context, nil, &length, associatedData, Int32(associatedData.count)) == 1
            else { throw CryptoError(.sealedBoxUnopenable, "the sealed box does not open") }
        }
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count + 16)
        var written: Int32 = 0
        if !ciphertext.isEmpty {
            guard EVP_DecryptUpdate(context, &plaintext, &written, ciphertext, Int32(ciphertext.count)) == 1
            else { throw CryptoError(.sealedBoxUnopenable, "the sealed box does not open") }
        }
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(tagByteCount), &tag) == 1 else {
            throw CryptoError(.keyFailure, "AES-GCM tag failed")
        }
        var final: Int32 = 0
        // The tag is checked here; a mismatch gives nothing of the plaintext back.
        let verified = plaintext.withUnsafeMutableBufferPointer { buffer in
            EVP_DecryptFinal_ex(context, buffer.baseAddress! + Int(written), &final)
        }
        guard verified == 1 else {
            ERR_clear_error()
            throw CryptoError(.sealedBoxUnopenable, "the sealed box does not open")
        }
        return Array(plaintext.prefix(Int(written + final)))
    }
}
