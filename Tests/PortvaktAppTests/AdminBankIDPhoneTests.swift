import AuthOrchestrator
import BankIDCore
import BankIDSimulator
import CryptoCore
import Foundation
import Kernel
import Storage
import TestSupport
import Testing

@testable import PortvaktApp

/// The Tax Agency's test numbers the embedded simulator knows: the account's owner and another.
private let owner = "198112289874"
private let stranger = "199001012385"

/// A support agent's phone check over the admin API, against the embedded BankID simulator over
/// mutual TLS; the caller plays their BankID app through the simulator's user API.
private struct PhoneDesk {
    let server: TestServer
    var token: String

    init(_ server: TestServer, token: String? = nil) {
        self.server = server
        self.token = token ?? server.adminToken
    }

    var auth: [(String, String)] { [("Authorization", "Bearer \(token)")] }

    /// An account whose linked BankID identity is `number` (linked as a BankID link would).
    func account(linkedTo number: String?, username: String = "tolvan") throws -> User {
        let user = try server.makeUser(username: username)
        guard let number else { return user }
        let hasher = try #require(server.server.bankID?.hasher)
        let store = server.server.store
        let flowID = Digest.sha256("seed-" + user.id)
        try store.insertBankIDFlow(
            BankIDFlow(
                idHash: flowID, orderRef: "seed-" + user.id, intent: .link, sameDevice: false,
                bindingHash: flowID, userID: user.id, createdAt: server.clock.now()))
        _ = try store.commitBankIDCompletion(
            BankIDCompletionRecord(
                flowIDHash: flowID, outcome: "bankid.linked", at: server.clock.now(),
                link: LinkedIdentity(
                    userID: user.id, digest: hasher.digest(try PersonalNumber(number)),
                    name: "Tolvan Tolvansson", linkedAt: server.clock.now())))
        return user
    }

