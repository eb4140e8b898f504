import AuthOrchestrator
import CryptoCore
import Foundation
import HTTPEngine
import Kernel
import PortvaktAPI
import PortvaktApp
import SessionCore
import Storage
import TestSupport
import Testing

/// The app-store reviewer login through the HTTP pipeline in process: one sandboxed account, never
/// any other.
@Suite("App-store review account")
struct ReviewAccountTests {
    static let code = "review-code-0123456789-abcdef"
    static var enabled: [String: Any] { ["reviewAccount": ["enabled": true, "username": "App.Reviewer"]] }

    private func login(_ server: TestServer, username: String, code: String, client: String = "native")
        async throws -> TestResponse
    {
        try await request(
            "POST", server.publicURL + "/v1/review/login",
            json: #"{"username":"\#(username)","code":"\#(code)","client":"\#(client)"}"#)
    }

    @Test("off by default: the route answers method_disabled and no account exists")
    func offByDefault() async throws {
        let server = try TestServer.inProcess(environment: ["PORTVAKT_REVIEW_CODE": Self.code])
        defer { server.stop() }
        let refused = try await login(server, username: "app.reviewer", code: Self.code)
        #expect(try refused.status == 403 && refused.problemCode() == "method_disabled")
        #expect(try server.server.store.userCount() == 0)
    }

    @Test("the configured username and code open a session on the review account, and only it")
    func signsInToTheSandbox() async throws {
        let server = try TestServer.inProcess(
            configuration: Self.enabled, environment: ["PORTVAKT_REVIEW_CODE": Self.code])
        defer { server.stop() }
        let real = try server.makeUser(username: "ada")
        let account = try #require(try server.server.store.user(username: "app.reviewer"))
        #expect(try server.server.store.isReviewAccount(userID: account.id))
        #expect(account.displayName == "App review")

        // The username is normalised as at sign-up; the session is the review account's.
        let signedIn = try await login(server, username: "APP.REVIEWER", code: Self.code)
        #expect(signedIn.status == 200, "\(signedIn.text)")
        let body = try signedIn.jsonObject()
        #expect((body["user"] as? [String: Any])?["id"] as? String == account.id)
        let token = try #require((body["session"] as? [String: Any])?["token"] as? String)
        let me = try await request(
            "GET", server.publicURL + "/v1/me", headers: [("Authorization", "Bearer \(token)")])
        #expect(me.status == 200)
        #expect((try me.jsonObject()["user"] as? [String: Any])?["id"] as? String == account.id)

        // Web clients get the cookie, not the token.
        let web = try await login(server, username: "app.reviewer", code: Self.code, client: "web")
        #expect(web.status == 200 && web.headers["set-cookie"] != nil)
        #expect((try web.jsonObject()["session"] as? [String: Any])?["token"] == nil)

        // Another account's username with the right code, a wrong code, an empty one: one answer.
        for (username, code) in [("ada", Self.code), ("app.reviewer", Self.code + "x"), ("app.reviewer", "")]
        {
            let refused = try await login(server, username: username, code: code)
            #expect(try refused.status == 401 && refused.problemCode() == "review.login_failed")
            #expect(!refused.text.contains(real.id))
        }
        let sessions = try server.server.store.sessions(userID: real.id, liveAt: server.clock.now())
        #expect(sessions.isEmpty, "the reviewer login never reaches another account")

        // Administrators see which account is the sandbox.
        let admin = [("Authorization", "Bearer \(server.adminToken)")]
        for (id, expected) in [(account.id, true), (real.id, false)] {
            let detail = try await request("GET", server.adminURL + "/admin/v1/users/\(id)", headers: admin)
            #expect(try detail.jsonObject()["reviewAccount"] as? Bool == expected)
        }

        let events = try server.server.store.auditEvents(userID: nil, beforeID: nil, limit: 50)
        #expect(events.filter { $0.action.rawValue == "review.login" }.count == 2)
        #expect(events.filter { $0.action.rawValue == "review.login_failed" }.count == 3)
        #expect(!events.contains { $0.details.values.contains(Self.code) }, "the code is never recorded")
    }

    @Test("a real account that takes the review username later is still refused")
    func renamedRealAccountRefused() async throws {
        let server = try TestServer.inProcess(
            configuration: Self.enabled, environment: ["PORTVAKT_REVIEW_CODE": Self.code])
        defer { server.stop() }
        let store = server.server.store
        var review = try #require(try store.user(username: "app.reviewer"))
        review.username = "old.reviewer"
        try store.updateUser(review)
        var real = try server.makeUser(username: "ada")
        real.username = "app.reviewer"
        try store.updateUser(real)

        let refused = try await login(server, username: "app.reviewer", code: Self.code)
        #expect(try refused.status == 401 && refused.problemCode() == "review.login_failed")
        #expect(try store.sessions(userID: real.id, liveAt: server.clock.now()).isEmpty)
    }

    @Test("the review account cannot link a BankID identity")
    func sandboxRefusesLinking() async throws {
        let server = try TestServer.inProcess(
            configuration: Self.enabled, environment: ["PORTVAKT_REVIEW_CODE": Self.code])
        defer { server.stop() }
        let signedIn = try await login(server, username: "app.reviewer", code: Self.code)
        let token = try #require(
            (try signedIn.jsonObject()["session"] as? [String: Any])?["token"] as? String)
        let link = try await request(
            "POST", server.publicURL + "/v1/bankid/orders",
            json: #"{"intent":"link","device":"other","client":"native",\#(TestServer.nativeAppMembers)}"#,
            headers: [("Authorization", "Bearer \(token)")])
        #expect(try link.status == 403 && link.problemCode() == "review.sandboxed")
        let review = try #require(try server.server.store.user(username: "app.reviewer"))
        #expect(try server.server.store.linkedIdentity(userID: review.id) == nil)
    }

