import AuthOrchestrator
import BankIDCore
import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import SessionCore
import Storage
import Synchronization
import TestSupport
import Testing

// MARK: A BankID the tests play the user's app in

/// BankID behind the real `BankIDClient`, without a network: every order stays pending until
/// the test completes or fails it, as the user's app would, and every request is recorded.
final class FakeBankID: BankIDTransport {
    /// What /collect answers for an order.
    enum Answer: Sendable {
        case pending
        case complete(number: String, name: String, ip: String, risk: String?)
        case failed(hint: String)
    }

    private struct State {
        var requests: [BankIDHTTPRequest] = []
        var answers: [String: Answer] = [:]
        var orders = 0
        /// The error /auth and /sign answer instead of starting, when set.
        var startError: (status: Int, code: String)?
    }

    private let state = Mutex(State())

    func send(_ request: BankIDHTTPRequest) async throws(BankIDError) -> BankIDHTTPResponse {
        let json = Self.object(request.body)
        return state.withLock { state in
            state.requests.append(request)
            switch request.path {
            case "/auth", "/sign", "/phone/auth", "/phone/sign":
                if let (status, code) = state.startError {
                    return Self.response(status, #"{"errorCode":"\#(code)","details":"refused"}"#)
                }
                state.orders += 1
                let orderRef = "order-\(state.orders)"
                state.answers[orderRef] = .pending
                return Self.response(
                    200,
                    #"{"orderRef":"\#(orderRef)","autoStartToken":"auto-\#(state.orders)","#
                        + #""qrStartToken":"qr-\#(state.orders)","qrStartSecret":"secret-\#(state.orders)"}"#)
            case "/collect":
                let orderRef = json["orderRef"] as? String ?? ""
                switch state.answers[orderRef] {
                case nil:
                    return Self.response(400, #"{"errorCode":"invalidParameters","details":"no such order"}"#)
                case .pending:
                    return Self.response(
                        200,
                        #"{"orderRef":"\#(orderRef)","status":"pending","hintCode":"outstandingTransaction"}"#
                    )
                case .failed(let hint):
                    return Self.response(
                        200, #"{"orderRef":"\#(orderRef)","status":"failed","hintCode":"\#(hint)"}"#)
                case .complete(let number, let name, let ip, let risk):
                    let riskMember = risk.map { #","risk":"\#($0)""# } ?? ""
                    return Self.response(
                        200,
                        #"{"orderRef":"\#(orderRef)","status":"complete","completionData":{"#
                            + #""user":{"personalNumber":"\#(number)","name":"\#(name)","#
                            + #""givenName":"Karl","surname":"Karlsson"},"device":{"ipAddress":"\#(ip)"},"#
                            + #""signature":"PHNpZ25hdHVyZT4=","ocspResponse":"MIIHfgoBAKCCB3c="\#(riskMember)}}"#
                    )
                }
            case "/cancel":
                state.answers[json["orderRef"] as? String ?? ""] = .failed(hint: "cancelled")
                return Self.response(200, "{}")
            default:
                return Self.response(404, #"{"errorCode":"notFound","details":"no such endpoint"}"#)
            }
        }
    }

    /// Sets what /collect answers for `orderRef` from now on.
    func answer(_ orderRef: String, _ answer: Answer) { state.withLock { $0.answers[orderRef] = answer } }

    /// Makes every start fail with BankID's `code` (or start again with nil).
    func refuseStarts(_ error: (status: Int, code: String)?) { state.withLock { $0.startError = error } }

    /// The bodies of the start requests (/auth and /sign) sent so far, with their paths.
    var starts: [(path: String, body: [String: Any])] {
        state.withLock { state in
            state.requests.filter { ["/auth", "/sign"].contains($0.path) }.map {
                ($0.path, Self.object($0.body))
            }
        }
    }

    /// The bodies of the requests sent to `path`.
    func bodies(_ path: String) -> [[String: Any]] {
        state.withLock { $0.requests.filter { $0.path == path }.map { Self.object($0.body) } }
    }

    /// How many requests went to `path`.
    func count(_ path: String) -> Int { state.withLock { $0.requests.filter { $0.path == path }.count } }

    private static func object(_ body: [UInt8]) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }

    private static func response(_ status: Int, _ json: String) -> BankIDHTTPResponse {
        BankIDHTTPResponse(status: status, body: Array(json.utf8))
    }
}

// MARK: A store whose writes can be made to fail

/// The SQLite store with switches that make an audit append or a completion commit fail, as a
/// full disk or a lost database would.
final class FaultyBankIDStore: BankIDIdentityStore, AuditStore {
    let inner: SQLStore
    private let failing = Mutex<(audit: Bool, commit: Bool)>((false, false))

    init(_ inner: SQLStore) { self.inner = inner }

    /// Makes appends to the audit trail fail (or succeed again).
    func failAudit(_ fail: Bool) { failing.withLock { $0.audit = fail } }

    /// Makes completion commits (which append their audit events in the same transaction) fail.
    func failCommit(_ fail: Bool) { failing.withLock { $0.commit = fail } }

    func appendAudit(_ event: AuditEvent) throws -> Int64 {
        if failing.withLock({ $0.audit }) { throw StorageError(.io, "the audit trail cannot be written") }
        return try inner.appendAudit(event)
    }

    func auditEvents(userID: String?, beforeID: Int64?, limit: Int) throws -> [AuditEvent] {
        try inner.auditEvents(userID: userID, beforeID: beforeID, limit: limit)
    }

    func commitBankIDCompletion(_ record: BankIDCompletionRecord) throws -> Bool {
        if failing.withLock({ $0.commit }) { throw StorageError(.io, "the completion cannot be written") }
        return try inner.commitBankIDCompletion(record)
    }

    func linkedIdentity(userID: String) throws -> LinkedIdentity? { try inner.linkedIdentity(userID: userID) }

    func linkedIdentity(matching digests: [IdentityDigest]) throws -> LinkedIdentity? {
        try inner.linkedIdentity(matching: digests)
    }

    func rekeyLinkedIdentity(userID: String, to digest: IdentityDigest) throws {
        try inner.rekeyLinkedIdentity(userID: userID, to: digest)
    }

    func unlinkIdentity(userID: String, record: ChangeRecord) throws -> Bool {
        try inner.unlinkIdentity(userID: userID, record: record)
    }

    func bankIDSignatures(userID: String) throws -> [BankIDSignatureEvidence] {
        try inner.bankIDSignatures(userID: userID)
    }

    func bankIDSignature(id: String) throws -> BankIDSignatureEvidence? { try inner.bankIDSignature(id: id) }

    func insertBankIDFlow(_ flow: BankIDFlow) throws { try inner.insertBankIDFlow(flow) }

    func bankIDFlow(idHash: [UInt8]) throws -> BankIDFlow? { try inner.bankIDFlow(idHash: idHash) }

    func stepUp(sessionID: String) throws -> SessionStepUp? { try inner.stepUp(sessionID: sessionID) }

    func purgeBankIDFlows(createdBefore cutoff: Date) throws -> Int {
        try inner.purgeBankIDFlows(createdBefore: cutoff)
    }
}

/// A sandbox check over a fixed set of accounts, or one that cannot answer.
struct ListedSandbox: BankIDSandbox {
    var sandboxed: Set<String> = []
    var broken = false

    func isSandboxed(userID: String) throws -> Bool {
        if broken { throw StorageError(.io, "the review accounts cannot be read") }
        return sandboxed.contains(userID)
    }
}

// MARK: The fixture

/// One order as the test's client holds it: our order id, BankID's orderRef (which only the
/// fake BankID and the test know), and the client it is bound to.
struct HeldOrder {
    let id: String
    let orderRef: String
    let requester: BankIDRequester
    let started: StartedBankIDFlow
}

/// `BankIDService` over SQLite on a temporary file, the real collect coordinator and client over
/// the fake BankID, a fixed clock and seeded randomness; no HTTP anywhere.
final class BankIDJourneyFixture: @unchecked Sendable {
    /// Test personal numbers (valid check digits, not real people).
    static let karl = "198112289874"
    static let other = "199001012385"

    let clock = FixedClock()
    let random = SeededRandom(seed: "bankid-journeys")
    let directory: TemporaryDirectory
    let database: SQLiteDatabase
    let store: SQLStore
    let faults: FaultyBankIDStore
    let bankID = FakeBankID()
    let hasher: IdentityHasher
    let coordinator: BankIDCollectCoordinator
    let sessions: SessionService
    let enrollment: EnrollmentService
    let service: BankIDService
    let context = ClientContext(requestID: "req-1", ipAddress: "192.0.2.10", userAgent: "journey-tests")

    /// The app identifier the fixture's content allows, and the app details native starts send.
    static let appIdentifier = "se.example.app"
    static let app = BankIDAppDetails(
        appIdentifier: appIdentifier, deviceOS: "iOS 18.1", deviceModelName: "Apple iPhone16,2",
        deviceIdentifier: "device-1")

    /// The order content unless a test gives its own: built-in texts, the fixture's app allowed.
    static func content(
        requirements: [BankIDOrderIntent: BankIDRequirement] = [:],
        texts: [BankIDOrderIntent: BankIDOrderText] = [:]
    ) -> BankIDOrderContent {
        BankIDOrderContent(
            serviceName: "Example", publicOrigin: "https://login.example.com",
            allowedOrigins: ["https://app.example.com"], texts: texts, requirements: requirements,
            appIdentifiers: [appIdentifier], deviceKey: Array(repeating: 9, count: 32))
    }

    init(
        policy: BankIDPolicy = BankIDPolicy(), sandbox: (any BankIDSandbox)? = nil,
        recoveryWired: Bool = true,
        content: BankIDOrderContent = BankIDJourneyFixture.content()
    ) throws {
        directory = try TemporaryDirectory(prefix: "bankid-journeys")
        database = try SQLiteDatabase(path: directory.path("portvakt.sqlite"), clock: clock)
        store = SQLStore(database: database, clock: clock)
        faults = FaultyBankIDStore(store)
        hasher = try IdentityHasher(
            currentKeyID: "k1", keys: [try IdentityKey(id: "k1", secret: Array(repeating: 7, count: 32))])
        coordinator = BankIDCollectCoordinator(
            client: BankIDClient(transport: bankID), store: store, hasher: hasher, clock: clock)
        sessions = SessionService(repository: store, policy: SessionPolicy(), clock: clock, random: random)
        let passkeys = PasskeyService(
            accounts: store, challenges: store, audit: store, logins: store, identities: store,
            sessions: sessions,
            policy: PasskeyPolicy(
                relyingParty: RelyingParty(
                    id: "example.com", name: "Example", allowedOrigins: ["https://login.example.com"])),
            clock: clock, random: random)
        enrollment = EnrollmentService(
            store: store, passkeys: passkeys, sessions: sessions, clock: clock, random: random)
        service = BankIDService(
            coordinator: coordinator, identities: faults, accounts: store, audit: faults, sessions: sessions,
            policy: policy, clock: clock, random: random, recoveryTokens: recoveryWired ? enrollment : nil,
            sandbox: sandbox, content: content)
    }

    deinit { database.close() }

    // MARK: The client's side

    /// Starts an order the way the API would, and keeps the binding the start handed out.
    func start(
        _ intent: BankIDOrderIntent, device: BankIDDevice = .other, text: String? = nil,
        client: ClientKind = .web, as requester: BankIDRequester = BankIDRequester(),
        details: BankIDStartDetails? = nil
    ) async throws -> HeldOrder {
        let started = try await service.start(
            intent: intent, device: device, userVisibleText: text, clientKind: client, requester: requester,
            context: context, details: details ?? BankIDStartDetails(app: client == .native ? Self.app : nil))
        var requester = requester
        if let binding = started.newBinding { requester.binding = binding }
        let flow = try #require(try store.bankIDFlow(idHash: Digest.sha256(started.orderID)))
        return HeldOrder(id: started.orderID, orderRef: flow.orderRef, requester: requester, started: started)
    }

    /// One status poll, as GET /v1/bankid/orders/{id} makes it.
    func poll(_ order: HeldOrder, as requester: BankIDRequester? = nil, nonce: String? = nil) throws
        -> BankIDFlowStatus
    {
        try service.status(
            orderID: order.id, requester: requester ?? order.requester, returnNonce: nonce, context: context)
    }

    /// The user identifies (or signs) in the app as `number`; returns once the coordinator has
    /// collected the completion, so the next poll applies it.
    func identify(
        _ order: HeldOrder, as number: String = karl, name: String = "Karl Karlsson",
        ip: String = "192.0.2.10",
        risk: String? = nil
    ) async throws {
        bankID.answer(order.orderRef, .complete(number: number, name: name, ip: ip, risk: risk))
        try await collectUntilFinal(order)
    }

    /// The order fails in the app with `hint`.
    func fail(_ order: HeldOrder, hint: String = "userCancel") async throws {
        bankID.answer(order.orderRef, .failed(hint: hint))
        try await collectUntilFinal(order)
    }

    /// Past the poll interval, collects until BankID's final answer is stored (a collect a
    /// status poll left running in the background may still answer pending first).
    private func collectUntilFinal(_ order: HeldOrder) async throws {
        for _ in 0..<5 {
            clock.advance(by: 3)
            if try await coordinator.poll(orderRef: order.orderRef).status != .pending { return }
        }
        Issue.record("the order never reached a final state")
    }

    /// The result the first poll after completion receives.
    func result(_ order: HeldOrder, nonce: String? = nil) throws -> BankIDFlowResult {
        let status = try poll(order, nonce: nonce)
        #expect(status.status == .complete)
        return try #require(status.result)
    }

    // MARK: Accounts

    /// A new account without BankID, as a passkey sign-up or an administrator makes it.
    func makeUser(_ name: String, disabled: Bool = false) throws -> User {
        let user = User(
            id: "u-" + name, username: name, displayName: name, createdAt: clock.now(),
            disabledAt: disabled ? clock.now() : nil)
        try store.insertUser(user)
        return user
    }

    /// An account created by BankID sign-up as `number`, so its identity is linked.
    func signedUp(_ number: String = karl) async throws -> User {
        let order = try await start(.signup)
        try await identify(order, as: number)
        let result = try self.result(order)
        #expect(result.code == .accountCreated)
        return try #require(result.user)
    }

    /// A signed-in client of `user` (a passkey session).
    func signedIn(_ user: User) throws -> BankIDRequester {
        let issued = try sessions.issue(userID: user.id, clientKind: .web, authMethod: .passkey)
        return BankIDRequester(session: issued.session, user: user)
    }

    /// Marks `user` disabled, as an administrator does.
    func disable(_ user: User) throws {
        var disabled = user
        disabled.disabledAt = clock.now()
        try store.updateUser(disabled)
    }

    /// The identity digest of `number` under the current key.
    func digest(_ number: String) throws -> IdentityDigest { hasher.digest(try PersonalNumber(number)) }

    /// Every audit event, oldest first.
    func events() throws -> [AuditEvent] {
        try store.auditEvents(userID: nil, beforeID: nil, limit: 1_000).reversed()
    }

    /// The audit actions, oldest first.
    func actions() throws -> [String] { try events().map(\.action.rawValue) }
}

/// Runs `body` and returns the code of the `AuthError` it throws (nil when it throws none).
func authErrorCode(_ body: () async throws -> Void) async -> AuthError.Code? {
    do {
        try await body()
        return nil
    } catch let error as AuthError {
        return error.code
    } catch {
        Issue.record("expected an AuthError, got \(error)")
        return nil
    }
}

// MARK: The order engine

@Suite("BankID orders: binding, returnUrl nonce, once-only completion, audit failures (no HTTP)")
struct BankIDOrderTests {
    @Test(
        "another client's order is not found: status and cancel without its binding or session answer order_not_found"
    )
    func anotherClientsOrder() async throws {
        let fixture = try BankIDJourneyFixture()
        let order = try await fixture.start(.login)
        #expect(order.requester.binding?.utf8.count == 43, "an anonymous start hands out a binding value")
        #expect(try fixture.poll(order).status == .pending)

        let stranger = BankIDRequester(binding: String(repeating: "A", count: 43))
        #expect(await authErrorCode { _ = try fixture.poll(order, as: stranger) } == .orderNotFound)
        #expect(await authErrorCode { _ = try fixture.poll(order, as: BankIDRequester()) } == .orderNotFound)
        let someoneSignedIn = try fixture.signedIn(try fixture.makeUser("mallory"))
        #expect(await authErrorCode { _ = try fixture.poll(order, as: someoneSignedIn) } == .orderNotFound)
        #expect(
            await authErrorCode {
                try await fixture.service.cancel(
                    orderID: order.id, requester: stranger, context: fixture.context)
            } == .orderNotFound)
        #expect(fixture.bankID.count("/cancel") == 0, "a stranger's cancel never reaches BankID")

        // The same answer as an order id that never existed.
        let unknown = HeldOrder(
            id: String(repeating: "x", count: 43), orderRef: "", requester: order.requester,
            started: order.started)
        #expect(await authErrorCode { _ = try fixture.poll(unknown) } == .orderNotFound)

        // An order started signed in is bound to the session, not to a binding value.
        let user = try fixture.makeUser("ada")
        let signedIn = try fixture.signedIn(user)
        let linking = try await fixture.start(.link, as: signedIn)
        #expect(linking.started.newBinding == nil)
        #expect(
            await authErrorCode { _ = try fixture.poll(linking, as: try fixture.signedIn(user)) }
                == .orderNotFound)
        #expect(try fixture.poll(linking).status == .pending)
    }

    @Test(
        "a web same-device order holds its result until the poll presents the returnUrl's nonce; a wrong nonce is return_mismatch, audited, the order untouched"
    )
    func returnNonce() async throws {
        let fixture = try BankIDJourneyFixture(policy: BankIDPolicy(returnURL: "https://login.example.com/"))
        _ = try await fixture.signedUp()
        let order = try await fixture.start(.login, device: .same)
        #expect(
            order.started.autoStartToken != nil && order.started.launchURL?.contains("redirect=null") == true)
        let returnURL = try #require(fixture.bankID.starts.last?.body["returnUrl"] as? String)
        let nonce = try #require(
            URLComponents(string: returnURL)?.queryItems?.first { $0.name == "nonce" }?.value)
        #expect(returnURL.hasPrefix("https://login.example.com/?nonce="))
        #expect(
            !"\(order.started)".contains(nonce), "the nonce never goes to the client that started the order")

        try await fixture.identify(order)
        let held = try fixture.poll(order)
        #expect(held.awaitingReturn && held.status == .pending && held.result == nil)

        #expect(await authErrorCode { _ = try fixture.poll(order, nonce: nonce + "x") } == .returnMismatch)
        #expect(try fixture.actions().filter { $0 == "bankid.return_mismatch" }.count == 1)
        #expect(try fixture.poll(order).awaitingReturn, "a wrong nonce leaves the order as it was")

        let result = try fixture.result(order, nonce: nonce)
        #expect(result.code == .signedIn && result.session != nil)
        // A native app gets no returnUrl: it has no page to return to.
        _ = try await fixture.start(.login, device: .same, client: .native)
        #expect(fixture.bankID.starts.last?.body["returnUrl"] == nil)
    }