    func start(_ userID: String, stated number: String, initiator: String = "RP") async throws -> TestResponse
    {
        try await request(
            "POST", server.adminURL + "/admin/v1/users/\(userID)/bankid/phone-verifications",
            json: #"{"callInitiator":"\#(initiator)","personalNumber":"\#(number)"}"#, headers: auth)
    }

    func startSign(_ userID: String, stated number: String, text: String) async throws -> TestResponse {
        try await request(
            "POST", server.adminURL + "/admin/v1/users/\(userID)/bankid/phone-signatures",
            json: #"{"callInitiator":"user","personalNumber":"\#(number)","userVisibleData":"\#(text)"}"#,
            headers: auth)
    }

    func status(_ id: String) async throws -> TestResponse {
        try await request(
            "GET", server.adminURL + "/admin/v1/bankid/phone-verifications/\(id)", headers: auth)
    }

    func cancel(_ id: String) async throws -> TestResponse {
        try await request(
            "DELETE", server.adminURL + "/admin/v1/bankid/phone-verifications/\(id)", headers: auth)
    }

    /// The caller answers in their BankID app: the one phone order at the simulator.
    func answer(_ action: String, as number: String? = nil, order: String? = nil) async throws {
        let simulator = try #require(server.server.bankID?.simulator)
        let orderRef = try #require(order ?? simulator.orderRefs.first)
        var body = #"{"orderRef":"\#(orderRef)","action":"\#(action)""#
        if let number { body += #","personalNumber":"\#(number)""# }
        let answered = try await request("POST", server.publicURL + "/sim/v1/phone", json: body + "}")
        #expect(answered.status == 200, "\(answered.text)")
    }

    /// The caller tries to approve `order` in their app and is refused: it is no longer pending.
    func answerRefused(_ order: String) async throws {
        let answered = try await request(
            "POST", server.publicURL + "/sim/v1/phone", json: #"{"orderRef":"\#(order)"}"#)
        #expect(answered.status == 409, "\(answered.text)")
    }

    /// Polls until the verification leaves pending (the first poll after the interval starts the
    /// shared collect in the background; a later one sees its answer).
    func final(_ id: String) async throws -> [String: Any] {
        let settled = try await pollUntil({ $0["status"] as? String != "pending" }, clock: server.clock) {
            let response = try await status(id)
            #expect(response.status == 200, "\(response.text)")
            return response
        }
        guard let settled else {
            Issue.record("the verification stayed pending")
            return [:]
        }
        return settled
    }

    /// The account's audit events, newest first, as (type, actor, details).
    func events(_ userID: String) async throws -> [(String, String, [String: String])] {
        let response = try await request(
            "GET", server.adminURL + "/admin/v1/audit?user=\(userID)",
            headers: [
                ("Authorization", "Bearer \(server.adminToken)")
            ])
        let events = try #require(try response.jsonObject()["events"] as? [[String: Any]])
        return events.map {
            (
                $0["type"] as? String ?? "", $0["actor"] as? String ?? "",
                $0["details"] as? [String: String] ?? [:]
            )
        }
    }
}

@Suite("BankID phone verification by the support desk", .serialized)
struct AdminBankIDPhoneTests {
    @Test(
        "the account's own person completes phone/auth: verified, audited with the agent's token name, nothing about who",
        arguments: TestEngine.tested)
    func rightPerson(engine: TestEngine) async throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let desk = PhoneDesk(server)
        let user = try desk.account(linkedTo: owner)

        let started = try await desk.start(user.id, stated: owner)
        #expect(started.status == 201, "\(started.text)")
        let object = try started.jsonObject()
        let id = try #require(object["id"] as? String)
        #expect(id.hasPrefix("bpv_") && object["status"] as? String == "pending")
        #expect(object["verified"] as? Bool == false && object["kind"] as? String == "auth")
        #expect(
            object["callInitiator"] as? String == "RP" && object["startedBy"] as? String == "admin:bootstrap")
        #expect(!started.text.contains(owner))

        // The caller opens the call in the app: pending, userCallConfirm.
        try await desk.answer("start")
        server.clock.advance(by: 2)
        var hint: String?
        for _ in 0..<400 where hint != "userCallConfirm" {
            hint = try await desk.status(id).jsonObject()["hintCode"] as? String
            if hint != "userCallConfirm" { try await Task.sleep(for: .milliseconds(25)) }
        }
        #expect(hint == "userCallConfirm")

        try await desk.answer("approve")
        let done = try await desk.final(id)
        #expect(done["status"] as? String == "complete" && done["verified"] as? Bool == true, "\(done)")
        #expect(done["finishedAt"] is String && done["reason"] == nil)
        // Polled again (or after BankID forgot the order), the recorded answer stands.
        server.clock.advance(by: 600)
        let again = try await desk.status(id)
        #expect(try again.jsonObject()["verified"] as? Bool == true)
        for text in [again.text] {
            #expect(!text.contains(owner) && !text.contains("Tolvan") && !text.contains("signature\":\""))
        }

        let events = try await desk.events(user.id)
        let types = events.map(\.0)
        #expect(types.prefix(2) == ["admin.bankid.phone_verified", "admin.bankid.phone_started"], "\(types)")
        #expect(events.prefix(2).allSatisfy { $0.1 == "admin:bootstrap" })
        #expect(events.prefix(2).allSatisfy { $0.2["verificationId"] == id && $0.2["adminTokenId"] != nil })
        #expect(events[1].2["callInitiator"] == "RP")
        // Recorded once, however often polled.
        #expect(types.filter { $0 == "admin.bankid.phone_verified" }.count == 1)
        let trail = try await request(
            "GET", server.adminURL + "/admin/v1/audit?user=\(user.id)", headers: desk.auth)
        #expect(!trail.text.contains(owner) && !trail.text.contains("Tolvan"))
    }

    @Test(
        "another person completes (the caller stated a number that is not the account's): not verified, and never who",
        arguments: TestEngine.tested)
    func anotherPerson(engine: TestEngine) async throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let desk = PhoneDesk(server)
        let user = try desk.account(linkedTo: owner)

        let started = try await desk.start(user.id, stated: stranger, initiator: "user")
        #expect(started.status == 201, "\(started.text)")
        let id = try #require(try started.jsonObject()["id"] as? String)
        try await desk.answer("approve", as: stranger)
        let done = try await desk.final(id)
        #expect(done["status"] as? String == "complete" && done["verified"] as? Bool == false, "\(done)")
        let shown = try await desk.status(id).text
        #expect(!shown.contains(stranger) && !shown.contains("Anna") && !shown.contains("Testsson"))
        let events = try await desk.events(user.id)
        #expect(events.first?.0 == "admin.bankid.phone_not_verified" && events.first?.1 == "admin:bootstrap")
        let trail = try await request(
            "GET", server.adminURL + "/admin/v1/audit?user=\(user.id)", headers: desk.auth)
        #expect(!trail.text.contains(stranger) && !trail.text.contains("Anna"))
    }

