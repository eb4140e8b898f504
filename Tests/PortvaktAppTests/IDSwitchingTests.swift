import AuthOrchestrator
import BankIDSimulator
import CryptoCore
import Foundation
import HTTPEngine
import Kernel
import PortvaktAPI
import SessionCore
import TestSupport
import Testing

@testable import PortvaktApp

/// A `bankid` section for BankID's test environment (certificate paths need not exist to load;
/// the identity key is a real file), with `extra` members, and the rest of the document.
private func testEnvironment(
    _ directory: TemporaryDirectory, bankid extra: String = "", rest: String = ""
) throws -> String {
    let key = directory.path("identity.key")
    try Data(Base64URL.encode(SystemRandom().bytes(32)).utf8).write(to: URL(fileURLWithPath: key))
    return """
        {"bankid": {"environment": "test", "caCertificate": "\(directory.path("ca.pem"))",
          "clientCertificate": "\(directory.path("rp.p12"))", "currentIdentityKey": "k1",
          "identityKeys": {"k1": {"file": "\(key)"}}\(extra)}\(rest)}
        """
}

private let passphrase = ["PORTVAKT_BANKID_PASSPHRASE": "qwerty123"]

private func parse(_ json: String) throws -> PortvaktConfiguration {
    try PortvaktConfiguration.parse(json: Array(json.utf8), environment: passphrase)
}

private func issues(_ json: String) -> [ConfigurationIssue] {
    do {
        _ = try PortvaktConfiguration.parse(json: Array(json.utf8), environment: passphrase)
        return []
    } catch {
        return error.issues
    }
}

