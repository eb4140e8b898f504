/// The Keccak-f[1600] permutation and the SHAKE128/SHAKE256 sponges (FIPS 202) ML-DSA hashes with.
///
/// Written here rather than taken from OpenSSL because ML-DSA squeezes incrementally (RejNTTPoly
/// and SampleInBall read a few bytes at a time until they have enough), and OpenSSL 3.0's SHAKE
/// has only one-shot output (EVP_DigestFinalXOF; EVP_DigestSqueeze arrived in 3.3). Tests check
/// both sponges against OpenSSL's SHAKE128 and SHAKE256 output.

/// One Keccak-f[1600] state: 25 lanes of 64 bits, lane (x, y) at index x + 5y (FIPS 202 §3.1.2).
struct KeccakState {
    /// The 25 lanes, in a tuple so the state lives inline (on the stack) with no allocation.
    var lanes:
        (
            UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
            UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
            UInt64
        ) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    /// The round constants RC[i] of the ι step (FIPS 202 §3.2.5), from the rc(t) LFSR.
    static let roundConstants: [UInt64] = [
        0x0000000000000001, 0x0000000000008082, 0x800000000000808A,
        0x8000000080008000, 0x000000000000808B, 0x0000000080000001,
        0x8000000080008081, 0x8000000000008009, 0x000000000000008A,
        0x0000000000000088, 0x0000000080008009, 0x000000008000000A,
        0x000000008000808B, 0x800000000000008B, 0x8000000000008089,
        0x8000000000008003, 0x8000000000008002, 0x8000000000000080,
        0x000000000000800A, 0x800000008000000A, 0x8000000080008081,
        0x8000000000008080, 0x0000000080000001, 0x8000000080008008,
    ]

    /// Keccak-p[1600, 24] (FIPS 202 §3.3): 24 rounds of θ, ρ, π, χ and ι.
    ///
    /// The lanes are loaded into locals and each round is written out lane by lane (generated, not
    /// hand-typed), so the compiler keeps the state in registers: the permutation is most of an
    /// ML-DSA verification's time.
    /// Permutes the state `raw` views (a `lanes` tuple's bytes, bound to UInt64): the sponge works
    /// on the bytes and permutes without letting go of them.
    static func permute(_ raw: UnsafeMutableRawBufferPointer) {
        let lanes = raw.baseAddress!.assumingMemoryBound(to: UInt64.self)
        var a0 = lanes[0]
        var a1 = lanes[1]
        var a2 = lanes[2]
        var a3 = lanes[3]
        var a4 = lanes[4]
        var a5 = lanes[5]
        var a6 = lanes[6]
        var a7 = lanes[7]
        var a8 = lanes[8]
        var a9 = lanes[9]
        var a10 = lanes[10]
        var a11 = lanes[11]
        var a12 = lanes[12]
        var a13 = lanes[13]
        var a14 = lanes[14]
        var a15 = lanes[15]
        var a16 = lanes[16]
        var a17 = lanes[17]
        var a18 = lanes[18]
        var a19 = lanes[19]
        var a20 = lanes[20]
        var a21 = lanes[21]
        var a22 = lanes[22]
        var a23 = lanes[23]
        var a24 = lanes[24]
        // Read once per permutation, not through the global's accessor in every round.
        let roundConstants = Self.roundConstants
        for round in 0..<24 {
            // θ: each column's parity folded into its neighbours.
            let c0 = a0 ^ a5 ^ a10 ^ a15 ^ a20
            let c1 = a1 ^ a6 ^ a11 ^ a16 ^ a21
            let c2 = a2 ^ a7 ^ a12 ^ a17 ^ a22
            let c3 = a3 ^ a8 ^ a13 ^ a18 ^ a23
            let c4 = a4 ^ a9 ^ a14 ^ a19 ^ a24
            let d0 = c4 ^ rotl(c1, 1)
            let d1 = c0 ^ rotl(c2, 1)
            let d2 = c1 ^ rotl(c3, 1)
            let d3 = c2 ^ rotl(c4, 1)
            let d4 = c3 ^ rotl(c0, 1)
            // ρ and π: every lane rotated by its offset and moved to its new position.
            let b0 = (a0 ^ d0)
            let b1 = rotl((a6 ^ d1), 44)
            let b2 = rotl((a12 ^ d2), 43)
            let b3 = rotl((a18 ^ d3), 21)
            let b4 = rotl((a24 ^ d4), 14)
            let b5 = rotl((a3 ^ d3), 28)
            let b6 = rotl((a9 ^ d4), 20)
            let b7 = rotl((a10 ^ d0), 3)
            let b8 = rotl((a16 ^ d1), 45)
            let b9 = rotl((a22 ^ d2), 61)
            let b10 = rotl((a1 ^ d1), 1)
            let b11 = rotl((a7 ^ d2), 6)
            let b12 = rotl((a13 ^ d3), 25)
            let b13 = rotl((a19 ^ d4), 8)
            let b14 = rotl((a20 ^ d0), 18)
            let b15 = rotl((a4 ^ d4), 27)
            let b16 = rotl((a5 ^ d0), 36)
            let b17 = rotl((a11 ^ d1), 10)
            let b18 = rotl((a17 ^ d2), 15)
            let b19 = rotl((a23 ^ d3), 56)
            let b20 = rotl((a2 ^ d2), 62)
            let b21 = rotl((a8 ^ d3), 55)
            let b22 = rotl((a14 ^ d4), 39)
            let b23 = rotl((a15 ^ d0), 41)
            let b24 = rotl((a21 ^ d1), 2)
            // χ: the only non-linear step, along each row.
            a0 = b0 ^ (~b1 & b2)
            a1 = b1 ^ (~b2 & b3)
            a2 = b2 ^ (~b3 & b4)
            a3 = b3 ^ (~b4 & b0)
            a4 = b4 ^ (~b0 & b1)
            a5 = b5 ^ (~b6 & b7)
            a6 = b6 ^ (~b7 & b8)
            a7 = b7 ^ (~b8 & b9)
            a8 = b8 ^ (~b9 & b5)
            a9 = b9 ^ (~b5 & b6)
            a10 = b10 ^ (~b11 & b12)
            a11 = b11 ^ (~b12 & b13)
            a12 = b12 ^ (~b13 & b14)
            a13 = b13 ^ (~b14 & b10)
            a14 = b14 ^ (~b10 & b11)
            a15 = b15 ^ (~b16 & b17)
            a16 = b16 ^ (~b17 & b18)
            a17 = b17 ^ (~b18 & b19)
            a18 = b18 ^ (~b19 & b15)
            a19 = b19 ^ (~b15 & b16)
            a20 = b20 ^ (~b21 & b22)
            a21 = b21 ^ (~b22 & b23)
            a22 = b22 ^ (~b23 & b24)
            a23 = b23 ^ (~b24 & b20)
            a24 = b24 ^ (~b20 & b21)
            // ι: breaks the symmetry between rounds.
            a0 ^= roundConstants[round]
        }
        lanes[0] = a0
        lanes[1] = a1
        lanes[2] = a2
        lanes[3] = a3
        lanes[4] = a4
        lanes[5] = a5
        lanes[6] = a6
        lanes[7] = a7
        lanes[8] = a8
        lanes[9] = a9
        lanes[10] = a10
        lanes[11] = a11
        lanes[12] = a12
        lanes[13] = a13
        lanes[14] = a14
        lanes[15] = a15
        lanes[16] = a16
        lanes[17] = a17
        lanes[18] = a18
        lanes[19] = a19
        lanes[20] = a20
        lanes[21] = a21
        lanes[22] = a22
        lanes[23] = a23
        lanes[24] = a24
    }

