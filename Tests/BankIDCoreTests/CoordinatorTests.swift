import BankIDCore
import Foundation
import Kernel
import Storage
import Synchronization
import TestSupport
import Testing

@Suite("Collect coordinator: single-flight, kept final results, cancellation")
struct CoordinatorTests {
    static let key = try! IdentityKey(id: "k1", secret: Array(repeating: 42, count: 32))
    let hasher = try! IdentityHasher(currentKeyID: "k1", keys: [CoordinatorTests.key])
    /// Each test's own orders database (Swift Testing makes the suite anew for every test).
    let storage: TestStore

    init() throws { storage = try TestStore(.sqlite) }

    /// A scripted BankID: /auth starts the fixture order, /collect answers what `collectAnswer`
    /// holds (waiting at `gate` first when one is set), /cancel answers {}.
    final class ScriptedBankID: Sendable {
        /// What /collect answers and the door it waits at; a class so the transport can share it.
        final class Script: Sendable {
            let collectAnswer = Mutex<(Int, String)>((200, Fixtures.pendingJSON()))
            let gate = Mutex<Gate?>(nil)
        }

        let script = Script()
        let transport: CannedTransport
        init() {
            let script = script
            transport = CannedTransport { request in
                switch request.path {
                case "/auth", "/sign":
                    return BankIDHTTPResponse(status: 200, body: Array(Fixtures.startJSON.utf8))
                case "/phone/auth", "/phone/sign":
                    return BankIDHTTPResponse(status: 200, body: Array(#"{"orderRef":"phone-1"}"#.utf8))
                case "/collect":
                    if let door = script.gate.withLock({ $0 }) { await door.wait() }
                    let (status, json) = script.collectAnswer.withLock { $0 }
                    return BankIDHTTPResponse(status: status, body: Array(json.utf8))
                default: return BankIDHTTPResponse(status: 200, body: Array("{}".utf8))
                }
            }
        }

        func hold(at gate: Gate?) { script.gate.withLock { $0 = gate } }
        func answer(_ json: String, status: Int = 200) {
            script.collectAnswer.withLock { $0 = (status, json) }
        }
        func count(_ path: String) -> Int { transport.paths().filter { $0 == path }.count }
    }

    /// A coordinator over `store`, or over the test's own database when none is given.
    func coordinator(
        _ bankID: ScriptedBankID, store: (any BankIDOrderStore)? = nil, clock: FixedClock,
        instance: String = "i1"
    ) -> BankIDCollectCoordinator {
        BankIDCollectCoordinator(
            client: BankIDClient(transport: bankID.transport), store: store ?? storage.store, hasher: hasher,
            clock: clock, instanceID: instance, timing: BankIDOrderTiming())
    }

    func startAuth(_ coordinator: BankIDCollectCoordinator) async throws -> BankIDStartedOrder {
        try await coordinator.start(.auth, BankIDStartRequest(endUserIP: "192.0.2.1"), intent: .login)
    }

    @Test("start stores the order and returns the autostart token and QR data at t = 0, never the secret")
    func start() async throws {
        let bankID = ScriptedBankID()
        let store = storage.store
        let clock = FixedClock()
        let coordinator = coordinator(bankID, store: store, clock: clock)
        let started = try await startAuth(coordinator)
        #expect(started.orderRef == Fixtures.orderRef)
        #expect(started.autoStartToken == "7c40b5c9-fa74-49cf-b98c-bfe651f9a7c6")
        #expect(started.qrData?.hasPrefix("bankid.67df3917-fa0d-44e5-b327-edcc928297f8.0.dc69358e") == true)
        #expect(!"\(started)".contains("d28db9a7"))
        let stored = try #require(try store.bankIDOrder(orderRef: Fixtures.orderRef))
        #expect(stored.intent == .login && stored.kind == .auth && stored.endUserIP == "192.0.2.1")
        clock.advance(by: 2.5)
        #expect(
            try coordinator.qrData(orderRef: Fixtures.orderRef)
                == "bankid.67df3917-fa0d-44e5-b327-edcc928297f8.2.a9e5ec59cb4eee4ef4117150abc58fad7a85439a6a96ccbecc3668b41795b3f3"
        )
    }

