import COpenSSL
public import FoundationEssentials

/// A fixed set of trust anchors, built once into an OpenSSL `X509_STORE` and shared by validations.
///
/// Anchors come only from the caller (configuration, bundled roots, FIDO metadata): the store never
/// loads the system's default certificate paths, and nothing offered as an intermediate ever joins it.
/// An `X509_STORE` is locked internally for lookups, and validation settings live in each call's own
/// context, so one store may serve concurrent validations.
public final class TrustStore: @unchecked Sendable {
    /// The anchors, in the order given.
    public let anchors: [Certificate]
    /// The owned `X509_STORE *`, freed in `deinit`.
    let store: OpaquePointer

    /// Builds a store holding exactly `anchors`.
    ///
    /// - Throws: `crypto.x509_failure` when OpenSSL cannot allocate the store.
    public init(anchors: [Certificate]) throws(CryptoError) {
        guard let store = X509_STORE_new() else {
            throw CryptoError(.x509Failure, "could not allocate an X509_STORE")
        }
        for anchor in anchors {
            // Adding takes its own reference (a duplicate is a no-op) and only fails on allocation.
            guard X509_STORE_add_cert(store, anchor.x509) == 1 else {
                X509_STORE_free(store)
                ERR_clear_error()
                throw CryptoError(.x509Failure, "could not add an anchor to the X509_STORE")
            }
        }
        self.store = store
        self.anchors = anchors
    }

    deinit { X509_STORE_free(store) }
}

/// What the leaf certificate must be good for, beyond a valid path.
public enum CertificatePurpose: Sendable, Hashable {
    /// No purpose check (OpenSSL's `X509_PURPOSE_ANY`): WebAuthn attestation formats check their
    /// own requirements on the leaf (basicConstraints, OU, extensions), which OpenSSL's TLS or S/MIME
    /// purposes would reject for no security gain.
    case any
    /// The leaf's extendedKeyUsage must be present and list this OID, such as TPM's AIK certificate
    /// purpose 2.23.133.8.3. `anyExtendedKeyUsage` does not stand in for it.
    case extendedKeyUsage(String)
}

/// Validates X.509 certificate paths with OpenSSL against caller-given anchors at a caller-given time.
///
/// Rules, and why:
/// - **Anchors only from the caller.** A self-signed root carried among the intermediates (as an
///   attestation's x5c may) is untrusted unless the same certificate is also an anchor.
/// - **Partial chains.** `X509_V_FLAG_PARTIAL_CHAIN` is set: an intermediate (or even the leaf) given
///   as an anchor ends the path there. Safe because anchors are explicit; it is what FIDO metadata
///   needs when it lists an intermediate as the attestation root.
/// - **Time is injected** with `X509_VERIFY_PARAM_set_time`; the system clock is never read.
/// - **No revocation.** CRL checks are off: attestation CAs rarely publish reachable CRLs, and
///   fetching them would put network I/O in a pure core. FIDO metadata status reports are the
///   revocation signal for authenticators.
/// - **No purpose check by OpenSSL** (see `CertificatePurpose.any`), and no `X509_V_FLAG_X509_STRICT`:
///   real attestation certificates lack key identifiers and other RFC 5280 niceties strict mode
///   demands. OpenSSL still requires every issuing certificate to be a CA (basicConstraints cA, or a
///   v1 self-signed root), enforces pathLenConstraint, and refuses unhandled critical extensions.
public enum CertificateChainValidator {
    /// The default limit on intermediates between the leaf and the anchor.
    public static let defaultMaximumIntermediates = 8
    /// The most intermediates a caller may offer: path building is quadratic in them.
    public static let maximumOfferedIntermediates = 16

    /// Validates `leaf` up to one of `anchors`, building a fresh `TrustStore`.
    ///
    /// - Parameters:
    ///   - leaf: The certificate to validate.
    ///   - intermediates: Untrusted certificates that may complete the path, in any order.
    ///   - anchors: The only certificates that can end a trusted path.
    ///   - time: The instant validity periods are checked at.
    ///   - purpose: What the leaf must be good for; `.any` by default.
    ///   - maximumIntermediates: The longest path allowed, counted in intermediates.
    /// - Returns: The path, leaf first and anchor last.
    /// - Throws: `crypto.chain_untrusted`, `crypto.certificate_expired`,
    ///   `crypto.certificate_not_yet_valid`, `crypto.chain_invalid_signature`, `crypto.chain_invalid`,
    ///   `crypto.chain_purpose_mismatch`; OpenSSL's reason is in the message only.
    public static func validate(
        leaf: Certificate, intermediates: [Certificate], anchors: [Certificate], at time: Date,
        purpose: CertificatePurpose = .any, maximumIntermediates: Int = defaultMaximumIntermediates
    ) throws(CryptoError) -> [Certificate] {
        try validate(
            leaf: leaf, intermediates: intermediates, trustStore: TrustStore(anchors: anchors), at: time,
            purpose: purpose, maximumIntermediates: maximumIntermediates)
    }