    @inline(__always)
    private static func rotl(_ value: UInt64, _ count: UInt64) -> UInt64 {
        (value << count) | (value >> (64 - count))
    }
}

/// A SHAKE sponge (FIPS 202 §6.2): absorb any number of byte runs, then squeeze any number of
/// bytes in as many calls as needed, each continuing where the last stopped.
///
/// Lanes are XORed and read as little-endian bytes in place: FIPS 202's byte order, and the order
/// of every Linux target Swift supports (x86_64, aarch64).
struct SHAKE {
    /// SHAKE128's rate: 1600 − 2·128 bits, 168 bytes.
    static let rate128 = 168
    /// SHAKE256's rate: 1600 − 2·256 bits, 136 bytes.
    static let rate256 = 136

    private var state = KeccakState()
    /// Bytes per block: the rate.
    private let rate: Int
    /// The next byte of the block to absorb into or squeeze from.
    private var offset = 0
    /// False while absorbing, true once padded and squeezing.
    private var squeezing = false

    /// A fresh SHAKE128 sponge (ML-DSA's G).
    static func shake128() -> SHAKE { SHAKE(rate: rate128) }
    /// A fresh SHAKE256 sponge (ML-DSA's H).
    static func shake256() -> SHAKE { SHAKE(rate: rate256) }

    private init(rate: Int) { self.rate = rate }

    /// Absorbs `bytes`; must come before the first squeeze.
    mutating func absorb(_ bytes: UnsafeRawBufferPointer) {
        precondition(!squeezing, "SHAKE: absorb after squeeze")
        var index = 0
        let rate = self.rate
        withUnsafeMutableBytes(of: &state.lanes) { lanes in
            while index < bytes.count {
                let run = min(rate - offset, bytes.count - index)
                for position in 0..<run { lanes[offset + position] ^= bytes[index + position] }
                offset += run
                index += run
                if offset == rate {
                    KeccakState.permute(lanes)
                    offset = 0
                }
            }
        }
    }

    /// Absorbs the bytes of an array.
    mutating func absorb(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { absorb($0) }
    }

    /// Absorbs one byte.
    mutating func absorb(byte: UInt8) {
        withUnsafeBytes(of: byte) { absorb($0) }
    }

    /// Fills `out` with the next `out.count` bytes of output.
    mutating func squeeze(into out: UnsafeMutableRawBufferPointer) {
        let rate = self.rate
        withUnsafeMutableBytes(of: &state.lanes) { lanes in
            if !squeezing {
                // pad10*1 after SHAKE's domain bits 1111 (FIPS 202 §6.2, B.2): 0x1F … 0x80.
                lanes[offset] ^= 0x1F
                lanes[rate - 1] ^= 0x80
                KeccakState.permute(lanes)
                offset = 0
                squeezing = true
            }
            var index = 0
            while index < out.count {
                if offset == rate {
                    KeccakState.permute(lanes)
                    offset = 0
                }
                let run = min(rate - offset, out.count - index)
                (out.baseAddress! + index).copyMemory(from: lanes.baseAddress! + offset, byteCount: run)
                offset += run
                index += run
            }
        }
    }

    /// The next `count` bytes of output as an array.
    mutating func squeeze(count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { squeeze(into: $0) }
        return out
    }
}
