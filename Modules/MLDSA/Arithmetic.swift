/// A polynomial of R_q: 256 coefficients held by the caller (ML-DSA's work space is one stack
/// allocation per verification, so no polynomial allocates).
typealias Polynomial = UnsafeMutablePointer<Int32>

/// The algorithms of FIPS 204 that verification needs, each a function named after it.
///
/// Coefficients are Int32. Products go through Montgomery reduction (factor 2³²) as in the
/// reference implementation of CRYSTALS-Dilithium, whose bounds this code keeps: every input
/// is public, so none of this needs to be constant-time.
enum FIPS204 {
    /// The modulus q = 2²³ − 2¹³ + 1.
    static let q: Int32 = 8_380_417
    /// d: the bits dropped from t (t = t₁·2^d + t₀).
    static let d: Int32 = 13
    /// Bits per packed coefficient of t₁: bitlen(q − 1) − d.
    static let t1Bits = 10
    /// q⁻¹ mod 2³², for Montgomery reduction.
    static let qInverse: Int32 = 58_728_449
    /// The coefficients of a polynomial.
    static let n = 256

    /// ζ^BitRev₈(k) mod q for k = 0 … 255 (FIPS 204 Appendix B), ζ = 1753 the 512th root of
    /// unity, kept in Montgomery form (times 2³², centred) for `montgomeryReduce`.
    static let zetas: [Int32] = (0..<256).map { k in
        let reversed = (0..<8).reduce(0) { bits, bit in bits | ((k >> bit) & 1) << (7 - bit) }
        var power: Int64 = 1
        for _ in 0..<reversed { power = power * 1753 % Int64(q) }
        var montgomery = (power << 32) % Int64(q)
        if montgomery > Int64(q / 2) { montgomery -= Int64(q) }
        return Int32(montgomery)
    }

    // MARK: Modular arithmetic

    /// a·2⁻³² mod q, in (−q, q), for |a| < 2³¹·q.
    @inline(__always)
    static func montgomeryReduce(_ a: Int64) -> Int32 {
        let t = Int32(truncatingIfNeeded: a) &* qInverse
        return Int32(truncatingIfNeeded: (a &- Int64(t) &* Int64(q)) >> 32)
    }

    /// A representative of a mod q in [−6283008, 6283008], for a up to 2³¹ − 2²² − 1.
    @inline(__always)
    static func reduce32(_ a: Int32) -> Int32 {
        let t = (a &+ (1 << 22)) >> 23
        return a &- t &* q
    }

    /// a + q when a is negative: (−q, q) onto [0, q).
    @inline(__always)
    static func conditionalAddQ(_ a: Int32) -> Int32 {
        a &+ ((a >> 31) & q)
    }

    // MARK: NTT (Algorithms 41, 42)

    /// Algorithm 41, NTT: w in place becomes ŵ. No reduction between layers: each adds less than
    /// q to the bound, so inputs below 2²³ leave outputs below 2²³ + 8q.
    static func ntt(_ w: Polynomial) {
        zetas.withUnsafeBufferPointer { zetas in
            var m = 0
            var length = 128
            while length > 0 {
                var start = 0
                while start < 256 {
                    m += 1
                    let z = Int64(zetas[m])
                    for j in start..<(start + length) {
                        let t = montgomeryReduce(z &* Int64(w[j + length]))
                        w[j + length] = w[j] &- t
                        w[j] = w[j] &+ t
                    }
                    start += 2 * length
                }
                length >>= 1
            }
        }
    }

    /// Algorithm 42, NTT⁻¹, times 2³² (which cancels the 2⁻³² of a Montgomery product): ŵ in
    /// place becomes w. Inputs must be below q in absolute value; outputs are in (−q, q).
    static func inverseNTT(_ w: Polynomial) {
        // 2⁶⁴/256 mod q: the 1/256 of NTT⁻¹, Montgomery-scaled twice (2³² for the final reduce,
        // 2³² to undo the Montgomery product that came before).
        let f: Int64 = 41978
        zetas.withUnsafeBufferPointer { zetas in
            var m = 256
            var length = 1
            while length < 256 {
                var start = 0
                while start < 256 {
                    m -= 1
                    let z = -Int64(zetas[m])
                    for j in start..<(start + length) {
                        let t = w[j]
                        w[j] = t &+ w[j + length]
                        w[j + length] = montgomeryReduce(z &* Int64(t &- w[j + length]))
                    }
                    start += 2 * length
                }
                length <<= 1
            }
        }
        for j in 0..<256 { w[j] = montgomeryReduce(f &* Int64(w[j])) }
    }

    /// Algorithm 45, MultiplyNTT, accumulated: ĉ += â ∘ b̂ coefficient-wise, as Montgomery products.
    @inline(__always)
    static func multiplyNTTAccumulate(_ a: Polynomial, _ b: Polynomial, into c: Polynomial) {
        for j in 0..<256 { c[j] = c[j] &+ montgomeryReduce(Int64(a[j]) &* Int64(b[j])) }
    }

    // MARK: Rounding (Algorithms 36, 40)

    /// Algorithm 36, Decompose: r (in [0, q)) as r₁·2γ₂ + r₀ with r₀ = r mod± 2γ₂, and the one
    /// exception r − r₀ = q − 1 folded to r₁ = 0, r₀ − 1.
    @inline(__always)
    static func decompose(_ r: Int32, gamma2: Int32) -> (r1: Int32, r0: Int32) {
        var r0 = r % (2 * gamma2)
        if r0 > gamma2 { r0 -= 2 * gamma2 }
        if r - r0 == q - 1 { return (0, r0 - 1) }
        return ((r - r0) / (2 * gamma2), r0)
    }

    /// Algorithm 40, UseHint: the high bits of r, moved one step up or down (mod m) by a hint.
    @inline(__always)
    static func useHint(_ h: Bool, _ r: Int32, gamma2: Int32) -> Int32 {
        let m = (q - 1) / (2 * gamma2)
        let (r1, r0) = decompose(r, gamma2: gamma2)
        guard h else { return r1 }
        return r0 > 0 ? (r1 + 1) % m : (r1 - 1 + m) % m
    }
}
