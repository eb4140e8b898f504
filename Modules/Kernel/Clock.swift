public import FoundationEssentials

/// The wall clock, injected beside randomness so tests can fix and advance time.
public protocol WallClock: Sendable {
    /// The current instant.
    func now() -> Date
}

/// The operating system's clock.
public struct SystemClock: WallClock {
    /// Creates the system clock.
    public init() {}

    public func now() -> Date { Date() }
}
