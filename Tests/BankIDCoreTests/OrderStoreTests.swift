import BankIDCore
import Foundation
import Kernel
import Storage
import Synchronization
import TestSupport
import Testing

/// The engines the order store runs on: SQLite on a real file, PostgreSQL on the test server.
typealias OrderStoreKind = TestEngine

extension TestEngine {
    /// A fresh, empty order store on this engine (alive as long as the value).
    func make() throws -> TestStore { try TestStore(self) }
}

@Suite("BankID order store: orders, the collect lease, retention")
struct OrderStoreTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)
    func at(_ seconds: Double) -> Date { start.addingTimeInterval(seconds) }

    func order(_ ref: String = "o1") -> BankIDOrder {
        BankIDOrder(
            orderRef: ref, kind: .auth, intent: .login, startedAt: at(0), qrStartToken: "tok",
            qrStartSecret: QRStartSecret("secret-1"), autoStartToken: "auto", endUserIP: "192.0.2.1")
    }

    @Test(
        "an order round-trips with every field; a duplicate orderRef is a conflict",
        arguments: OrderStoreKind.tested)
    func roundTrip(kind: OrderStoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertBankIDOrder(order())
        #expect(try fixture.store.bankIDOrder(orderRef: "o1") == order())
        #expect(!String(reflecting: order()).contains("secret-1"), "the QR secret never prints")
        #expect(!"\(order())".contains("secret-1"))
        #expect(try fixture.store.bankIDOrder(orderRef: "none") == nil)
        #expect(throws: StorageError(.conflict, "")) { try fixture.store.insertBankIDOrder(order()) }
    }

    @Test(
        "one lease at a time; it lapses at its expiry; a fresh answer is not collected again",
        arguments: OrderStoreKind.tested)
    func lease(kind: OrderStoreKind) throws {
        let fixture = try kind.make()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        try store.insertBankIDOrder(order())
        guard
            case .acquired(let leased)? = try store.acquireBankIDCollectLease(
                orderRef: "o1", owner: "a", now: at(1), until: at(31), collectedBefore: at(-1))
        else { Issue.record("the first instance gets the lease"); return }
        #expect(leased.leaseOwner == "a" && leased.leaseExpiresAt == at(31))
        guard
            case .notAcquired(let current)? = try store.acquireBankIDCollectLease(
                orderRef: "o1", owner: "b", now: at(2), until: at(32), collectedBefore: at(0))
        else { Issue.record("a second instance does not"); return }
        #expect(current.leaseOwner == "a")
        // The holder died: at its expiry another instance takes over.
        guard
            case .acquired? = try store.acquireBankIDCollectLease(
                orderRef: "o1", owner: "b", now: at(31), until: at(61), collectedBefore: at(29))
        else { Issue.record("a lapsed lease is taken over"); return }
        // b stores a pending answer and releases; a's late release does not touch b's row.
        let pending = BankIDOrderState().applying(
            status: .pending, hintCode: .userSign, completion: nil, at: at(32))
        let stored = try store.updateBankIDOrder(orderRef: "o1", state: pending, releasingLeaseOf: "b")
        #expect(stored?.leaseOwner == nil && stored?.state == pending)
        // Within the poll interval nobody collects, even with the lease free.
        guard
            case .notAcquired? = try store.acquireBankIDCollectLease(
                orderRef: "o1", owner: "a", now: at(33), until: at(63), collectedBefore: at(31))
        else { Issue.record("a fresh answer is not collected again"); return }
        guard
            case .acquired? = try store.acquireBankIDCollectLease(
                orderRef: "o1", owner: "a", now: at(34), until: at(64), collectedBefore: at(32))
        else { Issue.record("after the interval it is"); return }
        #expect(
            try store.acquireBankIDCollectLease(
                orderRef: "none", owner: "a", now: at(1), until: at(2), collectedBefore: at(0)) == nil)
        // A failed collect is kept with the order (every instance's pollers see it), and the
        // next answered one clears it.
        let failing = pending.failingCollect(at: at(34))
        #expect(
            try store.updateBankIDOrder(orderRef: "o1", state: failing, releasingLeaseOf: "a")?.state
                == failing)
        #expect(try store.bankIDOrder(orderRef: "o1")?.state.collectFailedAt == at(34))
        let answered = failing.applying(status: .pending, hintCode: .userSign, completion: nil, at: at(36))
        #expect(
            try store.updateBankIDOrder(orderRef: "o1", state: answered, releasingLeaseOf: nil)?.state
                == answered)
        #expect(answered.collectFailedAt == nil)
    }

    @Test(
        "of 16 instances racing for the lease at once, exactly one gets it",
        arguments: OrderStoreKind.tested)
    func leaseRace(kind: OrderStoreKind) throws {
        let fixture = try kind.make()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        try store.insertBankIDOrder(order())
        let winners = Mutex<[String]>([])
        let failures = Mutex(0)
        let start = at(0)
        DispatchQueue.concurrentPerform(iterations: 16) { index in
            do {
                if case .acquired? = try store.acquireBankIDCollectLease(
                    orderRef: "o1", owner: "i\(index)", now: start.addingTimeInterval(1),
                    until: start.addingTimeInterval(31), collectedBefore: start)
                {
                    winners.withLock { $0.append("i\(index)") }
                }
            } catch {
                failures.withLock { $0 += 1 }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        let won = winners.withLock { $0 }
        #expect(won.count == 1)
        #expect(try store.bankIDOrder(orderRef: "o1")?.leaseOwner == won.first)
    }

    @Test(
        "a final state is never leased, never overwritten, and its result is kept exactly",
        arguments: OrderStoreKind.tested)
    func finalState(kind: OrderStoreKind) throws {
        let fixture = try kind.make()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        try store.insertBankIDOrder(order())
        let completion = BankIDCompletion(
            identity: IdentityDigest(keyID: "k1", value: Array(repeating: 7, count: 32)), name: "Åsa Öberg",
            givenName: "Åsa", surname: "Öberg", deviceIPAddress: "192.0.2.9", deviceUHI: "uhi",
            bankIdIssueDate: "2020-01-01",
            stepUpMRTD: true, risk: "low", signature: "c2ln", ocspResponse: "b2NzcA==")
        let done = BankIDOrderState().applying(
            status: .complete, hintCode: nil, completion: completion, at: at(5.25))
        _ = try store.updateBankIDOrder(orderRef: "o1", state: done, releasingLeaseOf: nil)
        let late = BankIDOrderState().applying(
            status: .failed, hintCode: .cancelled, completion: nil, at: at(6))
        let after = try store.updateBankIDOrder(orderRef: "o1", state: late, releasingLeaseOf: nil)
        #expect(after?.state == done)
        #expect(try store.bankIDOrder(orderRef: "o1")?.state.completion == completion)
        guard
            case .notAcquired? = try store.acquireBankIDCollectLease(
                orderRef: "o1", owner: "a", now: at(600), until: at(630), collectedBefore: at(598))
        else { Issue.record("a final order is never leased for a collect"); return }
    }

    @Test(
        "purge removes orders ended before the cutoff and abandoned pending ones",
        arguments: OrderStoreKind.tested)
    func purge(kind: OrderStoreKind) throws {
        let fixture = try kind.make()
        defer { withExtendedLifetime(fixture) {} }
        let store = fixture.store
        for ref in ["ended-early", "ended-late", "pending"] { try store.insertBankIDOrder(order(ref)) }
        _ = try store.updateBankIDOrder(
            orderRef: "ended-early", state: BankIDOrderState().cancelling(at: at(10))!, releasingLeaseOf: nil)
        _ = try store.updateBankIDOrder(
            orderRef: "ended-late", state: BankIDOrderState().cancelling(at: at(100))!, releasingLeaseOf: nil)
        #expect(
            try store.purgeBankIDOrders(completedBefore: at(200), endedBefore: at(50), startedBefore: at(-1))
                == 1)
        #expect(try store.bankIDOrder(orderRef: "ended-early") == nil)
        #expect(try store.bankIDOrder(orderRef: "pending") != nil)
        #expect(
            try store.purgeBankIDOrders(completedBefore: at(200), endedBefore: at(50), startedBefore: at(1))
                == 2)
    }

    @Test("orders survive closing and reopening the database (a restart loses nothing)")
    func restart() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("portvakt.sqlite")
        do {
            let database = try SQLiteDatabase(path: path)
            try SQLStore(database: database).insertBankIDOrder(order())
            database.close()
        }
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let reopened = try SQLStore(database: database).bankIDOrder(orderRef: "o1")
        #expect(reopened == order())
        #expect(reopened?.qrStartSecret == QRStartSecret("secret-1"))
    }
}
