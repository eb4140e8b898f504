import AuthOrchestrator
import BankIDCore
import BankIDSimulator
import CryptoCore
import Dispatch
import Foundation
import HTTPEngine
import Kernel
import PortvaktAPI
import SessionCore
import Storage
import Synchronization
import TestSupport
import Testing

@testable import PortvaktApp

/// Runs blocking work (libcurl, waits) on a thread of its own: the test then never holds a thread
/// of Swift's global executor (a Dispatch queue would: on Linux they are the same threads), which
/// the test's own awaits and the rest of the suite need.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// One request off the cooperative pool, in process when an in-process server answers at `url`,
/// else over the socket.
func request(
    _ method: String, _ url: String, json: String? = nil, headers: [(String, String)] = []
) async throws -> TestResponse {
    try await offPool {
        let http: any HTTPTestTransport =
            InProcessHTTPClient.reaches(url) ? InProcessHTTPClient() : HTTPTestClient()
        if let json { return try http.sendJSON(method: method, url: url, json: json, headers: headers) }
        return try http.send(method: method, url: url, headers: headers, body: nil)
    }
}

/// Polls until `settled` holds for the answer's JSON, and returns that JSON; nil when it never
/// did. The clock first moves past the collect interval: the first poll after it starts the
/// shared collect in the background, and later polls see its answer. Bounded by attempts, not time.
func pollUntil(
    _ settled: ([String: Any]) -> Bool, clock: FixedClock, _ poll: () async throws -> TestResponse
) async throws -> [String: Any]? {
    clock.advance(by: 2)
    for _ in 0..<400 {
        let object = try await poll().jsonObject()
        if settled(object) { return object }
        try await Task.sleep(for: .milliseconds(25))
    }
    return nil
}

/// Drives /v1/bankid/orders on a test server as a native client would, and plays the user's
/// BankID app through the embedded simulator's user API on the public listener.
struct BankIDClient {
    let server: TestServer
    /// The binding value the first start handed out (native clients send it back in a header).
    var binding: String?
    /// A bearer token when signed in.
    var token: String?

    init(_ server: TestServer, token: String? = nil) {
        self.server = server
        self.token = token
    }

    var headers: [(String, String)] {
        var headers: [(String, String)] = []
        if let binding { headers.append((BankIDAPI.bindingHeader, binding)) }
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        return headers
    }

