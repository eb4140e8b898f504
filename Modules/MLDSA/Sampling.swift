// Pseudorandom sampling from ρ and c̃ (FIPS 204 §7.3).

extension FIPS204 {
    /// Algorithm 14, CoeffFromThreeBytes: a 23-bit value from three bytes (top bit of the third
    /// dropped), or nil (⊥) when it is not below q.
    @inline(__always)
    static func coeffFromThreeBytes(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8) -> Int32? {
        let z = Int32(b2 & 0x7F) << 16 | Int32(b1) << 8 | Int32(b0)
        return z < q ? z : nil
    }

    /// Algorithm 29, SampleInBall: the challenge c, τ coefficients ±1 and the rest 0, from c̃.
    static func sampleInBall(_ rho: UnsafeRawBufferPointer, tau: Int, into c: Polynomial) {
        c.initialize(repeating: 0, count: 256)
        var shake = SHAKE.shake256()
        shake.absorb(rho)
        // The first 8 bytes are the signs, one bit per nonzero coefficient.
        var signs: UInt64 = 0
        withUnsafeMutableBytes(of: &signs) { shake.squeeze(into: $0) }
        signs = UInt64(littleEndian: signs)
        var j: UInt8 = 0
        for i in (256 - tau)..<256 {
            // Rejection sampling: a position in 0 … i.
            repeat {
                withUnsafeMutableBytes(of: &j) { shake.squeeze(into: $0) }
            } while Int(j) > i
            c[i] = c[Int(j)]
            c[Int(j)] = 1 - 2 * Int32(truncatingIfNeeded: (signs >> UInt64(i + tau - 256)) & 1)
        }
    }

    /// Algorithm 30, RejNTTPoly: a uniform polynomial of T_q (already in the NTT domain) from
    /// the 34-byte seed ρ ‖ s ‖ r, three SHAKE128 bytes per candidate coefficient.
    ///
    /// Output is squeezed a whole block (168 bytes, 56 candidates) at a time: the same stream as
    /// three bytes at a time, with fewer calls; bytes left when 256 are found are never used.
    static func rejNTTPoly(_ seed: UnsafeRawBufferPointer, into a: Polynomial) {
        var shake = SHAKE.shake128()
        shake.absorb(seed)
        withUnsafeTemporaryAllocation(byteCount: SHAKE.rate128, alignment: 8) { block in
            var j = 0
            while j < 256 {
                shake.squeeze(into: block)
                var position = 0
                while position < SHAKE.rate128, j < 256 {
                    if let coefficient = coeffFromThreeBytes(
                        block[position], block[position + 1], block[position + 2])
                    {
                        a[j] = coefficient
                        j += 1
                    }
                    position += 3
                }
            }
        }
    }

    /// Algorithm 32, ExpandA, one entry: Â[r, s] = RejNTTPoly(ρ ‖ s ‖ r).
    ///
    /// Verification uses each entry once, row by row, so entries are made as they are needed
    /// instead of all k·ℓ up front: 1 kB of work space instead of up to 56 kB.
    static func expandA(_ rho: UnsafeRawBufferPointer, row r: Int, column s: Int, into a: Polynomial) {
        withUnsafeTemporaryAllocation(byteCount: 34, alignment: 1) { seed in
            seed.copyMemory(from: rho)
            seed[32] = UInt8(s)
            seed[33] = UInt8(r)
            rejNTTPoly(UnsafeRawBufferPointer(seed), into: a)
        }
    }

    /// H (FIPS 204 §3.7): SHAKE256 of the concatenated inputs, `count` bytes.
    static func h(_ inputs: UnsafeRawBufferPointer..., count: Int) -> [UInt8] {
        var shake = SHAKE.shake256()
        for input in inputs { shake.absorb(input) }
        return shake.squeeze(count: count)
    }
}
