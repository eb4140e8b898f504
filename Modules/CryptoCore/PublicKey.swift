import COpenSSL
public import FoundationEssentials
public import MLDSA

/// A validated public key held as an OpenSSL `EVP_PKEY`, built once and reused for any number of checks.
///
/// Building a key costs a parse and a curve check; verifying with a kept key costs only the signature
/// check, so callers that verify repeatedly (a credential cache) should keep the `PublicKey`.
/// `EVP_PKEY` is safe to share between threads once built: verification only reads it and OpenSSL's
/// reference count is atomic, which is why the class may be `@unchecked Sendable`. ML-DSA keys are
/// the exception to "held as an `EVP_PKEY`": OpenSSL 3.0 has no ML-DSA, so they hold an immutable
/// `MLDSAPublicKey` and are checked by the MLDSA module.
public final class PublicKey: @unchecked Sendable {
    /// The smallest RSA modulus accepted, in bits (NIST SP 800-131A: 1024-bit RSA is disallowed).
    public static let minimumRSABits = 2048
    /// The largest RSA modulus accepted, in bits: bigger keys only buy an attacker verification time.
    public static let maximumRSABits = 8192

    /// The owned `EVP_PKEY *`, freed in `deinit`, never handed out. Nil only for ML-DSA keys, which
    /// the OpenSSL Portvakt builds against (3.0) cannot hold; certificate keys, parsed by OpenSSL,
    /// are therefore never nil.
    let pkey: OpaquePointer?
    /// The ML-DSA key, checked by the MLDSA module instead of OpenSSL; nil for every other type.
    private let mlDSA: MLDSAPublicKey?
    /// What kind of key this is, fixed at construction.
    public let type: PublicKeyType

    /// True when `pkey` holds an EC_KEY from `copenssl_ec_public_key`, which `verify` checks with
    /// ECDSA_verify on a digest it computes itself instead of through EVP_DigestVerify.
    private let ecdsaDirect: Bool

    /// Takes ownership of `pkey`, which the caller has already validated as `type`.
    private init(owning pkey: OpaquePointer, type: PublicKeyType, ecdsaDirect: Bool = false) {
        self.pkey = pkey
        self.mlDSA = nil
        self.type = type
        self.ecdsaDirect = ecdsaDirect
    }

    /// Wraps an ML-DSA key, which no EVP_PKEY holds.
    private init(mlDSA: MLDSAPublicKey) {
        self.pkey = nil
        self.mlDSA = mlDSA
        self.type = .mlDSA(mlDSA.parameterSet)
        self.ecdsaDirect = false
    }

    deinit { EVP_PKEY_free(pkey) }

    // MARK: Construction