    /// Starts an order; keeps the binding it hands out.
    mutating func start(
        _ intent: String, device: String = "other", text: String? = nil, extraHeaders: [(String, String)] = []
    )
        async throws -> TestResponse
    {
        var body = #"{"intent":"\#(intent)","device":"\#(device)","client":"native","#
        body += TestServer.nativeAppMembers
        if let text { body += #","userVisibleData":"\#(text)""# }
        body += "}"
        let response = try await request(
            "POST", server.publicURL + "/v1/bankid/orders", json: body, headers: headers + extraHeaders)
        if response.status == 201, let binding = try response.jsonObject()["clientBinding"] as? String {
            self.binding = binding
        }
        return response
    }

    func status(_ orderID: String, language: String? = nil) async throws -> TestResponse {
        var headers = self.headers
        if let language { headers.append(("Accept-Language", language)) }
        return try await request("GET", server.publicURL + "/v1/bankid/orders/\(orderID)", headers: headers)
    }

    func cancel(_ orderID: String) async throws -> TestResponse {
        try await request("DELETE", server.publicURL + "/v1/bankid/orders/\(orderID)", headers: headers)
    }

    /// The user scans the QR code with their app and approves, as `person`.
    func scan(_ qrData: String, as person: String = "198112289874") async throws {
        let scanned = try await request(
            "POST", server.publicURL + "/sim/v1/scan",
            json: #"{"qrData":"\#(qrData)","personalNumber":"\#(person)"}"#)
        #expect(scanned.status == 200, "\(scanned.text)")
    }

    /// The user opens the same-device order with the autostart token and approves.
    func autostart(_ token: String, as person: String = "198112289874") async throws {
        let opened = try await request(
            "POST", server.publicURL + "/sim/v1/autostart",
            json: #"{"autoStartToken":"\#(token)","personalNumber":"\#(person)"}"#)
        #expect(opened.status == 200, "\(opened.text)")
    }

    /// Polls until the order leaves pending: the first poll after the interval starts the shared
    /// collect in the background, and later polls see its answer. Bounded by attempts, not time.
    func final(_ orderID: String) async throws -> [String: Any] {
        let settled = try await pollUntil({ $0["status"] as? String != "pending" }, clock: server.clock) {
            let response = try await status(orderID)
            #expect(response.status == 200, "\(response.text)")
            return response
        }
        guard let settled else {
            Issue.record("the order stayed pending")
            return [:]
        }
        return settled
    }

    /// A complete run for another device: start, scan as `person`, collect; returns the final status.
    mutating func run(_ intent: String, as person: String = "198112289874", text: String? = nil) async throws
        -> [String: Any]
    {
        try await complete(intent, as: person, text: text).final
    }

    /// `run`, also naming the order, for a test that polls it again.
    mutating func complete(_ intent: String, as person: String = "198112289874", text: String? = nil)
        async throws -> (orderID: String, final: [String: Any])
    {
        let started = try await start(intent, text: text)
        #expect(started.status == 201, "\(started.text)")
        let object = try started.jsonObject()
        let orderID = try #require(object["orderId"] as? String)
        try await scan(try #require(object["qrData"] as? String), as: person)
        return (orderID, try await final(orderID))
    }
}

func result(_ status: [String: Any]) -> [String: Any] { status["result"] as? [String: Any] ?? [:] }

/// The BankID journeys through the public and admin pipelines in process, against the embedded
/// simulator over mutual TLS (its RP API is a real socket). Two tests use a listening server:
/// they are about MHD's threads and its suspended connections.
@Suite("BankID orders over HTTP", .serialized)
struct BankIDAPITests {
    @Test(
        "while BankID's collects fail, a waiting client is told so (RFA5), and the usual message returns when BankID answers",
        arguments: TestEngine.tested)
    func collectOutageIsShown(engine: TestEngine) async throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let simulator = try #require(server.server.bankID?.simulator)
        var client = BankIDClient(server)
        let started = try await client.start("signup")
        #expect(started.status == 201, "\(started.text)")
        let orderID = try #require(try started.jsonObject()["orderId"] as? String)

        /// Polls (a poll interval apart on the test clock) until the message is `code`; bounded.
        func waitForMessage(_ code: String) async throws -> [String: Any] {
            for _ in 0..<200 {
                server.clock.advance(by: 2)
                let status = try await client.status(orderID).jsonObject()
                if (status["message"] as? [String: Any])?["code"] as? String == code { return status }
                try await Task.sleep(for: .milliseconds(25))
            }
            Issue.record("the message never became \(code)")
            return [:]
        }
        #expect(try await waitForMessage("RFA1")["status"] as? String == "pending")
        simulator.inject(.internalError, count: 1_000)
        let failing = try await waitForMessage("RFA5")
        #expect(
            failing["status"] as? String == "pending", "the order is still open: the user may yet approve")
        simulator.clearFaults()
        #expect(try await waitForMessage("RFA1")["status"] as? String == "pending", "back to normal")
    }

    @Test(
        "after an identity-key rotation a BankID login still finds the account, and the link moves to the new key",
        arguments: TestEngine.tested
    )
    func identityKeyRotation(engine: TestEngine) async throws {
        let folder = try TemporaryDirectory()
        let oldKey = SystemRandom().bytes(32)
        for (name, key) in [("old", oldKey), ("new", SystemRandom().bytes(32))] {
            try Data(Base64URL.encode(key).utf8).write(to: URL(fileURLWithPath: folder.path(name)))
        }
        let server = try TestServer.inProcess(
            engine: engine,
            configuration: [
                "bankid": [
                    "identityKeys": [
                        "old": ["file": folder.path("old")], "new": ["file": folder.path("new")],
                    ],
                    "currentIdentityKey": "new",
                ]
            ])
        defer { server.stop() }
        // Linked while "old" was the current key.
        let user = try server.makeUser(username: "tolvan")
        let oldDigest = try IdentityHasher(
            currentKeyID: "old", keys: [IdentityKey(id: "old", secret: oldKey)]
        )
        .digest(PersonalNumber("198112289874"))
        let store = server.server.store
        let flowID = Array(repeating: UInt8(7), count: 32)
        try store.insertBankIDFlow(
            BankIDFlow(
                idHash: flowID, orderRef: "seed", intent: .link, sameDevice: false, bindingHash: flowID,
                userID: user.id, createdAt: server.clock.now()))
        #expect(
            try store.commitBankIDCompletion(
                BankIDCompletionRecord(
                    flowIDHash: flowID, outcome: "bankid.linked", at: server.clock.now(),
                    link: LinkedIdentity(
                        userID: user.id, digest: oldDigest, name: "Tolvan Tolvansson",
                        linkedAt: server.clock.now()))))

        var client = BankIDClient(server)
        let login = result(try await client.run("login"))
        #expect(login["code"] as? String == "bankid.signed_in", "\(login)")
        #expect((login["user"] as? [String: Any])?["id"] as? String == user.id)
        #expect(try store.linkedIdentity(userID: user.id)?.digest.keyID == "new")
    }

    /// Signs up with a passkey, links BankID, then recovers on a new device with BankID and a new
    /// passkey; returns the old and new credentials, the old token and the recovery's answer.
    func recoverAccount(_ server: TestServer) async throws -> (
        old: SoftwareCredential, new: SoftwareCredential, oldToken: String, enrolled: [String: Any],
        userID: String
    ) {
        let person = PasskeyUser(server: server)
        let (old, userID, oldToken) = try person.signUp("ada")
        var linker = BankIDClient(server, token: oldToken)
        #expect(result(try await linker.run("link"))["code"] as? String == "bankid.linked")

        // Every device lost: a new client with no session proves who it is with BankID.
        var stranger = BankIDClient(server)
        let order = try await stranger.start("recovery")
        #expect(order.status == 201, "\(order.text)")
        let orderID = try #require(try order.jsonObject()["orderId"] as? String)
        try await stranger.scan(try #require(try order.jsonObject()["qrData"] as? String))
        let verified = result(try await stranger.final(orderID))
        #expect(verified["code"] as? String == "bankid.recovery_verified", "\(verified)")
        #expect(verified["session"] == nil, "recovery opens no session by itself")
        let token = try #require(verified["enrollmentToken"] as? String)
        // Delivered once: a later poll does not repeat it.
        let again = try await stranger.status(orderID)
        #expect(result(try again.jsonObject())["code"] as? String == "bankid.result_delivered")
        #expect(!again.text.contains(token))

        let enrollment = Enrollment(server: server)
        // Bound to the client whose order it was: without its binding, or with another client's,
        // the token is as good as unknown.
        #expect(try enrollment.start(token).response.problemCode() == "enrollment.invalid")
        var other = BankIDClient(server)
        _ = try await other.start("login")
        #expect(
            try enrollment.start(token, headers: other.headers).response.problemCode() == "enrollment.invalid"
        )
        let started = try enrollment.start(token, headers: stranger.headers)
        #expect(started.response.status == 200, "\(started.response.text)")
        let finished = try enrollment.finish(
            id: try #require(started.id), challenge: started.challenge, handle: started.handle)
        #expect(finished.response.status == 201, "\(finished.response.text)")
        // The token is single use.
        #expect(
            try enrollment.start(token, headers: stranger.headers).response.problemCode()
                == "enrollment.invalid")
        return (old, finished.credential, oldToken, try finished.response.jsonObject(), userID)
    }

    @Test(
        "recovery: BankID re-identification, a one-time enrollment token, a new passkey and a session; other sessions end, old passkeys stay by default",
        arguments: TestEngine.tested
    )
    func recoveryDefaultPolicy(engine: TestEngine) async throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let (old, new, oldToken, enrolled, userID) = try await recoverAccount(server)
        #expect((enrolled["session"] as? [String: Any])?["token"] != nil)
        let recovery = try #require(enrolled["recovery"] as? [String: Int])
        #expect(recovery["passkeysRevoked"] == 0 && (recovery["sessionsRevoked"] ?? 0) >= 1)
        let person = PasskeyUser(server: server)
        #expect(try person.me(oldToken).status == 401, "the lost device's session ended")
        #expect(try person.login(new).status == 200)
        #expect(try person.login(old).status == 200, "old passkeys stay under the default policy")
        let actions = try server.server.store.auditEvents(userID: userID, beforeID: nil, limit: 50).map(
            \.action.rawValue)
        #expect(actions.contains("bankid.recovery_verified") && actions.contains("account.recovered"))
    }

