import COpenSSL
public import FoundationEssentials

/// The digests Portvakt uses: SHA-2, and SHA-1 where a legacy format leaves no choice.
public enum DigestAlgorithm: Sendable, Hashable {
    case sha256, sha384, sha512
    /// SHA-1: only for reading what old TPMs produce (TPM names with nameAlg SHA-1, RS1's extraData);
    /// never for anything Portvakt itself signs or derives.
    case sha1

    /// The digest length in bytes.
    public var byteCount: Int {
        switch self {
        case .sha256: 32
        case .sha384: 48
        case .sha512: 64
        case .sha1: 20
        }
    }

    /// OpenSSL's name for the algorithm, for APIs that take parameters by name.
    var openSSLName: String {
        switch self {
        case .sha256: "SHA256"
        case .sha384: "SHA384"
        case .sha512: "SHA512"
        case .sha1: "SHA1"
        }
    }

    /// The longest digest, for buffers that take any of them.
    static let maximumByteCount = 64

    /// OpenSSL's implementation of the algorithm, fetched once per process (`FetchedDigests`).
    var evpMD: OpaquePointer {
        switch self {
        case .sha256: FetchedDigests.shared.sha256
        case .sha384: FetchedDigests.shared.sha384
        case .sha512: FetchedDigests.shared.sha512
        case .sha1: FetchedDigests.shared.sha1
        }
    }
}

/// The digests fetched from OpenSSL's default provider once and never freed.
///
/// OpenSSL 3's static descriptors (`EVP_sha256()`) carry no implementation: every EVP_Digest,
/// HMAC or DigestInit with one fetches the implementation by name first, a method-store lookup
/// under a lock on every call. A fetched `EVP_MD` is immutable and reference-counted, usable from
/// any number of threads; hence `@unchecked Sendable`. Should a fetch fail, the static descriptor
/// stands in (and fetches per call, as before).
private final class FetchedDigests: @unchecked Sendable {
    static let shared = FetchedDigests()

    let sha256: OpaquePointer
    let sha384: OpaquePointer
    let sha512: OpaquePointer
    let sha1: OpaquePointer

    private init() {
        func fetch(_ name: String, _ fallback: OpaquePointer) -> OpaquePointer {
            guard let md = EVP_MD_fetch(nil, name, nil) else {
                ERR_clear_error()
                return fallback
            }
            return md
        }
        sha256 = fetch("SHA256", EVP_sha256())
        sha384 = fetch("SHA384", EVP_sha384())
        sha512 = fetch("SHA512", EVP_sha512())
        sha1 = fetch("SHA1", EVP_sha1())
    }
}

/// One-shot digests.
public enum Digest {
    /// Hashes `data` with `algorithm`.
    public static func hash(_ algorithm: DigestAlgorithm, _ data: some ContiguousBytes) -> [UInt8] {
        var output = zeroBytes(algorithm.byteCount)
        var length: UInt32 = 0
        let ok = data.withUnsafeBytes { input in
            output.withUnsafeMutableBufferPointer { out in
                EVP_Digest(input.baseAddress, input.count, out.baseAddress, &length, algorithm.evpMD, nil)
            }
        }
        // EVP_Digest only fails on allocation failure, where continuing would be unsafe.
        precondition(ok == 1 && Int(length) == algorithm.byteCount, "EVP_Digest failed")
        return output
    }

    /// Hashes `data` into `out`, which holds at least `algorithm.byteCount` bytes; false only when
    /// OpenSSL fails (allocation).
    static func hash(
        _ algorithm: DigestAlgorithm, _ data: UnsafeRawBufferPointer,
        into out: UnsafeMutableBufferPointer<UInt8>
    ) -> Bool {
        precondition(out.count >= algorithm.byteCount, "digest buffer too small")
        var length: UInt32 = 0
        return EVP_Digest(data.baseAddress, data.count, out.baseAddress, &length, algorithm.evpMD, nil) == 1
            && Int(length) == algorithm.byteCount
    }

    /// SHA-256 of `data`.
    public static func sha256(_ data: some ContiguousBytes) -> [UInt8] { hash(.sha256, data) }

    /// SHA-256 of the UTF-8 bytes of `text`.
    public static func sha256(_ text: String) -> [UInt8] { hash(.sha256, Array(text.utf8)) }
}

/// HMAC over SHA-2 (RFC 2104).
public enum HMAC {
    /// The MAC of `data` under `key`.
    public static func authenticate(
        _ algorithm: DigestAlgorithm, key: some ContiguousBytes, data: some ContiguousBytes
    ) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: algorithm.byteCount)
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { keyBytes in
            data.withUnsafeBytes { dataBytes in
                output.withUnsafeMutableBufferPointer { out in
                    COpenSSL.HMAC(
                        algorithm.evpMD, keyBytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
                        Int32(keyBytes.count),
                        dataBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), dataBytes.count,
                        out.baseAddress, &length)
                }
            }
        }
        precondition(result != nil && Int(length) == algorithm.byteCount, "HMAC failed")
        return output
    }
}