    /// Validates `leaf` up to an anchor of a prebuilt `trustStore` (reuse one per anchor set).
    ///
    /// Parameters, result and errors as in `validate(leaf:intermediates:anchors:at:purpose:maximumIntermediates:)`.
    public static func validate(
        leaf: Certificate, intermediates: [Certificate], trustStore: TrustStore, at time: Date,
        purpose: CertificatePurpose = .any, maximumIntermediates: Int = defaultMaximumIntermediates
    ) throws(CryptoError) -> [Certificate] {
        guard !trustStore.anchors.isEmpty else {
            throw CryptoError(.chainUntrusted, "no trust anchors were given")
        }
        guard intermediates.count <= maximumOfferedIntermediates else {
            throw CryptoError(
                .chainInvalid,
                "\(intermediates.count) intermediates offered, at most \(maximumOfferedIntermediates)")
        }
        let path = try withExtendedLifetime((leaf, intermediates, trustStore)) { () throws(CryptoError) in
            try buildPath(
                leaf: leaf, intermediates: intermediates, trustStore: trustStore, time: time,
                maximumIntermediates: max(0, maximumIntermediates))
        }
        if case .extendedKeyUsage(let oid) = purpose, !(leaf.extendedKeyUsage ?? []).contains(oid) {
            throw CryptoError(.chainPurposeMismatch, "the leaf's extendedKeyUsage does not include \(oid)")
        }
        return path
    }

    /// Runs `X509_verify_cert` and maps the built chain back to the caller's `Certificate` objects.
    private static func buildPath(
        leaf: Certificate, intermediates: [Certificate], trustStore: TrustStore, time: Date,
        maximumIntermediates: Int
    ) throws(CryptoError) -> [Certificate] {
        let context = try VerifyContext()
        // The stack borrows the X509 pointers: the certificates outlive it (withExtendedLifetime above).
        for certificate in intermediates {
            guard OPENSSL_sk_push(context.untrusted, UnsafeRawPointer(certificate.x509)) > 0 else {
                throw CryptoError(.x509Failure, "could not build the intermediates stack")
            }
        }
        guard X509_STORE_CTX_init(context.context, trustStore.store, leaf.x509, context.untrusted) == 1 else {
            ERR_clear_error()
            throw CryptoError(.x509Failure, "could not initialise an X509_STORE_CTX")
        }
        let parameters = X509_STORE_CTX_get0_param(context.context)
        // set_time also sets X509_V_FLAG_USE_CHECK_TIME, so OpenSSL never falls back to the system clock.
        X509_VERIFY_PARAM_set_time(parameters, time_t(time.timeIntervalSince1970.rounded(.down)))
        X509_VERIFY_PARAM_set_depth(parameters, Int32(clamping: maximumIntermediates))
        _ = X509_VERIFY_PARAM_set_purpose(parameters, X509_PURPOSE_ANY)
        _ = X509_VERIFY_PARAM_set_flags(parameters, UInt(X509_V_FLAG_PARTIAL_CHAIN))
        // Off by default already; cleared so a changed OpenSSL default cannot turn on CRL fetching.
        _ = X509_VERIFY_PARAM_clear_flags(parameters, UInt(X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL))

        guard X509_verify_cert(context.context) == 1 else {
            let code = X509_STORE_CTX_get_error(context.context)
            let depth = X509_STORE_CTX_get_error_depth(context.context)
            let reason = String(cString: X509_verify_cert_error_string(Int(code)))
            ERR_clear_error()
            throw CryptoError(mapVerifyError(code), "certificate at depth \(depth): \(reason) (\(code))")
        }
        guard let chain = X509_STORE_CTX_get0_chain(context.context) else {
            throw CryptoError(.x509Failure, "OpenSSL verified but returned no chain")
        }
        // OpenSSL's chain holds the very X509 pointers it was given, so identity finds our objects.
        var byPointer: [OpaquePointer: Certificate] = [:]
        for certificate in [leaf] + intermediates + trustStore.anchors {
            byPointer[certificate.x509] = certificate
        }
        var path: [Certificate] = []
        for index in 0..<OPENSSL_sk_num(chain) {
            guard let raw = OPENSSL_sk_value(chain, index), let certificate = byPointer[OpaquePointer(raw)]
            else {
                throw CryptoError(.x509Failure, "the verified chain holds a certificate that was not given")
            }
            path.append(certificate)
        }
        return path
    }

    /// Sorts OpenSSL's verify errors into the codes callers switch on.
    static func mapVerifyError(_ code: Int32) -> CryptoError.Code {
        switch code {
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
            X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE, X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT,
            X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, X509_V_ERR_CERT_UNTRUSTED, X509_V_ERR_CERT_REJECTED:
            .chainUntrusted
        case X509_V_ERR_CERT_HAS_EXPIRED: .certificateExpired
        case X509_V_ERR_CERT_NOT_YET_VALID: .certificateNotYetValid
        case X509_V_ERR_CERT_SIGNATURE_FAILURE, X509_V_ERR_UNABLE_TO_DECRYPT_CERT_SIGNATURE:
            .chainInvalidSignature
        case X509_V_ERR_OUT_OF_MEM: .x509Failure
        default: .chainInvalid
        }
    }
}

/// Owns one validation's `X509_STORE_CTX` and its untrusted-certificate stack.
private final class VerifyContext {
    let context: OpaquePointer
    let untrusted: OpaquePointer

    init() throws(CryptoError) {
        guard let context = X509_STORE_CTX_new() else {
            throw CryptoError(.x509Failure, "could not allocate an X509_STORE_CTX")
        }
        guard let untrusted = OPENSSL_sk_new_null() else {
            X509_STORE_CTX_free(context)
            throw CryptoError(.x509Failure, "could not allocate a certificate stack")
        }
        self.context = context
        self.untrusted = untrusted
    }

    deinit {
        // The context refers to the stack, so it goes first; the stack's entries are borrowed, not freed.
        X509_STORE_CTX_free(context)
        OPENSSL_sk_free(untrusted)
    }
}
