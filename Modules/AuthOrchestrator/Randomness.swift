import CryptoCore
import Kernel

/// The use cases' draws from the injected randomness, failing as `AuthError(.randomFailure)`:
/// a server without secure randomness refuses instead of handing out guessable values.
extension RandomSource {
    /// `count` random bytes.
    func secureBytes(_ count: Int) throws(AuthError) -> [UInt8] {
        do {
            return try bytes(count)
        } catch {
            throw AuthError(.randomFailure, "the random source failed", underlying: error)
        }
    }

    /// `byteCount` random bytes as base64url: ids, tokens and nonces.
    func secureToken(_ byteCount: Int) throws(AuthError) -> String {
        Base64URL.encode(try secureBytes(byteCount))
    }
}
