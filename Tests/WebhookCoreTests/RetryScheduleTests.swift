import Foundation
import Kernel
import TestSupport
import Testing
import WebhookCore

@Suite("RetrySchedule: doubling with jitter up to a cap, then give up")
struct RetryScheduleTests {
    static let now = Date(timeIntervalSince1970: 1_767_225_600)
    let schedule = RetrySchedule(initialDelay: 2, maximumDelay: 60)

    func delay(_ attempts: Int, jitter: Double, status: Int? = 500, retryAfter: Double? = nil) -> Double? {
        switch schedule.decide(
            afterAttempts: attempts, status: status, retryAfter: retryAfter, now: Self.now,
            giveUpAt: Self.now.addingTimeInterval(86_400), jitter: jitter)
        {
        case .retry(let at): at.timeIntervalSince(Self.now)
        case .giveUp: nil
        }
    }

    @Test("2 s, 4 s, 8 s … capped at the maximum; jitter stays within ±20 %")
    func delays() throws {
        #expect((1...7).map { schedule.baseDelay(afterAttempts: $0) } == [2, 4, 8, 16, 32, 60, 60])
        #expect(schedule.baseDelay(afterAttempts: 500) == 60, "no overflow on a long history")
        #expect(delay(1, jitter: 0.5) == 2)
        #expect(abs(try #require(delay(1, jitter: 0)) - 1.6) < 1e-5)
        #expect(abs(try #require(delay(1, jitter: 1)) - 2.4) < 1e-5)
        #expect(abs(try #require(delay(9, jitter: 1)) - 72) < 1e-5)
        // Draws from a seeded source spread over the whole band and stay in it.
        let random = SeededRandom(seed: "retry")
        let draws = (0..<1000).map { _ in RetrySchedule.draw(random) }
        #expect(draws.allSatisfy { (0...1).contains($0) })
        #expect(draws.min()! < 0.05 && draws.max()! > 0.95)
    }

    @Test("Retry-After lengthens the delay on 429 and 503 only; 410 gives up at once")
    func receiverHints() {
        #expect(delay(1, jitter: 0.5, status: 429, retryAfter: 30) == 30)
        #expect(delay(1, jitter: 0.5, status: 503, retryAfter: 30) == 30)
        #expect(delay(1, jitter: 0.5, status: 500, retryAfter: 30) == 2)
        #expect(delay(5, jitter: 0.5, status: 503, retryAfter: 1) == 32, "never shorter than the schedule")
        #expect(delay(1, jitter: 0.5, status: 410) == nil)
        #expect(delay(1, jitter: 0.5, status: nil) == 2, "no answer at all is retried")
    }

    @Test("a next attempt past the give-up time gives up")
    func giveUp() {
        let giveUpAt = Self.now.addingTimeInterval(10)
        #expect(
            schedule.decide(
                afterAttempts: 3, status: 500, retryAfter: nil, now: Self.now, giveUpAt: giveUpAt, jitter: 0.5
            )
                == .retry(at: Self.now.addingTimeInterval(8)))
        #expect(
            schedule.decide(
                afterAttempts: 4, status: 500, retryAfter: nil, now: Self.now, giveUpAt: giveUpAt, jitter: 0.5
            )
                == .giveUp)
    }
}
