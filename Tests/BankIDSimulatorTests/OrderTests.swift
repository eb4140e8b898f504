import BankIDSimulator
import Foundation
import Kernel
import TestSupport
import Testing

/// The order state machine on its own: no I/O, time passed in.
@Suite("Order state machine")
struct OrderTests {
    let start = Date(timeIntervalSince1970: 1_767_225_600)
    let timing = OrderTiming()
    let tolvan = TestPerson.builtIn[0]
    let anna = TestPerson.builtIn[1]

    func order(_ request: OrderRequest = OrderRequest(kind: .auth, endUserIp: "192.0.2.1")) -> Order {
        Order(
            orderRef: "ref", request: request, qrStartToken: request.kind == .auth ? "q" : nil,
            qrStartSecret: request.kind == .auth ? "s" : nil,
            autoStartToken: request.kind == .auth ? "a" : nil,
            createdAt: start)
    }

    func collect(_ order: inout Order, after seconds: TimeInterval, autoComplete: Int? = nil)
        -> Order.CollectAnswer
    {
        order.collect(
            at: start.addingTimeInterval(seconds), timing: timing, autoCompleteAfter: autoComplete,
            defaultPerson: tolvan)
    }

    func act(
        _ order: inout Order, _ action: UserAction, as person: TestPerson, from ip: String, outcome: Outcome,
        at now: Date, timing: OrderTiming
    ) -> Order.ActionRefusal? {
        order.act(action, as: person, from: ip, outcome: outcome, at: now, timing: timing)
    }

    @Test("pending outstandingTransaction, then noClient once nobody has opened it for a while")
    func pendingHints() {
        var subject = order()
        #expect(collect(&subject, after: 0) == .pending(hint: "outstandingTransaction"))
        #expect(collect(&subject, after: 9) == .pending(hint: "outstandingTransaction"))
        #expect(collect(&subject, after: 10) == .pending(hint: "noClient"))
    }

    @Test("startFailed when nobody scans or opens the order within 30 seconds")
    func startWindow() {
        var subject = order()
        #expect(collect(&subject, after: 29.9) == .pending(hint: "noClient"))
        #expect(collect(&subject, after: 30) == .failed(hint: "startFailed"))
        #expect(subject.finishedAt == start.addingTimeInterval(30))
    }

