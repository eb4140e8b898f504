/// The checks an Ed25519 public key must pass before Portvakt verifies with it.
///
/// OpenSSL decodes the point only while verifying and accepts the eight points of small order
/// (the identity, the point of order 2, two of order 4, four of order 8). Under such a key a
/// signature that holds for every message is easy to make: with the identity, R = identity and
/// S = 0 verify for anything (OpenSSL 3.0 says "Signature Verified Successfully"). RFC 8032
/// §5.1.7 does not exclude such keys; libsodium refuses them as public keys, and so do we.
enum Ed25519KeyCheck {
    /// The curve's prime p = 2²⁵⁵ − 19, little-endian, as RFC 8032 encodes field elements.
    static let prime: [UInt8] = [0xed] + [UInt8](repeating: 0xff, count: 30) + [0x7f]

    /// The y coordinates (canonical, little-endian, sign bit clear) of the eight small-order points.
    ///
    /// Eight points, five y values: y = 1 is the identity, y = p − 1 the point of order 2, y = 0
    /// the two of order 4 (x = ±√−1), and the last two each carry two points of order 8 (x and −x);
    /// the two order-8 values add up to p.
    static let smallOrderY: [[UInt8]] = [
        [0x01] + [UInt8](repeating: 0, count: 31),
        [0xec] + [UInt8](repeating: 0xff, count: 30) + [0x7f],
        [UInt8](repeating: 0, count: 32),
        [
            0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0,
            0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05,
        ],
        [
            0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f,
            0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a,
        ],
    ]

    /// Refuses a 32-byte encoding whose point has small order, in any of its encodings, and any
    /// encoding with y ≥ p.
    ///
    /// The sign bit is ignored and y is reduced mod p before the comparison, so the forms a lax
    /// decoder might still accept (x = 0 with the sign bit set, y + p for y = 0 and y = 1) are
    /// caught with the canonical ones. Public keys are not secret: plain comparisons are fine.
    /// - Throws: `CryptoError` `.smallOrderKey` for a small-order point, `.invalidPublicKey` for
    ///   y ≥ p otherwise (RFC 8032 §5.1.3: decoding fails).
    static func check(_ encoded: [UInt8]) throws(CryptoError) {
        guard encoded.count == 32 else {
            throw CryptoError(.invalidPublicKey, "an Ed25519 public key is exactly 32 bytes")
        }
        var y = encoded
        y[31] &= 0x7f
        let canonical = !isAtLeastPrime(y)
        // Only p … 2²⁵⁵ − 1 are out of range, so y − p = y[0] − 0xed with every other byte zero.
        if !canonical {
            y = [y[0] - 0xed] + [UInt8](repeating: 0, count: 31)
        }
        if smallOrderY.contains(y) {
            throw CryptoError(.smallOrderKey, "the Ed25519 public key is a point of small order")
        }
        guard canonical else {
            throw CryptoError(.invalidPublicKey, "the Ed25519 public key's y is not below p")
        }
    }

    /// Whether the little-endian 255-bit value `y` is p or more.
    private static func isAtLeastPrime(_ y: [UInt8]) -> Bool {
        // From the most significant byte down: the first difference decides.
        for index in stride(from: 31, through: 0, by: -1) where y[index] != prime[index] {
            return y[index] > prime[index]
        }
        return true
    }
}
