import CLinux
import Glibc

/// A source of cryptographically secure random bytes; injected so tests can fix it.
public protocol RandomSource: Sendable {
    /// Returns `count` random bytes, or throws when no secure randomness is available (a source
    /// backed by a device or a service may fail; the system's does not). Callers refuse then:
    /// nothing guessable is ever handed out in place of a random value.
    func bytes(_ count: Int) throws -> [UInt8]
}

/// Random bytes from the operating system's CSPRNG: getrandom(2), the source OpenSSL seeds from
/// and the standard library's `SystemRandomNumberGenerator` draws on, which traps rather than
/// return bytes that are not random.
///
/// One call fills the whole request: `SystemRandomNumberGenerator` makes a system call per
/// eight bytes, ten per passkey login (issue 17).
public struct SystemRandom: RandomSource {
    /// Creates the system random source.
    public init() {}

    public func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "negative byte count")
        guard count > 0 else { return [] }
        // Zeroed first, then filled in place: `init(unsafeUninitializedCapacity:)` allocates through
        // a generic stdlib function that looks the array's type metadata up at run time, which
        // costs more than zeroing the few dozen bytes of a token (three per login).
        var bytes = Array(repeatElement(UInt8(0), count: count))
        bytes.withUnsafeMutableBufferPointer { buffer in
            var filled = 0
            while filled < count {
                // Blocks only until the kernel's pool is first initialised; up to 256 bytes are
                // never cut short, longer requests may be (by a signal), so the loop goes on.
                let got = getrandom(buffer.baseAddress! + filled, count - filled, 0)
                if got > 0 {
                    filled += got
                } else if got < 0, errno == EINTR {
                    continue
                } else {
                    // As the standard library does: never hand out bytes that are not random.
                    fatalError("getrandom(2) failed (errno \(errno))")
                }
            }
        }
        return bytes
    }
}