/// An HMAC key set up once for many MACs (RFC 2104): the digest states after absorbing the key
/// padded with ipad and with opad, computed once, so a MAC costs two copies of a state, the
/// message's blocks and one block more.
///
/// Built on digest contexts rather than OpenSSL's EVP_MAC: a keyed EVP_MAC_CTX is copied per
/// message as three digest contexts (inner, outer and working) and freed as three, about 4,000
/// instructions a MAC more, two MACs per passkey login. The two keyed states are only ever copied,
/// never changed, which OpenSSL allows from any number of threads at once; hence
/// `@unchecked Sendable`. The key exists only as those two states (as inside EVP_MAC) and the
/// padded blocks are wiped once absorbed; it stays out of every description.
public final class HMACKey: @unchecked Sendable, CustomStringConvertible {
    /// The owned `EVP_MD_CTX *` that has absorbed key ⊕ ipad; freed in `deinit`, never handed out.
    private let inner: OpaquePointer
    /// The owned `EVP_MD_CTX *` that has absorbed key ⊕ opad.
    private let outer: OpaquePointer
    private let algorithm: DigestAlgorithm

    /// Keys an HMAC over `algorithm` with `key`.
    /// - Throws: `CryptoError(.keyFailure)` when OpenSSL cannot set the contexts up.
    public init(_ algorithm: DigestAlgorithm, key: some ContiguousBytes) throws(CryptoError) {
        let md = algorithm.evpMD
        let blockSize = Int(EVP_MD_get_block_size(md))
        // RFC 2104 §2: a key longer than a block is hashed first; then zero-padded to a block.
        var block = [UInt8](repeating: 0, count: blockSize)
        key.withUnsafeBytes { raw in
            if raw.count > blockSize {
                let hashed = Digest.hash(algorithm, raw)
                block.replaceSubrange(0..<hashed.count, with: hashed)
            } else if raw.count > 0 {
                block.replaceSubrange(0..<raw.count, with: raw)
            }
        }
        defer { Self.wipe(&block) }
        func absorb(_ pad: UInt8) -> OpaquePointer? {
            guard let context = EVP_MD_CTX_new() else { return nil }
            var padded = block.map { $0 ^ pad }
            defer { Self.wipe(&padded) }
            guard EVP_DigestInit_ex(context, md, nil) == 1,
                EVP_DigestUpdate(context, padded, padded.count) == 1
            else {
                EVP_MD_CTX_free(context)
                return nil
            }
            return context
        }
        guard let inner = absorb(0x36) else {
            ERR_clear_error()
            throw CryptoError(.keyFailure, "could not key the HMAC")
        }
        guard let outer = absorb(0x5c) else {
            ERR_clear_error()
            EVP_MD_CTX_free(inner)
            throw CryptoError(.keyFailure, "could not key the HMAC")
        }
        self.inner = inner
        self.outer = outer
        self.algorithm = algorithm
    }

    deinit {
        EVP_MD_CTX_free(inner)
        EVP_MD_CTX_free(outer)
    }

    /// The MAC of `data`, equal to `HMAC.authenticate(algorithm, key:data:)` with this key.
    public func authenticate(_ data: some ContiguousBytes) -> [UInt8] {
        // One working context per message: the keyed states stay untouched for the other threads.
        guard let context = EVP_MD_CTX_new() else { preconditionFailure("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        let size = algorithm.byteCount
        var output = zeroBytes(size)
        let ok = data.withUnsafeBytes { input in
            output.withUnsafeMutableBufferPointer { out in
                var length: UInt32 = 0
                // H(K ⊕ ipad ‖ data) into `out`, then H(K ⊕ opad ‖ that) over it.
                guard EVP_MD_CTX_copy_ex(context, inner) == 1,
                    EVP_DigestUpdate(context, input.baseAddress, input.count) == 1,
                    EVP_DigestFinal_ex(context, out.baseAddress, &length) == 1, Int(length) == size,
                    EVP_MD_CTX_copy_ex(context, outer) == 1,
                    EVP_DigestUpdate(context, out.baseAddress, size) == 1,
                    EVP_DigestFinal_ex(context, out.baseAddress, &length) == 1
                else { return false }
                return Int(length) == size
            }
        }
        // Only an allocation failure makes these fail, where continuing would be unsafe.
        precondition(ok, "HMAC failed")
        return output
    }

    /// Overwrites key-derived bytes before they are freed.
    private static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
    }

    /// Names the algorithm only; the key never appears.
    public var description: String { "HMACKey(\(algorithm))" }
}

/// Comparison that takes the same time wherever the inputs differ, for secrets and MACs.
public enum ConstantTime {
    /// True when `a` and `b` hold the same bytes. Lengths are not secret; contents are.
    public static func equals(_ a: some ContiguousBytes, _ b: some ContiguousBytes) -> Bool {
        a.withUnsafeBytes { left in
            b.withUnsafeBytes { right in
                guard left.count == right.count else { return false }
                if left.isEmpty { return true }
                return CRYPTO_memcmp(left.baseAddress, right.baseAddress, left.count) == 0
            }
        }
    }
}

/// `count` zero bytes, for an output OpenSSL fills. `Array(repeating:count:)` (and
/// `init(unsafeUninitializedCapacity:)`) allocate through a generic stdlib function that looks the
/// array's type metadata up at run time, about 350 instructions more per array than this
/// specialized copy of a repeated zero: a login makes several such outputs.
func zeroBytes(_ count: Int) -> [UInt8] {
    Array(repeatElement(0, count: count))
}