    @Test("the server refuses to start when the review username belongs to a real account")
    func refusesARealAccount() throws {
        let folder = try TemporaryDirectory()
        let first = try PortvaktServer(
            configuration: try Self.configuration(folder, review: false), logger: Logger(minimum: .error),
            clock: FixedClock())
        try first.store.insertUser(
            User(id: "u1", username: "app.reviewer", displayName: "A real person", createdAt: Date()))
        first.shutdown(grace: 0)

        #expect {
            _ = try PortvaktServer(
                configuration: try Self.configuration(folder, review: true), logger: Logger(minimum: .error),
                clock: FixedClock())
        } throws: { error in
            (error as? ConfigurationError)?.issues.first?.path == "reviewAccount.username"
        }
    }

    @Test("configuration: the code only from PORTVAKT_REVIEW_CODE, long enough, required when enabled")
    func configuration() throws {
        func issues(_ json: String, _ environment: [String: String]) -> [String] {
            do {
                _ = try PortvaktConfiguration.parse(json: Array(json.utf8), environment: environment)
                return []
            } catch {
                return error.issues.map(\.description)
            }
        }
        let on = #"{"reviewAccount": {"enabled": true, "username": "reviewer"}}"#
        #expect(issues(on, [:]).contains { $0.hasPrefix("PORTVAKT_REVIEW_CODE:") })
        #expect(issues(on, ["PORTVAKT_REVIEW_CODE": "short"]).contains { $0.contains("at least 20") })
        #expect(issues(on, ["PORTVAKT_REVIEW_CODE": Self.code]).isEmpty)
        let inFile = #"{"reviewAccount": {"enabled": true, "username": "reviewer", "code": "x"}}"#
        #expect(
            issues(inFile, ["PORTVAKT_REVIEW_CODE": Self.code]).contains {
                $0.hasPrefix("reviewAccount.code:")
            })
        #expect(
            issues(#"{"reviewAccount": {"enabled": true}}"#, ["PORTVAKT_REVIEW_CODE": Self.code]).contains {
                $0.hasPrefix("reviewAccount.username:")
            })
        let code = try PortvaktConfiguration.parse(
            json: Array(on.utf8), environment: ["PORTVAKT_REVIEW_CODE": Self.code]
        )
        .reviewAccount.code
        #expect(code?.value == Self.code && !"\(String(describing: code))".contains(Self.code))
    }

    private static func configuration(_ folder: TemporaryDirectory, review: Bool) throws
        -> PortvaktConfiguration
    {
        var object: [String: Any] = [
            "listen": ["public": ["port": 0], "admin": ["port": 0]],
            "logging": ["level": "error", "accessLog": false],
        ]
        if review { object.merge(enabled) { $1 } }
        return try PortvaktConfiguration.parse(
            json: [UInt8](try JSONSerialization.data(withJSONObject: object)),
            environment: ["PORTVAKT_DATA": folder.path, "PORTVAKT_REVIEW_CODE": code])
    }
}