    @Test("a declined call fails with reason declined_call; audited", arguments: TestEngine.tested)
    func declinedCall(engine: TestEngine) async throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let desk = PhoneDesk(server)
        let user = try desk.account(linkedTo: owner)
        let id = try #require(try await desk.start(user.id, stated: owner).jsonObject()["id"] as? String)
        try await desk.answer("decline")
        let done = try await desk.final(id)
        #expect(done["status"] as? String == "failed" && done["verified"] as? Bool == false, "\(done)")
        #expect(
            done["reason"] as? String == "declined_call" && done["hintCode"] as? String == "userDeclinedCall")
        #expect((done["message"] as? [String: Any])?["code"] as? String == "RFA22")
        let events = try await desk.events(user.id)
        #expect(events.first?.0 == "admin.bankid.phone_failed" && events.first?.1 == "admin:bootstrap")
        #expect(events.first?.2["reason"] == "declined_call")
    }

    @Test("nobody answers before BankID gives up: failed with reason timed_out", arguments: TestEngine.tested)
    func timeout(engine: TestEngine) async throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let desk = PhoneDesk(server)
        let user = try desk.account(linkedTo: owner)
        let id = try #require(try await desk.start(user.id, stated: owner).jsonObject()["id"] as? String)
        server.clock.advance(by: 181)
        let done = try await desk.final(id)
        #expect(done["status"] as? String == "failed" && done["reason"] as? String == "timed_out", "\(done)")
        #expect(done["hintCode"] as? String == "expiredTransaction")
        #expect(try await desk.events(user.id).first?.2["reason"] == "timed_out")
    }

    @Test("the agent cancels: BankID is told, the verification is cancelled, audited by the canceller")
    func cancel() async throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let desk = PhoneDesk(server)
        let user = try desk.account(linkedTo: owner)
        let id = try #require(try await desk.start(user.id, stated: owner).jsonObject()["id"] as? String)
        let cancelled = try await desk.cancel(id)
        #expect(cancelled.status == 200, "\(cancelled.text)")
        let object = try cancelled.jsonObject()
        #expect(object["status"] as? String == "cancelled" && object["reason"] as? String == "cancelled")
        #expect(object["verified"] as? Bool == false)
        // The person's app no longer has it, and a late answer changes nothing.
        let late = try await request(
            "POST", server.publicURL + "/sim/v1/phone",
            json: #"{"orderRef":"\#(try #require(server.server.bankID?.simulator?.orderRefs.first))"}"#)
        #expect(late.status == 409, "\(late.text)")
        #expect(try await desk.final(id)["status"] as? String == "cancelled")
        let events = try await desk.events(user.id)
        #expect(events.first?.0 == "admin.bankid.phone_cancelled" && events.first?.1 == "admin:bootstrap")
        #expect(events.filter { $0.0 == "admin.bankid.phone_cancelled" }.count == 1)
    }

    @Test(
        "phone/sign: the caller confirms the text; verified, the signature's existence shown, only its SHA-256 audited"
    )
    func phoneSign() async throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let desk = PhoneDesk(server)
        let user = try desk.account(linkedTo: owner)
        let started = try await desk.startSign(user.id, stated: owner, text: "Revoke the lost passkey")
        #expect(started.status == 201, "\(started.text)")
        let id = try #require(try started.jsonObject()["id"] as? String)
        #expect(try started.jsonObject()["kind"] as? String == "sign")
        try await desk.answer("approve")
        let done = try await desk.final(id)
        #expect(done["verified"] as? Bool == true && done["signatureReceived"] as? Bool == true, "\(done)")
        let events = try await desk.events(user.id)
        let verified = try #require(events.first { $0.0 == "admin.bankid.phone_verified" })
        #expect(verified.2["signatureSha256"]?.count == 64)
        #expect(events.first { $0.0 == "admin.bankid.phone_started" }?.2["textSha256"]?.count == 64)
        // Without a text there is nothing to sign.
        let empty = try await desk.startSign(user.id, stated: owner, text: " ")
        #expect(empty.status == 400)
        #expect(try empty.problemCode() == "bankid.invalid_request")
    }

    @Test(
        "refusals: no linked identity, a bad number (never echoed), unknown user or verification, a read token"
    )
    func refusals() async throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let desk = PhoneDesk(server)
        let user = try desk.account(linkedTo: owner)
        let unlinked = try desk.account(linkedTo: nil, username: "nobank")

        let notLinked = try await desk.start(unlinked.id, stated: owner)
        #expect(notLinked.status == 409)
        #expect(try notLinked.problemCode() == "admin.bankid_not_linked")
        let badNumber = try await desk.start(user.id, stated: "198112289875")
        #expect(badNumber.status == 400)
        #expect(try badNumber.problemCode() == "admin.invalid_parameter")
        #expect(!badNumber.text.contains("198112289875"))
        let badInitiator = try await desk.start(user.id, stated: owner, initiator: "rp")
        #expect(badInitiator.status == 400, "\(badInitiator.text)")
        let noUser = try await desk.start("nobody", stated: owner)
        #expect(noUser.status == 404)
        #expect(try noUser.problemCode() == "admin.user_not_found")
        let unknown = try await desk.status("bpv_unknown")
        #expect(unknown.status == 404)
        #expect(try unknown.problemCode() == "admin.verification_not_found")
        // No BankID order was started by any of these.
        #expect(server.server.bankID?.simulator?.orderRefs.isEmpty == true)

        // A read token may look, never start or cancel.
        let readToken = try server.server.adminTokens.create(
            name: "support-ro", scope: .read, lifetime: nil, actor: .cli
        ).token
        let reader = PhoneDesk(server, token: readToken)
        let refused = try await reader.start(user.id, stated: owner)
        #expect(refused.status == 403)
        #expect(try refused.problemCode() == "admin.forbidden")
        #expect(server.server.bankID?.simulator?.orderRefs.isEmpty == true)
        let id = try #require(try await desk.start(user.id, stated: owner).jsonObject()["id"] as? String)
        #expect(try await reader.status(id).status == 200)
        #expect(try await reader.cancel(id).status == 403)
        // Nothing of this on the public listener.
        for (method, path) in [
            ("POST", "/admin/v1/users/\(user.id)/bankid/phone-verifications"),
            ("POST", "/admin/v1/users/\(user.id)/bankid/phone-signatures"),
            ("GET", "/admin/v1/bankid/phone-verifications/\(id)"),
            ("DELETE", "/admin/v1/bankid/phone-verifications/\(id)"),
        ] {
            let response = try await request(
                method, server.publicURL + path,
                json: method == "POST" ? #"{"callInitiator":"RP","personalNumber":"\#(owner)"}"# : nil,
                headers: desk.auth)
            #expect(response.status == 404, "\(method) \(path)")
        }
    }
}

