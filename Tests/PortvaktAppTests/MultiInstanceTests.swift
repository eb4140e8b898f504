import BankIDSimulator
import CryptoCore
import Foundation
import HTTPEngine
import Kernel
import PasskeyCore
import SessionCore
import Storage
import Synchronization
import TestSupport
import Testing

/// Several `portvakt serve` processes on one PostgreSQL database and one BankID simulator, as
/// behind a load balancer, driven over real HTTP: they must behave as one service.
@Suite(
    "Several instances are one service",
    .serialized, .enabled(if: TestPostgreSQL.isEnabled, Comment(rawValue: TestPostgreSQL.disabledReason)))
struct MultiInstanceTests {
    @Test(
        "a ceremony begun on one instance finishes on another; 50 racing finalizes over three instances give one session; a revocation on one is refused by the others at once"
    )
    func ceremoniesAcrossInstances() throws {
        let database = try PostgreSQLTestDatabase()
        let service = try Service(databaseURL: database.url, instances: 3)
        defer { service.stop() }
        let (a, b, c) = (service.instances[0], service.instances[1], service.instances[2])

        // Sign-up on A; login initialize on B, finalize on C.
        let user = try InstanceUser.signUp("ada", on: a)
        let started = try user.startLogin(on: b)
        let login = try user.finalizeLogin(started, on: c)
        #expect(login.status == 200, "\(login.text)")
        let token = try #require(try login.sessionToken())
        for instance in service.instances { #expect(try instance.me(token).status == 200) }

        // One assertion, 50 finalizes spread over the three instances at once: exactly one session.
        let userID = try #require(try service.store.user(username: "ada")).id
        let sessionsBefore = try service.store.sessions(userID: userID, liveAt: Date()).count
        let racing = try user.startLogin(on: a)
        let body = user.finalizeBody(racing)
        let statuses = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 50) { index in
            let instance = service.instances[index % 3]
            let status =
                (try? HTTPTestClient().sendJSON(
                    url: instance.publicURL + "/v1/passkeys/login/finalize", json: body
                ).status) ?? -1
            statuses.withLock { $0.append(status) }
        }
        let answered = statuses.withLock { $0 }
        #expect(answered.filter { $0 == 200 }.count == 1, "exactly one finalize won: \(answered.sorted())")
        #expect(
            answered.filter { $0 == 400 }.count == 49,
            "the others were refused, none failed: \(answered.sorted())")
        #expect(try service.store.sessions(userID: userID, liveAt: Date()).count == sessionsBefore + 1)