    /// Builds an ECDSA key from the affine coordinates of its point, checking the point is on `curve`.
    ///
    /// - Parameters:
    ///   - curve: The curve the point belongs to.
    ///   - x: The big-endian x coordinate, exactly `curve.coordinateByteCount` bytes.
    ///   - y: The big-endian y coordinate, exactly `curve.coordinateByteCount` bytes.
    /// - Throws: `CryptoError` `.invalidPublicKey` for wrong lengths, coordinates out of range or a point
    ///   off the curve (or at infinity).
    public convenience init(
        curve: ECCurve, x: some ContiguousBytes, y: some ContiguousBytes
    ) throws(CryptoError) {
        let size = curve.coordinateByteCount
        // The uncompressed SEC 1 encoding is what OpenSSL's "pub" parameter takes: 0x04 || x || y.
        // (Not `Array(repeating:count:)`: see `zeroBytes`.)
        var point = Array(repeatElement(UInt8(0x04), count: 1 + 2 * size))
        // nil: wrong lengths; else whether the point is on the curve (nil inside: allocation failed).
        let onCurve: Bool?? = x.withUnsafeBytes { xs in
            y.withUnsafeBytes { ys in
                guard xs.count == size, ys.count == size else { return nil }
                point.withUnsafeMutableBytes { out in
                    out.baseAddress!.advanced(by: 1).copyMemory(from: xs.baseAddress!, byteCount: size)
                    out.baseAddress!.advanced(by: 1 + size).copyMemory(from: ys.baseAddress!, byteCount: size)
                }
                return .some(CurveEquations.shared.contains(x: xs, y: ys, on: curve))
            }
        }
        guard let onCurve else {
            throw CryptoError(.invalidPublicKey, "EC coordinates must be \(size) bytes each for \(curve)")
        }
        guard let onCurve else { throw CryptoError(.keyFailure, "could not check a point on \(curve)") }
        // Checked on the coordinates themselves, before OpenSSL sees them: the check does not rely
        // on a provider's import path validating.
        guard onCurve else { throw CryptoError(.invalidPublicKey, "the EC point is not on \(curve)") }
        // An EC_KEY on a copy of the curve's group, given this point, inside an EVP_PKEY (see the
        // shim for why not the provider's key). Importing the group by name instead rebuilds it on
        // every call, which cost more than everything else in building a key. The point goes through
        // EC_POINT_oct2point, the decoder the provider's import uses too, which refuses coordinates
        // out of range and points off the curve.
        guard let group = ECGroups.shared.group(for: curve) else {
            ERR_clear_error()
            throw CryptoError(.keyFailure, "could not build the \(curve) group")
        }
        let built = point.withUnsafeBufferPointer { raw in
            copenssl_ec_public_key(group, raw.baseAddress, raw.count)
        }
        // Refused by the point decoder: "invalid", not "internal".
        guard let pkey = built else {
            ERR_clear_error()
            throw CryptoError(.invalidPublicKey, "the EC point is not a valid point on \(curve)")
        }
        // The explicit check above replaced EVP_PKEY_public_check_quick here, which asked the same
        // (on the curve, not at infinity) at about ten times the instructions: 3.5% of a passkey
        // login (Docs/performance.md).
        self.init(owning: pkey, type: .ec(curve), ecdsaDirect: true)
    }

    /// Builds an RSA key from its modulus and public exponent.
    ///
    /// - Parameters:
    ///   - modulus: `n`, big-endian unsigned; leading zero bytes are ignored.
    ///   - exponent: `e`, big-endian unsigned.
    /// - Throws: `CryptoError` `.weakKey` under 2048 bits, `.unsupportedKeySize` over 8192 bits, and
    ///   `.invalidPublicKey` for an even modulus or an exponent that is even, below 3 or not below n.
    public convenience init(
        rsaModulus modulus: some ContiguousBytes, exponent: some ContiguousBytes
    ) throws(CryptoError) {
        // Size the modulus before OpenSSL parses it, so a megabyte "modulus" costs nothing.
        let bits = modulus.withUnsafeBytes { Self.bitLength(of: $0) }
        try Self.checkRSASize(bits: bits)
        let built = modulus.withUnsafeBytes { n in
            exponent.withUnsafeBytes { e in
                Self.fromRSAComponents(n: n, e: e)
            }
        }
        // Values are already range-checked, so a failure here is invalid input such as an even modulus.
        guard let pkey = built else {
            throw CryptoError(.invalidPublicKey, "the RSA modulus or exponent is not valid")
        }
        self.init(owning: pkey, type: .rsa(bits: bits))
    }

