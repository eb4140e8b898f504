public import HTTPEngine
import PortvaktAPI
import Synchronization

/// A monotonic clock that moves only when a test says so, for rate limits and durations.
public final class ManualMonotonicClock: MonotonicClock {
    private let now: Atomic<UInt64>

    /// Creates a clock reading `start` nanoseconds.
    public init(start: UInt64 = 1_000_000_000) {
        now = Atomic(start)
    }

    /// The current reading.
    public func nanoseconds() -> UInt64 { now.load(ordering: .acquiring) }

    /// Moves the clock forward.
    /// - Parameter seconds: how far, in seconds.
    public func advance(seconds: Double) {
        now.add(UInt64(seconds * 1e9), ordering: .acquiringAndReleasing)
    }
}
