/// A source of cryptographically secure random bytes; injected so tests can fix it.
public protocol RandomSource: Sendable {
    /// Returns `count` random bytes, or throws when no secure randomness is available (a source
    /// backed by a device or a service may fail; the system's does not). Callers refuse then:
    /// nothing guessable is ever handed out in place of a random value.
    func bytes(_ count: Int) throws -> [UInt8]
}

/// Random bytes from the operating system's CSPRNG: the standard library's
/// `SystemRandomNumberGenerator`, which is getrandom(2) on Linux (the source OpenSSL seeds from),
/// and which traps rather than return bytes that are not random.
public struct SystemRandom: RandomSource {
    /// Creates the system random source.
    public init() {}

    public func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "negative byte count")
        var generator = SystemRandomNumberGenerator()
        var buffer = [UInt8](repeating: 0, count: count)
        var index = 0
        while index < count {
            // Eight bytes per draw, as many as still fit.
            var word = generator.next()
            for _ in 0..<min(8, count - index) {
                buffer[index] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                index += 1
            }
        }
        return buffer
    }
}
