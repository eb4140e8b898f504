import Glibc

/// A clock that never goes backwards, for durations and token buckets; injected so tests can
/// step time instead of sleeping.
public protocol MonotonicClock: Sendable {
    /// Nanoseconds since an arbitrary fixed origin.
    func nanoseconds() -> UInt64
}

/// CLOCK_MONOTONIC: unaffected by wall-clock changes (NTP steps, an operator's `date -s`).
public struct SystemMonotonicClock: MonotonicClock {
    /// Creates the system's monotonic clock.
    public init() {}

    /// Nanoseconds since boot.
    public func nanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
