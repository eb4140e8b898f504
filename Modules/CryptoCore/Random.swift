import COpenSSL

/// A source of cryptographically secure random bytes; injected so tests can fix it.
public protocol RandomSource: Sendable {
    /// Returns `count` random bytes or throws when no secure randomness is available.
    func bytes(_ count: Int) throws(CryptoError) -> [UInt8]
}

/// Random bytes from OpenSSL's CSPRNG (RAND_bytes), seeded by the operating system.
public struct SystemRandom: RandomSource {
    /// Creates the system random source.
    public init() {}

    public func bytes(_ count: Int) throws(CryptoError) -> [UInt8] {
        precondition(count >= 0, "negative byte count")
        var buffer = [UInt8](repeating: 0, count: count)
        if count == 0 { return buffer }
        let status = buffer.withUnsafeMutableBytes { raw in
            RAND_bytes(raw.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(count))
        }
        // RAND_bytes returns 1 on success; anything else means the generator is not usable.
        guard status == 1 else { throw CryptoError(.randomFailure, "RAND_bytes failed") }
        return buffer
    }
}

extension RandomSource {
    /// A random token of `byteCount` bytes, base64url-encoded without padding.
    public func token(byteCount: Int) throws(CryptoError) -> String {
        Base64URL.encode(try bytes(byteCount))
    }
}
