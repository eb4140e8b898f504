import CryptoCore
import FoundationEssentials
import Glibc
import HTTPEngine
import Kernel

/// The RP API's endpoints under /rp/v6.0/.
enum RPEndpoint: String, CaseIterable, Sendable {
    case auth
    case sign
    case phoneAuth = "phone/auth"
    case phoneSign = "phone/sign"
    case collect
    case cancel
}

/// The simulator's shared state and the two APIs over it. Called from the engine's connection
/// threads (one per connection); every state change happens under one lock, and the order logic
/// itself is `Order`'s pure code.
final class SimulatorEngine: Sendable {
    /// What control can change while running.
    struct Controls: Sendable {
        var outcomes: [String: Outcome]
        var latencyMilliseconds: Int
        var faults: [Fault]
        var autoCompleteAfter: Int?
    }

    struct State: Sendable {
        var orders: [String: Order] = [:]
        var byQRToken: [String: String] = [:]
        var byAutoStartToken: [String: String] = [:]
        var controls: Controls
        /// The bodies of the last order requests (/auth, /sign, /phone/…), oldest first, accepted
        /// or refused, so tests can read exactly what a client sent.
        var orderBodies: [ReceivedOrder] = []
    }

    /// How many order bodies are kept.
    static let keptOrderBodies = 64

    let timing: OrderTiming
    let persons: [TestPerson]
    let clock: any WallClock
    let signingKey: SigningKey
    let certificateDER: [UInt8]
    let log: @Sendable (String) -> Void
    let state: Locked<State>

    init(
        configuration: BankIDSimulatorConfiguration, clock: any WallClock, signingKey: SigningKey,
        certificateDER: [UInt8], log: @escaping @Sendable (String) -> Void
    ) {
        timing = configuration.timing
        persons = configuration.persons
        self.clock = clock
        self.signingKey = signingKey
        self.certificateDER = certificateDER
        self.log = log
        state = Locked(
            State(
                controls: Controls(
                    outcomes: configuration.outcomes, latencyMilliseconds: configuration.latencyMilliseconds,
                    faults: configuration.faults.flatMap { Array(repeating: $0.fault, count: $0.count) },
                    autoCompleteAfter: configuration.autoCompleteAfter)))
    }

    var defaultPerson: TestPerson { persons[0] }

    // MARK: Replies

