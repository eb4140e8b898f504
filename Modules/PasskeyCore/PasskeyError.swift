import CryptoCore
public import Kernel

/// The one error PasskeyCore throws: a stable code callers switch on, a message, an optional cause and
/// the source location.
///
/// Messages never carry key material, credential IDs or user data; they say what rule was broken.
/// Two errors are equal when their codes are, so tests and callers compare codes, never messages.
public struct PasskeyError: CodedError {
    /// A stable, dotted error code. New ceremony steps add cases; raw values never change once shipped.
    ///
    /// Codes are grouped by the first component (`cbor.`, `cose.`, `authdata.`, `response.`,
    /// `clientdata.`, `options.`, `config.`, `ceremony.`, `attestation.`), so HTTP mapping and metrics
    /// can work per group.
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
        /// An Ed25519 key that is one of the eight points of small order, in any encoding (the
        /// identity, the all-zero key, the point of order 2, …): signatures under it prove nothing.
        case coseSmallOrderKey = "cose.small_order_key"

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

        // MARK: Response JSON (WebAuthn L3 §5.1, RegistrationResponseJSON and AuthenticationResponseJSON)

        /// The response is not strict JSON (syntax, invalid UTF-8, a duplicate member, nesting too deep).
        case responseMalformedJSON = "response.malformed_json"
        /// The response is larger than any genuine response can be.
        case responseTooLarge = "response.too_large"
        /// A member the JSON form requires is absent.
        case responseMissingField = "response.missing_field"
        /// A member has the wrong JSON type (for example a number where a string belongs).
        case responseWrongType = "response.wrong_type"
        /// A binary member is not unpadded, canonical base64url.
        case responseInvalidBase64URL = "response.invalid_base64url"
        /// `id` is not the base64url encoding of `rawId`.
        case responseIDMismatch = "response.id_mismatch"
        /// `type` is not "public-key".
        case responseUnsupportedType = "response.unsupported_type"
        /// A convenience member (authenticatorData, publicKey, publicKeyAlgorithm) contradicts the
        /// attestation object it is derived from.
        case responseInconsistent = "response.inconsistent"

        // MARK: Collected client data (WebAuthn L3 §5.8.1)

        /// clientDataJSON is not a strict JSON object in UTF-8.
        case clientDataMalformed = "clientdata.malformed"
        /// clientDataJSON lacks type, challenge or origin.
        case clientDataMissingField = "clientdata.missing_field"
        /// A clientDataJSON member has the wrong JSON type.
        case clientDataWrongType = "clientdata.wrong_type"

        // MARK: Options and configuration

        /// Options were asked for with values WebAuthn does not allow (an empty user handle, no algorithms).
        case optionsInvalid = "options.invalid"
        /// The injected random source failed, so no challenge or user handle could be made.
        case optionsRandomFailure = "options.random_failure"
        /// The relying party configuration is unusable (an origin that can never match, an empty RP ID).
        case configInvalid = "config.invalid"

        // MARK: Ceremonies (WebAuthn L3 §7.1 registration, §7.2 authentication)