    /// Builds an Ed25519 key from its 32-byte RFC 8032 encoding.
    ///
    /// - Parameter raw: The 32-byte public key.
    /// - Throws: `CryptoError` `.invalidPublicKey` when the length is not 32 or y is not below p,
    ///   `.smallOrderKey` for one of the eight points of small order.
    public convenience init(ed25519 raw: some ContiguousBytes) throws(CryptoError) {
        try Ed25519KeyCheck.check(raw.withUnsafeBytes { [UInt8]($0) })
        let pkey = raw.withUnsafeBytes { bytes -> OpaquePointer? in
            guard bytes.count == 32 else { return nil }
            return EVP_PKEY_new_raw_public_key(
                EVP_PKEY_ED25519, nil, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), 32)
        }
        // OpenSSL decodes the point only when verifying, where an invalid encoding fails the check;
        // the small-order points it would accept are refused above.
        guard let pkey else {
            ERR_clear_error()
            throw CryptoError(.invalidPublicKey, "an Ed25519 public key is exactly 32 bytes")
        }
        self.init(owning: pkey, type: .ed25519)
    }

    /// Builds an ML-DSA key from its FIPS 204 encoding (pkEncode: ρ ‖ t₁), as COSE's AKP `pub` holds it.
    ///
    /// The OpenSSL found at build time (Debian 12's 3.0) has no ML-DSA, so these keys are checked by
    /// the MLDSA module (Docs/architecture.md says why, and what changes with OpenSSL 3.5).
    /// - Parameters:
    ///   - parameterSet: ML-DSA-44, -65 or -87.
    ///   - encoded: The encoded key, exactly the parameter set's length (1312, 1952 or 2592 bytes).
    /// - Throws: `CryptoError` `.invalidPublicKey` for any other length: every byte string of the
    ///   right length is a key.
    public convenience init(mlDSA parameterSet: MLDSAParameterSet, encoded: some ContiguousBytes)
        throws(CryptoError)
    {
        let bytes = encoded.withUnsafeBytes { [UInt8]($0) }
        guard let key = MLDSAPublicKey(parameterSet: parameterSet, encoded: bytes) else {
            throw CryptoError(
                .invalidPublicKey,
                "an \(parameterSet.rawValue) public key is exactly \(parameterSet.publicKeyByteCount) bytes, got \(bytes.count)"
            )
        }
        self.init(mlDSA: key)
    }

    /// Builds a key from a DER `SubjectPublicKeyInfo` (RFC 5280 §4.1), as found in X.509 certificates.
    ///
    /// Accepts EC keys on P-256/P-384/P-521 given by named curve, `rsaEncryption` keys and Ed25519.
    /// - Parameter der: The complete DER encoding; trailing bytes are an error.
    /// - Throws: `CryptoError` `.invalidPublicKey` for malformed DER or points off the curve,
    ///   `.unsupportedKeyType` for other algorithms or curves, and the RSA size errors.
    public convenience init(derSubjectPublicKeyInfo der: some ContiguousBytes) throws(CryptoError) {
        let parsed = der.withUnsafeBytes { raw -> OpaquePointer? in
            guard let base = raw.baseAddress, raw.count > 0, raw.count <= Int(Int32.max) else { return nil }
            var cursor: UnsafePointer<UInt8>? = base.assumingMemoryBound(to: UInt8.self)
            guard let pkey = d2i_PUBKEY(nil, &cursor, raw.count) else { return nil }
            // d2i stops after one structure; anything after it would be unauthenticated baggage.
            guard let cursor, UnsafeRawPointer(cursor) == base.advanced(by: raw.count) else {
                EVP_PKEY_free(pkey)
                return nil
            }
            return pkey
        }
        guard let pkey = parsed else {
            ERR_clear_error()
            throw CryptoError(.invalidPublicKey, "not a DER SubjectPublicKeyInfo")
        }
        let type = try Self.releasing(pkey, unless: Self.classify)
        self.init(owning: pkey, type: type)
    }

    // MARK: Use

    /// Checks `signature` over `data` under `algorithm`.
    ///
    /// Never traps and never throws: malformed signatures, an algorithm that does not fit the key and
    /// OpenSSL failures all return false, and OpenSSL's error queue is cleared so nothing leaks into
    /// later calls on the thread.
    /// - Parameters:
    ///   - signature: The signature bytes (DER for ECDSA, raw for RSA and Ed25519).
    ///   - data: The signed message, hashed here as the algorithm requires.
    ///   - algorithm: The scheme the signer used.
    /// - Returns: True only for a valid signature.
    public func verify(
        signature: some ContiguousBytes, data: some ContiguousBytes, algorithm: SignatureAlgorithm
    ) -> Bool {
        guard algorithm.accepts(type) else { return false }
        if let mlDSA {
            // COSE's ML-DSA is pure ML-DSA with an empty context string (draft-ietf-cose-dilithium).
            return signature.withUnsafeBytes { sig in
                data.withUnsafeBytes { message in mlDSA.verify(signature: sig, message: message) }
            }
        }
        let valid = signature.withUnsafeBytes { sig in
            data.withUnsafeBytes { message in
                verifyBuffers(signature: sig, data: message, algorithm: algorithm)
            }
        }
        // A failed check leaves reasons on the thread's queue; drop them, the caller only needs false.
        if !valid { ERR_clear_error() }
        return valid
    }

    /// The key as a DER `SubjectPublicKeyInfo`, the form X.509 and most storage formats use.
    public var derRepresentation: [UInt8] {
        if let mlDSA { return Self.mlDSASubjectPublicKeyInfo(mlDSA) }
        var out: UnsafeMutablePointer<UInt8>? = nil
        let length = i2d_PUBKEY(pkey, &out)
        // A key we built always encodes; failure means allocation failed, where continuing is unsafe.
        guard length > 0, let out else { preconditionFailure("i2d_PUBKEY failed") }
        defer { copenssl_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }

    /// RFC 9881's SubjectPublicKeyInfo for an ML-DSA key: the parameter set's OID with parameters
    /// absent, and the encoded key as the BIT STRING, which is what a browser's getPublicKey() returns.
    private static func mlDSASubjectPublicKeyInfo(_ key: MLDSAPublicKey) -> [UInt8] {
        // id-ml-dsa-44/65/87 under NIST's sigAlgs arc (2.16.840.1.101.3.4.3).
        let oid =
            switch key.parameterSet {
            case .mlDSA44: "2.16.840.1.101.3.4.3.17"
            case .mlDSA65: "2.16.840.1.101.3.4.3.18"
            case .mlDSA87: "2.16.840.1.101.3.4.3.19"
            }
        return DERWriter.sequence([
            DERWriter.sequence([DERWriter.objectIdentifier(oid)]), DERWriter.bitString(key.encoded),
        ])
    }

    /// The signature check on raw buffers; both buffers stay valid for the duration of the call.
    private func verifyBuffers(
        signature: UnsafeRawBufferPointer, data: UnsafeRawBufferPointer, algorithm: SignatureAlgorithm
    ) -> Bool {
        if ecdsaDirect, let digest = algorithm.digest {
            return verifyECDSA(signature: signature, data: data, digest: digest)
        }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        var keyContext: OpaquePointer? = nil
        // The MD context owns the key context it creates; EVP_MD_CTX_free releases both.
        let initialised: Int32 =
            if let digest = algorithm.digestName {
                EVP_DigestVerifyInit_ex(context, &keyContext, digest, nil, nil, pkey, nil)
            } else {
                EVP_DigestVerifyInit_ex(context, &keyContext, nil, nil, nil, pkey, nil)
            }
        guard initialised == 1 else { return false }
        if algorithm == .rsaPSSSHA256 {
            // MGF1 defaults to the signature digest; the salt is pinned to the digest length as COSE PS256 says.
            guard EVP_PKEY_CTX_set_rsa_padding(keyContext, RSA_PKCS1_PSS_PADDING) == 1,
                EVP_PKEY_CTX_set_rsa_pss_saltlen(keyContext, RSA_PSS_SALTLEN_DIGEST) == 1
            else { return false }
        }
        // Empty buffers may have no address; OpenSSL wants a pointer even for zero bytes.
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1) { empty in
            let sig =
                signature.baseAddress?.assumingMemoryBound(to: UInt8.self)
                ?? UnsafePointer(empty.baseAddress!)
            let tbs =
                data.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(empty.baseAddress!)
            // One-shot EVP_DigestVerify is required for Ed25519 and serves every other scheme too.
            return EVP_DigestVerify(context, sig, signature.count, tbs, data.count) == 1
        }
    }

    /// ECDSA with a key built by `init(curve:x:y:)`: the digest of `data` with a digest fetched
    /// once per process, then ECDSA_verify, the check the default provider's ECDSA runs (DER
    /// signature re-encoded and compared, r and s in [1, n − 1], the digest cut to the order's bits).
    private func verifyECDSA(
        signature: UnsafeRawBufferPointer, data: UnsafeRawBufferPointer, digest: DigestAlgorithm
    ) -> Bool {
        guard let sig = signature.baseAddress, signature.count > 0, signature.count <= Int(Int32.max) else {
            return false
        }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: DigestAlgorithm.maximumByteCount) {
            out in
            guard Digest.hash(digest, data, into: out) else { return false }
            return copenssl_ecdsa_verify_digest(
                pkey, out.baseAddress, Int32(digest.byteCount), sig.assumingMemoryBound(to: UInt8.self),
                Int32(signature.count)) == 1
        }
    }

    // MARK: OpenSSL plumbing

    /// Runs EVP_PKEY_fromdata for a public key of `type` (or, with `selection`, only its domain
    /// parameters), with parameters pushed by `push`.
    ///
    /// Parameter names pushed must have static storage (the `copenssl_param_*` shims) and values must
    /// stay valid until this returns. Every temporary (builder, parameter array, context) is freed before returning; the caller owns
    /// the returned key. Returns nil on any failure, with OpenSSL's error queue cleared.
    fileprivate static func fromData(
        type: String, selection: Int32 = copenssl_evp_pkey_public_key_selection(),
        push: (OpaquePointer) -> Bool
    ) -> OpaquePointer? {
        guard let builder = OSSL_PARAM_BLD_new() else { return nil }
        defer { OSSL_PARAM_BLD_free(builder) }
        guard push(builder), let params = OSSL_PARAM_BLD_to_param(builder) else {
            ERR_clear_error()
            return nil
        }
        defer { OSSL_PARAM_free(params) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, type, nil) else {
            ERR_clear_error()
            return nil
        }
        defer { EVP_PKEY_CTX_free(context) }
        var pkey: OpaquePointer? = nil
        guard EVP_PKEY_fromdata_init(context) == 1,
            EVP_PKEY_fromdata(context, &pkey, selection, params) == 1, let pkey
        else {
            ERR_clear_error()
            return nil
        }
        return pkey
    }

    /// Builds an RSA key from buffers already size-checked, after checking n and e themselves.
    private static func fromRSAComponents(n: UnsafeRawBufferPointer, e: UnsafeRawBufferPointer)
        -> OpaquePointer?
    {
        // Leading zeros carry no value; dropping them keeps the length OpenSSL sees within the size check.
        let skip = n.firstIndex(where: { $0 != 0 }) ?? n.count
        let significant = UnsafeRawBufferPointer(rebasing: n[skip...])
        guard let nBase = significant.baseAddress, let eBase = e.baseAddress, e.count <= 512,
            let modulus = BN_bin2bn(nBase.assumingMemoryBound(to: UInt8.self), Int32(significant.count), nil)
        else { return nil }
        defer { BN_free(modulus) }
        guard let exponent = BN_bin2bn(eBase.assumingMemoryBound(to: UInt8.self), Int32(e.count), nil) else {
            return nil
        }
        defer { BN_free(exponent) }
        guard rsaComponentsAreValid(n: modulus, e: exponent) else { return nil }
        // The builder copies the big numbers in OSSL_PARAM_BLD_to_param, before the defers free them.
        return fromData(type: "RSA") { builder in
            OSSL_PARAM_BLD_push_BN(builder, copenssl_param_rsa_n(), modulus) == 1
                && OSSL_PARAM_BLD_push_BN(builder, copenssl_param_rsa_e(), exponent) == 1
        }
    }

    /// The cheap structural RSA checks: odd modulus, odd exponent with 3 ≤ e < n.
    ///
    /// EVP_PKEY_public_check would add SP 800-56B's Miller–Rabin test on n, milliseconds per key for no
    /// gain in verification: a bad modulus can only make signatures fail, never forge them.
    private static func rsaComponentsAreValid(n: OpaquePointer, e: OpaquePointer) -> Bool {
        BN_is_odd(n) == 1 && BN_is_odd(e) == 1 && BN_is_one(e) == 0 && BN_cmp(e, n) < 0
    }

    /// Throws unless an RSA modulus of `bits` bits is within the accepted range.
    private static func checkRSASize(bits: Int) throws(CryptoError) {
        guard bits >= minimumRSABits else {
            throw CryptoError(.weakKey, "RSA keys need at least \(minimumRSABits) bits, got \(bits)")
        }
        guard bits <= maximumRSABits else {
            throw CryptoError(.unsupportedKeySize, "RSA keys above \(maximumRSABits) bits are not accepted")
        }
    }

    /// The bit length of a big-endian unsigned integer, ignoring leading zero bytes.
    private static func bitLength(of bytes: UnsafeRawBufferPointer) -> Int {
        guard let first = bytes.firstIndex(where: { $0 != 0 }) else { return 0 }
        return (bytes.count - first) * 8 - bytes[first].leadingZeroBitCount
    }

    /// Runs `check` on a key not yet owned by a `PublicKey`, freeing the key when the check throws.
    private static func releasing<T>(
        _ pkey: OpaquePointer, unless check: (OpaquePointer) throws(CryptoError) -> T
    ) throws(CryptoError) -> T {
        do throws(CryptoError) {
            return try check(pkey)
        } catch {
            EVP_PKEY_free(pkey)
            throw error
        }
    }

    /// Works out what a parsed SubjectPublicKeyInfo holds and checks it as the raw constructors would.
    ///
    /// Never frees `pkey`: ownership stays with the caller either way.
    private static func classify(_ pkey: OpaquePointer) throws(CryptoError) -> PublicKeyType {
        switch EVP_PKEY_get_base_id(pkey) {
        case EVP_PKEY_EC:
            // Named curves only: explicit curve parameters have no group name and are refused.
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_utf8_string_param(pkey, "group", &name, name.count, &length) == 1,
                length < name.count,
                let curve = ECCurve(
                    groupName: String(decoding: name[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self))
            else {
                ERR_clear_error()
                throw CryptoError(.unsupportedKeyType, "only P-256, P-384 and P-521 EC keys are accepted")
            }
            try checkECPoint(pkey)
            return .ec(curve)
        case EVP_PKEY_RSA:
            let bits = Int(EVP_PKEY_get_bits(pkey))
            try checkRSASize(bits: bits)
            var n: OpaquePointer? = nil
            var e: OpaquePointer? = nil
            defer {
                BN_free(n)
                BN_free(e)
            }
            guard EVP_PKEY_get_bn_param(pkey, "n", &n) == 1, EVP_PKEY_get_bn_param(pkey, "e", &e) == 1,
                let n, let e, rsaComponentsAreValid(n: n, e: e)
            else {
                ERR_clear_error()
                throw CryptoError(.invalidPublicKey, "the RSA modulus or exponent is not valid")
            }
            return .rsa(bits: bits)
        case EVP_PKEY_ED25519:
            // The same check as `init(ed25519:)`: a certificate's key is no less a key.
            var raw = [UInt8](repeating: 0, count: 32)
            var length = raw.count
            guard EVP_PKEY_get_raw_public_key(pkey, &raw, &length) == 1, length == 32 else {
                ERR_clear_error()
                throw CryptoError(.invalidPublicKey, "the Ed25519 public key could not be read")
            }
            try Ed25519KeyCheck.check(raw)
            return .ed25519
        default:
            throw CryptoError(.unsupportedKeyType, "the key algorithm is not one Portvakt verifies")
        }
    }

    /// Confirms an EC key's point is on its curve and not the point at infinity; never frees `pkey`.
    ///
    /// The quick check skips the n·Q = O test: every accepted curve has cofactor 1, so any on-curve
    /// point other than infinity already lies in the prime-order group.
    private static func checkECPoint(_ pkey: OpaquePointer) throws(CryptoError) {
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, pkey, nil) else {
            throw CryptoError(.keyFailure, "could not allocate a key context")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_public_check_quick(context) == 1 else {
            ERR_clear_error()
            throw CryptoError(.invalidPublicKey, "the EC point is not on its curve")
        }
    }
}