    @Test(
        "a completed order's result is delivered once: every later poll gets result_delivered, never a second session"
    )
    func deliveredOnce() async throws {
        let fixture = try BankIDJourneyFixture()
        let user = try await fixture.signedUp()
        let order = try await fixture.start(.login)
        try await fixture.identify(order)
        let first = try fixture.result(order)
        #expect(first.code == .signedIn && first.user?.id == user.id && first.session != nil)
        let collects = fixture.bankID.count("/collect")
        for _ in 0..<3 {
            let again = try fixture.result(order)
            #expect(again.code == .resultDelivered && again.session == nil && again.user == nil)
        }
        // The sign-up's session and this login's: nothing more.
        #expect(try fixture.sessions.list(userID: user.id).count == 2)
        #expect(try fixture.actions().filter { $0 == "bankid.login" }.count == 1)
        #expect(
            fixture.bankID.count("/collect") == collects, "the kept result answers later polls, not BankID")
    }

    @Test("a failed order is audited once with its hint code, and shows BankID's message")
    func failedOrder() async throws {
        let fixture = try BankIDJourneyFixture()
        let order = try await fixture.start(.login)
        try await fixture.fail(order, hint: "userCancel")
        let status = try fixture.poll(order)
        #expect(status.status == .failed && status.message == .rfa6 && status.result == nil)
        _ = try fixture.poll(order)
        let failures = try fixture.events().filter { $0.action == .bankIDOrderFailed }
        #expect(failures.count == 1 && failures.first?.details["hintCode"] == "userCancel")
        #expect(try fixture.store.bankIDFlow(idHash: Digest.sha256(order.id))?.outcome == "bankid.failed")
    }

    @Test(
        "a switched-off journey is method_disabled; a text is refused on anything but a signature; no BankID call"
    )
    func startRules() async throws {
        let fixture = try BankIDJourneyFixture(policy: BankIDPolicy(signup: false))
        #expect(await authErrorCode { _ = try await fixture.start(.signup) } == .methodDisabled)
        #expect(
            await authErrorCode { _ = try await fixture.start(.login, text: "Pay 100 kr") }
                == .bankIDInvalidRequest)
        #expect(fixture.bankID.starts.isEmpty)
        let noAddress = await authErrorCode {
            _ = try await fixture.service.start(
                intent: .login, device: .other, userVisibleText: nil, clientKind: .web,
                requester: BankIDRequester(), context: ClientContext())
        }
        #expect(noAddress == .bankIDInvalidRequest)
    }

    @Test(
        "BankID refusing the start is translated (already_in_progress with RFA4) and audited as order_failed_to_start"
    )
    func failedStart() async throws {
        let fixture = try BankIDJourneyFixture()
        fixture.bankID.refuseStarts((400, "alreadyInProgress"))
        #expect(await authErrorCode { _ = try await fixture.start(.login) } == .alreadyInProgress)
        let event = try #require(try fixture.events().last)
        #expect(
            event.action == .bankIDOrderFailedToStart
                && event.details["code"] == "bankid.upstream_already_in_progress")
    }

    @Test("cancel tells BankID and is audited; the order then reads cancelled")
    func cancel() async throws {
        let fixture = try BankIDJourneyFixture()
        let order = try await fixture.start(.login)
        try await fixture.service.cancel(
            orderID: order.id, requester: order.requester, context: fixture.context)
        #expect(fixture.bankID.count("/cancel") == 1)
        #expect(try fixture.actions().last == "bankid.order_cancelled")
        #expect(try fixture.poll(order).status == .cancelled)
    }

    // MARK: Audit writes that fail

    @Test("an audit write that fails fails the start: no order id is handed out unrecorded")
    func auditFailureFailsStart() async throws {
        let fixture = try BankIDJourneyFixture()
        fixture.faults.failAudit(true)
        #expect(await authErrorCode { _ = try await fixture.start(.login) } == .bankIDUnavailable)
        fixture.faults.failAudit(false)
        #expect(try fixture.actions().isEmpty)
    }

    @Test(
        "a failed start whose audit cannot be written fails as bankid.unavailable, not silently as BankID's refusal"
    )
    func auditFailureOnFailedStart() async throws {
        let fixture = try BankIDJourneyFixture()
        fixture.bankID.refuseStarts((400, "alreadyInProgress"))
        fixture.faults.failAudit(true)
        #expect(await authErrorCode { _ = try await fixture.start(.login) } == .bankIDUnavailable)
    }

    @Test("a wrong return nonce whose audit cannot be written fails as bankid.unavailable")
    func auditFailureOnReturnMismatch() async throws {
        let fixture = try BankIDJourneyFixture()
        let order = try await fixture.start(.login, device: .same)
        fixture.faults.failAudit(true)
        #expect(
            await authErrorCode { _ = try fixture.poll(order, nonce: "not-the-nonce") } == .bankIDUnavailable)
    }

    @Test("a cancellation whose audit cannot be written fails the request")
    func auditFailureOnCancel() async throws {
        let fixture = try BankIDJourneyFixture()
        let order = try await fixture.start(.login)
        fixture.faults.failAudit(true)
        let code = await authErrorCode {
            try await fixture.service.cancel(
                orderID: order.id, requester: order.requester, context: fixture.context)
        }
        #expect(code == .bankIDUnavailable)
    }

    @Test("a failed order whose audit cannot be committed fails the poll; the next poll records it, once")
    func auditFailureOnFailedOrder() async throws {
        let fixture = try BankIDJourneyFixture()
        let order = try await fixture.start(.login)
        try await fixture.fail(order, hint: "expiredTransaction")
        fixture.faults.failCommit(true)
        #expect(await authErrorCode { _ = try fixture.poll(order) } == .bankIDUnavailable)
        #expect(try fixture.actions().contains("bankid.order_failed") == false)
        fixture.faults.failCommit(false)
        #expect(try fixture.poll(order).status == .failed)
        _ = try fixture.poll(order)
        #expect(try fixture.actions().filter { $0 == "bankid.order_failed" }.count == 1)
    }

    @Test(
        "a completion whose commit (audit events included) fails fails the poll and applies nothing; a later poll applies it once"
    )
    func auditFailureOnCompletion() async throws {
        let fixture = try BankIDJourneyFixture()
        let order = try await fixture.start(.signup)
        try await fixture.identify(order)
        fixture.faults.failCommit(true)
        #expect(await authErrorCode { _ = try fixture.poll(order) } == .bankIDUnavailable)
        #expect(try fixture.store.userCount() == 0)
        #expect(
            try fixture.store.linkedIdentity(matching: [try fixture.digest(BankIDJourneyFixture.karl)]) == nil
        )
        fixture.faults.failCommit(false)
        let result = try fixture.result(order)
        #expect(result.code == .accountCreated)
        #expect(try fixture.store.userCount() == 1)
        #expect(try fixture.result(order).code == .resultDelivered)
    }

    // MARK: The risk ceiling

    @Test("risk levels rank low < moderate < high; a missing or unknown level is above every ceiling")
    func riskLevels() {
        #expect(BankIDRiskLevel.low < .moderate && BankIDRiskLevel.moderate < .high)
        #expect(BankIDRiskLevel.allCases.sorted() == [.low, .moderate, .high])
        let open = BankIDPolicy()
        #expect(open.admitsRisk(nil) && open.admitsRisk("high") && open.admitsRisk("extreme"))
        let moderate = BankIDPolicy(returnRisk: true, riskCeiling: .moderate)
        #expect(moderate.admitsRisk("low") && moderate.admitsRisk("moderate"))
        #expect(!moderate.admitsRisk("high") && !moderate.admitsRisk(nil) && !moderate.admitsRisk("extreme"))
        #expect(!moderate.admitsRisk("Low"), "BankID's words are compared exactly")
        let high = BankIDPolicy(returnRisk: true, riskCeiling: .high)
        #expect(high.admitsRisk("high") && !high.admitsRisk(nil))
    }

    @Test(
        "above the ceiling, or with no risk reported, a completion is risk_refused, audited with the risk, and changes nothing"
    )
    func riskCeiling() async throws {
        let fixture = try BankIDJourneyFixture(policy: BankIDPolicy(returnRisk: true, riskCeiling: .low))
        let refused = try await fixture.start(.signup)
        #expect(fixture.bankID.starts.last?.body["returnRisk"] as? Bool == true)
        try await fixture.identify(refused, risk: "moderate")
        let result = try fixture.result(refused)
        #expect(result.code == .riskRefused && result.user == nil && result.session == nil)
        #expect(try fixture.store.userCount() == 0)
        let event = try #require(try fixture.events().last)
        #expect(event.action == .bankIDRiskRefused && event.details["risk"] == "moderate")

        let silent = try await fixture.start(.signup)
        try await fixture.identify(silent, risk: nil)
        #expect(try fixture.result(silent).code == .riskRefused)

        let low = try await fixture.start(.signup)
        try await fixture.identify(low, risk: "low")
        #expect(try fixture.result(low).code == .accountCreated)
    }
}