        // A session revoked through A's admin API is refused by B and C on the very next request.
        let session = try #require(
            try service.store.session(tokenHash: SessionService.lookupHash(token: token)))
        let revoked = try HTTPTestClient().send(
            method: "DELETE", url: a.adminURL + "/admin/v1/users/\(userID)/sessions/\(session.id)",
            headers: service.adminHeaders)
        #expect(revoked.status == 204, "\(revoked.text)")
        for instance in [b, c] {
            let refused = try instance.me(token)
            #expect(refused.status == 401)
            #expect(try refused.problemCode() == "session.revoked")
        }
    }

    @Test(
        "a BankID order polled every 200 ms on all three instances is collected upstream at most once per interval, and every poller sees it complete"
    )
    func bankIDCollectedOncePerInterval() throws {
        let database = try PostgreSQLTestDatabase()
        let service = try Service(databaseURL: database.url, instances: 3)
        defer { service.stop() }
        let http = HTTPTestClient()
        let before = Set(service.simulator.orderRefs)
        let started = try http.sendJSON(
            url: service.instances[0].publicURL + "/v1/bankid/orders",
            json: #"{"intent":"signup","device":"other","client":"native",\#(TestServer.nativeAppMembers)}"#)
        #expect(started.status == 201, "\(started.text)")
        let object = try started.jsonObject()
        let orderID = try #require(object["orderId"] as? String)
        let binding = try #require(object["clientBinding"] as? String)
        let orderRef = try #require(Set(service.simulator.orderRefs).subtracting(before).first)

        // Three pollers, one per instance, every 200 ms; the user approves after about 5 s.
        let finals = Mutex<[(status: String, session: Bool)]>([])
        let pollers = (0..<3).map { index in
            Thread {
                let client = HTTPTestClient()
                let url = service.instances[index].publicURL + "/v1/bankid/orders/\(orderID)"
                for _ in 0..<150 {
                    guard
                        let response = try? client.send(
                            url: url, headers: [("Portvakt-BankID-Binding", binding)]),
                        response.status == 200, let status = try? response.jsonObject()
                    else {
                        Thread.sleep(forTimeInterval: 0.2)
                        continue
                    }
                    if let ended = status["status"] as? String, ended != "pending" {
                        let session = (status["result"] as? [String: Any])?["session"] != nil
                        finals.withLock { $0.append((ended, session)) }
                        return
                    }
                    Thread.sleep(forTimeInterval: 0.2)
                }
            }
        }
        pollers.forEach { $0.start() }
        Thread.sleep(forTimeInterval: 5)
        // The QR code animates: the user scans the one on screen now.
        let showing = try http.send(
            url: service.instances[0].publicURL + "/v1/bankid/orders/\(orderID)",
            headers: [("Portvakt-BankID-Binding", binding)])
        let qrData = try #require(try showing.jsonObject()["qrData"] as? String)
        let scanned = try http.sendJSON(
            url: service.simulator.userAPIURL + "scan",
            json: #"{"qrData":"\#(qrData)","personalNumber":"198112289874"}"#)
        #expect(scanned.status == 200, "\(scanned.text)")
        for _ in 0..<300 where finals.withLock({ $0.count }) < 3 { Thread.sleep(forTimeInterval: 0.1) }

        let results = finals.withLock { $0 }
        #expect(results.count == 3, "every poller saw the order end")
        #expect(results.allSatisfy { $0.status == "complete" }, "\(results)")
        #expect(
            results.filter(\.session).count == 1,
            "one poller took the new account's session, the others were told it was delivered")
        let times = service.simulator.collectTimes(orderRef: orderRef)
        #expect(times.count >= 3, "the order was collected while pending and at its end: \(times.count)")
        let gaps = zip(times.dropFirst(), times).map { $0.timeIntervalSince($1) }
        // The poll interval is 2 s; a little slack for the clock read on either side.
        #expect(gaps.allSatisfy { $0 >= 1.9 }, "collects closer than the interval: \(gaps)")
    }

    @Test(
        "SIGKILL of one instance mid-load loses no acknowledged write, and the other two keep serving"
    )
    func instanceKilledMidLoad() throws {
        let database = try PostgreSQLTestDatabase()
        let service = try Service(databaseURL: database.url, instances: 3)
        defer { service.stop() }
        let acknowledged = Mutex<[String]>([])
        let failuresOnSurvivors = Mutex<[String]>([])
        // Four clients signing up in turn on every instance, 40 sign-ups each. What the killed
        // instance (the third) fails to answer was never acknowledged; the survivors must not fail.
        let done = DispatchGroup()
        for worker in 0..<4 {
            done.enter()
            Thread {
                defer { done.leave() }
                for round in 0..<40 {
                    let index = (worker + round) % 3
                    let name = "w\(worker)r\(round)"
                    do {
                        _ = try InstanceUser.signUp(name, on: service.instances[index])
                        acknowledged.withLock { $0.append(name) }
                    } catch  where index != 2 {
                        failuresOnSurvivors.withLock { $0.append("\(name): \(error)") }
                    } catch {}
                }
            }.start()
        }
        // Mid-load: once a fifth of the sign-ups are in.
        for _ in 0..<3000 where acknowledged.withLock({ $0.count }) < 32 {
            Thread.sleep(forTimeInterval: 0.01)
        }
        service.instances[2].process.send(SIGKILL)
        let atKill = acknowledged.withLock { $0.count }
        #expect(service.instances[2].process.wait() == 128 + SIGKILL)
        #expect(done.wait(timeout: .now() + 120) == .success, "the load finished")

        let names = acknowledged.withLock { $0 }
        #expect(
            atKill < 100 && names.count > atKill + 40,
            "the survivors kept signing up: \(atKill) → \(names.count)")
        #expect(failuresOnSurvivors.withLock { $0 }.isEmpty, "\(failuresOnSurvivors.withLock { $0 })")
        for name in names {
            #expect(try service.store.user(username: name) != nil, "acknowledged sign-up \(name) was kept")
        }
        for instance in service.instances.prefix(2) {
            #expect(try HTTPTestClient().send(url: instance.publicURL + "/health/ready").status == 200)
        }
    }

    @Test(
        "a PostgreSQL outage mid-load gives 503 storage.unavailable within the statement timeout, never a hang, and the instances recover by themselves"
    )
    func databaseRestart() throws {
        let cluster = try PostgreSQLTestCluster()
        let service = try Service(databaseURL: cluster.url, instances: 2)
        defer { service.stop() }
        let user = try InstanceUser.signUp("ada", on: service.instances[0])
        let token = try #require(user.token)
        let pids = service.instances.map(\.process.pid)

        // Load through the outage: sessions looked up on both instances, one client each.
        let loadRunning = Atomic<Bool>(true)
        let seen = Mutex<[Int]>([])
        let load = DispatchGroup()
        for instance in service.instances {
            load.enter()
            Thread {
                defer { load.leave() }
                let client = HTTPTestClient(timeout: 30)
                for _ in 0..<2000 where loadRunning.load(ordering: .relaxed) {
                    let status =
                        (try? client.send(
                            url: instance.publicURL + "/v1/me",
                            headers: [("Authorization", "Bearer \(token)")]
                        ).status) ?? -1
                    seen.withLock { $0.append(status) }
                    Thread.sleep(forTimeInterval: 0.02)
                }
            }.start()
        }
        Thread.sleep(forTimeInterval: 0.5)

        try cluster.pause()
        let client = HTTPTestClient(timeout: 30)
        for instance in service.instances {
            // A session lookup, a sign-up's first step (it stores its challenge), and a BankID
            // status (its use case carries the store's failure inside its own error).
            let requests: [(String, String?, [(String, String)])] = [
                ("/v1/me", nil, [("Authorization", "Bearer \(token)")]),
                ("/v1/passkeys/registration/initialize", #"{"username":"outage"}"#, []),
                ("/v1/bankid/orders/" + String(repeating: "A", count: 43), nil, []),
            ]
            for (path, json, headers) in requests {
                let started = ContinuousClock.now
                let response =
                    try json.map { try client.sendJSON(url: instance.publicURL + path, json: $0) }
                    ?? client.send(url: instance.publicURL + path, headers: headers)
                let elapsed = ContinuousClock.now - started
                #expect(response.status == 503, "\(path): \(response.text)")
                #expect(try response.problemCode() == "storage.unavailable", "\(path): \(response.text)")
                #expect(response.headers["Retry-After"] != nil)
                // The statement timeout is 2 s, the client's grace 2 s more, a reconnect's connect timeout 2 s.
                #expect(elapsed < .seconds(7), "\(path) answered within the bounds, not a hang: \(elapsed)")
            }
            #expect(try client.send(url: instance.publicURL + "/health/ready").status == 503)
        }

        try cluster.resume()
        for instance in service.instances {
            var recovered = false
            for _ in 0..<100 where !recovered {
                recovered = (try? client.send(url: instance.publicURL + "/health/ready").status) == 200
                if !recovered { Thread.sleep(forTimeInterval: 0.1) }
            }
            #expect(recovered, "the instance reconnected by itself")
            let me = try instance.me(token)
            #expect(me.status == 200, "the session survived the outage: \(me.text)")
        }
        #expect(try InstanceUser.signUp("grace", on: service.instances[1]).token != nil, "writes work again")
        Thread.sleep(forTimeInterval: 0.5)
        loadRunning.store(false, ordering: .relaxed)
        #expect(load.wait(timeout: .now() + 60) == .success)
        let statuses = seen.withLock { $0 }
        #expect(Set(statuses).isSubset(of: [200, 503]), "only answers, and only these: \(Set(statuses))")
        #expect(statuses.contains(503) && statuses.last == 200, "503 in the outage, 200 again after it")
        #expect(
            service.instances.map(\.process.pid) == pids && service.instances.allSatisfy(\.process.isRunning))
    }
}

