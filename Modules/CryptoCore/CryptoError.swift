public import Kernel

/// An error from CryptoCore: a stable code, a message without secret material, and where it arose.
public struct CryptoError: CodedError {
    /// The stable codes CryptoCore reports.
    public enum Code: String, Sendable, CaseIterable {
        /// OpenSSL's random generator failed; nothing random may be used.
        case randomFailure = "crypto.random_failure"
        /// A signature is not in the encoding its algorithm requires (for example a raw ECDSA
        /// signature of the wrong length).
        case invalidSignatureEncoding = "crypto.invalid_signature_encoding"
        /// A digest or MAC computation failed inside OpenSSL.
        case digestFailure = "crypto.digest_failure"
        /// Input that should have been base64url or hex was not.
        case malformedEncoding = "crypto.malformed_encoding"
        /// Public key material was malformed: wrong lengths, bad DER, or an EC point off its curve.
        case invalidPublicKey = "crypto.invalid_public_key"
        /// The key is well formed but of an algorithm or curve Portvakt does not verify with.
        case unsupportedKeyType = "crypto.unsupported_key_type"
        /// The key is too small to be trusted (RSA under 2048 bits).
        case weakKey = "crypto.weak_key"
        /// An Ed25519 public key that is a point of small order (the identity, the point of order 2
        /// and the other six in the eight-torsion), in any encoding: signatures under it prove nothing.
        case smallOrderKey = "crypto.small_order_key"
        /// The key is larger than Portvakt will spend verification time on (RSA over 8192 bits).
        case unsupportedKeySize = "crypto.unsupported_key_size"
        /// OpenSSL could not allocate what building a key needs.
        case keyFailure = "crypto.key_failure"
        /// A sealed box (`SealedBox`) did not open: another key, other associated data, or bytes
        /// changed since sealing. Which of these is deliberately not told.
        case sealedBoxUnopenable = "crypto.sealed_box_unopenable"

        // DER (DERReader): each way an encoding can break has its own code, so tests and callers can
        // tell a truncated extension from a merely unexpected one.
        /// The encoding breaks a DER rule: indefinite or non-minimal length, bad tag form, bad content.
        case derMalformed = "crypto.der_malformed"
        /// A tag or length announces more bytes than the input holds.
        case derTruncated = "crypto.der_truncated"
        /// A well-formed element is not the type (tag) the structure requires at this point.
        case derUnexpectedTag = "crypto.der_unexpected_tag"
        /// Bytes remain after the element (or the last element of a constructed value) that should end it.
        case derTrailingData = "crypto.der_trailing_data"
        /// Constructed values nest deeper than the reader's limit.
        case derTooDeep = "crypto.der_too_deep"
        /// An INTEGER or ENUMERATED does not fit the Swift integer asked for.
        case derIntegerOverflow = "crypto.der_integer_overflow"

        // X.509 (Certificate, CertificateChainValidator).
        /// The bytes or PEM text are not exactly one well-formed X.509 certificate.
        case certificateMalformed = "crypto.certificate_malformed"
        /// No path from the leaf reaches a caller-given anchor (including self-signed roots that were
        /// only offered as intermediates).
        case chainUntrusted = "crypto.chain_untrusted"
        /// A certificate on the path had expired at the verification time.
        case certificateExpired = "crypto.certificate_expired"
        /// A certificate on the path was not yet valid at the verification time.
        case certificateNotYetValid = "crypto.certificate_not_yet_valid"
        /// A certificate's signature does not verify under its issuer's key.
        case chainInvalidSignature = "crypto.chain_invalid_signature"
        /// The path breaks another X.509 rule: an issuer that is not a CA, a path length exceeded, an
        /// unhandled critical extension, a chain longer than allowed.
        case chainInvalid = "crypto.chain_invalid"
        /// The leaf lacks the extended key usage the caller required.
        case chainPurposeMismatch = "crypto.chain_purpose_mismatch"
        /// OpenSSL could not build or encode a certificate or PKCS#12 bundle, or could not allocate.
        case x509Failure = "crypto.x509_failure"
    }

    /// What went wrong, as a stable code callers switch on.
    public let code: Code
    /// A readable explanation; never contains key material.
    public let message: String
    /// The source file that raised the error.
    public let file: String
    /// The source line that raised the error.
    public let line: Int

    /// Creates an error; the location defaults to the caller's.
    public init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
    }

}
