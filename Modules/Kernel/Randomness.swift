/// A source of cryptographically secure random bytes; injected so tests can fix it.
public protocol RandomSource: Sendable {
    /// Returns `count` random bytes or throws when no secure randomness is available.
    func bytes(_ count: Int) throws(RandomnessError) -> [UInt8]
}

/// Secure randomness could not be had: nothing random may be used, so the caller refuses.
public struct RandomnessError: CodedError {
    /// The one way randomness fails.
    public enum Code: String, Sendable, CaseIterable {
        /// The operating system's generator failed.
        case unavailable = "random.unavailable"
    }

    public let code: Code
    public let message: String
    public let file: String
    public let line: Int

    /// Creates the error at the caller's location.
    public init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
    }
}

/// Random bytes from the operating system's CSPRNG: the standard library's
/// `SystemRandomNumberGenerator`, which is getrandom(2) on Linux (the source OpenSSL seeds from),
/// and which traps rather than return bytes that are not random.
public struct SystemRandom: RandomSource {
    /// Creates the system random source.
    public init() {}

    public func bytes(_ count: Int) throws(RandomnessError) -> [UInt8] {
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
