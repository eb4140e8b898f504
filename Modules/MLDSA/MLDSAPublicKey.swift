/// An ML-DSA public key (FIPS 204), checked for length and ready to verify with.
///
/// Verification only: Portvakt never signs with ML-DSA, so key generation and signing are not
/// here. Every input of verification is public (key, message, signature), so the code does not
/// need to be, and is not, constant-time.
public struct MLDSAPublicKey: Sendable, Hashable {
    /// The parameter set the key belongs to.
    public let parameterSet: MLDSAParameterSet
    /// The encoded key, pkEncode(ρ, t₁) (FIPS 204 Algorithm 22).
    public let encoded: [UInt8]

    /// Takes an encoded public key; nil unless it has the parameter set's exact length.
    ///
    /// Any bytes of the right length are a valid key (ρ is any 32 bytes, every 10-bit t₁
    /// coefficient is in range), so the length is the whole check.
    public init?(parameterSet: MLDSAParameterSet, encoded: [UInt8]) {
        guard encoded.count == parameterSet.publicKeyByteCount else { return nil }
        self.parameterSet = parameterSet
        self.encoded = encoded
    }

    /// Algorithm 3, ML-DSA.Verify: whether `signature` is this key's signature of `message`
    /// under `context` (pure ML-DSA, not HashML-DSA).
    ///
    /// - Parameters:
    ///   - signature: The encoded signature; any other length than the parameter set's is false.
    ///   - message: The signed message.
    ///   - context: The context string, at most 255 bytes (empty for COSE and WebAuthn).
    /// - Returns: True only for a valid signature; never traps on malformed input.
    public func verify(
        signature: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer,
        context: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)
    ) -> Bool {
        guard context.count <= 255 else { return false }
        // M′ = IntegerToBytes(0, 1) ‖ IntegerToBytes(|ctx|, 1) ‖ ctx ‖ M.
        var messagePrime: [UInt8] = [0, UInt8(context.count)]
        messagePrime.reserveCapacity(2 + context.count + message.count)
        messagePrime.append(contentsOf: context)
        messagePrime.append(contentsOf: message)
        return encoded.withUnsafeBytes { pk in
            messagePrime.withUnsafeBytes { m in
                Self.verifyInternal(pk: pk, message: m, signature: signature, parameterSet)
            }
        }
    }

    /// `verify` over arrays.
    public func verify(signature: [UInt8], message: [UInt8], context: [UInt8] = []) -> Bool {
        signature.withUnsafeBytes { s in
            message.withUnsafeBytes { m in
                context.withUnsafeBytes { c in verify(signature: s, message: m, context: c) }
            }
        }
    }

    /// Algorithm 8, ML-DSA.Verify_internal, on the formatted message M′.
    ///
    /// Its steps in order, with two liberties that change no answer: ‖z‖∞ is checked right after
    /// decoding (a signature that fails it costs nothing more), and Â, t₁·2^d and w are handled a
    /// row at a time, each row's w₁ encoding absorbed into H(μ ‖ w1Encode(w₁)) as it is made.
    static func verifyInternal(
        pk: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer, signature: UnsafeRawBufferPointer,
        _ parameters: MLDSAParameterSet
    ) -> Bool {
        guard pk.count == parameters.publicKeyByteCount, signature.count == parameters.signatureByteCount
        else { return false }
        let k = parameters.k
        let l = parameters.l
        // Work space: t₁ (k), z (ℓ), c, one entry of Â and one row of w; then the hints.
        return withUnsafeTemporaryAllocation(of: Int32.self, capacity: (k + l + 3) * 256) { space in
            let t1 = space.baseAddress!
            let z = t1 + k * 256
            let c = z + l * 256
            let entry = c + 256
            let w = entry + 256
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: k * 256) { hints in
                let h = hints.baseAddress!
                // 1–2: pkDecode, sigDecode; an invalid hint encoding is ⊥, so false.
                let rho = FIPS204.pkDecode(pk, parameters, t1: t1)
                guard let cTilde = FIPS204.sigDecode(signature, parameters, z: z, h: h) else { return false }
                // 13 (early): ‖z‖∞ < γ₁ − β. Decoded z is in [−γ₁ + 1, γ₁], so |z| is its norm.
                let bound = parameters.gamma1 - parameters.beta
                for i in 0..<(l * 256) where abs(z[i]) >= bound { return false }
                // 6–7: tr ← H(pk, 64); μ ← H(tr ‖ M′, 64).
                let tr = FIPS204.h(pk, count: 64)
                let mu = tr.withUnsafeBytes { FIPS204.h($0, message, count: 64) }
                // 8: c ← SampleInBall(c̃), then ĉ.
                FIPS204.sampleInBall(cTilde, tau: parameters.tau, into: c)
                FIPS204.ntt(c)
                for i in 0..<l { FIPS204.ntt(z + i * 256) }
                // 12: c̃′ ← H(μ ‖ w1Encode(w₁′), λ/4), absorbed row by row below.
                var challenge = SHAKE.shake256()
                challenge.absorb(mu)
                return withUnsafeTemporaryAllocation(byteCount: 32 * parameters.w1Bits, alignment: 8) {
                    encodedRow in
                    for r in 0..<k {
                        // 5, 9: w′Approx = NTT⁻¹(Â ∘ NTT(z) − NTT(c) ∘ NTT(t₁·2^d)), row r.
                        w.initialize(repeating: 0, count: 256)
                        for s in 0..<l {
                            FIPS204.expandA(rho, row: r, column: s, into: entry)
                            FIPS204.multiplyNTTAccumulate(entry, z + s * 256, into: w)
                        }
                        let t = t1 + r * 256
                        for j in 0..<256 { t[j] <<= FIPS204.d }
                        FIPS204.ntt(t)
                        for j in 0..<256 {
                            w[j] = FIPS204.reduce32(
                                w[j] &- FIPS204.montgomeryReduce(Int64(c[j]) &* Int64(t[j])))
                        }
                        FIPS204.inverseNTT(w)
                        // 10: w₁′ ← UseHint(h, w′Approx).
                        let hint = h + r * 256
                        for j in 0..<256 {
                            let approx = FIPS204.conditionalAddQ(w[j])
                            w[j] = FIPS204.useHint(hint[j] != 0, approx, gamma2: parameters.gamma2)
                        }
                        FIPS204.w1Encode(w, parameters, into: encodedRow)
                        challenge.absorb(UnsafeRawBufferPointer(encodedRow))
                    }
                    // 13: c̃ = c̃′ (public values: a plain comparison).
                    let cTildePrime = challenge.squeeze(count: parameters.cTildeByteCount)
                    return cTildePrime.elementsEqual(cTilde)
                }
            }
        }
    }
}
