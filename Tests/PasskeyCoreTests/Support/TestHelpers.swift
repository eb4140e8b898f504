import CryptoCore

/// A small deterministic generator (SplitMix64) so fuzz failures reproduce from the seed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}

/// Decodes a hex literal in a test; a typo is a broken test, so it traps.
func hex(_ text: String) -> [UInt8] {
    guard let bytes = Hex.decode(text.filter { !$0.isWhitespace }) else {
        fatalError("bad hex in test: \(text)")
    }
    return bytes
}
