// Bit packing and the key and signature encodings (FIPS 204 §7.1, §7.2).

extension FIPS204 {
    /// Algorithm 16, SimpleBitPack, for one polynomial whose coefficients are in [0, 2^bits):
    /// each coefficient's bits in turn, least significant first, 32·bits bytes in all.
    static func simpleBitPack(_ w: Polynomial, bits: Int, into out: UnsafeMutableRawBufferPointer) {
        var accumulator: UInt64 = 0
        var held = 0
        var index = 0
        for i in 0..<256 {
            accumulator |= UInt64(UInt32(bitPattern: w[i])) &<< UInt64(held)
            held += bits
            while held >= 8 {
                out[index] = UInt8(truncatingIfNeeded: accumulator)
                accumulator >>= 8
                held -= 8
                index += 1
            }
        }
    }

    /// Algorithm 18, SimpleBitUnpack: 256 coefficients of `bits` bits each from 32·bits bytes.
    ///
    /// Every bit pattern decodes (the range is a power of two), so this cannot fail.
    static func simpleBitUnpack(_ v: UnsafeRawBufferPointer, bits: Int, into w: Polynomial) {
        // Masking shifts (&<<, &>>): every count here is below 64, and the checked ones cost more
        // than the rest of the loop.
        let mask: UInt64 = (1 &<< UInt64(bits)) - 1
        var accumulator: UInt64 = 0
        var held = 0
        var index = 0
        for i in 0..<256 {
            while held < bits {
                accumulator |= UInt64(v[index]) &<< UInt64(held)
                index += 1
                held += 8
            }
            w[i] = Int32(truncatingIfNeeded: accumulator & mask)
            accumulator = accumulator &>> UInt64(bits)
            held -= bits
        }
    }

    /// Algorithm 19, BitUnpack with a = b − 1: coefficients b − x for each `bits`-bit x, so in
    /// [b − 2^bits + 1, b]. (Used for z, with b = γ₁ and bits = bitlen(2γ₁ − 1).)
    static func bitUnpack(_ v: UnsafeRawBufferPointer, b: Int32, bits: Int, into w: Polynomial) {
        simpleBitUnpack(v, bits: bits, into: w)
        for i in 0..<256 { w[i] = b - w[i] }
    }

    /// Algorithm 21, HintBitUnpack: the k hint polynomials (one 0/1 byte per coefficient) from
    /// ω + k bytes, or false (⊥) when the encoding is not the one HintBitPack produces.
    ///
    /// The last k bytes are each polynomial's running end index into the first ω; the indices
    /// of one polynomial must strictly increase, the ends must not decrease or pass ω, and the
    /// unused tail must be zero. Each rule makes the encoding unique: a second valid encoding of
    /// the same hints would make signatures malleable (FIPS 204 §3.6.2, strong unforgeability).
    static func hintBitUnpack(
        _ y: UnsafeRawBufferPointer, k: Int, omega: Int, into h: UnsafeMutablePointer<UInt8>
    ) -> Bool {
        h.initialize(repeating: 0, count: k * 256)
        var index = 0
        for i in 0..<k {
            let end = Int(y[omega + i])
            guard end >= index, end <= omega else { return false }
            let first = index
            while index < end {
                if index > first, y[index - 1] >= y[index] { return false }
                h[i * 256 + Int(y[index])] = 1
                index += 1
            }
        }
        for i in index..<omega where y[i] != 0 { return false }
        return true
    }

    /// Algorithm 23, pkDecode: ρ (the first 32 bytes, returned as a slice of `pk`) and t₁, k
    /// polynomials of 10-bit coefficients, into `t1`.
    static func pkDecode(
        _ pk: UnsafeRawBufferPointer, _ parameters: MLDSAParameterSet, t1: Polynomial
    ) -> UnsafeRawBufferPointer {
        let rho = UnsafeRawBufferPointer(rebasing: pk[0..<32])
        let size = 32 * t1Bits
        for i in 0..<parameters.k {
            let start = 32 + i * size
            simpleBitUnpack(
                UnsafeRawBufferPointer(rebasing: pk[start..<(start + size)]), bits: t1Bits, into: t1 + i * 256
            )
        }
        return rho
    }

    /// Algorithm 27, sigDecode: c̃ (returned as a slice of `sigma`), z into `z` (ℓ polynomials)
    /// and the hints into `h` (k·256 bytes); nil when the hint encoding is invalid (⊥).
    static func sigDecode(
        _ sigma: UnsafeRawBufferPointer, _ parameters: MLDSAParameterSet, z: Polynomial,
        h: UnsafeMutablePointer<UInt8>
    ) -> UnsafeRawBufferPointer? {
        let cTildeEnd = parameters.cTildeByteCount
        let size = 32 * parameters.zBits
        for i in 0..<parameters.l {
            let start = cTildeEnd + i * size
            bitUnpack(
                UnsafeRawBufferPointer(rebasing: sigma[start..<(start + size)]), b: parameters.gamma1,
                bits: parameters.zBits, into: z + i * 256)
        }
        let hintStart = cTildeEnd + parameters.l * size
        let hints = UnsafeRawBufferPointer(rebasing: sigma[hintStart..<sigma.count])
        guard hintBitUnpack(hints, k: parameters.k, omega: parameters.omega, into: h) else { return nil }
        return UnsafeRawBufferPointer(rebasing: sigma[0..<cTildeEnd])
    }

    /// Algorithm 28, w1Encode, for one polynomial of w₁ (the encoding of the vector is the
    /// concatenation): SimpleBitPack with bitlen((q − 1)/(2γ₂) − 1) bits per coefficient.
    static func w1Encode(
        _ w1: Polynomial, _ parameters: MLDSAParameterSet, into out: UnsafeMutableRawBufferPointer
    ) {
        simpleBitPack(w1, bits: parameters.w1Bits, into: out)
    }
}
