/// The one error PasskeyCore throws: a stable code callers switch on, a message, an optional cause and
/// the source location.
///
/// Messages never carry key material, credential IDs or user data; they say what rule was broken.
/// Two errors are equal when their codes are, so tests and callers compare codes, never messages.
public struct PasskeyError: Error, Equatable, CustomStringConvertible {
    /// A stable, dotted error code. New ceremony steps add cases; raw values never change once shipped.
    ///
    /// Codes are grouped by the first component (`cbor.`, `cose.`, `authdata.`, later `registration.`,
    /// `authentication.`, `attestation.`), so HTTP mapping and metrics can work per group.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        // MARK: CBOR (RFC 8949, CTAP2 canonical subset)

        /// The input ended inside an item, or declares more bytes or items than it holds.
        case cborTruncated = "cbor.truncated"
        /// The bytes are not well-formed CBOR (reserved additional information 28–30, or 31 on an integer).
        case cborMalformed = "cbor.malformed"
        /// An indefinite-length string, array or map, or a stray "break" byte.
        case cborIndefiniteLength = "cbor.indefinite_length"
        /// An integer, length or count not encoded in its shortest form.
        case cborNonMinimal = "cbor.non_minimal"
        /// A map holds the same key twice.
        case cborDuplicateKey = "cbor.duplicate_key"
        /// Map keys are not in CTAP2 canonical order (only when the decoder is told to require it).
        case cborUnsortedKeys = "cbor.unsorted_keys"
        /// Arrays and maps are nested deeper than the decoder's limit.
        case cborDepth = "cbor.depth"
        /// A text string is not valid UTF-8.
        case cborInvalidUTF8 = "cbor.invalid_utf8"
        /// Bytes remain after the single item the input should hold.
        case cborTrailingBytes = "cbor.trailing_bytes"
        /// A tag, float, undefined, reserved additional information, or an unassigned simple value.
        case cborUnsupportedType = "cbor.unsupported_type"
        /// An integer outside the Int64 range.
        case cborIntegerOverflow = "cbor.integer_overflow"
        /// The input is longer than the decoder's limit.
        case cborTooLarge = "cbor.too_large"

        // MARK: COSE keys (RFC 9052 / 9053, RFC 8230)

        /// The COSE_Key is not a CBOR map, or has a label that is neither an integer nor text.
        case coseMalformed = "cose.malformed"
        /// A parameter the key type requires (kty, alg, crv, x, y, n, e) is absent.
        case coseMissingParameter = "cose.missing_parameter"
        /// A parameter has the wrong CBOR type (for example a text crv).
        case coseWrongType = "cose.wrong_type"
        /// The kty is not EC2, OKP or RSA.
        case coseUnsupportedKeyType = "cose.unsupported_key_type"
        /// The alg is not one of the registered algorithms Portvakt verifies.
        case coseUnsupportedAlgorithm = "cose.unsupported_algorithm"
        /// The crv is not P-256, P-384, P-521 or Ed25519.
        case coseUnsupportedCurve = "cose.unsupported_curve"
        /// The alg does not belong to the kty (for example EdDSA with an EC2 key).
        case coseAlgorithmMismatch = "cose.algorithm_mismatch"
        /// The crv does not belong to the alg or kty (for example ES256 on P-384).
        case coseCurveMismatch = "cose.curve_mismatch"
        /// A coordinate or key is not exactly the length its curve requires.
        case coseInvalidLength = "cose.invalid_length"
        /// An EC2 key gives y as a sign bit (point compression), which WebAuthn does not allow.
        case coseCompressedPoint = "cose.compressed_point"
        /// The key holds private parameters; a credential public key must never carry them.
        case cosePrivateKey = "cose.private_key"
        /// The parameters are well formed but do not make a valid key (point off the curve, even modulus).
        case coseInvalidKey = "cose.invalid_key"
        /// An RSA key under 2048 bits, or one too large to accept.
        case coseWeakKey = "cose.weak_key"

        // MARK: Metadata

        /// A provider-name file is not a JSON object of lowercase AAGUIDs to short names.
        case metadataInvalidProviderNames = "metadata.invalid_provider_names"
        /// A FIDO metadata BLOB is not a compact JWS with a metadata payload.
        case metadataMalformed = "metadata.malformed"
        /// The BLOB is signed with an algorithm Portvakt does not accept, or one its key cannot make.
        case metadataUnsupportedAlgorithm = "metadata.unsupported_algorithm"
        /// The BLOB's signing certificate does not chain to the configured FIDO root.
        case metadataUntrustedChain = "metadata.untrusted_chain"
        /// The BLOB's signature does not verify.
        case metadataSignatureInvalid = "metadata.signature_invalid"

        // MARK: Authenticator data (WebAuthn L3 §6.1)

        /// Authenticator data is shorter than its fixed 37 bytes or than a length it declares.
        case authDataTruncated = "authdata.truncated"
        /// BS (backup state) is set while BE (backup eligible) is not (§6.1.3).
        case authDataBackupStateWithoutEligibility = "authdata.backup_state_without_eligibility"
        /// AT is set but no attested credential data follows.
        case authDataMissingAttestedCredentialData = "authdata.missing_attested_credential_data"
        /// The credential ID is longer than 1023 bytes (§7.1 step "credentialId ≤ 1023").
        case authDataCredentialIDTooLong = "authdata.credential_id_too_long"
        /// ED is set but no extensions map follows.
        case authDataMissingExtensions = "authdata.missing_extensions"
        /// The extensions are not a CBOR map with text keys.
        case authDataInvalidExtensions = "authdata.invalid_extensions"
        /// Bytes follow everything the flags announce (including data present without AT or ED).
        case authDataTrailingBytes = "authdata.trailing_bytes"
    }

    /// What went wrong, as a stable code.
    public let code: Code
    /// A readable explanation without secrets or personal data.
    public let message: String
    /// The lower-level error that caused this one, when there is one (a `CryptoError`, a nested CBOR error).
    public let underlying: (any Error)?
    /// The source file that raised the error.
    public let file: String
    /// The source line that raised the error.
    public let line: Int

    /// Creates an error; the location defaults to the caller's.
    ///
    /// - Parameters:
    ///   - code: The stable code.
    ///   - message: What rule was broken, without secrets.
    ///   - underlying: The error that caused this one, if any.
    public init(
        _ code: Code, _ message: String, underlying: (any Error)? = nil, file: String = #fileID,
        line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.file = file
        self.line = line
    }

    /// The code and the message, plus the cause when there is one.
    public var description: String {
        if let underlying {
            "\(code.rawValue): \(message) (caused by \(underlying))"
        } else {
            "\(code.rawValue): \(message)"
        }
    }

    /// Errors are equal when their codes are: messages, causes and locations may change.
    public static func == (lhs: PasskeyError, rhs: PasskeyError) -> Bool { lhs.code == rhs.code }

    /// A copy whose message says where the error arose, keeping the code, cause and original location.
    func context(_ prefix: String) -> PasskeyError {
        PasskeyError(code, "\(prefix): \(message)", underlying: underlying, file: file, line: line)
    }
}
