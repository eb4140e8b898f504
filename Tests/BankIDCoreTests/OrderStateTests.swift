import BankIDCore
import Foundation
import Kernel
import TestSupport
import Testing

@Suite("Order state machine (pure, no I/O)")
struct OrderStateTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)
    let timing = BankIDOrderTiming(
        pollInterval: 2, completeRetention: 180, failedRetention: 300, leaseDuration: 30, pendingLifetime: 600
    )
    func at(_ seconds: Double) -> Date { start.addingTimeInterval(seconds) }

    @Test("a new order is collected; a pending answer serves polls for the poll interval")
    func pendingCache() {
        let new = BankIDOrderState()
        #expect(new.decision(now: at(0), startedAt: start, timing: timing) == .collect)
        let pending = new.applying(
            status: .pending, hintCode: .outstandingTransaction, completion: nil, at: at(1))
        #expect(pending.status == .pending && pending.hintCode == .outstandingTransaction)
        #expect(pending.decision(now: at(1), startedAt: start, timing: timing) == .answer)
        #expect(pending.decision(now: at(2.999), startedAt: start, timing: timing) == .answer)
        #expect(pending.decision(now: at(3), startedAt: start, timing: timing) == .collect)
    }

    @Test("complete is final: kept for its retention, then expired")
    func completeRetention() {
        let completion = BankIDCompletion(
            identity: IdentityDigest(keyID: "k", value: [1]), name: "A B", givenName: "A", surname: "B",
            deviceIPAddress: "192.0.2.1")
        let done = BankIDOrderState().applying(
            status: .complete, hintCode: nil, completion: completion, at: at(10))
        #expect(done.status == .complete && done.finishedAt == at(10) && done.completion == completion)
        #expect(done.decision(now: at(10), startedAt: start, timing: timing) == .answer)
        #expect(done.decision(now: at(189.9), startedAt: start, timing: timing) == .answer)
        #expect(done.decision(now: at(190), startedAt: start, timing: timing) == .expired)
    }

    @Test("failed is final for its (longer) retention")
    func failedRetention() {
        let failed = BankIDOrderState().applying(
            status: .failed, hintCode: .userCancel, completion: nil, at: at(10))
        #expect(failed.status == .failed && failed.hintCode == .userCancel)
        #expect(failed.decision(now: at(309), startedAt: start, timing: timing) == .answer)
        #expect(failed.decision(now: at(310), startedAt: start, timing: timing) == .expired)
    }

    @Test("a final state never changes: late answers and cancellations leave it as it is")
    func finalIsFinal() {
        let failed = BankIDOrderState().applying(
            status: .failed, hintCode: .expiredTransaction, completion: nil, at: at(5))
        #expect(failed.applying(status: .pending, hintCode: .userSign, completion: nil, at: at(6)) == failed)
        #expect(failed.applying(status: .complete, hintCode: nil, completion: nil, at: at(6)) == failed)
        #expect(failed.cancelling(at: at(7)) == nil)
        #expect(failed.abandoning(at: at(7)) == nil)
        let cancelled = BankIDOrderState().cancelling(at: at(3))!
        #expect(
            cancelled.status == .cancelled && cancelled.hintCode == .cancelled
                && cancelled.finishedAt == at(3))
        #expect(cancelled.applying(status: .complete, hintCode: nil, completion: nil, at: at(4)) == cancelled)
    }

    @Test("an unknown status counts as pending; an order pending past its lifetime expires")
    func unknownAndLifetime() {
        let state = BankIDOrderState().applying(
            status: .unknown("paused"), hintCode: .unknown("x"), completion: nil, at: at(1))
        #expect(state.status == .pending && state.hintCode == .unknown("x"))
        #expect(state.decision(now: at(600), startedAt: start, timing: timing) == .expired)
    }

    @Test("abandoning (BankID no longer knows the order) fails it for good")
    func abandoned() {
        let state = BankIDOrderState().applying(
            status: .pending, hintCode: .started, completion: nil, at: at(1))
        let abandoned = state.abandoning(at: at(4))!
        #expect(abandoned.status == .failed && abandoned.finishedAt == at(4))
        #expect(abandoned.decision(now: at(5), startedAt: start, timing: timing) == .answer)
    }
}
