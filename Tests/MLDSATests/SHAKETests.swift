import COpenSSL
import Testing

@testable import MLDSA

/// The Swift Keccak sponge against OpenSSL's SHAKE128 and SHAKE256 (one-shot EVP_DigestFinalXOF).
@Suite("SHAKE against OpenSSL")
struct SHAKETests {
    /// OpenSSL's SHAKE output of `input`, `count` bytes.
    static func openSSL(_ input: [UInt8], count: Int, shake256: Bool) -> [UInt8] {
        let context = EVP_MD_CTX_new()!
        defer { EVP_MD_CTX_free(context) }
        var out = [UInt8](repeating: 0, count: count)
        #expect(EVP_DigestInit_ex(context, shake256 ? EVP_shake256() : EVP_shake128(), nil) == 1)
        #expect(EVP_DigestUpdate(context, input, input.count) == 1)
        #expect(EVP_DigestFinalXOF(context, &out, count) == 1)
        return out
    }

    /// Lengths around both rates (136 and 168 bytes), where padding and block changes happen.
    static let lengths = [0, 1, 3, 135, 136, 137, 167, 168, 169, 335, 336, 337, 1000]

    @Test("SHAKE128 and SHAKE256 give OpenSSL's output for inputs around the rate", arguments: [false, true])
    func matchesOpenSSL(shake256: Bool) {
        for length in Self.lengths {
            let input = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
            var shake = shake256 ? SHAKE.shake256() : SHAKE.shake128()
            shake.absorb(input)
            #expect(shake.squeeze(count: 500) == Self.openSSL(input, count: 500, shake256: shake256))
        }
    }

    @Test("absorbing and squeezing in pieces gives the one-shot stream", arguments: [false, true])
    func incremental(shake256: Bool) {
        let input = (0..<700).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        var shake = shake256 ? SHAKE.shake256() : SHAKE.shake128()
        var offset = 0
        for piece in [0, 1, 2, 135, 33, 168, 361] {
            shake.absorb(Array(input[offset..<(offset + piece)]))
            offset += piece
        }
        #expect(offset == input.count)
        var out: [UInt8] = []
        for piece in [1, 7, 128, 8, 300, 168, 3, 1] { out += shake.squeeze(count: piece) }
        #expect(out == Self.openSSL(input, count: out.count, shake256: shake256))
    }
}

/// The NTT and its constants, against values fixed by FIPS 204 and the reference implementation.
@Suite("FIPS 204 arithmetic")
struct ArithmeticTests {
    @Test("the first NTT constants are the reference implementation's (Montgomery form of ζ^brv(k))")
    func zetas() {
        // Entry 0 (ζ⁰ = 1) is never used by the NTT; the reference table holds 0 there.
        #expect(FIPS204.zetas[1..<6] == [25847, -2_608_894, -518_909, 237_124, -777_960])
    }

    @Test("NTT⁻¹(NTT(a)) is a·2³² mod q, and the NTT turns products into coefficient-wise ones")
    func roundTrip() {
        let q = Int64(FIPS204.q)
        let a = (0..<256).map { Int32(($0 * 7919 + 3) % Int(FIPS204.q)) }
        let b = (0..<256).map { Int32(($0 * 104_729 + 11) % 1000) - 500 }
        var w = a
        w.withUnsafeMutableBufferPointer {
            FIPS204.ntt($0.baseAddress!)
            for j in 0..<256 { $0[j] = FIPS204.reduce32($0[j]) }
            FIPS204.inverseNTT($0.baseAddress!)
        }
        let r32 = (Int64(1) << 32) % q
        for j in 0..<256 { #expect(((Int64(w[j]) - Int64(a[j]) * r32) % q + q) % q == 0) }

        // a·b in R_q the slow way (negacyclic: x²⁵⁶ = −1), then through the NTT.
        var slow = [Int64](repeating: 0, count: 256)
        for i in 0..<256 {
            for j in 0..<256 {
                let product = Int64(a[i]) * Int64(b[j]) % q
                if i + j < 256 { slow[i + j] += product } else { slow[i + j - 256] -= product }
            }
        }
        var aHat = a
        var bHat = b
        var product = [Int32](repeating: 0, count: 256)
        aHat.withUnsafeMutableBufferPointer { x in
            bHat.withUnsafeMutableBufferPointer { y in
                product.withUnsafeMutableBufferPointer { p in
                    FIPS204.ntt(x.baseAddress!)
                    FIPS204.ntt(y.baseAddress!)
                    for j in 0..<256 {
                        x[j] = FIPS204.reduce32(x[j])
                        y[j] = FIPS204.reduce32(y[j])
                    }
                    FIPS204.multiplyNTTAccumulate(x.baseAddress!, y.baseAddress!, into: p.baseAddress!)
                    FIPS204.inverseNTT(p.baseAddress!)
                }
            }
        }
        for j in 0..<256 { #expect(((Int64(product[j]) - slow[j]) % q + q) % q == 0) }
    }

    @Test("Decompose and UseHint follow Algorithms 36 and 40 at the edges")
    func rounding() {
        let q = FIPS204.q
        for gamma2 in [(q - 1) / 88, (q - 1) / 32] {
            let m = (q - 1) / (2 * gamma2)
            // r − r₀ = q − 1 folds to r₁ = 0.
            #expect(FIPS204.decompose(q - 1, gamma2: gamma2) == (0, -1))
            #expect(FIPS204.decompose(0, gamma2: gamma2) == (0, 0))
            #expect(FIPS204.decompose(gamma2, gamma2: gamma2) == (0, gamma2))
            #expect(FIPS204.decompose(gamma2 + 1, gamma2: gamma2) == (1, -gamma2 + 1))
            // A hint moves r₁ up for r₀ > 0 and down (mod m) otherwise.
            #expect(FIPS204.useHint(true, 1, gamma2: gamma2) == 1)
            #expect(FIPS204.useHint(true, 0, gamma2: gamma2) == m - 1)
            #expect(FIPS204.useHint(false, 0, gamma2: gamma2) == 0)
            #expect(FIPS204.useHint(true, q - 2 * gamma2 + 1, gamma2: gamma2) == 0)
        }
    }
}