extension PublicKey: CustomStringConvertible {
    /// Names the key type only; key material stays out of logs.
    public var description: String { "PublicKey(\(type))" }
}

/// Each accepted curve's group, built on first use and never freed: new EC keys get a copy of it
/// (`EC_KEY_set_group`) and their point.
///
/// The groups are only ever read (copied), never changed, which OpenSSL allows from any number of
/// threads at once; hence `@unchecked Sendable`.
private final class ECGroups: @unchecked Sendable {
    static let shared = ECGroups()

    private let groups: [ECCurve: OpaquePointer]

    private init() {
        var groups: [ECCurve: OpaquePointer] = [:]
        for curve in ECCurve.allCases {
            groups[curve] = EC_GROUP_new_by_curve_name(OBJ_sn2nid(curve.groupName))
        }
        ERR_clear_error()
        self.groups = groups
    }

    /// The group of `curve`; nil only when OpenSSL could not build it.
    func group(for curve: ECCurve) -> OpaquePointer? { groups[curve] }
}

/// Each accepted curve's equation y² = x³ + ax + b over the prime field p, read from OpenSSL's
/// named group once and never freed, for `PublicKey`'s own on-curve check. The numbers are only
/// ever read (BN arguments that are `const`), from any number of threads; hence
/// `@unchecked Sendable`.
private final class CurveEquations: @unchecked Sendable {
    static let shared = CurveEquations()