    @Test("50 concurrent pollers of one order cause one /collect per poll interval")
    func fiftyPollers() async throws {
        let bankID = ScriptedBankID()
        let clock = FixedClock()
        let coordinator = coordinator(bankID, clock: clock)
        let started = try await startAuth(coordinator)
        let gate = Gate()
        bankID.hold(at: gate)
        let results = Task {
            try await withThrowingTaskGroup(of: BankIDOrderSnapshot.self) { group in
                for _ in 0..<50 { group.addTask { try await coordinator.poll(orderRef: started.orderRef) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        // Hold the one collect in flight until it has certainly been sent, then let it answer.
        while bankID.count("/collect") == 0 { await Task.yield() }
        for _ in 0..<100 { await Task.yield() }
        gate.open()
        let snapshots = try await results.value
        #expect(snapshots.count == 50)
        #expect(snapshots.allSatisfy { $0.status == .pending && $0.hintCode == .outstandingTransaction })
        #expect(bankID.count("/collect") == 1)
        #expect(coordinator.upstreamCollectCount == 1)

        // Within the interval every poll is answered from the stored answer; after it, one more collect.
        bankID.hold(at: nil)
        clock.advance(by: 1.9)
        for _ in 0..<10 { _ = try await coordinator.poll(orderRef: started.orderRef) }
        #expect(bankID.count("/collect") == 1)
        clock.advance(by: 0.1)
        bankID.answer(Fixtures.pendingJSON("userSign"))
        let next = try await coordinator.poll(orderRef: started.orderRef)
        #expect(next.hintCode == .userSign)
        #expect(next.message(MessageTests.desktopQR) == .rfa9)
        #expect(bankID.count("/collect") == 2)
    }

    @Test("snapshot answers at once from the store and leaves the collect to a shared background round")
    func snapshotDoesNotWait() async throws {
        let bankID = ScriptedBankID()
        let clock = FixedClock()
        let coordinator = coordinator(bankID, clock: clock)
        let started = try await startAuth(coordinator)
        let gate = Gate()
        bankID.hold(at: gate)
        // BankID is not answering, yet every snapshot returns at once with the stored state.
        for _ in 0..<20 {
            let now = try coordinator.snapshot(orderRef: started.orderRef)
            #expect(now.status == .pending && now.hintCode == nil)
        }
        while bankID.count("/collect") == 0 { await Task.yield() }
        gate.open()
        // Awaiting a poll joins the same round; then the next snapshot has its answer.
        _ = try await coordinator.poll(orderRef: started.orderRef)
        #expect(try coordinator.snapshot(orderRef: started.orderRef).hintCode == .outstandingTransaction)
        #expect(bankID.count("/collect") == 1)
    }

    @Test("a background collect is sent even while every thread of Swift's global executor is blocked")
    func backgroundCollectOffTheGlobalExecutor() async throws {
        let bankID = ScriptedBankID()
        let coordinator = coordinator(bankID, clock: FixedClock())
        let started = try await startAuth(coordinator)
        // This test's own thread blocks as well, waiting for the /collect.
        let sent = try whileGlobalExecutorBlocked {
            _ = try coordinator.snapshot(orderRef: started.orderRef)
            return Threads.wait(atMost: 3) { bankID.count("/collect") == 1 }
        }
        #expect(sent, "the background collect waited for the global executor's threads")
    }

    @Test("two instances sharing one SQLite database send one /collect between them")
    func twoInstances() async throws {
        let bankID = ScriptedBankID()
        let clock = FixedClock()
        let first = coordinator(
            bankID, store: SQLStore(engine: storage.engine), clock: clock, instance: "a")
        let second = coordinator(
            bankID, store: SQLStore(engine: storage.engine), clock: clock, instance: "b")
        let started = try await startAuth(first)
        let gate = Gate()
        bankID.hold(at: gate)
        let results = Task {
            try await withThrowingTaskGroup(of: BankIDOrderSnapshot.self) { group in
                for index in 0..<40 {
                    let instance = index % 2 == 0 ? first : second
                    group.addTask { try await instance.poll(orderRef: started.orderRef) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        while bankID.count("/collect") == 0 { await Task.yield() }
        for _ in 0..<100 { await Task.yield() }
        gate.open()
        let snapshots = try await results.value
        #expect(snapshots.count == 40 && snapshots.allSatisfy { $0.status == .pending })
        #expect(bankID.count("/collect") == 1)
        #expect(first.upstreamCollectCount + second.upstreamCollectCount == 1)
    }

    @Test("after complete: the kept result answers late and duplicate polls; no /collect is ever sent again")
    func completeKept() async throws {
        let bankID = ScriptedBankID()
        let store = storage.store
        let clock = FixedClock()
        let coordinator = coordinator(bankID, store: store, clock: clock)
        let started = try await startAuth(coordinator)
        bankID.answer(Fixtures.completeJSON())
        let done = try await coordinator.poll(orderRef: started.orderRef)
        #expect(done.status == .complete)
        let completion = try #require(done.completion)
        #expect(completion.identity == hasher.digest(try PersonalNumber(Fixtures.personalNumber)))
        #expect(completion.name == "Karl Karlsson" && completion.deviceIPAddress == "192.0.2.7")
        #expect(completion.signature == nil, "an identification keeps no signature")
        #expect(done.message(MessageTests.desktopQR) == nil)
        // BankID would now refuse a second collect; the kept result answers instead.
        bankID.answer(Fixtures.error("invalidParameters"), status: 400)
        for step in 0..<5 {
            clock.advance(by: 30)
            let again = try await coordinator.poll(orderRef: started.orderRef)
            #expect(again == done, "poll \(step) gets the same answer")
        }
        #expect(bankID.count("/collect") == 1)
        #expect(try coordinator.qrData(orderRef: started.orderRef) == nil)
        // Nothing in the store or the answer holds the personal number.
        let stored = try #require(try store.bankIDOrder(orderRef: started.orderRef))
        #expect(!String(reflecting: stored).contains(Fixtures.personalNumber))
        // Past the retention window the result is gone.
        clock.advance(by: 31)
        await #expect(throws: BankIDError(.orderExpired, "")) {
            try await coordinator.poll(orderRef: started.orderRef)
        }
        #expect(bankID.count("/collect") == 1)
        #expect(try coordinator.purge() == 1)
        await #expect(throws: BankIDError(.orderNotFound, "")) {
            try await coordinator.poll(orderRef: started.orderRef)
        }
    }

    @Test("a signature keeps its XML signature and OCSP response")
    func signKeepsSignature() async throws {
        let bankID = ScriptedBankID()
        let coordinator = coordinator(bankID, clock: FixedClock())
        let started = try await coordinator.start(
            .sign, BankIDStartRequest(endUserIP: "192.0.2.1", userVisibleData: "Godkänn"), intent: .sign)
        bankID.answer(Fixtures.completeJSON())
        let done = try await coordinator.poll(orderRef: started.orderRef)
        #expect(
            done.completion?.signature == "PHNpZ25hdHVyZT4="
                && done.completion?.ocspResponse == "MIIHfgoBAKCCB3c=")
    }

    @Test("failed: kept with its hint and message; not collected again")
    func failedKept() async throws {
        let bankID = ScriptedBankID()
        let clock = FixedClock()
        let coordinator = coordinator(bankID, clock: clock)
        let started = try await startAuth(coordinator)
        bankID.answer(Fixtures.failedJSON("startFailed"))
        let failed = try await coordinator.poll(orderRef: started.orderRef)
        #expect(failed.status == .failed && failed.hintCode == .startFailed)
        #expect(failed.message(MessageTests.desktopQR) == .rfa17B)
        clock.advance(by: 299)
        #expect(try await coordinator.poll(orderRef: started.orderRef) == failed)
        #expect(bankID.count("/collect") == 1)
    }

    @Test("cancel: marks the order cancelled, sends /cancel once, and stops collecting")
    func cancel() async throws {
        let bankID = ScriptedBankID()
        let clock = FixedClock()
        let coordinator = coordinator(bankID, clock: clock)
        let started = try await startAuth(coordinator)
        _ = try await coordinator.poll(orderRef: started.orderRef)
        let cancelled = try await coordinator.cancel(orderRef: started.orderRef)
        #expect(cancelled.status == .cancelled)
        #expect(cancelled.message(MessageTests.desktopQR) == .rfa3)
        clock.advance(by: 10)
        #expect(try await coordinator.poll(orderRef: started.orderRef).status == .cancelled)
        // A second cancel of an ended order sends nothing.
        _ = try await coordinator.cancel(orderRef: started.orderRef)
        #expect(bankID.count("/cancel") == 1)
        #expect(bankID.count("/collect") == 1)
        #expect(
            try bankID.transport.body(bankID.transport.requests.count - 1) as NSDictionary == [
                "orderRef": Fixtures.orderRef
            ])
    }

    @Test("a new order supersedes the old one: the old is cancelled upstream first")
    func supersede() async throws {
        let bankID = ScriptedBankID()
        let store = storage.store
        let coordinator = coordinator(bankID, store: store, clock: FixedClock())
        let first = try await coordinator.startPhone(
            .phoneAuth, BankIDPhoneRequest(callInitiator: .rp), intent: .login)
        #expect(first.orderRef == "phone-1" && first.qrData == nil)
        _ = try await coordinator.start(
            .auth, BankIDStartRequest(endUserIP: "192.0.2.1"), intent: .login, superseding: first.orderRef)
        #expect(bankID.transport.paths() == ["/phone/auth", "/cancel", "/auth"])
        #expect(try store.bankIDOrder(orderRef: "phone-1")?.state.status == .cancelled)
        // Superseding an order that is already gone is not an error.
        let elsewhere = try TestStore(.sqlite)
        let fresh = self.coordinator(ScriptedBankID(), store: elsewhere.store, clock: FixedClock())
        _ = try await fresh.start(
            .auth, BankIDStartRequest(endUserIP: "192.0.2.1"), intent: .login, superseding: "purged-long-ago")
    }

    @Test("collect errors: a timeout is surfaced and the order stays pending; invalidParameters ends it")
    func collectErrors() async throws {
        let bankID = ScriptedBankID()
        let clock = FixedClock()
        let store = storage.store
        let coordinator = coordinator(bankID, store: store, clock: clock)
        let started = try await startAuth(coordinator)
        bankID.answer(Fixtures.error("internalError"), status: 500)
        await #expect(throws: BankIDError(.internalError, "")) {
            try await coordinator.poll(orderRef: started.orderRef)
        }
        let afterError = try #require(try store.bankIDOrder(orderRef: started.orderRef))
        #expect(afterError.state.status == .pending && afterError.leaseOwner == nil, "the lease is released")
        // A failed collect counts for the poll interval: BankID is asked again only after it.
        #expect(try await coordinator.poll(orderRef: started.orderRef).status == .pending)
        #expect(bankID.count("/collect") == 1)
        clock.advance(by: 2)
        bankID.answer(Fixtures.error("invalidParameters"), status: 400)
        await #expect(throws: BankIDError(.invalidParameters, "")) {
            try await coordinator.poll(orderRef: started.orderRef)
        }
        clock.advance(by: 5)
        #expect(try await coordinator.poll(orderRef: started.orderRef).status == .failed)
        #expect(bankID.count("/collect") == 2)
    }

    @Test("a failing collect shows every poller RFA5 until BankID answers again, then the normal message")
    func failingCollectIsShown() async throws {
        let bankID = ScriptedBankID()
        let clock = FixedClock()
        let store = storage.store
        let coordinator = coordinator(bankID, store: store, clock: clock)
        let started = try await startAuth(coordinator)
        bankID.answer(Fixtures.pendingJSON("userSign"))
        let answered = try await coordinator.poll(orderRef: started.orderRef)
        #expect(!answered.collectFailing && answered.message(MessageTests.desktopQR) == .rfa9)

        clock.advance(by: 2)
        bankID.answer(Fixtures.error("internalError"), status: 500)
        await #expect(throws: BankIDError(.internalError, "")) {
            try await coordinator.poll(orderRef: started.orderRef)
        }
        // Another instance reading the same order sees the outage too: it is kept with the order.
        let elsewhere = self.coordinator(
            bankID, store: SQLStore(engine: storage.engine), clock: clock, instance: "b")
        let failing = try elsewhere.snapshot(orderRef: started.orderRef)
        #expect(failing.status == .pending && failing.collectFailing)
        #expect(
            failing.message(MessageTests.desktopQR) == .rfa5, "not RFA1 'start the app' while BankID is down")
        #expect(try store.bankIDOrder(orderRef: started.orderRef)?.state.collectFailedAt == clock.now())

        clock.advance(by: 2)
        bankID.answer(Fixtures.pendingJSON("userSign"))
        let recovered = try await coordinator.poll(orderRef: started.orderRef)
        #expect(!recovered.collectFailing && recovered.message(MessageTests.desktopQR) == .rfa9)
        #expect(try store.bankIDOrder(orderRef: started.orderRef)?.state.collectFailedAt == nil)
    }

    @Test("unknown orders are not found and cause no upstream call")
    func unknownOrder() async {
        let bankID = ScriptedBankID()
        let coordinator = coordinator(bankID, clock: FixedClock())
        await #expect(throws: BankIDError(.orderNotFound, "")) {
            try await coordinator.poll(orderRef: "nope")
        }
        await #expect(throws: BankIDError(.orderNotFound, "")) {
            try await coordinator.cancel(orderRef: "nope")
        }
        #expect(bankID.transport.requests.isEmpty)
    }
}
