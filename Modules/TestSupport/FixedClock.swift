import CryptoCore
public import Foundation
public import Kernel
import Synchronization

/// A clock that stands still until a test moves it; safe to share across threads.
public final class FixedClock: WallClock {
    private let instant: Mutex<Date>

    /// Starts at `start` (default 2026-01-01T00:00:00Z, a fixed instant so tests are repeatable).
    public init(_ start: Date = Date(timeIntervalSince1970: 1_767_225_600)) {
        instant = Mutex(start)
    }

    public func now() -> Date { instant.withLock { $0 } }

    /// Moves the clock forward by `seconds`.
    public func advance(by seconds: TimeInterval) {
        instant.withLock { $0 = $0.addingTimeInterval(seconds) }
    }

    /// Sets the clock to `date`.
    public func set(_ date: Date) { instant.withLock { $0 = date } }
}

/// Deterministic bytes for tests that need reproducible tokens: a counter run through SHA-256.
public final class SeededRandom: RandomSource {
    private let state: Mutex<(seed: [UInt8], counter: UInt64)>

    /// Creates a source whose output depends only on `seed`.
    public init(seed: String = "portvakt-tests") {
        state = Mutex((Array(seed.utf8), 0))
    }

    public func bytes(_ count: Int) -> [UInt8] {
        state.withLock { state in
            var out = [UInt8]()
            while out.count < count {
                state.counter += 1
                out += Digest.sha256(state.seed + withUnsafeBytes(of: state.counter) { Array($0) })
            }
            return Array(out.prefix(count))
        }
    }
}
