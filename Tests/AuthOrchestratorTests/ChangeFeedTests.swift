import AuthOrchestrator
import Foundation
import Kernel
import Storage
import Synchronization
import TestSupport
import Testing

@Suite("ChangeFeed: routing events to endpoints")
struct ChangeFeedTests {
    static let at = Date(timeIntervalSince1970: 1_767_225_600)

    final class Counter: Sendable {
        let count = Mutex(0)
    }

    @Test("off writes nothing and wants nothing")
    func off() {
        #expect(ChangeFeed.off.entries([.userDeleted(userID: "u1", at: Self.at)]).isEmpty)
        #expect(ChangeEventType.all.allSatisfy { !ChangeFeed.off.wants($0) })
    }

    @Test("each event goes to the endpoints that want its type; one nobody wants gives no entry")
    func routing() throws {
        let clock = FixedClock()
        let counter = Counter()
        let feed = ChangeFeed(
            routes: [
                .init(endpoint: "all", types: nil), .init(endpoint: "deletions", types: [.userDeleted]),
                .init(endpoint: "sessions", types: [.sessionRevoked]),
            ],
            giveUpAfter: 3600, random: SeededRandom(), clock: clock,
            onEnqueued: { counter.count.withLock { $0 += 1 } })
        #expect(feed.wants(.userCreated) && feed.wants(.userDeleted))
        let entries = feed.entries([
            .userDeleted(userID: "u1", at: Self.at), .userCreated(userID: "u2", method: .admin, at: Self.at),
        ])
        #expect(entries.map(\.endpoints) == [["all", "deletions"], ["all"]])
        #expect(entries.allSatisfy { $0.id.hasPrefix("evt_") && $0.id.count == 26 })
        #expect(Set(entries.flatMap(\.deliveries).map(\.id)).count == 3)
        #expect(
            entries[0].createdAt == clock.now() && entries[0].giveUpAt == clock.now().addingTimeInterval(3600)
        )

        let narrow = ChangeFeed(
            routes: [.init(endpoint: "deletions", types: [.userDeleted])], giveUpAfter: 60,
            random: SeededRandom(),
            clock: clock, onEnqueued: {})
        #expect(!narrow.wants(.sessionRevoked))
        #expect(
            narrow.entries([.sessionRevoked(userID: "u", sessionID: "s", reason: .logout, at: Self.at)])
                .isEmpty)

        feed.committed([])
        #expect(counter.count.withLock { $0 } == 0, "nothing committed, nothing to wake")
        feed.committed(entries)
        #expect(counter.count.withLock { $0 } == 1)
    }

    @Test("the body is {type, timestamp, data} with the data in order and credential ids as base64url")
    func payload() throws {
        let feed = ChangeFeed(
            routes: [.init(endpoint: "all", types: nil)], giveUpAfter: 60, random: SeededRandom(),
            clock: FixedClock(),
            onEnqueued: {})
        let entries = feed.entries([
            .recoveryCompleted(
                userID: "usr_1", credentialID: [0xFB, 0xFF, 0x01], sessionsRevoked: 2, passkeysRevoked: 0,
                at: Self.at.addingTimeInterval(0.25)),
            .sessionRevoked(userID: "usr_1", sessionID: "ses_9", reason: .userDisabled, at: Self.at),
        ])
        #expect(
            String(decoding: entries[0].payload, as: UTF8.self)
                == #"{"type":"recovery.completed","timestamp":"2026-01-01T00:00:00.250Z","data":{"userId":"usr_1","credentialId":"-_8B","sessionsRevoked":2,"passkeysRevoked":0}}"#
        )
        #expect(
            String(decoding: entries[1].payload, as: UTF8.self)
                == #"{"type":"session.revoked","timestamp":"2026-01-01T00:00:00.000Z","data":{"userId":"usr_1","sessionId":"ses_9","reason":"user_disabled"}}"#
        )
        #expect(entries[0].occurredAt == Self.at.addingTimeInterval(0.25))
    }
}
