/// The three ML-DSA parameter sets of FIPS 204 Table 1, with the sizes of Table 2.
public enum MLDSAParameterSet: String, Sendable, Hashable, CaseIterable {
    /// ML-DSA-44: NIST security category 2.
    case mlDSA44 = "ML-DSA-44"
    /// ML-DSA-65: NIST security category 3.
    case mlDSA65 = "ML-DSA-65"
    /// ML-DSA-87: NIST security category 5.
    case mlDSA87 = "ML-DSA-87"

    /// The length of an encoded public key (FIPS 204 Table 2): 32 + 320k bytes.
    public var publicKeyByteCount: Int { 32 + 32 * k * FIPS204.t1Bits }

    /// The length of an encoded signature (FIPS 204 Table 2): λ/4 + 32ℓ(1 + bitlen(γ₁ − 1)) + ω + k.
    public var signatureByteCount: Int { cTildeByteCount + l * 32 * zBits + omega + k }

    /// k: the rows of A, the length of t₁, w and h.
    var k: Int {
        switch self {
        case .mlDSA44: 4
        case .mlDSA65: 6
        case .mlDSA87: 8
        }
    }

    /// ℓ: the columns of A, the length of z.
    var l: Int {
        switch self {
        case .mlDSA44: 4
        case .mlDSA65: 5
        case .mlDSA87: 7
        }
    }

    /// η: the private key range, needed here only for β = τ·η.
    var eta: Int32 {
        switch self {
        case .mlDSA44, .mlDSA87: 2
        case .mlDSA65: 4
        }
    }

    /// τ: the number of ±1 coefficients of the challenge c.
    var tau: Int {
        switch self {
        case .mlDSA44: 39
        case .mlDSA65: 49
        case .mlDSA87: 60
        }
    }

    /// λ: the collision strength of c̃, in bits.
    var lambda: Int {
        switch self {
        case .mlDSA44: 128
        case .mlDSA65: 192
        case .mlDSA87: 256
        }
    }

    /// γ₁: the coefficient range of y, and so of z.
    var gamma1: Int32 {
        switch self {
        case .mlDSA44: 1 << 17
        case .mlDSA65, .mlDSA87: 1 << 19
        }
    }

    /// γ₂: the low-order rounding range.
    var gamma2: Int32 {
        switch self {
        case .mlDSA44: (FIPS204.q - 1) / 88
        case .mlDSA65, .mlDSA87: (FIPS204.q - 1) / 32
        }
    }

    /// ω: the most hint bits a signature may carry.
    var omega: Int {
        switch self {
        case .mlDSA44: 80
        case .mlDSA65: 55
        case .mlDSA87: 75
        }
    }

    /// β = τ·η: ‖z‖∞ must stay below γ₁ − β.
    var beta: Int32 { Int32(tau) * eta }

    /// The length of c̃: λ/4 bytes.
    var cTildeByteCount: Int { lambda / 4 }

    /// Bits per packed coefficient of z: bitlen(2γ₁ − 1), 18 or 20.
    var zBits: Int { gamma1 == 1 << 17 ? 18 : 20 }

    /// Bits per packed coefficient of w₁: bitlen((q − 1)/(2γ₂) − 1), 6 or 4.
    var w1Bits: Int { gamma2 == (FIPS204.q - 1) / 88 ? 6 : 4 }
}