    /// A reduction modulo p: `r = a mod p` for 0 ≤ a; `BN_nnmod`'s shape.
    private typealias Reduction =
        @convention(c) (
            OpaquePointer?, OpaquePointer?, OpaquePointer?, OpaquePointer?
        ) -> Int32

    private struct Equation {
        let p: OpaquePointer
        let a: OpaquePointer
        let b: OpaquePointer
        /// OpenSSL's reduction for this NIST prime (a few word additions, for values below p²),
        /// where the generic BN_nnmod divides: most of this check's cost before.
        let reduce: Reduction
    }

    private let equations: [ECCurve: Equation]

    private init() {
        var equations: [ECCurve: Equation] = [:]
        for curve in ECCurve.allCases {
            guard let group = EC_GROUP_new_by_curve_name(OBJ_sn2nid(curve.groupName)) else { continue }
            defer { EC_GROUP_free(group) }
            guard let p = BN_new(), let a = BN_new(), let b = BN_new(),
                EC_GROUP_get_curve(group, p, a, b, nil) == 1
            else { continue }
            // Every accepted prime is a NIST prime; BN_nnmod gives the same result for any other.
            let reduce: Reduction = BN_nist_mod_func(p) ?? BN_nnmod
            equations[curve] = Equation(p: p, a: a, b: b, reduce: reduce)
        }
        ERR_clear_error()
        self.equations = equations
    }