@Suite("BankID and ID switching: configuration")
struct IDSwitchingConfigurationTests {
    @Test(
        "outside the simulator, link and recovery left on by default are refused, each naming itself and the key"
    )
    func refusedByDefault() throws {
        let directory = try TemporaryDirectory()
        let found = issues(try testEnvironment(directory))
        #expect(found.map(\.path) == ["methods.bankid.link", "methods.bankid.recovery"])
        #expect(found.allSatisfy { $0.code == .idSwitchingNotAcknowledged })
        for issue in found {
            #expect(issue.message.contains("ID switching") && issue.message.contains("bankid.idSwitching"))
            #expect(issue.message.contains("Set \(issue.path) to false"))
        }
        // Switched on explicitly, the same.
        let explicit = issues(
            try testEnvironment(
                directory, rest: #", "methods": {"bankid": {"link": true, "recovery": false}}"#))
        #expect(explicit.map(\.path) == ["methods.bankid.link"])
        // Production too; and BankID off needs nothing.
        let production = try testEnvironment(directory).replacingOccurrences(
            of: #""environment": "test""#, with: #""environment": "production""#)
        #expect(issues(production).map(\.path) == ["methods.bankid.link", "methods.bankid.recovery"])
        // Every problem in one pass: recovery without passkeys is also ID switching here.
        let both = issues(
            try testEnvironment(directory, rest: #", "methods": {"passkey": {"enabled": false}}"#))
        #expect(
            both.map(\.path) == [
                "methods.bankid.recovery", "methods.bankid.link", "methods.bankid.recovery",
            ],
            "\(both)")
        let off = try parse(
            try testEnvironment(directory, rest: #", "methods": {"bankid": {"enabled": false}}"#))
        #expect(off.idSwitchingFeatures.isEmpty && off.idSwitchingSummary == nil)
    }

    @Test("BankID as a login of its own: link and recovery off, no passkey after BankID, step-up still on")
    func loginOfItsOwn() throws {
        let directory = try TemporaryDirectory()
        let c = try parse(
            try testEnvironment(
                directory, rest: #", "methods": {"bankid": {"link": false, "recovery": false}}"#))
        #expect(c.idSwitchingGrant == .none && c.idSwitchingFeatures.isEmpty)
        let policy = PortvaktServer.bankIDPolicy(c)
        #expect(!policy.link && !policy.recovery && !policy.passkeyAfterBankID)
        #expect(policy.login && policy.signup && policy.sign, "login, sign-up and step-up stay")
        #expect(policy.idSwitchingFeatures.isEmpty)
        #expect(c.idSwitchingSummary?.contains("no ID switching") == true)
    }

    @Test("with the acknowledgement the features load, exactly those listed, and the summary names them")
    func acknowledged() throws {
        let directory = try TemporaryDirectory()
        let all = try parse(
            try testEnvironment(
                directory,
                bankid:
                    #", "idSwitching": {"acknowledged": true, "features": ["recovery", "link", "passkeyAfterBankID"]}"#
            ))
        #expect(all.idSwitchingGrant == .acknowledged)
        #expect(all.idSwitchingFeatures == [.link, .recovery, .passkeyAfterBankID])
        let policy = PortvaktServer.bankIDPolicy(all)
        #expect(policy.link && policy.recovery && policy.passkeyAfterBankID)
        #expect(
            all.idSwitchingSummary
                == "bankid.idSwitching: ID switching on because it is acknowledged: link, recovery, passkeyAfterBankID"
        )
        // Shown, and read back the same.
        let shown = all.effectiveJSON()
        #expect(shown.contains(#""idSwitching""#))
        #expect(try parse(shown) == all)

        // Link only: recovery must then be off, and no passkey is offered after BankID.
        let linkOnly = try parse(
            try testEnvironment(
                directory, bankid: #", "idSwitching": {"acknowledged": true, "features": ["link"]}"#,
                rest: #", "methods": {"bankid": {"recovery": false}}"#))
        let linkPolicy = PortvaktServer.bankIDPolicy(linkOnly)
        #expect(linkPolicy.link && !linkPolicy.recovery && !linkPolicy.passkeyAfterBankID)
        let stillRefused = issues(
            try testEnvironment(
                directory, bankid: #", "idSwitching": {"acknowledged": true, "features": ["link"]}"#))
        #expect(stillRefused.map(\.path) == ["methods.bankid.recovery"])
        #expect(stillRefused.first?.message.contains(#"does not acknowledge "recovery""#) == true)
    }

    @Test(
        "the simulator keeps every feature on, embedded or external; a written statement is honoured there too"
    )
    func simulator() throws {
        for json in ["{}", #"{"bankid": {"baseURL": "https://127.0.0.1:8443/rp/v6.0"}}"#] {
            let c = try parse(json)
            #expect(c.idSwitchingGrant == .simulator)
            #expect(c.idSwitchingFeatures == PortvaktConfiguration.IDSwitchingFeature.allCases)
            let policy = PortvaktServer.bankIDPolicy(c)
            #expect(policy.link && policy.recovery && policy.passkeyAfterBankID)
            #expect(c.idSwitchingSummary?.contains(#"because bankid.environment is "simulator""#) == true)
        }
        // BankID's own service is no simulator, whatever the environment says.
        for url in ["https://appapi2.bankid.com/rp/v6.0", "https://appapi2.test.bankid.com/rp/v6.0"] {
            let found = issues(#"{"bankid": {"baseURL": "\#(url)"}}"#)
            #expect(found.map(\.path) == ["bankid.baseURL"], "\(url): \(found)")
        }
        // Rehearsing a production configuration on the simulator: the statement decides.
        let rehearsal = issues(#"{"bankid": {"idSwitching": {"acknowledged": false}}}"#)
        #expect(rehearsal.map(\.path) == ["methods.bankid.link", "methods.bankid.recovery"])
        let strict = try parse(
            #"{"bankid": {"idSwitching": {"acknowledged": false}}, "methods": {"bankid": {"link": false, "recovery": false}}}"#
        )
        #expect(!PortvaktServer.bankIDPolicy(strict).passkeyAfterBankID)
    }

    @Test(
        "the statement is checked: acknowledged is required and means what it says, features are known, once, and on"
    )
    func statementChecked() {
        let cases: [(String, String, ConfigurationIssue.Code)] = [
            (#"{"features": ["link"]}"#, "bankid.idSwitching.acknowledged", .missingKey),
            (#"{"acknowledged": true}"#, "bankid.idSwitching.features", .missingKey),
            (#"{"acknowledged": false, "features": ["link"]}"#, "bankid.idSwitching.features", .conflict),
            (
                #"{"acknowledged": true, "features": ["sso"]}"#, "bankid.idSwitching.features[0]",
                .invalidValue
            ),
            (
                #"{"acknowledged": true, "features": ["link", "link"]}"#, "bankid.idSwitching.features[1]",
                .invalidValue
            ),
            (
                #"{"acknowledged": "yes", "features": ["link"]}"#, "bankid.idSwitching.acknowledged",
                .wrongType
            ),
            (
                #"{"acknowledged": true, "features": ["link"], "agreed": 1}"#, "bankid.idSwitching.agreed",
                .unknownKey
            ),
        ]
        for (statement, path, code) in cases {
            let found = issues(#"{"bankid": {"idSwitching": \#(statement)}}"#)
            #expect(
                found.contains(ConfigurationIssue(code, path: path, message: "")), "\(statement): \(found)")
        }
        // A feature acknowledged for a journey that is off would do nothing.
        let idle = issues(
            #"{"bankid": {"idSwitching": {"acknowledged": true, "features": ["link", "passkeyAfterBankID"]}}, "methods": {"passkey": {"enabled": false}, "bankid": {"link": false, "recovery": false}}}"#
        )
        #expect(
            idle.map(\.path) == ["bankid.idSwitching.features[0]", "bankid.idSwitching.features[1]"],
            "\(idle)")
    }

    @Test("the server refuses a configuration built in code that breaks the rule, before opening anything")
    func serverRefusesCodeConfiguration() throws {
        let directory = try TemporaryDirectory()
        var c = PortvaktConfiguration(dataDirectory: directory.path)
        c.bankid.environment = .production
        let error = #expect(throws: ConfigurationError.self) {
            try PortvaktServer(configuration: c, logger: Logger(minimum: .error))
        }
        #expect(error?.issues.map(\.path) == ["methods.bankid.link", "methods.bankid.recovery"])
        #expect(!FileManager.default.fileExists(atPath: c.storagePath), "no database was opened")
    }

    @Test("BankID session lifetimes default to the general ones, may be shorter, never longer")
    func sessionLifetimes() throws {
        let general = try parse("{}")
        #expect(general.bankid.sessions == PortvaktConfiguration.BankIDSessionSettings())
        let lifetime = PortvaktServer.bankIDSessionLifetime(general)
        #expect(lifetime == SessionLifetime(absolute: 2_592_000, idle: 604_800))
        let short = try parse(#"{"bankid": {"sessionLifetimeSeconds": 3600}}"#)
        #expect(
            PortvaktServer.bankIDSessionLifetime(short) == SessionLifetime(absolute: 3600, idle: 3600),
            "the idle timeout never outlasts the lifetime")
        let both = try parse(
            #"{"bankid": {"sessionLifetimeSeconds": 3600, "sessionIdleTimeoutSeconds": 600}}"#)
        #expect(PortvaktServer.bankIDSessionLifetime(both) == SessionLifetime(absolute: 3600, idle: 600))
        #expect(try parse(both.effectiveJSON()) == both)
        let cases: [(String, String)] = [
            (#"{"bankid": {"sessionLifetimeSeconds": 2592001}}"#, "bankid.sessionLifetimeSeconds"),
            (
                #"{"sessions": {"absoluteLifetimeSeconds": 7200, "idleTimeoutSeconds": 600}, "bankid": {"sessionLifetimeSeconds": 7201}}"#,
                "bankid.sessionLifetimeSeconds"
            ),
            (
                #"{"sessions": {"idleTimeoutSeconds": 600}, "bankid": {"sessionIdleTimeoutSeconds": 601}}"#,
                "bankid.sessionIdleTimeoutSeconds"
            ),
            (
                #"{"bankid": {"sessionLifetimeSeconds": 600, "sessionIdleTimeoutSeconds": 601}}"#,
                "bankid.sessionIdleTimeoutSeconds"
            ),
            (#"{"bankid": {"sessionLifetimeSeconds": 59}}"#, "bankid.sessionLifetimeSeconds"),
            (
                #"{"bankid": {"sessionIdleTimeoutSeconds": 600}, "methods": {"bankid": {"enabled": false}}}"#,
                "bankid.sessionIdleTimeoutSeconds"
            ),
        ]
        for (json, path) in cases {
            #expect(issues(json).map(\.path) == [path], "\(json)")
        }
    }
}

/// `portvakt config check` and `portvakt serve` as operators run them.
@Suite("BankID and ID switching: the binary", .serialized)
struct IDSwitchingProcessTests {
    @Test(
        "config check refuses the exchange features outside the simulator, naming each and the key; says which are on"
    )
    func configCheck() throws {
        let directory = try TemporaryDirectory()
        let refused = directory.path("refused.json")
        try Data(try testEnvironment(directory).utf8).write(to: URL(fileURLWithPath: refused))
        let result = try PortvaktProcess.run(["config", "check", refused], environment: passphrase)
        #expect(result.status == 1)
        #expect(result.stderr.contains("methods.bankid.link: is on"), "\(result.stderr)")
        #expect(result.stderr.contains("methods.bankid.recovery: is on"))
        #expect(result.stderr.contains("bankid.idSwitching"))

        let acknowledged = directory.path("acknowledged.json")
        try Data(
            try testEnvironment(
                directory,
                bankid: #", "idSwitching": {"acknowledged": true, "features": ["link", "recovery"]}"#
            ).utf8
        ).write(to: URL(fileURLWithPath: acknowledged))
        let ok = try PortvaktProcess.run(["config", "check", acknowledged], environment: passphrase)
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(
            ok.stdout.contains("ID switching on because it is acknowledged: link, recovery"), "\(ok.stdout)")

        let simulator = directory.path("simulator.json")
        try Data("{}".utf8).write(to: URL(fileURLWithPath: simulator))
        let development = try PortvaktProcess.run(["config", "check", simulator])
        #expect(development.status == 0)
        #expect(
            development.stdout.contains(
                #"ID switching on for development because bankid.environment is "simulator": link, recovery, passkeyAfterBankID"#
            ), "\(development.stdout)")
    }

    @Test(
        "serve against BankID's test environment refuses to start without the acknowledgement, starts with it and logs the features"
    )
    func serve() throws {
        let folder = try TemporaryDirectory()
        // BankID's test environment stood in by a simulator elsewhere: real certificates, real mTLS.
        let external = try BankIDSimulator.start(
            BankIDSimulatorConfiguration(dataDirectory: folder.path("sim")))
        defer { external.stop() }
        let key = folder.path("identity.key")
        try Data(Base64URL.encode(SystemRandom().bytes(32)).utf8).write(to: URL(fileURLWithPath: key))
        func config(_ name: String, idSwitching: String) throws -> String {
            let path = folder.path(name)
            let json = """
                {"publicURL": "http://localhost:8080", "listen": {"public": {"port": 0}, "admin": {"port": 0}},
                 "bankid": {"environment": "test", "baseURL": "\(external.baseURL)",
                   "caCertificate": "\(external.caCertificatePath)",
                   "clientCertificate": "\(external.clientCertificatePath)",
                   "identityKeys": {"k1": {"file": "\(key)"}}, "currentIdentityKey": "k1"\(idSwitching)}}
                """
            try Data(json.utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
        let environment = [
            "PORTVAKT_BANKID_PASSPHRASE": external.passphrase, "PORTVAKT_DATA": folder.path("data"),
        ]
        let refused = try PortvaktProcess.run(
            ["serve", "--config", try config("refused.json", idSwitching: "")], environment: environment)
        #expect(refused.status != 0)
        #expect(
            refused.stderr.contains("methods.bankid.link")
                && refused.stderr.contains("methods.bankid.recovery"))
        #expect(refused.stderr.contains("bankid.idSwitching"))

        let server = try PortvaktProcess(
            [
                "serve", "--config",
                try config(
                    "acknowledged.json",
                    idSwitching:
                        #", "idSwitching": {"acknowledged": true, "features": ["link", "recovery", "passkeyAfterBankID"]}"#
                ),
            ], environment: environment)
        _ = try server.waitForPort(listener: "public")
        let line = try #require(
            server.stderr.split(separator: "\n").first { $0.contains(#""msg":"bankid id switching""#) },
            "\(server.stderr)")
        #expect(line.contains(#""features":"link,recovery,passkeyAfterBankID""#), "\(line)")
        #expect(line.contains(#""because":"bankid.idSwitching""#))
        server.send(SIGTERM)
        #expect(server.wait() == 0)
    }
}

/// A native client's BankID sign-up on an in-process server, played through the embedded
/// simulator's user API: the session token it got, and the result.
private func bankIDSignup(_ server: TestServer, as person: String = "198112289874") async throws -> (
    token: String, result: [String: Any]
) {
    let started = try await request(
        "POST", server.publicURL + "/v1/bankid/orders",
        json: #"{"intent":"signup","device":"other","client":"native","# + TestServer.nativeAppMembers + "}")
    #expect(started.status == 201, "\(started.text)")
    let object = try started.jsonObject()
    let orderID = try #require(object["orderId"] as? String)
    let binding = try #require(object["clientBinding"] as? String)
    let scanned = try await request(
        "POST", server.publicURL + "/sim/v1/scan",
        json: #"{"qrData":"\#(try #require(object["qrData"] as? String))","personalNumber":"\#(person)"}"#)
    #expect(scanned.status == 200, "\(scanned.text)")
    let settled = try await pollUntil({ $0["status"] as? String != "pending" }, clock: server.clock) {
        try await request(
            "GET", server.publicURL + "/v1/bankid/orders/\(orderID)",
            headers: [(BankIDAPI.bindingHeader, binding)])
    }
    guard let body = settled else { throw ProcessFailure(message: "the order stayed pending") }
    let result = try #require(body["result"] as? [String: Any], "\(body)")
    let session = try #require(result["session"] as? [String: Any], "\(body)")
    return (try #require(session["token"] as? String), result)
}

/// `GET /v1/me` with a bearer token.
private func me(_ server: TestServer, _ token: String) async throws -> TestResponse {
    try await request("GET", server.publicURL + "/v1/me", headers: [("Authorization", "Bearer \(token)")])
}

@Suite("BankID and ID switching over HTTP", .serialized)
struct IDSwitchingAPITests {
    @Test(
        "without the acknowledgement no passkey is offered after BankID, and a BankID session cannot add one")
    func noPasskeyAfterBankID() async throws {
        // The simulator told to keep the rule, as a production configuration would.
        let server = try TestServer.inProcess(configuration: [
            "bankid": ["idSwitching": ["acknowledged": false]],
            "methods": ["bankid": ["link": false, "recovery": false]],
        ])
        defer { server.stop() }
        let (token, result) = try await bankIDSignup(server)
        #expect(result["code"] as? String == "bankid.account_created")
        #expect(result["suggestPasskey"] == nil, "no offer: \(result)")
        let methods = try await request("GET", server.publicURL + "/v1/methods").jsonObject()
        #expect((methods["bankid"] as? [String: Bool])?["passkeyAfterBankID"] == false)
        let refused = try await request(
            "POST", server.publicURL + "/v1/passkeys/registration/initialize", json: "{}",
            headers: [("Authorization", "Bearer \(token)")])
        #expect(refused.status == 403)
        #expect(try refused.problemCode() == "passkey.id_switching_refused")
        // A session of another method may still add a passkey.
        let user = try server.makeUser(username: "ada")
        let passkeySession = try server.signIn(user)
        let allowed = try await request(
            "POST", server.publicURL + "/v1/passkeys/registration/initialize", json: "{}",
            headers: [("Authorization", "Bearer \(passkeySession.token)")])
        #expect(allowed.status == 200, "\(allowed.text)")
        // Nor does the support desk's phone check exist (supportPhoneCheck not acknowledged).
        let phone = try await request(
            "POST", server.adminURL + "/admin/v1/users/\(user.id)/bankid/phone-verifications",
            json: #"{"callInitiator":"RP","personalNumber":"198112289874"}"#,
            headers: [("Authorization", "Bearer \(server.adminToken)")])
        #expect(try phone.problemCode() == "route.not_found", "\(phone.text)")
    }

    @Test("the simulator's default offers the passkey after BankID, and the BankID session may add it")
    func simulatorOffersPasskey() async throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let (token, result) = try await bankIDSignup(server)
        #expect(result["suggestPasskey"] as? Bool == true)
        let methods = try await request("GET", server.publicURL + "/v1/methods").jsonObject()
        #expect((methods["bankid"] as? [String: Bool])?["passkeyAfterBankID"] == true)
        let options = try await request(
            "POST", server.publicURL + "/v1/passkeys/registration/initialize", json: "{}",
            headers: [("Authorization", "Bearer \(token)")])
        #expect(options.status == 200, "\(options.text)")
        // The support desk's phone check is there (an account without a linked identity: 409).
        let user = try server.makeUser(username: "ada")
        let phone = try await request(
            "POST", server.adminURL + "/admin/v1/users/\(user.id)/bankid/phone-verifications",
            json: #"{"callInitiator":"RP","personalNumber":"198112289874"}"#,
            headers: [("Authorization", "Bearer \(server.adminToken)")])
        #expect(try phone.problemCode() == "admin.bankid_not_linked", "\(phone.text)")
    }

    @Test("a BankID session ends at its own lifetime and idle timeout; a passkey session at the general ones")
    func bankIDSessionLifetimes() async throws {
        let server = try TestServer.inProcess(configuration: [
            "sessions": ["rotationIntervalSeconds": 1200],
            "bankid": ["sessionLifetimeSeconds": 3600, "sessionIdleTimeoutSeconds": 900],
        ])
        defer { server.stop() }
        let passkeyUser = try server.makeUser(username: "ada")
        let passkey = try server.signIn(passkeyUser)
        #expect(passkey.session.expiresAt == server.clock.now().addingTimeInterval(2_592_000))

        // Idle: 900 s unused ends the BankID session; the passkey one goes on.
        let (idleToken, created) = try await bankIDSignup(server, as: "198112289874")
        let createdSession = try #require(created["session"] as? [String: Any])
        let issuedEnd = try #require(createdSession["expiresAt"] as? String)
        #expect(issuedEnd == UTCTimestamp.string(server.clock.now().addingTimeInterval(3600)))
        server.clock.advance(by: 899)
        #expect(try await me(server, idleToken).status == 200)
        server.clock.advance(by: 900)
        let idle = try await me(server, idleToken)
        #expect(idle.status == 401)
        #expect(try idle.problemCode() == "session.idle_expired")
        // Past the rotation interval: the passkey session continues on its new token.
        let passkeyAnswer = try await me(server, passkey.token)
        #expect(passkeyAnswer.status == 200)
        let passkeyToken = passkeyAnswer.headers["portvakt-session-token"] ?? passkey.token

        // Absolute: kept busy, the BankID session still ends 3600 s after sign-in, through a
        // rotation that keeps its end.
        let (busyToken, _) = try await bankIDSignup(server, as: "198503152483")
        let signedInAt = server.clock.now()
        var token = busyToken
        var rotatedEnd: String?
        for _ in 0..<7 {
            server.clock.advance(by: 500)
            let response = try await me(server, token)
            #expect(response.status == 200, "\(response.text)")
            if let fresh = response.headers["portvakt-session-token"] {
                token = fresh
                rotatedEnd = response.headers["portvakt-session-expires-at"]
            }
        }
        #expect(token != busyToken, "rotated after 1200 s")
        #expect(rotatedEnd == UTCTimestamp.string(signedInAt.addingTimeInterval(3600)), "the end is kept")
        server.clock.advance(by: 100)  // 3600 s after sign-in
        let expired = try await me(server, token)
        #expect(expired.status == 401)
        #expect(try expired.problemCode() == "session.expired")
        #expect(try await me(server, passkeyToken).status == 200, "the passkey session lives on")
    }
}