    @Test("an opened order is not startFailed but expires after its lifetime")
    func lifetime() {
        var subject = order()
        #expect(
            act(&subject, .open, as: tolvan, from: "10.0.0.1", outcome: .complete, at: start, timing: timing)
                == nil)
        #expect(collect(&subject, after: 100) == .pending(hint: "userSign"))
        #expect(collect(&subject, after: 180) == .failed(hint: "expiredTransaction"))
    }

    @Test("phone orders have no start window: userCallConfirm, then complete")
    func phone() {
        var subject = order(
            OrderRequest(kind: .phoneAuth, personalNumber: anna.personalNumber, callInitiator: "RP"))
        #expect(collect(&subject, after: 60) == .pending(hint: "outstandingTransaction"))
        #expect(
            act(&subject, .start, as: anna, from: "10.0.0.2", outcome: .complete, at: start, timing: timing)
                == nil)
        #expect(collect(&subject, after: 61) == .pending(hint: "userCallConfirm"))
        #expect(
            act(&subject, .approve, as: anna, from: "10.0.0.2", outcome: .complete, at: start, timing: timing)
                == nil)
        #expect(collect(&subject, after: 62) == .complete)
    }

    @Test("mrtd: userMrtd, then userSign, then complete")
    func mrtd() {
        var subject = order(OrderRequest(kind: .auth, endUserIp: "192.0.2.1", mrtd: true))
        _ = subject.act(.open, as: tolvan, from: "10.0.0.1", outcome: .complete, at: start, timing: timing)
        #expect(collect(&subject, after: 1) == .pending(hint: "userMrtd"))
        _ = subject.act(.open, as: tolvan, from: "10.0.0.1", outcome: .complete, at: start, timing: timing)
        #expect(collect(&subject, after: 2) == .pending(hint: "userSign"))
        _ = subject.act(.approve, as: tolvan, from: "10.0.0.1", outcome: .complete, at: start, timing: timing)
        #expect(collect(&subject, after: 3) == .complete)
        #expect(subject.mrtdDone)
    }

    @Test("a final state is collected once; the next collect is refused")
    func collectOnce() {
        var subject = order()
        _ = subject.act(.approve, as: tolvan, from: "10.0.0.1", outcome: .complete, at: start, timing: timing)
        #expect(collect(&subject, after: 1) == .complete)
        #expect(collect(&subject, after: 2) == .alreadyCollected)
    }

    @Test("retention: 3 minutes after complete, 5 after failed")
    func retention() {
        var complete = order()
        _ = complete.act(
            .approve, as: tolvan, from: "10.0.0.1", outcome: .complete, at: start, timing: timing)
        #expect(!complete.isExpired(at: start.addingTimeInterval(179), timing: timing))
        #expect(complete.isExpired(at: start.addingTimeInterval(180), timing: timing))
        var failed = order()
        _ = failed.act(.cancel, as: tolvan, from: "10.0.0.1", outcome: .complete, at: start, timing: timing)
        #expect(!failed.isExpired(at: start.addingTimeInterval(299), timing: timing))
        #expect(failed.isExpired(at: start.addingTimeInterval(300), timing: timing))
    }

    @Test("cancel once; a second cancel is refused")
    func cancel() {
        var subject = order()
        let first = subject.cancel(at: start, timing: timing)
        let second = subject.cancel(at: start, timing: timing)
        #expect(first)
        #expect(!second)
        #expect(collect(&subject, after: 1) == .failed(hint: "cancelled"))
    }

    @Test("wrong codes: userSign until the limit, then certificateErr")
    func wrongCodes() {
        var subject = order()
        for _ in 0..<2 {
            _ = subject.act(
                .wrongCode, as: tolvan, from: "10.0.0.1", outcome: .complete, at: start, timing: timing)
            #expect(collect(&subject, after: 1) == .pending(hint: "userSign"))
        }
        _ = subject.act(
            .wrongCode, as: tolvan, from: "10.0.0.1", outcome: .complete, at: start, timing: timing)
        #expect(collect(&subject, after: 1) == .failed(hint: "certificateErr"))
    }

    @Test(
        "user actions and configured outcomes end in their hint codes",
        arguments: [
            (UserAction.cancel, Outcome.complete, "userCancel"), (.decline, .complete, "userCancel"),
            (.approve, .userCancel, "userCancel"), (.approve, .certificateErr, "certificateErr"),
            (.approve, .startFailed, "startFailed"), (.approve, .expiredTransaction, "expiredTransaction"),
            (.approve, .transactionRiskBlocked, "transactionRiskBlocked"),
        ])
    func outcomes(action: UserAction, outcome: Outcome, hint: String) {
        var subject = order()
        _ = subject.act(action, as: tolvan, from: "10.0.0.1", outcome: outcome, at: start, timing: timing)
        #expect(collect(&subject, after: 1) == .failed(hint: hint))
    }

    @Test("declining a phone call is userDeclinedCall")
    func declineCall() {
        var subject = order(
            OrderRequest(kind: .phoneSign, personalNumber: anna.personalNumber, callInitiator: "user"))
        _ = subject.act(.decline, as: anna, from: "10.0.0.1", outcome: .complete, at: start, timing: timing)
        #expect(collect(&subject, after: 1) == .failed(hint: "userDeclinedCall"))
    }

    @Test("requirement.risk low blocks a person assessed moderate")
    func riskRequirement() {
        let risky = TestPerson.builtIn.first { $0.risk == "moderate" }!
        var subject = order(OrderRequest(kind: .auth, endUserIp: "192.0.2.1", acceptedRisk: "low"))
        _ = subject.act(.approve, as: risky, from: "10.0.0.1", outcome: .complete, at: start, timing: timing)
        #expect(collect(&subject, after: 1) == .failed(hint: "transactionRiskBlocked"))
    }

    @Test("the required person only; another person cannot take over an opened order")
    func persons() {
        var required = order(
            OrderRequest(kind: .auth, endUserIp: "192.0.2.1", personalNumber: anna.personalNumber))
        #expect(
            act(&required, .approve, as: tolvan, from: "x", outcome: .complete, at: start, timing: timing)
                == .wrongPerson)
        var opened = order()
        _ = opened.act(.open, as: tolvan, from: "x", outcome: .complete, at: start, timing: timing)
        #expect(
            act(&opened, .approve, as: anna, from: "x", outcome: .complete, at: start, timing: timing)
                == .otherPerson)
        _ = opened.act(.approve, as: tolvan, from: "x", outcome: .complete, at: start, timing: timing)
        #expect(
            act(&opened, .approve, as: tolvan, from: "x", outcome: .complete, at: start, timing: timing)
                == .notPending)
    }

    @Test("auto-complete: pending for N collects, complete on the next, as the default person")
    func autoComplete() {
        var subject = order()
        #expect(collect(&subject, after: 0, autoComplete: 2) == .pending(hint: "outstandingTransaction"))
        #expect(collect(&subject, after: 1, autoComplete: 2) == .pending(hint: "outstandingTransaction"))
        #expect(collect(&subject, after: 2, autoComplete: 2) == .complete)
        #expect(subject.person == tolvan)
    }

    @Test("built-in test persons have valid personal numbers and the first is the default")
    func builtInPersons() {
        #expect(TestPerson.builtIn.first?.personalNumber == "198112289874")
        #expect(Set(TestPerson.builtIn.map(\.personalNumber)).count == TestPerson.builtIn.count)
        for person in TestPerson.builtIn {
            let digits = person.personalNumber.compactMap(\.wholeNumberValue)
            #expect(digits.count == 12)
            var sum = 0
            for (index, digit) in digits[2...].enumerated() {
                let weighted = digit * (index % 2 == 0 ? 2 : 1)
                sum += weighted / 10 + weighted % 10
            }
            #expect(sum % 10 == 0, "Luhn check over YYMMDDNNNC")
        }
    }
}
