import Foundation
import Kernel
import Synchronization
import TestSupport
import Testing
import WebhookCore

@testable import Storage

/// The outbox's delivery side on each engine: leases, completion, lease expiry, concurrent
/// claims from two stores, listing and redelivery.
@Suite("Webhook deliveries: leases and the admin view")
struct WebhookDeliveryStoreTests {
    static let start = Date(timeIntervalSince1970: 1_767_225_600)

    static func entry(_ n: Int, endpoints: [String] = ["app"], at: Date = start) -> OutboxEntry {
        OutboxEntry(
            id: "evt_\(n)", type: n % 2 == 0 ? .userDeleted : .sessionRevoked, occurredAt: at,
            payload: Array(#"{"type":"x","n":\#(n)}"#.utf8),
            deliveries: endpoints.map { .init(id: "whd_\(n)_\($0)", endpoint: $0) },
            createdAt: at.addingTimeInterval(Double(n) / 1000),
            giveUpAt: at.addingTimeInterval(3600))
    }

    @Test(
        "a claim leases due rows once; completion records the attempt; a lost lease drops the result",
        arguments: TestEngine.tested)
    func claimAndComplete(engine: TestEngine) throws {
        let fixture = try TestStore(engine)
        let store = fixture.store
        try store.enqueue([Self.entry(1), Self.entry(2), Self.entry(3, endpoints: ["other"])])
        let now = Self.start.addingTimeInterval(1)
        #expect(try store.hasDueDeliveries(endpoints: ["app"], at: now))
        #expect(try !store.hasDueDeliveries(endpoints: ["app"], at: Self.start), "not due before createdAt")
        #expect(try !store.hasDueDeliveries(endpoints: ["missing"], at: now))

        let lease = now.addingTimeInterval(25)
        let first = try store.claimDeliveries(
            endpoint: "app", owner: "ins_a", at: now, leaseUntil: lease, limit: 1)
        #expect(first.map(\.id) == ["whd_1_app"])
        #expect(first.first?.payload == Self.entry(1).payload && first.first?.eventID == "evt_1")
        #expect(first.first?.attempts == 0 && first.first?.giveUpAt == Self.entry(1).giveUpAt)
        let second = try store.claimDeliveries(
            endpoint: "app", owner: "ins_b", at: now, leaseUntil: lease, limit: 5)
        #expect(second.map(\.id) == ["whd_2_app"], "the leased row is not claimed again")
        #expect(
            try store.claimDeliveries(endpoint: "app", owner: "ins_b", at: now, leaseUntil: lease, limit: 5)
                .isEmpty)
        #expect(try !store.hasDueDeliveries(endpoints: ["app"], at: now), "leased rows are not due")

        // The wrong owner cannot complete; the right one can, once.
        let retry = DeliveryAttempt(
            at: now, status: 500, error: "status_5xx", outcome: .retry(at: now.addingTimeInterval(2)))
        #expect(try !store.completeDelivery(id: "whd_1_app", owner: "ins_b", attempt: retry))
        #expect(try store.completeDelivery(id: "whd_1_app", owner: "ins_a", attempt: retry))
        #expect(
            try !store.completeDelivery(id: "whd_1_app", owner: "ins_a", attempt: retry), "the lease is gone")
        var shown = try #require(try store.webhookDelivery(id: "whd_1_app"))
        #expect(
            shown.state == .pending && shown.attempts == 1 && shown.lastStatus == 500
                && shown.lastError == "status_5xx")
        #expect(shown.nextAttemptAt == now.addingTimeInterval(2) && shown.lastAttemptAt == now)
        #expect(
            try store.claimDeliveries(
                endpoint: "app", owner: "ins_a", at: now.addingTimeInterval(1), leaseUntil: lease, limit: 5
            ).isEmpty)
        let again = try store.claimDeliveries(
            endpoint: "app", owner: "ins_a", at: now.addingTimeInterval(2), leaseUntil: lease, limit: 5)
        #expect(again.map(\.id) == ["whd_1_app"] && again.first?.attempts == 1)
        let done = DeliveryAttempt(
            at: now.addingTimeInterval(3), status: 204, error: nil, outcome: .delivered)
        #expect(try store.completeDelivery(id: "whd_1_app", owner: "ins_a", attempt: done))
        shown = try #require(try store.webhookDelivery(id: "whd_1_app"))
        #expect(
            shown.state == .delivered && shown.attempts == 2 && shown.lastStatus == 204
                && shown.lastError == nil)
        #expect(shown.deliveredAt == now.addingTimeInterval(3) && shown.nextAttemptAt == nil)

        let failed = DeliveryAttempt(at: now, status: 410, error: "status_4xx", outcome: .failed)
        #expect(try store.completeDelivery(id: "whd_2_app", owner: "ins_b", attempt: failed))
        #expect(try store.webhookDelivery(id: "whd_2_app")?.state == .failed)
    }

    @Test(
        "an expired lease is taken over; release frees an owner's leases at once",
        arguments: TestEngine.tested)
    func leaseExpiryAndRelease(engine: TestEngine) throws {
        let clock = FixedClock(Self.start)
        let fixture = try TestStore(engine, clock: clock)
        let store = fixture.store
        try store.enqueue([Self.entry(1), Self.entry(2)])
        clock.advance(by: 1)
        let lease = clock.now().addingTimeInterval(25)
        #expect(
            try store.claimDeliveries(
                endpoint: "app", owner: "ins_dead", at: clock.now(), leaseUntil: lease, limit: 1
            ).count == 1)
        clock.advance(by: 24)
        #expect(
            try store.claimDeliveries(
                endpoint: "app", owner: "ins_b", at: clock.now(),
                leaseUntil: clock.now().addingTimeInterval(25),
                limit: 5
            ).map(\.id) == ["whd_2_app"])
        clock.advance(by: 1)
        let taken = try store.claimDeliveries(
            endpoint: "app", owner: "ins_c", at: clock.now(), leaseUntil: clock.now().addingTimeInterval(25),
            limit: 5)
        #expect(taken.map(\.id) == ["whd_1_app"], "the dead instance's lease ran out")
        let late = DeliveryAttempt(at: clock.now(), status: 200, error: nil, outcome: .delivered)
        #expect(
            try !store.completeDelivery(id: "whd_1_app", owner: "ins_dead", attempt: late),
            "a lost lease's result is dropped")

        #expect(try store.releaseDeliveries(owner: "ins_b") == 1)
        #expect(
            try store.claimDeliveries(
                endpoint: "app", owner: "ins_d", at: clock.now(), leaseUntil: lease, limit: 5
            ).map(\.id) == ["whd_2_app"])
    }

    @Test("two stores claiming from 8 threads never get the same row", arguments: TestEngine.tested)
    func concurrentClaims(engine: TestEngine) throws {
        let fixture = try TestStore(engine, poolSize: 8)
        let other = SQLStore(engine: fixture.engine)
        try fixture.store.enqueue((1...60).map { Self.entry($0) })
        let now = Self.start.addingTimeInterval(10)
        let claimed = Mutex<[String]>([])
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            let store = worker % 2 == 0 ? fixture.store : other
            while true {
                do {
                    let got = try store.claimDeliveries(
                        endpoint: "app", owner: "ins_\(worker)", at: now,
                        leaseUntil: now.addingTimeInterval(30), limit: 3)
                    if got.isEmpty { return }
                    claimed.withLock { $0 += got.map(\.id) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                    return
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        let ids = claimed.withLock { $0 }
        #expect(ids.count == 60 && Set(ids).count == 60, "each row claimed exactly once")
    }

    @Test(
        "listing filters and pages newest first; redeliver makes a row pending again",
        arguments: TestEngine.tested)
    func listAndRedeliver(engine: TestEngine) throws {
        let fixture = try TestStore(engine)
        let store = fixture.store
        try store.enqueue((1...5).map { Self.entry($0, endpoints: ["app", "sink"]) })
        let all = try store.webhookDeliveries(.init(), after: nil, limit: 100)
        #expect(all.count == 10)
        #expect(all.first?.eventID == "evt_5" && all.last?.eventID == "evt_1")
        let page = try store.webhookDeliveries(.init(endpoint: "app"), after: nil, limit: 2)
        #expect(page.map(\.id) == ["whd_5_app", "whd_4_app"])
        let next = try store.webhookDeliveries(
            .init(endpoint: "app"), after: WebhookDeliveryKey(createdAt: page[1].createdAt, id: page[1].id),
            limit: 10)
        #expect(next.map(\.id) == ["whd_3_app", "whd_2_app", "whd_1_app"])
        #expect(try store.webhookDeliveries(.init(type: .userDeleted), after: nil, limit: 100).count == 4)
        #expect(try store.webhookDeliveries(.init(state: .delivered), after: nil, limit: 100).isEmpty)

        let now = Self.start.addingTimeInterval(5)
        _ = try store.claimDeliveries(
            endpoint: "sink", owner: "ins_a", at: now, leaseUntil: now.addingTimeInterval(20), limit: 1)
        #expect(
            try store.completeDelivery(
                id: "whd_1_sink", owner: "ins_a",
                attempt: .init(at: now, status: 200, error: nil, outcome: .delivered)))
        #expect(
            try store.webhookDeliveries(.init(state: .delivered), after: nil, limit: 100).map(\.id) == [
                "whd_1_sink"
            ])
        let later = now.addingTimeInterval(100)
        #expect(
            try store.redeliverWebhook(
                id: "whd_1_sink", at: later, giveUpAt: later.addingTimeInterval(7200), audit: nil))
        #expect(try !store.redeliverWebhook(id: "whd_nope", at: later, giveUpAt: later, audit: nil))
        let redelivered = try #require(try store.webhookDelivery(id: "whd_1_sink"))
        #expect(redelivered.state == .pending && redelivered.attempts == 1 && redelivered.deliveredAt == nil)
        #expect(redelivered.nextAttemptAt == later && redelivered.giveUpAt == later.addingTimeInterval(7200))
        #expect(redelivered.eventID == "evt_1", "the same webhook-id")
        #expect(try store.pendingWebhookDeliveries().count == 10)
        #expect(
            abs(
                try #require(try store.pendingWebhookDeliveries().oldest).timeIntervalSince(
                    Self.entry(1).createdAt)) < 0.001)
    }

    @Test(
        "past give-up a free delivery fails; purge keeps events with pending deliveries",
        arguments: TestEngine.tested)
    func giveUpAndPurge(engine: TestEngine) throws {
        let fixture = try TestStore(engine)
        let store = fixture.store
        try store.enqueue([Self.entry(1), Self.entry(2, endpoints: ["gone"])])
        let now = Self.start.addingTimeInterval(10)
        _ = try store.claimDeliveries(
            endpoint: "app", owner: "ins_a", at: now, leaseUntil: now.addingTimeInterval(20), limit: 1)
        #expect(
            try store.completeDelivery(
                id: "whd_1_app", owner: "ins_a",
                attempt: .init(at: now, status: 200, error: nil, outcome: .delivered)))
        #expect(try store.failExpiredWebhookDeliveries(at: now) == 0)
        #expect(
            try store.purgeWebhookEvents(createdBefore: now.addingTimeInterval(3600)) == 1,
            "only the delivered event")
        #expect(try store.webhookDelivery(id: "whd_1_app") == nil)
        #expect(try store.failExpiredWebhookDeliveries(at: Self.start.addingTimeInterval(3600)) == 1)
        let gone = try #require(try store.webhookDelivery(id: "whd_2_gone"))
        #expect(gone.state == .failed && gone.lastError == "gave_up")
        #expect(try store.purgeWebhookEvents(createdBefore: Self.start) == 0, "younger than the cutoff")
        #expect(try store.purgeWebhookEvents(createdBefore: now.addingTimeInterval(3600)) == 1)
    }
}