/// `portvakt admin bankid verify-phone|sign-phone` against a live server and its simulator: the
/// binary is another process, so the server listens on sockets.
@Suite("portvakt admin bankid", .serialized)
struct AdminBankIDPhoneCLITests {
    /// Runs the command with `stdin`; while it waits, the caller does `action` in their app (as
    /// `person`, or the callee), and the server's clock moves so its collects are due.
    private func run(
        _ server: TestServer, _ arguments: [String], stdin: String, action: String?, as person: String? = nil,
        environment extra: [String: String] = [:]
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        var environment = ["PORTVAKT_ADMIN_URL": server.adminURL, "PORTVAKT_ADMIN_TOKEN": server.adminToken]
        environment.merge(extra) { $1 }
        let simulator = try #require(server.server.bankID?.simulator)
        let earlier = Set(simulator.orderRefs)
        let process = try PortvaktProcess(
            ["admin", "bankid"] + arguments, environment: environment, stdin: stdin)
        // The phone order the command started (earlier ones are still kept by the simulator).
        var order: String?
        for _ in 0..<300 where order == nil && process.isRunning {
            order = simulator.orderRefs.first { !earlier.contains($0) }
            if order == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(order != nil, "\(process.stderr)")
        if let action {
            try await PhoneDesk(server).answer(action, as: person, order: order)
        } else {
            server.clock.advance(by: 181)  // nobody answers: past BankID's lifetime of the order
        }
        for _ in 0..<120 where process.isRunning {
            server.clock.advance(by: 2)
            try await Task.sleep(for: .milliseconds(250))
        }
        let status = try await offPool { process.wait(timeout: 30) }
        return (status, process.stdout, process.stderr)
    }

    @Test(
        "verify-phone: exit 0 for the account's own person, 1 for another person and for a declined call; audited with the token's name"
    )
    func verifyPhone() async throws {
        let server = try TestServer(.live)
        defer { server.stop() }
        let user = try PhoneDesk(server).account(linkedTo: owner)

        let verified = try await run(
            server, ["verify-phone", user.id, "--call-initiator", "user"], stdin: owner + "\n",
            action: "approve")
        #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
        #expect(verified.stdout.contains("verified: the person who completed"), "\(verified.stdout)")
        #expect(verified.stdout.contains("call initiator user"))
        #expect(!verified.stdout.contains(owner) && !verified.stderr.contains(owner))
        #expect(!verified.stdout.contains("Tolvan"))

        let other = try await run(
            server, ["verify-phone", user.id], stdin: stranger + "\n", action: "approve", as: stranger)
        #expect(other.status == 1, "\(other.stdout)\(other.stderr)")
        #expect(other.stdout.contains("NOT verified") && !other.stdout.contains("Anna"), "\(other.stdout)")

        let declined = try await run(
            server, ["verify-phone", user.id], stdin: owner + "\n", action: "decline")
        #expect(declined.status == 1)
        #expect(
            declined.stdout.contains("NOT verified") && declined.stdout.contains("declined_call"),
            "\(declined.stdout)")

        let events = try await PhoneDesk(server).events(user.id).map(\.0)
        #expect(events.filter { $0 == "admin.bankid.phone_started" }.count == 3)
        #expect(
            events.contains("admin.bankid.phone_verified")
                && events.contains("admin.bankid.phone_not_verified"))
        #expect(events.contains("admin.bankid.phone_failed"))
    }

    @Test("Ctrl-C while waiting cancels the verification at BankID before the command exits (1)")
    func interrupted() async throws {
        let server = try TestServer(.live)
        defer { server.stop() }
        let user = try PhoneDesk(server).account(linkedTo: owner)
        let simulator = try #require(server.server.bankID?.simulator)
        let environment = ["PORTVAKT_ADMIN_URL": server.adminURL, "PORTVAKT_ADMIN_TOKEN": server.adminToken]
        let process = try PortvaktProcess(
            ["admin", "bankid", "verify-phone", user.id], environment: environment, stdin: owner + "\n")
        #expect(try await offPool { process.waitForStdout(containing: "waiting for BankID", timeout: 30) })
        let order = try #require(simulator.orderRefs.first)
        // Waiting: BankID's first message is shown, then the agent presses Ctrl-C.
        #expect(
            try await offPool { process.waitForStdout(containing: "RFA1", timeout: 30) }, "\(process.stdout)")
        process.send(SIGINT)
        let status = try await offPool { process.wait(timeout: 30) }
        #expect(status == 1, "\(process.stdout)\(process.stderr)")
        #expect(process.stdout.contains("was cancelled"), "\(process.stdout)")
        // The person's app no longer has it.
        try await PhoneDesk(server).answerRefused(order)
        #expect(try await PhoneDesk(server).events(user.id).first?.0 == "admin.bankid.phone_cancelled")
    }

    @Test(
        "verify-phone --json and a timeout; sign-phone; usage and refusals exit 1 or 2 without echoing a number"
    )
    func signAndUsage() async throws {
        let server = try TestServer(.live)
        defer { server.stop() }
        let user = try PhoneDesk(server).account(linkedTo: owner)

        let signed = try await run(
            server, ["sign-phone", user.id, "--text", "Revoke the lost passkey"], stdin: owner + "\n",
            action: "approve")
        #expect(signed.status == 0, "\(signed.stdout)\(signed.stderr)")
        #expect(signed.stdout.contains("(signature received)"))

        // Nobody answers: BankID gives the order up (the clock moves past its lifetime).
        let timedOut = try await run(
            server, ["verify-phone", user.id, "--json"], stdin: owner + "\n", action: nil)
        #expect(timedOut.status == 1, "\(timedOut.stdout)\(timedOut.stderr)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(timedOut.stdout.utf8)) as? [String: Any])
        #expect(
            object["reason"] as? String == "timed_out" && object["verified"] as? Bool == false, "\(object)")

        let environment = ["PORTVAKT_ADMIN_URL": server.adminURL, "PORTVAKT_ADMIN_TOKEN": server.adminToken]
        let badNumber = try PortvaktProcess.run(
            ["admin", "bankid", "verify-phone", user.id], environment: environment, stdin: "19811228987\n")
        #expect(badNumber.status == 2 && !badNumber.stderr.contains("19811228987"), "\(badNumber.stderr)")
        let badCheck = try PortvaktProcess.run(
            ["admin", "bankid", "verify-phone", user.id], environment: environment, stdin: "198112289875\n")
        #expect(
            badCheck.status == 1 && badCheck.stderr.contains("admin.invalid_parameter"), "\(badCheck.stderr)")
        #expect(!badCheck.stderr.contains("198112289875"))
        let badInitiator = try PortvaktProcess.run(
            ["admin", "bankid", "verify-phone", user.id, "--call-initiator", "rp"], environment: environment,
            stdin: owner + "\n")
        #expect(badInitiator.status == 2 && badInitiator.stderr.contains("'--call-initiator'"))
        let noText = try PortvaktProcess.run(
            ["admin", "bankid", "sign-phone", user.id], environment: environment, stdin: owner + "\n")
        #expect(noText.status == 2 && noText.stderr.contains("'--text'"))
        let unlinked = try server.makeUser(username: "nobank")
        let notLinked = try PortvaktProcess.run(
            ["admin", "bankid", "verify-phone", unlinked.id], environment: environment, stdin: owner + "\n")
        #expect(notLinked.status == 1 && notLinked.stderr.contains("admin.bankid_not_linked"))
        // A read token cannot start one.
        let readToken = try server.server.adminTokens.create(
            name: "support-ro", scope: .read, lifetime: nil, actor: .cli
        ).token
        let readOnly = try PortvaktProcess.run(
            ["admin", "bankid", "verify-phone", user.id],
            environment: environment.merging(["PORTVAKT_ADMIN_TOKEN": readToken]) { $1 }, stdin: owner + "\n")
        #expect(readOnly.status == 1 && readOnly.stderr.contains("admin.forbidden"), "\(readOnly.stderr)")
    }
}
