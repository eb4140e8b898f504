import CryptoCore
import Kernel
import TestSupport

/// Decodes a hex literal in a test; a typo is a broken test, so it traps.
func hex(_ text: String) -> [UInt8] {
    guard let bytes = Hex.decode(text.filter { !$0.isWhitespace }) else {
        fatalError("bad hex in test: \(text)")
    }
    return bytes
}