    @Test(
        "recovery with revokeOldPasskeys removes the older passkeys; an account without a linked identity gets no token",
        arguments: TestEngine.tested
    )
    func recoveryRevokingPasskeys(engine: TestEngine) async throws {
        let server = try TestServer.inProcess(
            engine: engine, configuration: ["recovery": ["revokeOldPasskeys": true]])
        defer { server.stop() }
        let (old, new, _, enrolled, _) = try await recoverAccount(server)
        #expect((enrolled["recovery"] as? [String: Int])?["passkeysRevoked"] == 1)
        let person = PasskeyUser(server: server)
        #expect(try person.login(new).status == 200)
        #expect(try person.login(old).problemCode() == "passkey.login_failed")

        let other = try TestServer.inProcess(engine: engine)
        defer { other.stop() }
        var stranger = BankIDClient(other)
        let refused = result(try await stranger.run("recovery"))
        #expect(refused["code"] as? String == "bankid.no_account" && refused["enrollmentToken"] == nil)
    }

    @Test(
        "admin search by personal number finds the account its BankID identity is linked to; the detail shows the identity, never the number",
        arguments: TestEngine.tested
    )
    func adminPersonalNumberSearch(engine: TestEngine) async throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        var client = BankIDClient(server)
        let created = result(try await client.run("signup"))
        let userID = try #require((created["user"] as? [String: Any])?["id"] as? String)
        let auth = [("Authorization", "Bearer \(server.adminToken)")]
        let admin = server.adminURL + "/admin/v1/users"

        let byQuery = try await request("GET", admin + "?search=198112289874", headers: auth)
        #expect(byQuery.status == 200, "\(byQuery.text)")
        let found = try #require(try byQuery.jsonObject()["users"] as? [[String: Any]])
        #expect(found.map { $0["id"] as? String } == [userID])
        let byBody = try await request(
            "POST", admin + "/search", json: #"{"personalNumber":"198112289874"}"#, headers: auth)
        #expect((try byBody.jsonObject()["users"] as? [[String: Any]])?.first?["id"] as? String == userID)
        // Another valid number has no account; a wrong check digit is refused without echoing it.
        let nobody = try await request(
            "POST", admin + "/search", json: #"{"personalNumber":"190101010106"}"#, headers: auth)
        #expect(nobody.status == 200)
        #expect((try nobody.jsonObject()["users"] as? [Any])?.isEmpty == true)
        let malformed = try await request("GET", admin + "?search=198112289875", headers: auth)
        #expect(malformed.status == 400 && !malformed.text.contains("198112289875"))
        #expect(try malformed.problemCode() == "admin.invalid_parameter")

        let detail = try await request("GET", admin + "/" + userID, headers: auth)
        let identity = try #require(try detail.jsonObject()["bankId"] as? [String: Any])
        #expect(
            identity["name"] as? String == "Tolvan Tolvansson"
                && identity["keyId"] as? String == "development")
        #expect(!detail.text.contains("198112289874"))
        // A user without a linked identity shows null.
        let plain = try server.makeUser(username: "plain")
        let plainDetail = try await request("GET", admin + "/" + plain.id, headers: auth)
        #expect(plainDetail.text.contains(#""bankId":null"#))

        // The sign-up and a BankID login show in /metrics by result, each once however often polled.
        _ = try await client.run("login")
        let metrics = try await request("GET", server.adminURL + "/metrics", headers: auth).text
        #expect(metrics.contains(#"portvakt_bankid_results_total{code="bankid.account_created"} 1"#))
        #expect(metrics.contains(#"portvakt_bankid_results_total{code="bankid.signed_in"} 1"#))
    }