    /// A BankID-shaped JSON answer.
    static func json(_ status: Int, _ value: JSONValue) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: value.serialized)
    }

    /// BankID's error body: `{"errorCode": ..., "details": ...}`.
    static func error(_ status: Int, _ code: String, _ details: String) -> HTTPResponse {
        json(status, ["errorCode": .string(code), "details": .string(details)])
    }

    // MARK: RP API

    static let rpPrefix = "/rp/v6.0/"

    /// One request to an RP endpoint (the engine routed it: the path is known, the method POST):
    /// faults and latency first, then BankID's checks in its order: media type, body.
    func handleRP(_ endpoint: RPEndpoint, _ request: HTTPRequest) -> HTTPResponse {
        logged(request) {
            if let interrupted = networkAndAvailability() { return interrupted }
            // BankID wants exactly this media type: even "; charset=UTF-8" is refused.
            guard request.headers["Content-Type"] == "application/json" else {
                return Self.error(415, "unsupportedMediaType", "Unsupported media type")
            }
            guard let body = JSONValue.parse(request.body) else {
                return Self.error(400, "invalidParameters", "Invalid JSON body")
            }
            do throws(RequestValidation.Invalid) {
                switch endpoint {
                case .auth: return try start(.auth, body)
                case .sign: return try start(.sign, body)
                case .phoneAuth: return try start(.phoneAuth, body)
                case .phoneSign: return try start(.phoneSign, body)
                case .collect: return try collect(RequestValidation.orderRef(body))
                case .cancel: return try cancel(RequestValidation.orderRef(body))
                }
            } catch {
                return Self.error(400, "invalidParameters", error.details)
            }
        }
    }

    /// An RP request no endpoint took (the engine's fallback): faults and latency apply to it as
    /// to any request, then BankID's answer for a wrong path or method.
    func handleUnroutedRP(_ request: HTTPRequest, _ reason: FallbackReason) -> HTTPResponse {
        logged(request) {
            if let interrupted = networkAndAvailability() { return interrupted }
            switch reason {
            case .notFound: return Self.error(404, "notFound", "Not found")
            case .methodNotAllowed: return Self.error(405, "methodNotAllowed", "Method not allowed")
            case .bodyTooLarge: return Self.error(400, "invalidParameters", "Request body too large")
            }
        }
    }

    /// Runs an RP request and logs its line: method, path and status (or "dropped"); RP paths
    /// carry no identifiers, and bodies, which hold personal numbers, are never logged.
    private func logged(_ request: HTTPRequest, _ answer: () -> HTTPResponse) -> HTTPResponse {
        let response = answer()
        let outcome = response.dropsConnection ? "dropped" : String(response.status)
        log("bankid-simulator rp \(request.method.rawValue) \(request.path) \(outcome)")
        return response
    }

    /// The injected latency and the next queued fault, which model the network and BankID's
    /// availability; nil when the request goes on to BankID's checks. The sleep blocks only this
    /// connection's thread (the engine gives every connection its own).
    private func networkAndAvailability() -> HTTPResponse? {
        let (latency, fault) = state.withLock { state -> (Int, Fault?) in
            let fault = state.controls.faults.isEmpty ? nil : state.controls.faults.removeFirst()
            return (state.controls.latencyMilliseconds, fault)
        }
        if latency > 0 { usleep(UInt32(min(latency, 60_000)) * 1000) }
        switch fault {
        case .maintenance?:
            return Self.error(503, "maintenance", "Service unavailable (simulated maintenance)")
        case .internalError?: return Self.error(500, "internalError", "Internal error (simulated)")
        case .requestTimeout?: return Self.error(408, "requestTimeout", "Request timeout (simulated)")
        case .dropConnection?: return .dropConnection
        case nil: return nil
        }
    }

    private func start(_ kind: OrderKind, _ body: JSONValue) throws(RequestValidation.Invalid)
        -> HTTPResponse
    {
        state.withLock { state in
            state.orderBodies.append(ReceivedOrder(endpoint: kind.rawValue, body: body))
            if state.orderBodies.count > Self.keptOrderBodies { state.orderBodies.removeFirst() }
        }
        let request = try RequestValidation.order(kind, body)
        let now = clock.now()
        let order = Order(
            orderRef: Self.uuid(), request: request, qrStartToken: kind.isPhone ? nil : Self.uuid(),
            qrStartSecret: kind.isPhone ? nil : Self.uuid(), autoStartToken: kind.isPhone ? nil : Self.uuid(),
            createdAt: now)
        let accepted = state.withLock { state -> Bool in
            sweep(&state, now: now)
            if let number = request.personalNumber,
                state.orders.values.contains(where: { !$0.phase.isFinal && $0.boundPersonalNumber == number })
            {
                return false
            }
            state.orders[order.orderRef] = order
            if let token = order.qrStartToken { state.byQRToken[token] = order.orderRef }
            if let token = order.autoStartToken { state.byAutoStartToken[token] = order.orderRef }
            return true
        }
        guard accepted else {
            return Self.error(400, "alreadyInProgress", "An order for this person is already in progress")
        }
        if kind.isPhone { return Self.json(200, ["orderRef": .string(order.orderRef)]) }
        return Self.json(
            200,
            [
                "orderRef": .string(order.orderRef), "autoStartToken": .string(order.autoStartToken ?? ""),
                "qrStartToken": .string(order.qrStartToken ?? ""),
                "qrStartSecret": .string(order.qrStartSecret ?? ""),
            ])
    }

    private func collect(_ orderRef: String) -> HTTPResponse {
        let now = clock.now()
        let outcome = state.withLock { state -> (Order, Order.CollectAnswer)? in
            sweep(&state, now: now)
            guard var order = state.orders[orderRef] else { return nil }
            let answer = order.collect(
                at: now, timing: timing, autoCompleteAfter: state.controls.autoCompleteAfter,
                defaultPerson: autoCompletePerson(for: order))
            state.orders[orderRef] = order
            return (order, answer)
        }
        guard let (order, answer) = outcome else {
            return Self.error(400, "invalidParameters", "No such order")
        }
        switch answer {
        case .alreadyCollected:
            return Self.error(400, "invalidParameters", "No such order")
        case .pending(let hint):
            return Self.json(
                200, ["orderRef": .string(orderRef), "status": "pending", "hintCode": .string(hint)])
        case .failed(let hint):
            return Self.json(
                200, ["orderRef": .string(orderRef), "status": "failed", "hintCode": .string(hint)])
        case .complete:
            let person = order.person ?? defaultPerson
            let data = Completion.data(
                for: order, person: person, key: signingKey, certificateDER: certificateDER, now: now)
            return Self.json(
                200, ["orderRef": .string(orderRef), "status": "complete", "completionData": data])
        }
    }

    private func cancel(_ orderRef: String) -> HTTPResponse {
        let now = clock.now()
        let cancelled = state.withLock { state -> Bool in
            sweep(&state, now: now)
            guard var order = state.orders[orderRef], order.cancel(at: now, timing: timing) else {
                return false
            }
            state.orders[orderRef] = order
            return true
        }
        return cancelled ? Self.json(200, [:]) : Self.error(400, "invalidParameters", "No such order")
    }

    /// Applies time to every order and forgets those past their retention (few orders live at once
    /// in a simulator, so a sweep per request is cheap and keeps every rule in `Order`).
    private func sweep(_ state: inout State, now: Date) {
        for (reference, var order) in state.orders {
            order.advance(to: now, timing: timing)
            if order.isExpired(at: now, timing: timing) {
                state.orders[reference] = nil
                if let token = order.qrStartToken { state.byQRToken[token] = nil }
                if let token = order.autoStartToken { state.byAutoStartToken[token] = nil }
            } else {
                state.orders[reference] = order
            }
        }
    }

    /// Who completes an order by itself: the required person, else the default one. A required
    /// number that is no test person still completes, under a neutral test name.
    private func autoCompletePerson(for order: Order) -> TestPerson {
        guard let number = order.request.personalNumber else { return defaultPerson }
        return persons.first { $0.personalNumber == number }
            ?? TestPerson(personalNumber: number, givenName: "Test", surname: "Person")
    }

    static func uuid() -> String { UUID().uuidString.lowercased() }

    /// One order request as it arrived.
    struct ReceivedOrder: Sendable {
        let endpoint: String
        let body: JSONValue
    }

    // MARK: The user's side

    /// A refusal the user API reports: status, code and details.
    struct UserError: Error {
        let status: Int
        let code: String
        let details: String
        init(_ status: Int, _ code: String, _ details: String) {
            self.status = status
            self.code = code
            self.details = details
        }
    }

    /// What the app reports back after an action.
    struct ActionResult: Sendable, Equatable {
        let orderRef: String
        let status: String
        let hintCode: String?
        /// The order's returnUrl once it is finished: the app opens it to send the user back.
        var returnUrl: String? = nil
        /// What the app shows the user to approve: userVisibleData decoded, and its format.
        var userVisibleText: String? = nil
        var userVisibleDataFormat: String? = nil
    }

    func person(_ number: String?) throws(UserError) -> TestPerson {
        guard let number else { return defaultPerson }
        guard let person = persons.first(where: { $0.personalNumber == number }) else {
            throw UserError(400, "unknownPerson", "Not a test person of this simulator")
        }
        return person
    }

    /// Scans an animated QR code: `bankid.<qrStartToken>.<t>.<hex HMAC-SHA256(qrStartSecret, t)>`.
    func scan(qrData: String, personalNumber: String?, action: UserAction, from ip: String) throws(UserError)
        -> ActionResult
    {
        let parts = qrData.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "bankid", let t = Int(parts[2]), t >= 0,
            parts[2].allSatisfy(\.isNumber)
        else { throw UserError(400, "qrCodeInvalid", "Not a BankID QR code") }
        let person = try person(personalNumber)
        let now = clock.now()
        return try state.withLock { state throws(UserError) -> ActionResult in
            sweep(&state, now: now)
            guard let reference = state.byQRToken[String(parts[1])], let order = state.orders[reference],
                let secret = order.qrStartSecret
            else { throw UserError(404, "orderNotFound", "The QR code belongs to no order") }
            let expected = Hex.encode(
                HMAC.authenticate(.sha256, key: Array(secret.utf8), data: Array(String(t).utf8)))
            guard ConstantTime.equals(Array(expected.utf8), Array(parts[3].utf8)) else {
                throw UserError(400, "qrCodeInvalid", "The QR code's authentication code is wrong")
            }
            // The app refuses a code whose time is not current: the RP must animate the QR.
            let current = Int(now.timeIntervalSince(order.createdAt).rounded(.down))
            guard t <= current + 1, t >= current - timing.qrMaxAge else {
                throw UserError(400, "qrCodeStale", "The QR code is not current; the app refused it")
            }
            return try act(&state, reference, action, person, ip, now)
        }
    }

    /// Opens a same-device order by its autostart token.
    func autostart(token: String, personalNumber: String?, action: UserAction, from ip: String)
        throws(UserError) -> ActionResult
    {
        let person = try person(personalNumber)
        let now = clock.now()
        return try state.withLock { state throws(UserError) -> ActionResult in
            sweep(&state, now: now)
            guard let reference = state.byAutoStartToken[token.lowercased()] else {
                throw UserError(404, "orderNotFound", "The autostart token belongs to no order")
            }
            return try act(&state, reference, action, person, ip, now)
        }
    }

    /// Acts on an order by reference: phone orders (the person is the one called) and later steps
    /// on an order the user already opened.
    func respond(
        orderRef: String, personalNumber: String?, action: UserAction, phoneOnly: Bool, from ip: String
    )
        throws(UserError) -> ActionResult
    {
        let now = clock.now()
        return try state.withLock { state throws(UserError) -> ActionResult in
            sweep(&state, now: now)
            guard let order = state.orders[orderRef.lowercased()], !phoneOnly || order.request.kind.isPhone
            else {
                throw UserError(404, "orderNotFound", "No such order")
            }
            let person: TestPerson
            if let personalNumber {
                person = try self.person(personalNumber)
            } else if let bound = order.person {
                person = bound
            } else {
                // The person the order names (a phone call's callee) answers, test person or not.
                person = autoCompletePerson(for: order)
            }
            return try act(&state, order.orderRef, action, person, ip, now)
        }
    }

    private func act(
        _ state: inout State, _ reference: String, _ action: UserAction, _ person: TestPerson, _ ip: String,
        _ now: Date
    ) throws(UserError) -> ActionResult {
        guard var order = state.orders[reference] else {
            throw UserError(404, "orderNotFound", "No such order")
        }
        let outcome = state.controls.outcomes[person.personalNumber] ?? .complete
        if let refusal = order.act(action, as: person, from: ip, outcome: outcome, at: now, timing: timing) {
            switch refusal {
            case .notPending: throw UserError(409, "notPending", "The order is no longer pending")
            case .otherPerson: throw UserError(409, "otherPerson", "Another person has opened this order")
            case .wrongPerson: throw UserError(409, "wrongPerson", "The order is for another person")
            }
        }
        state.orders[reference] = order
        var result: ActionResult
        switch order.phase {
        case .waiting:
            result = ActionResult(orderRef: reference, status: "pending", hintCode: "outstandingTransaction")
        case .inApp(let hint): result = ActionResult(orderRef: reference, status: "pending", hintCode: hint)
        case .failed(let hint):
            result = ActionResult(
                orderRef: reference, status: "failed", hintCode: hint, returnUrl: order.request.returnUrl)
        case .complete:
            result = ActionResult(
                orderRef: reference, status: "complete", hintCode: nil, returnUrl: order.request.returnUrl)
        }
        // The app shows the text it was asked to: validation made sure it is base64 of UTF-8.
        result.userVisibleText = order.request.userVisibleData.flatMap { Base64.decode($0) }.flatMap {
            String(validating: $0, as: UTF8.self)
        }
        result.userVisibleDataFormat = order.request.userVisibleDataFormat
        return result
    }

    // MARK: Controls

    /// Changes outcomes, latency, faults or auto-complete while running.
    func updateControls(_ change: (inout Controls) -> Void) -> Controls {
        state.withLock { state in
            change(&state.controls)
            return state.controls
        }
    }
}
