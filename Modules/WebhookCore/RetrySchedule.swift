public import FoundationEssentials
public import Kernel

/// When a failed delivery is tried again, and when it is given up: a pure function of the
/// attempt number, the configured delays and a random draw, so it is tested without time passing.
///
/// The delay before attempt n + 1 is `min(max, initial · 2^(n−1))` scaled by a uniform factor
/// from 0.8 to 1.2 (jitter, so receivers that come back are not hit by every retry at once),
/// never below a receiver's `Retry-After`. A delivery whose next attempt would fall after its
/// give-up time, or whose receiver answered 410 Gone, fails.
public struct RetrySchedule: Sendable, Equatable {
    /// The delay after the first failed attempt, in seconds.
    public var initialDelay: TimeInterval
    /// The longest delay between two attempts, in seconds.
    public var maximumDelay: TimeInterval

    /// Creates a schedule.
    public init(initialDelay: TimeInterval, maximumDelay: TimeInterval) {
        self.initialDelay = initialDelay
        self.maximumDelay = max(maximumDelay, initialDelay)
    }

    /// What becomes of a delivery after a failed attempt.
    public enum Decision: Sendable, Equatable {
        /// Try again at this instant.
        case retry(at: Date)
        /// Stop: the delivery fails.
        case giveUp
    }

    /// The delay after `attempts` failed attempts (1 for the first), before jitter.
    public func baseDelay(afterAttempts attempts: Int) -> TimeInterval {
        let exponent = min(max(attempts - 1, 0), 40)
        return min(maximumDelay, initialDelay * Double(1 << exponent))
    }

    /// Decides what follows a failed attempt.
    /// - Parameters:
    ///   - attempts: Attempts made so far, the failed one included.
    ///   - status: The receiver's HTTP status, nil when none came.
    ///   - retryAfter: The receiver's `Retry-After` in seconds, honoured on 429 and 503.
    ///   - now: When the attempt ended.
    ///   - giveUpAt: The delivery's give-up time.
    ///   - jitter: A draw from 0 to 1 (`RetrySchedule.draw(_:)` makes one from random bytes).
    public func decide(
        afterAttempts attempts: Int, status: Int?, retryAfter: TimeInterval?, now: Date, giveUpAt: Date,
        jitter: Double
    ) -> Decision {
        if status == 410 { return .giveUp }
        var delay = baseDelay(afterAttempts: attempts) * (0.8 + 0.4 * min(max(jitter, 0), 1))
        if let retryAfter, status == 429 || status == 503 { delay = max(delay, min(retryAfter, 86_400)) }
        let next = now.addingTimeInterval(delay)
        return next > giveUpAt ? .giveUp : .retry(at: next)
    }

    /// A uniform draw from 0 to 1 from `random` (0.5, no jitter, should it fail).
    public static func draw(_ random: any RandomSource) -> Double {
        guard let bytes = try? random.bytes(8), bytes.count == 8 else { return 0.5 }
        let value = bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Double(value >> 11) / Double(UInt64(1) << 53)
    }
}
