/// The eight Ed25519 points of small order, in every 32-byte encoding a lax decoder might take.
///
/// Computed outside the code under test (Python, from the curve equation: each point P satisfies
/// 8·P = O, and its order is the smallest n in 1, 2, 4, 8 with n·P = O). Little-endian y with the
/// sign of x in the top bit, as RFC 8032 §5.1.2 encodes points. The non-canonical forms are y + p
/// (only y = 0 and y = 1 have one below 2²⁵⁵) and x = 0 with the sign bit set, which RFC 8032
/// §5.1.3 says must fail to decode but ref10-style decoders read as the point with x = 0.
enum SmallOrderEd25519 {
    /// (what the encoding is, its hex).
    static let encodings: [(name: String, hex: String)] = [
        ("identity (order 1)", "0100000000000000000000000000000000000000000000000000000000000000"),
        ("identity, sign bit set", "0100000000000000000000000000000000000000000000000000000000000080"),
        ("identity as y = p + 1", "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
        (
            "identity as y = p + 1, sign bit set",
            "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
        ),
        ("(0, −1), order 2", "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
        ("(0, −1), sign bit set", "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"),
        ("all zero: (√−1, 0), order 4", "0000000000000000000000000000000000000000000000000000000000000000"),
        ("(−√−1, 0), order 4", "0000000000000000000000000000000000000000000000000000000000000080"),
        ("(√−1, 0) as y = p", "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
        ("(−√−1, 0) as y = p", "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"),
        ("order 8, first y, x even", "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"),
        ("order 8, first y, x odd", "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85"),
        ("order 8, second y, x even", "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"),
        ("order 8, second y, x odd", "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa"),
    ]

    /// A point of large order given with y = 3 + p instead of y = 3: on the curve, but not canonical.
    static let nonCanonicalY3 = "f0ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"
    /// The same point, canonically encoded: a valid key.
    static let canonicalY3 = "0300000000000000000000000000000000000000000000000000000000000000"
}