        /// C.type is not "webauthn.create" (registration) or "webauthn.get" (authentication).
        case ceremonyTypeMismatch = "ceremony.type_mismatch"
        /// C.challenge is not the challenge this relying party issued.
        case ceremonyChallengeMismatch = "ceremony.challenge_mismatch"
        /// C.origin is not one of the configured origins.
        case ceremonyOriginNotAllowed = "ceremony.origin_not_allowed"
        /// C.crossOrigin is true and no top origins are configured.
        case ceremonyCrossOriginNotAllowed = "ceremony.cross_origin_not_allowed"
        /// C.topOrigin is present and not one of the configured top origins.
        case ceremonyTopOriginNotAllowed = "ceremony.top_origin_not_allowed"
        /// The rpIdHash in authenticator data is not SHA-256 of the configured RP ID.
        case ceremonyRPIDHashMismatch = "ceremony.rp_id_hash_mismatch"
        /// UP is not set.
        case ceremonyUserNotPresent = "ceremony.user_not_present"
        /// UV is not set while the policy (or the caller) requires user verification.
        case ceremonyUserNotVerified = "ceremony.user_not_verified"
        /// The new credential's algorithm is not one the relying party allows.
        case ceremonyAlgorithmNotAllowed = "ceremony.algorithm_not_allowed"
        /// The credential ID is longer than 1023 bytes.
        case ceremonyCredentialIDTooLong = "ceremony.credential_id_too_long"
        /// rawId is not the attested credential ID (registration) or the stored credential's (authentication).
        case ceremonyCredentialIDMismatch = "ceremony.credential_id_mismatch"
        /// Registration authenticator data carries no attested credential data.
        case ceremonyMissingAttestedCredential = "ceremony.missing_attested_credential"
        /// Assertion authenticator data carries attested credential data, which §6.1 reserves for creation.
        case ceremonyUnexpectedAttestedCredential = "ceremony.unexpected_attested_credential"
        /// The assertion signature does not verify under the stored public key.
        case ceremonySignatureInvalid = "ceremony.signature_invalid"
        /// The signature counter did not increase from a non-zero value and the policy rejects that.
        case ceremonyCounterRegression = "ceremony.counter_regression"
        /// A discoverable login returned no user handle, so the account cannot be identified.
        case ceremonyUserHandleMissing = "ceremony.user_handle_missing"
        /// The user handle is not the credential owner's, or the owner is not the user who asked to log in.
        case ceremonyUserHandleMismatch = "ceremony.user_handle_mismatch"
        /// The credential is not in the allowCredentials list the options named.
        case ceremonyCredentialNotAllowed = "ceremony.credential_not_allowed"

        // MARK: Attestation (WebAuthn L3 §8)

        /// The attestation object is not a CBOR map of exactly fmt (text), attStmt (map) and authData (bytes).
        case attestationMalformed = "attestation.malformed"
        /// The fmt is not registered with this relying party (closed by default).
        case attestationUnsupportedFormat = "attestation.unsupported_format"
        /// The attestation statement does not verify under its format's rules.
        case attestationInvalidStatement = "attestation.invalid_statement"
        /// The attestation did not chain to a trust anchor and the policy requires one.
        case attestationUntrusted = "attestation.untrusted"
        /// Metadata reports the authenticator model as revoked or compromised and the policy is strict.
        case attestationAuthenticatorCompromised = "attestation.authenticator_compromised"
        /// x5c is not an array of 1 to 8 DER certificates that CryptoCore accepts.
        case attestationCertificateInvalid = "attestation.certificate_invalid"
        /// The x5c chain reaches a trust anchor but does not validate (expired, bad signature, not a CA).
        case attestationChainInvalid = "attestation.chain_invalid"
        /// The attestation certificate lacks what its format requires (packed's subject, OU and cA false;
        /// fido-u2f's P-256 key; apple's nonce extension).
        case attestationCertificateRequirements = "attestation.certificate_requirements"
        /// The certificate's id-fido-gen-ce-aaguid extension is not the AAGUID in authenticator data.
        case attestationAAGUIDMismatch = "attestation.aaguid_mismatch"
        /// The attestation signature does not verify.
        case attestationSignatureInvalid = "attestation.signature_invalid"
        /// The statement's alg does not fit the key that must have made the signature.
        case attestationAlgorithmMismatch = "attestation.algorithm_mismatch"
        /// The statement's alg is not one Portvakt verifies, or it asks for ECDAA (removed from WebAuthn).
        case attestationUnsupportedAlgorithm = "attestation.unsupported_algorithm"
        /// apple: the certificate's nonce is not SHA-256(authData ‖ clientDataHash).
        case attestationNonceMismatch = "attestation.nonce_mismatch"
        /// apple: the certificate's subject key is not the credential public key.
        case attestationPublicKeyMismatch = "attestation.public_key_mismatch"

        // MARK: Attestation: tpm (WebAuthn L3 §8.3)