/// N `portvakt serve` processes sharing one database and one BankID simulator (in this test
/// process), each with its own data directory, the same admin token and the same BankID identity
/// key, as a deployment behind a load balancer.
private final class Service: @unchecked Sendable {
    struct Instance {
        let process: PortvaktProcess
        let publicURL: String
        let adminURL: String

        func me(_ token: String) throws -> TestResponse {
            try HTTPTestClient().send(
                url: publicURL + "/v1/me", headers: [("Authorization", "Bearer \(token)")])
        }
    }

    let simulator: RunningSimulator
    let instances: [Instance]
    let adminToken: String
    /// The stores over the same database, for checking what the instances wrote.
    let store: SQLStore
    private let folder: TemporaryDirectory

    var adminHeaders: [(String, String)] { [("Authorization", "Bearer \(adminToken)")] }

    init(databaseURL: String, instances count: Int) throws {
        folder = try TemporaryDirectory()
        simulator = try BankIDSimulator.start(
            BankIDSimulatorConfiguration(dataDirectory: folder.path("simulator")))
        adminToken = Base64URL.encode(SystemRandom().bytes(32))
        let keyFile = folder.path("identity.key")
        try Data(Base64URL.encode(SystemRandom().bytes(32)).utf8).write(to: URL(fileURLWithPath: keyFile))
        let passphraseFile = folder.path("passphrase")
        try Data(simulator.passphrase.utf8).write(to: URL(fileURLWithPath: passphraseFile))
        let generous: [String: Any] = ["burst": 100_000, "perSecond": 100_000]
        let configuration: [String: Any] = [
            "listen": ["public": ["port": 0], "admin": ["port": 0]],
            "logging": ["level": "info", "accessLog": false],
            "rateLimits": ["default": generous, "auth": generous, "admin": generous, "bankid": generous],
            "storage": [
                "engine": "postgresql",
                "postgresql": [
                    "poolSize": 4, "statementTimeoutMilliseconds": 2000, "connectTimeoutSeconds": 2,
                ],
            ],
            "bankid": [
                "environment": "simulator", "baseURL": simulator.baseURL,
                "caCertificate": simulator.caCertificatePath,
                "clientCertificate": simulator.clientCertificatePath, "passphraseFile": passphraseFile,
                "identityKeys": ["k1": ["file": keyFile]], "currentIdentityKey": "k1",
                "appIdentifiers": [TestServer.appIdentifier],
            ],
        ]
        let configFile = folder.path("portvakt.json")
        try JSONSerialization.data(withJSONObject: configuration).write(to: URL(fileURLWithPath: configFile))
        var started: [Instance] = []
        do {
            for index in 0..<count {
                let data = folder.path("instance-\(index)")
                try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
                let process = try PortvaktProcess(
                    ["serve", "--config", configFile],
                    environment: [
                        "PORTVAKT_DATA": data, "PORTVAKT_DATABASE_URL": databaseURL,
                        "PORTVAKT_ADMIN_TOKEN": adminToken,
                    ])
                let publicPort = try process.waitForPort(listener: "public")
                let adminPort = try process.waitForPort(listener: "admin")
                started.append(
                    Instance(
                        process: process, publicURL: "http://127.0.0.1:\(publicPort)",
                        adminURL: "http://127.0.0.1:\(adminPort)"))
            }
        } catch {
            for instance in started { instance.process.send(SIGKILL) }
            simulator.stop()
            throw error
        }
        instances = started
        var connection = try PostgreSQLConfiguration(url: databaseURL)
        connection.applicationName = "portvakt-tests"
        store = SQLStore(
            database: try PostgreSQLDatabase(
                configuration: PostgreSQLDatabase.Configuration(connection: connection, poolSize: 2)))
    }

