import AuthOrchestrator
import CryptoCore
import Dispatch
import Foundation
import HTTPEngine
import Kernel
import PasskeyCore
import PortvaktAPI
import PortvaktApp
import Storage
import Synchronization
import TestSupport
import Testing

/// A registration ceremony started with an enrollment token, as the sign-in page runs it.
struct Enrollment {
    let server: TestServer
    let authenticator = SoftwareAuthenticator()
    let origin = "http://localhost:8080"

    /// initialize with the token (and `headers`, such as a BankID binding): the response, and on
    /// success the challenge id, challenge and handle.
    func start(_ token: String, headers: [(String, String)] = [])
        throws -> (response: TestResponse, id: String?, challenge: [UInt8], handle: [UInt8])
    {
        let response = try server.makeClient().sendJSON(
            url: server.publicURL + "/v1/passkeys/registration/initialize",
            json: #"{"enrollmentToken":"\#(token)"}"#, headers: headers)
        guard response.status == 200 else { return (response, nil, [], []) }
        let object = try response.jsonObject()
        let options = try #require(object["publicKey"] as? [String: Any])
        let handleText = try #require((options["user"] as? [String: Any])?["id"] as? String)
        let challengeText = try #require(options["challenge"] as? String)
        return (
            response, object["challengeId"] as? String, try #require(Base64URL.decode(challengeText)),
            try #require(Base64URL.decode(handleText))
        )
    }

    /// finalize with a fresh credential of this authenticator.
    func finish(
        id: String, challenge: [UInt8], handle: [UInt8]
    ) throws -> (response: TestResponse, credential: SoftwareCredential) {
        let credential = authenticator.makeCredential(
            algorithm: .es256, rpID: "localhost", userHandle: handle)
        let registration = String(
            decoding: authenticator.register(credential, challenge: challenge, origin: origin).json(),
            as: UTF8.self)
        let response = try server.makeClient().sendJSON(
            url: server.publicURL + "/v1/passkeys/registration/finalize",
            json: #"{"challengeId":"\#(id)","credential":\#(registration),"client":"native"}"#)
        return (response, credential)
    }
}

@Suite("Enrollment links", .serialized)
struct EnrollmentLinkTests {
    /// A new user and an enrollment link for them; returns the user id and the link's JSON.
    private func link(_ server: TestServer, json: String = "{}") throws -> (
        userID: String, link: [String: Any]
    ) {
        let admin = AdminClient(server)
        let user = try admin.object("POST", "/admin/v1/users", json: #"{"username":"newbie"}"#, status: 201)
        let userID = try #require(user["id"] as? String)
        let link = try admin.object(
            "POST", "/admin/v1/users/\(userID)/enrollment-links", json: json, status: 201)
        return (userID, link)
    }

    @Test(
        "an admin's enrollment link enrolls a passkey for that user, opens a session, and works once",
        arguments: TestEngine.tested)
    func enrollOnce(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let (userID, link) = try link(server)
        let token = try #require(link["token"] as? String)
        #expect(token.hasPrefix("pve_") && Base64URL.decode(token.dropFirst(4))?.count == 32)
        #expect(link["url"] as? String == "http://localhost:8080/#enroll=\(token)")
        #expect(link["expiresAt"] as? String == UTCTimestamp.string(server.clock.now() + 86_400))

        let enrollment = Enrollment(server: server)
        let started = try enrollment.start(token)
        #expect(started.response.status == 200, "\(started.response.text)")
        let user = try #require(try server.server.store.user(id: userID))
        #expect(started.handle == user.userHandle)
        let finished = try enrollment.finish(
            id: try #require(started.id), challenge: started.challenge, handle: started.handle)
        #expect(finished.response.status == 201, "\(finished.response.text)")
        let body = try finished.response.jsonObject()
        #expect((body["user"] as? [String: Any])?["id"] as? String == userID)
        let sessionToken = try #require((body["session"] as? [String: Any])?["token"] as? String)
        let me = try InProcessHTTPClient().send(
            .GET, server.publicURL + "/v1/me", headers: ["Authorization": "Bearer \(sessionToken)"])
        #expect(me.status == 200)
        #expect(
            try server.server.store.passkeys(userID: userID).map(\.credentialID) == [finished.credential.id])
        let login = try PasskeyUser(server: server).loginWith(enrollment.authenticator, finished.credential)
        #expect(login.status == 200, "the enrolled passkey signs in")

        try expectProblem(try enrollment.start(token).response, 400, "enrollment.invalid")
        try expectProblem(
            try enrollment.start("pve_" + String(repeating: "A", count: 43)).response, 400,
            "enrollment.invalid")

        let events = try server.server.store.auditEvents(userID: userID, beforeID: nil, limit: 10)
        #expect(events.map(\.action.rawValue).contains("enrollment.issued"))
        #expect(
            events.first { $0.action.rawValue == "enrollment.issued" }?.actor.rawValue == "admin:bootstrap")
        #expect(events.map(\.action.rawValue).contains("passkey.enrolled"))
        #expect(!"\(events)".contains(token))
    }

    @Test("the sign-in page offers enrollment for #enroll= links and sends the token as enrollmentToken")
    func signInPage() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let http = InProcessHTTPClient()
        let page = try http.send(.GET, server.publicURL + "/").text
        #expect(page.contains(#"<form id="enroll-form""#))
        let script = try #require(page.firstMatch(of: /src="(\/assets\/app\.[^"]+\.js)"/)).1
        let source = try http.send(.GET, server.publicURL + String(script)).text
        #expect(source.contains("get('enroll')") && source.contains("{ enrollmentToken: enrollToken }"))
        #expect(source.contains("history.replaceState"))
    }

    @Test(
        "two concurrent uses of one enrollment token create exactly one passkey", arguments: TestEngine.tested
    )
    func concurrentUse(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let (userID, link) = try link(server)
        let token = try #require(link["token"] as? String)
        let enrollment = Enrollment(server: server)
        let first = try enrollment.start(token)
        let second = try enrollment.start(token)
        let ids = [try #require(first.id), try #require(second.id)]
        let statuses = Mutex<[Int]>([])
        let codes = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { index in
            let started = index == 0 ? first : second
            if let result = try? enrollment.finish(
                id: ids[index], challenge: started.challenge, handle: started.handle)
            {
                statuses.withLock { $0.append(result.response.status) }
                if let code = try? result.response.problemCode() { codes.withLock { $0.append(code) } }
            }
        }
        #expect(statuses.withLock { $0.sorted() } == [201, 400])
        #expect(codes.withLock { $0 } == ["enrollment.invalid"])
        #expect(try server.server.store.passkeys(userID: userID).count == 1)
    }

    @Test(
        "a link expires after 24 hours by default, or after the lifetime asked for; out-of-bounds lifetimes are refused",
        arguments: TestEngine.tested
    )
    func expiry(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let admin = AdminClient(server)
        let (userID, link) = try link(server)
        server.clock.advance(by: 86_400)
        try expectProblem(
            try Enrollment(server: server).start(try #require(link["token"] as? String)).response, 400,
            "enrollment.invalid")

        let short = try admin.object(
            "POST", "/admin/v1/users/\(userID)/enrollment-links", json: #"{"expiresInSeconds":600}"#,
            status: 201)
        #expect(short["expiresAt"] as? String == UTCTimestamp.string(server.clock.now() + 600))
        // Started in time, finished after the token expired: refused, no passkey.
        server.clock.advance(by: 590)
        let enrollment = Enrollment(server: server)
        let started = try enrollment.start(try #require(short["token"] as? String))
        #expect(started.response.status == 200)
        server.clock.advance(by: 20)
        let late = try enrollment.finish(
            id: try #require(started.id), challenge: started.challenge, handle: started.handle)
        try expectProblem(late.response, 400, "enrollment.invalid")
        #expect(try server.server.store.passkeys(userID: userID).isEmpty)

        for seconds in [60, 8 * 86_400] {
            let refused = try admin.send(
                "POST", "/admin/v1/users/\(userID)/enrollment-links",
                json: #"{"expiresInSeconds":\#(seconds)}"#)
            try expectProblem(refused, 400, "enrollment.invalid_lifetime")
        }
        try expectProblem(
            try admin.send("POST", "/admin/v1/users/nobody/enrollment-links", json: "{}"), 404,
            "admin.user_not_found")
        _ = try admin.object("PATCH", "/admin/v1/users/\(userID)", json: #"{"disabled":true}"#)
        try expectProblem(
            try admin.send("POST", "/admin/v1/users/\(userID)/enrollment-links"), 403, "account.disabled")
    }
}

/// The admin API's time format, for comparing expiries.
private enum Timestamp {
    static func string(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }
}