        /// ver is not "2.0", or the statement uses ECDAA, which Level 3 removed.
        case attestationTPMUnsupportedVersion = "attestation.tpm_unsupported_version"
        /// pubArea is not a well-formed RSA or ECC TPMT_PUBLIC.
        case attestationTPMPubAreaInvalid = "attestation.tpm_pub_area_invalid"
        /// certInfo is not a well-formed TPMS_ATTEST certify structure generated by a TPM.
        case attestationTPMCertInfoInvalid = "attestation.tpm_cert_info_invalid"
        /// The key in pubArea is not the credential public key.
        case attestationTPMPublicKeyMismatch = "attestation.tpm_public_key_mismatch"
        /// certInfo.extraData is not the hash of authenticatorData ‖ clientDataHash under alg's hash.
        case attestationTPMExtraDataMismatch = "attestation.tpm_extra_data_mismatch"
        /// certInfo.attested.name is not the Name of pubArea.
        case attestationTPMNameMismatch = "attestation.tpm_name_mismatch"
        /// sig does not verify over certInfo with the AIK certificate's key and alg.
        case attestationTPMSignatureInvalid = "attestation.tpm_signature_invalid"
        /// The AIK certificate breaks §8.3.1 (version, subject, SAN, EKU, basicConstraints).
        case attestationTPMCertificateInvalid = "attestation.tpm_certificate_invalid"
        /// The AIK certificate's id-fido-gen-ce-aaguid extension names another AAGUID.
        case attestationTPMAAGUIDMismatch = "attestation.tpm_aaguid_mismatch"

        // MARK: Attestation: android-key (WebAuthn L3 §8.4)

        /// sig does not verify over authenticatorData ‖ clientDataHash with the leaf key and alg.
        case attestationAndroidKeySignatureInvalid = "attestation.android_key_signature_invalid"
        /// The leaf certificate's key is not the credential public key.
        case attestationAndroidKeyPublicKeyMismatch = "attestation.android_key_public_key_mismatch"
        /// The key description extension is absent or malformed.
        case attestationAndroidKeyDescriptionInvalid = "attestation.android_key_description_invalid"
        /// attestationChallenge is not the client data hash.
        case attestationAndroidKeyChallengeMismatch = "attestation.android_key_challenge_mismatch"
        /// An authorization list has allApplications: the key is not scoped to this RP ID.
        case attestationAndroidKeyAllApplications = "attestation.android_key_all_applications"
        /// origin is not KM_ORIGIN_GENERATED or purpose lacks KM_PURPOSE_SIGN in the lists the policy reads.
        case attestationAndroidKeyAuthorizationInvalid = "attestation.android_key_authorization_invalid"

        // MARK: Attestation: android-safetynet (WebAuthn L3 §8.5)

        /// ver is empty, or response is not a compact JWS with an x5c header and a JSON payload.
        case attestationSafetyNetResponseInvalid = "attestation.safetynet_response_invalid"
        /// The JWS signing certificate is not issued to attest.android.com.
        case attestationSafetyNetHostnameMismatch = "attestation.safetynet_hostname_mismatch"
        /// The JWS signature does not verify, or its alg is not RS256 or ES256.
        case attestationSafetyNetSignatureInvalid = "attestation.safetynet_signature_invalid"
        /// The payload nonce is not base64(SHA-256(authenticatorData ‖ clientDataHash)).
        case attestationSafetyNetNonceMismatch = "attestation.safetynet_nonce_mismatch"
        /// ctsProfileMatch is not true: the device failed Android compatibility checks.
        case attestationSafetyNetCTSProfileMismatch = "attestation.safetynet_cts_profile_mismatch"
        /// timestampMs is in the future or older than the configured window.
        case attestationSafetyNetTimestampInvalid = "attestation.safetynet_timestamp_invalid"
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

    /// A copy whose message says where the error arose, keeping the code, cause and original location.
    func context(_ prefix: String) -> PasskeyError {
        PasskeyError(code, "\(prefix): \(message)", underlying: underlying, file: file, line: line)
    }
}