    /// Stops every instance still running (SIGTERM, then the wait's SIGKILL), then the simulator.
    func stop() {
        for instance in instances where instance.process.isRunning { instance.process.send(SIGTERM) }
        for instance in instances { _ = instance.process.wait(timeout: 20) }
        store.engine.close()
        simulator.stop()
    }
}

/// A user with a software passkey, signing up and in over HTTP on whichever instance it is told,
/// with the origin every instance serves (they share one public URL behind the balancer).
private struct InstanceUser {
    static let origin = "http://localhost:8080"
    let authenticator: SoftwareAuthenticator
    let credential: SoftwareCredential
    /// The session token from the sign-up.
    let token: String?

    /// Signs `username` up natively on `instance`; throws unless it was acknowledged (201).
    static func signUp(_ username: String, on instance: Service.Instance) throws -> InstanceUser {
        let http = HTTPTestClient()
        let started = try http.sendJSON(
            url: instance.publicURL + "/v1/passkeys/registration/initialize",
            json: #"{"username":"\#(username)","displayName":"Test \#(username)"}"#)
        guard started.status == 200 else {
            throw ProcessFailure(message: "initialize: \(started.status) \(started.text)")
        }
        let object = try started.jsonObject()
        let options = try #require(object["publicKey"] as? [String: Any])
        let challengeText = try #require(options["challenge"] as? String)
        let challenge = try #require(Base64URL.decode(challengeText))
        let handleText = try #require((options["user"] as? [String: Any])?["id"] as? String)
        let handle = try #require(Base64URL.decode(handleText))
        let challengeID = try #require(object["challengeId"] as? String)
        let authenticator = SoftwareAuthenticator()
        let credential = authenticator.makeCredential(
            algorithm: .es256, rpID: "localhost", userHandle: handle)
        let registration = String(
            decoding: authenticator.register(credential, challenge: challenge, origin: origin).json(),
            as: UTF8.self)
        let finished = try http.sendJSON(
            url: instance.publicURL + "/v1/passkeys/registration/finalize",
            json: #"{"challengeId":"\#(challengeID)","credential":\#(registration),"client":"native"}"#)
        guard finished.status == 201 else {
            throw ProcessFailure(message: "finalize: \(finished.status) \(finished.text)")
        }
        return InstanceUser(
            authenticator: authenticator, credential: credential, token: try finished.sessionToken())
    }

    private init(authenticator: SoftwareAuthenticator, credential: SoftwareCredential, token: String?) {
        self.authenticator = authenticator
        self.credential = credential
        self.token = token
    }

    /// A login challenge from `instance`: its id and bytes.
    func startLogin(on instance: Service.Instance) throws -> (id: String, challenge: [UInt8]) {
        let response = try HTTPTestClient().sendJSON(
            url: instance.publicURL + "/v1/passkeys/login/initialize", json: "{}")
        #expect(response.status == 200, "\(response.text)")
        let object = try response.jsonObject()
        let options = try #require(object["publicKey"] as? [String: Any])
        let challenge = try #require(options["challenge"] as? String)
        return (try #require(object["challengeId"] as? String), try #require(Base64URL.decode(challenge)))
    }

    /// The finalize request body answering `started` with this user's passkey.
    func finalizeBody(_ started: (id: String, challenge: [UInt8])) -> String {
        let assertion = String(
            decoding: authenticator.authenticate(
                credential, challenge: started.challenge, origin: Self.origin
            ).json(),
            as: UTF8.self)
        return #"{"challengeId":"\#(started.id)","credential":\#(assertion),"client":"native"}"#
    }

    func finalizeLogin(_ started: (id: String, challenge: [UInt8]), on instance: Service.Instance) throws
        -> TestResponse
    {
        try HTTPTestClient().sendJSON(
            url: instance.publicURL + "/v1/passkeys/login/finalize", json: finalizeBody(started))
    }
}

extension TestResponse {
    /// The session token a native sign-in or sign-up returned, if any.
    fileprivate func sessionToken() throws -> String? {
        (try jsonObject()["session"] as? [String: Any])?["token"] as? String
    }
}

extension MultiInstanceTests {
    @Test(
        "a support agent's BankID phone check started on one instance is polled on the others: one answer everywhere, recorded once"
    )
    func phoneVerificationAcrossInstances() throws {
        let database = try PostgreSQLTestDatabase()
        let service = try Service(databaseURL: database.url, instances: 3)
        defer { service.stop() }
        let http = HTTPTestClient()
        // The account: a BankID sign-up by Tolvan on instance A.
        let signup = try http.sendJSON(
            url: service.instances[0].publicURL + "/v1/bankid/orders",
            json: #"{"intent":"signup","device":"other","client":"native",\#(TestServer.nativeAppMembers)}"#)
        let order = try signup.jsonObject()
        let orderID = try #require(order["orderId"] as? String)
        let binding = try #require(order["clientBinding"] as? String)
        let scanned = try http.sendJSON(
            url: service.simulator.userAPIURL + "scan",
            json:
                #"{"qrData":"\#(try #require(order["qrData"] as? String))","personalNumber":"198112289874"}"#)
        #expect(scanned.status == 200, "\(scanned.text)")
        var userID: String?
        for _ in 0..<100 where userID == nil {
            Thread.sleep(forTimeInterval: 0.2)
            let status = try http.send(
                url: service.instances[0].publicURL + "/v1/bankid/orders/\(orderID)",
                headers: [("Portvakt-BankID-Binding", binding)])
            userID = ((try? status.jsonObject())?["result"] as? [String: Any]).flatMap {
                ($0["user"] as? [String: Any])?["id"] as? String
            }
        }
        let user = try #require(userID)

        // Started on B's admin API; the caller answers; polled on A, B and C in turn.
        let before = Set(service.simulator.orderRefs)
        let started = try http.sendJSON(
            url: service.instances[1].adminURL + "/admin/v1/users/\(user)/bankid/phone-verifications",
            json: #"{"callInitiator":"RP","personalNumber":"198112289874"}"#, headers: service.adminHeaders)
        #expect(started.status == 201, "\(started.text)")
        let id = try #require(try started.jsonObject()["id"] as? String)
        let phoneOrder = try #require(Set(service.simulator.orderRefs).subtracting(before).first)
        let answered = try http.sendJSON(
            url: service.simulator.userAPIURL + "phone", json: #"{"orderRef":"\#(phoneOrder)"}"#)
        #expect(answered.status == 200, "\(answered.text)")
        var answers: [String] = []
        for round in 0..<60 where answers.count < 3 {
            let instance = service.instances[round % 3]
            let response = try http.send(
                url: instance.adminURL + "/admin/v1/bankid/phone-verifications/\(id)",
                headers: service.adminHeaders)
            #expect(response.status == 200, "\(response.text)")
            let object = try response.jsonObject()
            if object["status"] as? String != "pending" || !answers.isEmpty {
                answers.append("\(object["status"] ?? "")/\(object["verified"] ?? "")")
            }
            Thread.sleep(forTimeInterval: 0.3)
        }
        #expect(answers == ["complete/1", "complete/1", "complete/1"], "\(answers)")
        let verified = try service.store.searchAudit(
            AuditQuery(userID: user, action: .adminBankIDPhoneVerified), beforeID: nil, limit: 10)
        #expect(verified.count == 1 && verified.first?.details["verificationId"] == id)
        #expect(try service.store.bankIDPhoneVerification(id: id)?.outcome == .verified)
    }
}