    @Test(
        "sign-up creates an identity-verified account with a BankID session; a second poll gets no second session",
        arguments: TestEngine.tested
    )
    func signupThenDoublePoll(engine: TestEngine) async throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        var client = BankIDClient(server)
        let started = try await client.start("signup")
        #expect(started.status == 201, "\(started.text)")
        let object = try started.jsonObject()
        let orderID = try #require(object["orderId"] as? String)
        #expect(orderID.count == 43, "256 bits in base64url")
        #expect(
            object["autoStartToken"] == nil && (object["qrData"] as? String)?.hasPrefix("bankid.") == true)
        #expect(!started.text.contains("orderRef") && !started.text.contains("qrStartSecret"))

        let pending = try await client.status(orderID)
        #expect(try pending.jsonObject()["status"] as? String == "pending")
        #expect((try pending.jsonObject()["message"] as? [String: Any])?["code"] as? String == "RFA1")
        // While pending for another device: the QR data for this second and its SVG drawing.
        #expect((try pending.jsonObject()["qrData"] as? String)?.hasPrefix("bankid.") == true)
        #expect((try pending.jsonObject()["qrSvg"] as? String)?.hasPrefix("<svg") == true)
        try await client.scan(try #require(object["qrData"] as? String))
        let done = try await client.final(orderID)
        #expect(done["status"] as? String == "complete")
        let first = result(done)
        #expect(first["code"] as? String == "bankid.account_created")
        let token = try #require((first["session"] as? [String: Any])?["token"] as? String)
        #expect(first["suggestPasskey"] as? Bool == true)
        let userID = try #require((first["user"] as? [String: Any])?["id"] as? String)

        // The session works, and its method is bankid.
        let me = try await request(
            "GET", server.publicURL + "/v1/me", headers: [("Authorization", "Bearer \(token)")])
        #expect(me.status == 200, "\(me.text)")
        let sessions = try server.server.store.sessions(userID: userID, liveAt: server.clock.now())
        #expect(sessions.count == 1 && sessions.first?.authMethod == .bankid)
        #expect(try server.server.store.linkedIdentity(userID: userID)?.name == "Tolvan Tolvansson")

        // Polling again (a refresh, a retry) never opens a second session.
        for _ in 0..<3 {
            let again = try await client.status(orderID)
            #expect(result(try again.jsonObject())["code"] as? String == "bankid.result_delivered")
            #expect(!again.text.contains("token"))
        }
        #expect(try server.server.store.sessions(userID: userID, liveAt: server.clock.now()).count == 1)
        // Audit: every step, never the personal number.
        let events = try server.server.store.auditEvents(userID: nil, beforeID: nil, limit: 50)
        #expect(Set(events.map(\.action.rawValue)).isSuperset(of: ["bankid.order_started", "bankid.signup"]))
        #expect(!events.contains { $0.details.values.contains { $0.contains("198112289874") } })
    }

    @Test(
        "concurrent polls of a completed sign-up: exactly one gets the session", arguments: TestEngine.tested)
    func racingPolls(engine: TestEngine) async throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        var client = BankIDClient(server)
        let started = try await client.start("signup")
        let object = try started.jsonObject()
        let orderID = try #require(object["orderId"] as? String)
        // No poll of our own before the racers: any poll that sees the completion consumes it.
        try await client.scan(try #require(object["qrData"] as? String))
        server.clock.advance(by: 2)
        let binding = try #require(client.binding)
        let sessionsSeen = Atomic<Int>(0)
        let completeSeen = Atomic<Bool>(false)
        let url = server.publicURL + "/v1/bankid/orders/\(orderID)"
        // Rounds of 8 simultaneous polls until one round sees the order complete: that round races.
        for _ in 0..<400 where !completeSeen.load(ordering: .relaxed) {
            try await offPool { raceRound() }
            try await Task.sleep(for: .milliseconds(25))
        }
        @Sendable func raceRound() {
            let group = DispatchGroup()
            for _ in 0..<8 {
                DispatchQueue.global().async(group: group) {
                    let http = InProcessHTTPClient()
                    guard
                        let response = try? http.send(
                            method: "GET", url: url, headers: [(BankIDAPI.bindingHeader, binding)])
                    else { return }
                    if response.text.contains("\"complete\"") { completeSeen.store(true, ordering: .relaxed) }
                    if response.text.contains("\"token\"") { sessionsSeen.add(1, ordering: .relaxed) }
                }
            }
            group.wait()
        }
        #expect(sessionsSeen.load(ordering: .relaxed) == 1)
        #expect(try server.server.store.userCount() == 1)
    }

    @Test(
        "a BankID result that opens a session carries the account's Signal API data; the polls after it and one without a session do not",
        arguments: TestEngine.tested
    )
    func resultSignals(engine: TestEngine) async throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        var newcomer = BankIDClient(server)
        #expect(result(try await newcomer.run("login", as: "199001012385"))["signals"] == nil)

        var signup = BankIDClient(server)
        let (orderID, final) = try await signup.complete("signup")
        let created = result(final)
        let userID = try #require((created["user"] as? [String: Any])?["id"] as? String)
        let user = try #require(try server.server.store.user(id: userID))
        let signals = try #require(created["signals"] as? [String: Any], "\(created)")
        let accepted = try #require(signals["allAcceptedCredentials"] as? [String: Any])
        #expect(accepted["rpId"] as? String == "localhost")
        #expect(accepted["userId"] as? String == Base64URL.encode(user.userHandle))
        #expect((accepted["allAcceptedCredentialIds"] as? [String])?.isEmpty == true, "no passkey yet")
        let details = try #require(signals["currentUserDetails"] as? [String: Any])
        #expect(details["displayName"] as? String == user.displayName)
        let again = try await signup.status(orderID)
        #expect(result(try again.jsonObject())["signals"] == nil, "bankid.result_delivered carries none")
    }

    @Test(
        "login falls back to the linked account; a person with no account gets bankid.no_account and nothing is created",
        arguments: TestEngine.tested
    )
    func loginAndNoAccount(engine: TestEngine) async throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        var newcomer = BankIDClient(server)
        let none = try await newcomer.run("login", as: "199001012385")
        #expect(result(none)["code"] as? String == "bankid.no_account")
        #expect(result(none)["signupAvailable"] as? Bool == true)
        #expect(result(none)["session"] == nil)
        #expect(try server.server.store.userCount() == 0)

        var signup = BankIDClient(server)
        let created = try await signup.run("signup")
        let userID = try #require((result(created)["user"] as? [String: Any])?["id"] as? String)
        var login = BankIDClient(server)
        let done = try await login.run("login")
        #expect(result(done)["code"] as? String == "bankid.signed_in")
        #expect((result(done)["user"] as? [String: Any])?["id"] as? String == userID)
        #expect((result(done)["session"] as? [String: Any])?["token"] != nil)
        #expect(try server.server.store.userCount() == 1)
        let actions = try server.server.store.auditEvents(userID: nil, beforeID: nil, limit: 50).map(
            \.action.rawValue)
        #expect(actions.contains("bankid.login") && actions.contains("bankid.login_no_account"))
    }

    @Test(
        "link: a signed-in user links their identity; the same identity is refused for another account",
        arguments: TestEngine.tested)
    func linkAndRefuseElsewhere(engine: TestEngine) async throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let ada = try server.makeUser(username: "ada")
        let adaToken = try server.signIn(ada).token
        let bankIDOnMe = {
            let me = try await request(
                "GET", server.publicURL + "/v1/me", headers: [("Authorization", "Bearer \(adaToken)")])
            return try me.jsonObject()["bankId"] as? [String: Any]
        }
        #expect(try await bankIDOnMe()?["linked"] as? Bool == false)
        var adaClient = BankIDClient(server, token: adaToken)
        let linked = try await adaClient.run("link")
        #expect(result(linked)["code"] as? String == "bankid.linked", "\(linked)")
        #expect(try server.server.store.linkedIdentity(userID: ada.id) != nil)
        // GET /v1/me says so, with the name BankID gave (never the personal number).
        let link = try await bankIDOnMe()
        #expect(link?["linked"] as? Bool == true && link?["name"] as? String == "Tolvan Tolvansson")
        #expect(link?["linkedAt"] is String && link?.count == 3)

        let bob = try server.makeUser(username: "bob")
        var bobClient = BankIDClient(server, token: try server.signIn(bob).token)
        let refused = try await bobClient.run("link")
        #expect(result(refused)["code"] as? String == "bankid.identity_linked_elsewhere")
        #expect(try server.server.store.linkedIdentity(userID: bob.id) == nil)

        // Linking needs a session: none at all is the use case's bankid.sign_in_required (as
        // Docs/api.md says); one presented but not usable says why it is not.
        var anonymous = BankIDClient(server)
        let unsigned = try await anonymous.start("link")
        #expect(unsigned.status == 401)
        #expect(try unsigned.problemCode() == "bankid.sign_in_required")
        var stale = BankIDClient(server, token: "pvs_nonsense")
        let refusedSession = try await stale.start("link")
        #expect(refusedSession.status == 401)
        #expect(try refusedSession.problemCode()?.hasPrefix("session.") == true)
    }

    @Test(
        "step-up: the linked person signs the text; the signature is kept with the session, audited, and the session stepped up for 600 s",
        arguments: TestEngine.tested
    )
    func stepUp(engine: TestEngine) async throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let ada = try server.makeUser(username: "ada")
        let issued = try server.signIn(ada)
        var client = BankIDClient(server, token: issued.token)
        _ = try await client.run("link")
        let signed = try await client.run("sign", text: "Transfer 100 kr to Bob")
        #expect(result(signed)["code"] as? String == "bankid.signed", "\(signed)")
        let until = server.clock.now().addingTimeInterval(600)
        let stepUp = try #require(try server.server.store.stepUp(sessionID: issued.session.id))
        #expect(stepUp.userVisibleText == "Transfer 100 kr to Bob")
        #expect(abs(stepUp.validUntil.timeIntervalSince(until)) < 1)
        let event = try #require(
            try server.server.store.auditEvents(userID: ada.id, beforeID: nil, limit: 20).first {
                $0.action.rawValue == "bankid.step_up"
            })
        #expect(event.details["signatureSha256"]?.count == 64 && event.details["textSha256"]?.count == 64)
        // The evidence the event names: the text, BankID's OCSP response and the signature's
        // digest; by default not the signature itself (it names the signer).
        let evidenceID = try #require(event.details["evidenceId"])
        let evidence = try #require(try server.server.store.bankIDSignature(id: evidenceID))
        #expect(evidence.userID == ada.id && evidence.sessionID == issued.session.id)
        #expect(evidence.userVisibleText == "Transfer 100 kr to Bob" && evidence.signature == nil)
        #expect(Hex.encode(evidence.signatureSHA256) == event.details["signatureSha256"])
        #expect(evidence.ocspResponse?.isEmpty == false && evidence.bankIDIssueDate != nil)

        // GET /v1/me says until when the session is stepped up, and stops saying it after.
        let auth = [("Authorization", "Bearer \(issued.token)")]
        let me = try await request("GET", server.publicURL + "/v1/me", headers: auth).jsonObject()
        #expect(me["steppedUpUntil"] as? String == UTCTimestamp.string(stepUp.validUntil))
        server.clock.advance(by: 601)
        let later = try await request("GET", server.publicURL + "/v1/me", headers: auth).jsonObject()
        #expect(later["steppedUpUntil"] == nil)
        server.clock.advance(by: -601)

        // Another person cannot step up Ada's session.
        let other = try await client.run("sign", as: "199001012385", text: "Again")
        #expect(result(other)["code"] as? String == "bankid.identity_mismatch")
        // Signing without a text is refused before BankID is asked.
        #expect(try await client.start("sign").status == 400)
    }

    @Test(
        "a signature's evidence on the admin API: listed per user, read (audited with the token), the signature itself only with bankid.keepSignatures",
        arguments: [false, true])
    func signatureEvidence(keep: Bool) async throws {
        let server = try TestServer.inProcess(configuration: ["bankid": ["keepSignatures": keep]])
        defer { server.stop() }
        let ada = try server.makeUser(username: "ada")
        let issued = try server.signIn(ada)
        var client = BankIDClient(server, token: issued.token)
        _ = try await client.run("link")
        _ = try await client.run("sign", text: "Transfer 100 kr to Bob")
        let admin = [("Authorization", "Bearer \(server.adminToken)")]
        let list = try await request(
            "GET", server.adminURL + "/admin/v1/users/\(ada.id)/bankid/signatures", headers: admin)
        #expect(list.status == 200)
        let signatures = try #require(try list.jsonObject()["signatures"] as? [[String: Any]])
        #expect(signatures.count == 1)
        let id = try #require(signatures.first?["id"] as? String)
        #expect(signatures.first?["userVisibleText"] as? String == "Transfer 100 kr to Bob")
        #expect((signatures.first?["signatureSha256"] as? String)?.count == 64)
        let one = try await request(
            "GET", server.adminURL + "/admin/v1/bankid/signatures/\(id)", headers: admin)
        #expect(one.status == 200)
        let evidence = try one.jsonObject()
        #expect(evidence["sessionId"] as? String == issued.session.id)
        #expect((evidence["ocspResponse"] as? String)?.isEmpty == false)
        #expect((evidence["signature"] as? String)?.isEmpty == (keep ? false : nil), "\(evidence)")
        // Reading it is audited with the admin token; nothing on the public listener.
        let viewed = try server.server.store.auditEvents(userID: ada.id, beforeID: nil, limit: 50).filter {
            $0.action == .adminBankIDSignatureViewed
        }
        #expect(viewed.count == 1 && viewed.first?.details["evidenceId"] == id)
        #expect(viewed.first?.actor.rawValue.hasPrefix("admin:") == true)
        #expect(
            try await request("GET", server.publicURL + "/admin/v1/bankid/signatures/\(id)", headers: admin)
                .status
                == 404)
        let missing = try await request(
            "GET", server.adminURL + "/admin/v1/bankid/signatures/nope", headers: admin)
        #expect(missing.status == 404)
        #expect(try missing.problemCode() == "admin.signature_not_found")
        #expect(
            try await request(
                "GET", server.adminURL + "/admin/v1/users/nobody/bankid/signatures", headers: admin
            )
            .problemCode() == "admin.user_not_found")
    }

    @Test(
        "a leaked orderId gets another client nothing: status and cancel answer order_not_found",
        arguments: TestEngine.tested)
    func leakedOrderID(engine: TestEngine) async throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        var owner = BankIDClient(server)
        let orderID = try #require(try await owner.start("login").jsonObject()["orderId"] as? String)
        var thief = BankIDClient(server)
        for binding in [nil, String(repeating: "A", count: 43)] {
            thief.binding = binding
            #expect(try await thief.status(orderID).problemCode() == "bankid.order_not_found")
            #expect(try await thief.cancel(orderID).status == 404)
        }
        #expect(try await owner.status(orderID).status == 200)
        #expect(try await owner.status("unknown").problemCode() == "bankid.order_not_found")
        // The owner cancels: the order ends as cancelled, with RFA3 in English when asked.
        #expect(try await owner.cancel(orderID).status == 204)
        let cancelled = try await owner.status(orderID, language: "en-GB,en;q=0.9,sv;q=0.5")
        let object = try cancelled.jsonObject()
        #expect(object["status"] as? String == "cancelled")
        let message = try #require(object["message"] as? [String: Any])
        #expect(
            message["code"] as? String == "RFA3"
                && message["text"] as? String == "The action was cancelled. Please try again.")
        #expect(cancelled.headers["content-language"] == "en")
    }

    @Test("switched-off journeys answer method_disabled, and GET /v1/methods reports every switch")
    func disabledMethods() async throws {
        let server = try TestServer.inProcess(configuration: [
            "methods": ["bankid": ["signup": false, "sign": false]]
        ])
        defer { server.stop() }
        var client = BankIDClient(server)
        let refused = try await client.start("signup")
        #expect(try refused.status == 403 && refused.problemCode() == "method_disabled")
        #expect(try await client.start("login").status == 201)
        let methods = try await request("GET", server.publicURL + "/v1/methods").jsonObject()
        let bankid = try #require(methods["bankid"] as? [String: Bool])
        #expect(
            bankid == [
                "enabled": true, "login": true, "signup": false, "recovery": true, "link": true,
                "sign": false, "passkeyAfterBankID": true,
            ])
        #expect((methods["passkey"] as? [String: Bool]) == ["enabled": true, "signup": true])

        let off = try TestServer.inProcess(configuration: ["methods": ["bankid": ["enabled": false]]])
        defer { off.stop() }
        var offClient = BankIDClient(off)
        #expect(try await offClient.start("login").problemCode() == "method_disabled")
    }

    @Test("starting orders is rate-limited per client IP in the bankid class")
    func rateLimited() async throws {
        let server = try TestServer.inProcess(configuration: [
            "rateLimits": ["bankid": ["burst": 2, "perSecond": 0.001]]
        ])
        defer { server.stop() }
        var client = BankIDClient(server)
        #expect(try await client.start("login").status == 201)
        #expect(try await client.start("login").status == 201)
        let limited = try await client.start("login")
        #expect(limited.status == 429 && limited.headers["retry-after"] != nil)
        // Polling is not in the class.
        #expect(try await client.status("unknown").status == 404)
    }

    @Test(
        "with returnRisk and a ceiling of low, a moderate-risk person is refused and no account is made",
        arguments: TestEngine.tested)
    func riskCeiling(engine: TestEngine) async throws {
        let server = try TestServer.inProcess(
            engine: engine,
            configuration: [
                "bankid": ["returnRisk": true, "riskCeiling": "low"]
            ])
        defer { server.stop() }
        var risky = BankIDClient(server)
        let refused = try await risky.run("signup", as: "200207242777")
        #expect(result(refused)["code"] as? String == "bankid.risk_refused")
        #expect(try server.server.store.userCount() == 0)
        var fine = BankIDClient(server)
        #expect(result(try await fine.run("signup"))["code"] as? String == "bankid.account_created")
        let events = try server.server.store.auditEvents(userID: nil, beforeID: nil, limit: 50)
        #expect(
            events.contains {
                $0.action.rawValue == "bankid.risk_refused" && $0.details["risk"] == "moderate"
            })
    }

    @Test(
        "same device: the autostart token and launch link; a completing device on another IP is audited",
        arguments: TestEngine.tested)
    func sameDeviceIPMismatch(engine: TestEngine) async throws {
        let server = try TestServer.inProcess(
            engine: engine, configuration: ["http": ["trustedProxies": ["127.0.0.1"]]])
        defer { server.stop() }
        var client = BankIDClient(server)
        let started = try await client.start(
            "signup", device: "same", extraHeaders: [("X-Forwarded-For", "192.0.2.7")])
        #expect(started.status == 201, "\(started.text)")
        let object = try started.jsonObject()
        let token = try #require(object["autoStartToken"] as? String)
        #expect(
            object["launchUrl"] as? String == "https://app.bankid.com/?autostarttoken=\(token)&redirect=null")
        #expect(object["qrData"] == nil)
        let orderID = try #require(object["orderId"] as? String)
        // The app completes from 127.0.0.1, not the 192.0.2.7 the order started from.
        try await client.autostart(token)
        let done = try await client.final(orderID)
        #expect(result(done)["code"] as? String == "bankid.account_created")
        let mismatch = try #require(
            try server.server.store.auditEvents(userID: nil, beforeID: nil, limit: 50).first {
                $0.action.rawValue == "bankid.ip_mismatch"
            })
        #expect(mismatch.details["endUserIp"] == "192.0.2.7" && mismatch.details["deviceIp"] == "127.0.0.1")

        // From the same address: no mismatch event.
        var local = BankIDClient(server)
        let again = try await local.start("login", device: "same")
        let againObject = try again.jsonObject()
        try await local.autostart(try #require(againObject["autoStartToken"] as? String))
        _ = try await local.final(try #require(againObject["orderId"] as? String))
        let mismatches = try server.server.store.auditEvents(userID: nil, beforeID: nil, limit: 50).filter {
            $0.action.rawValue == "bankid.ip_mismatch"
        }
        #expect(mismatches.count == 1)
    }

    @Test(
        "same device on the web: the result waits for the returnUrl's nonce; a wrong nonce is refused; native gets no returnUrl",
        arguments: TestEngine.tested
    )
    func sameDeviceReturnNonce(engine: TestEngine) async throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let url = server.publicURL + "/v1/bankid/orders"
        // A web client: the binding comes back only as a cookie.
        let started = try await request("POST", url, json: #"{"intent":"signup","device":"same"}"#)
        #expect(started.status == 201, "\(started.text)")
        let setCookie = try #require(started.headers["set-cookie"])
        let cookie = try #require(setCookie.split(separator: ";").first.map(String.init))
        let object = try started.jsonObject()
        let orderID = try #require(object["orderId"] as? String)
        #expect(!started.text.contains("nonce"), "the page never learns the nonce from the start")

        // The app completes and, like the real one, hands back the returnUrl it would open.
        let opened = try await request(
            "POST", server.publicURL + "/sim/v1/autostart",
            json: #"{"autoStartToken":"\#(try #require(object["autoStartToken"] as? String))"}"#)
        let returnURL = try #require(try opened.jsonObject()["returnUrl"] as? String)
        #expect(returnURL.contains("/?nonce="), "the public URL with the nonce: \(returnURL)")
        let nonce = String(returnURL.split(separator: "=").last ?? "")

        // Polls without the nonce: complete at BankID, yet held.
        server.clock.advance(by: 2)
        var held: [String: Any] = [:]
        for _ in 0..<400 {
            let poll = try await request("GET", "\(url)/\(orderID)", headers: [("Cookie", cookie)])
            #expect(poll.status == 200, "\(poll.text)")
            held = try poll.jsonObject()
            if held["awaitingReturn"] as? Bool == true { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        #expect(held["awaitingReturn"] as? Bool == true && held["status"] as? String == "pending")
        #expect(held["result"] == nil)
        #expect(try server.server.store.userCount() == 0, "nothing is applied before the return")

        // Another nonce: refused and audited, the order untouched.
        let wrong = try await request(
            "GET", "\(url)/\(orderID)?nonce=AAAAAAAAAAAAAAAAAAAAAA", headers: [("Cookie", cookie)])
        #expect(try wrong.status == 403 && wrong.problemCode() == "bankid.return_mismatch")
        // The right nonce without the binding cookie: still nobody's order.
        let stranger = try await request("GET", "\(url)/\(orderID)?nonce=\(nonce)")
        #expect(try stranger.status == 404 && stranger.problemCode() == "bankid.order_not_found")

        // The browser BankID returned to: the result, and the session cookie, once.
        let returned = try await request(
            "GET", "\(url)/\(orderID)?nonce=\(nonce)", headers: [("Cookie", cookie)])
        #expect(returned.status == 200, "\(returned.text)")
        #expect(result(try returned.jsonObject())["code"] as? String == "bankid.account_created")
        #expect(returned.headers.values(for: "set-cookie").contains { $0.hasPrefix("portvakt_session=") })
        let again = try await request(
            "GET", "\(url)/\(orderID)?nonce=\(nonce)", headers: [("Cookie", cookie)])
        #expect(result(try again.jsonObject())["code"] as? String == "bankid.result_delivered")
        let events = try server.server.store.auditEvents(userID: nil, beforeID: nil, limit: 50)
        #expect(events.filter { $0.action.rawValue == "bankid.return_mismatch" }.count == 1)

        // A native app has no page to return to: no returnUrl, and the result needs no nonce.
        var native = BankIDClient(server)
        let nativeStart = try await native.start("login", device: "same")
        let nativeObject = try nativeStart.jsonObject()
        let nativeOpened = try await request(
            "POST", server.publicURL + "/sim/v1/autostart",
            json: #"{"autoStartToken":"\#(try #require(nativeObject["autoStartToken"] as? String))"}"#)
        #expect(try nativeOpened.jsonObject()["returnUrl"] == nil)
        let done = try await native.final(try #require(nativeObject["orderId"] as? String))
        #expect(result(done)["code"] as? String == "bankid.signed_in")
    }

    @Test(
        "a linked BankID identity counts as a way in while BankID login is on: the last passkey may then be deleted",
        arguments: TestEngine.tested, [true, false])
    func lastPasskeyWithLinkedIdentity(engine: TestEngine, bankIDLogin: Bool) async throws {
        let server = try TestServer.inProcess(
            engine: engine, configuration: ["methods": ["bankid": ["login": bankIDLogin]]])
        defer { server.stop() }
        let ada = try server.makeUser(username: "ada")
        let passkey = StoredPasskey(
            credentialID: [1, 2, 3, 4], userID: ada.id, publicKey: [0], algorithm: -7, signCount: 0,
            aaguid: "00000000-0000-0000-0000-000000000000", providerName: nil, transports: [],
            backupEligible: false, backupState: false, attestationFormat: "none", attestationType: "None",
            attestationTrusted: false, name: "Laptop", createdAt: server.clock.now(), lastUsedAt: nil)
        try server.server.store.insertPasskey(passkey)
        let token = try server.signIn(ada).token
        let url = server.publicURL + "/v1/me/passkeys/\(Base64URL.encode(passkey.credentialID))"
        let refused = try await request("DELETE", url, headers: [("Authorization", "Bearer \(token)")])
        #expect(try refused.status == 409 && refused.problemCode() == "passkey.last_passkey")

        var client = BankIDClient(server, token: token)
        #expect(result(try await client.run("link"))["code"] as? String == "bankid.linked")
        let deleted = try await request("DELETE", url, headers: [("Authorization", "Bearer \(token)")])
        if bankIDLogin {
            #expect(deleted.status == 200, "\(deleted.text)")
            #expect(try server.server.store.passkeyCount(userID: ada.id) == 0)
        } else {
            // BankID cannot sign anyone in here: without the passkey the account is locked out.
            #expect(try deleted.status == 409 && deleted.problemCode() == "passkey.last_passkey")
        }
    }

    @Test("a slow BankID does not hold the server's only thread: start is suspended while health answers")
    func startDoesNotBlockThreads() async throws {
        // On a socket: what is proved is that MHD's one worker thread stays free while the
        // connection is suspended, which only a listening server has.
        let server = try TestServer(.live, configuration: ["http": ["threading": "pool", "threads": 1]])
        defer { server.stop() }
        let control = try await request(
            "POST", server.publicURL + "/sim/v1/control", json: #"{"latencyMilliseconds": 3000}"#)
        #expect(control.status == 200, "\(control.text)")
        let order = Mutex<[String]>([])
        let starting = Task {
            var client = BankIDClient(server)
            let started = try? await client.start("login")
            order.withLock { $0.append("start:\(started?.status ?? 0)") }
        }
        // Give the start time to reach the server and suspend (ordering, not timing, is checked).
        try await Task.sleep(for: .milliseconds(300))
        let health = try await request("GET", server.publicURL + "/health/alive")
        order.withLock { $0.append("health:\(health.status)") }
        await starting.value
        #expect(order.withLock { $0 } == ["health:200", "start:201"])
    }

    @Test(
        "stopping the server with a start still waiting on BankID answers it 503 (suspended or on its own thread), never hangs or crashes",
        arguments: ["perConnection", "pool"])
    func shutdownWithWaitingStart(threading: String) async throws {
        // On a socket: the 503 comes from shutdown waking MHD's suspended connection (pool) or
        // the connection's blocked thread (perConnection).
        let server = try TestServer(.live, configuration: ["http": ["threading": threading]])
        // Long enough that the handler is still waiting when stop's grace (2 s) has run out.
        _ = try await request(
            "POST", server.publicURL + "/sim/v1/control", json: #"{"latencyMilliseconds": 6000}"#)
        let outcome = Mutex<String?>(nil)
        let starting = Task {
            var client = BankIDClient(server)
            let status = (try? await client.start("login"))?.status
            outcome.withLock { $0 = status.map(String.init) ?? "closed" }
        }
        try await Task.sleep(for: .milliseconds(300))
        try await offPool { server.stop() }
        await starting.value
        let seen = outcome.withLock { $0 }
        #expect(seen == "503", "\(seen ?? "nil")")
    }

    @Test(
        "the user cancels in the app: the order fails with RFA6, audited once with its hint code",
        arguments: TestEngine.tested)
    func userCancelInApp(engine: TestEngine) async throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        var client = BankIDClient(server)
        let object = try await client.start("login").jsonObject()
        let orderID = try #require(object["orderId"] as? String)
        let qrData = try #require(object["qrData"] as? String)
        let scanned = try await request(
            "POST", server.publicURL + "/sim/v1/scan", json: #"{"qrData":"\#(qrData)","action":"cancel"}"#)
        #expect(scanned.status == 200, "\(scanned.text)")
        let failed = try await client.final(orderID)
        #expect(failed["status"] as? String == "failed" && failed["hintCode"] as? String == "userCancel")
        #expect((failed["message"] as? [String: Any])?["code"] as? String == "RFA6")
        _ = try await client.status(orderID)
        let events = try server.server.store.auditEvents(userID: nil, beforeID: nil, limit: 50).filter {
            $0.action.rawValue == "bankid.order_failed"
        }
        #expect(events.count == 1 && events.first?.details["hintCode"] == "userCancel")
    }
}