    /// Whether the affine point (`x`, `y`), big-endian coordinates, lies on `curve`: both
    /// coordinates below p and y² ≡ x³ + ax + b (mod p). An uncompressed point is never the point
    /// at infinity, and every accepted curve has cofactor 1, so such a point is in the prime-order
    /// group. nil when OpenSSL could not allocate (or build the curve's numbers).
    func contains(x: UnsafeRawBufferPointer, y: UnsafeRawBufferPointer, on curve: ECCurve) -> Bool? {
        guard let equation = equations[curve], let context = BN_CTX_new() else { return nil }
        defer { BN_CTX_free(context) }
        BN_CTX_start(context)
        defer { BN_CTX_end(context) }
        guard let bx = BN_CTX_get(context), let by = BN_CTX_get(context), let left = BN_CTX_get(context),
            let right = BN_CTX_get(context), let t = BN_CTX_get(context),
            BN_bin2bn(x.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(x.count), bx) != nil,
            BN_bin2bn(y.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(y.count), by) != nil
        else { return nil }
        // Out of range is off the curve, never reduced: x = p is not the point with x = 0.
        guard BN_cmp(bx, equation.p) < 0, BN_cmp(by, equation.p) < 0 else { return false }
        let p = equation.p
        // Every product is of two values below p, hence below p², the fast reduction's range; every
        // sum is of two values below p (a and b too), which BN_mod_add_quick takes.
        guard BN_sqr(left, by, context) == 1, equation.reduce(left, left, p, context) == 1,  // y²
            BN_sqr(t, bx, context) == 1, equation.reduce(t, t, p, context) == 1,  // x²
            BN_mod_add_quick(t, t, equation.a, p) == 1,  // x² + a
            BN_mul(right, t, bx, context) == 1, equation.reduce(right, right, p, context) == 1,  // x³ + ax
            BN_mod_add_quick(right, right, equation.b, p) == 1  // x³ + ax + b
        else { return nil }
        return BN_cmp(left, right) == 0
    }
}
