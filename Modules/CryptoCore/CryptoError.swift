/// An error from CryptoCore: a stable code, a message without secret material, and where it arose.
public struct CryptoError: Error, Equatable, CustomStringConvertible {
    /// The stable codes CryptoCore reports.
    public enum Code: String, Sendable {
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
        /// The key is larger than Portvakt will spend verification time on (RSA over 8192 bits).
        case unsupportedKeySize = "crypto.unsupported_key_size"
        /// OpenSSL could not allocate what building a key needs.
        case keyFailure = "crypto.key_failure"
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

    public var description: String { "\(code.rawValue): \(message)" }

    /// Errors are equal when their codes are: messages and locations may change.
    public static func == (lhs: CryptoError, rhs: CryptoError) -> Bool { lhs.code == rhs.code }
}
