import AuthOrchestrator
import BankIDCore
import Kernel
import SessionCore
import Testing

/// `BankIDOrderContent` and what `BankIDService.start` makes of it, against the fake BankID (the
/// app tests prove the same over mutual TLS against the simulator).
@Suite("BankID order content: the use case")
struct BankIDOrderContentUseCaseTests {
    @Test("the referring domain is the page's origin only when it is ours or allowed; else the public host")
    func referringDomain() {
        let content = BankIDJourneyFixture.content()
        #expect(content.referringDomain(origin: "https://app.example.com") == "app.example.com")
        #expect(content.referringDomain(origin: "https://login.example.com") == "login.example.com")
        #expect(content.referringDomain(origin: "https://elsewhere.example.net") == "login.example.com")
        #expect(content.referringDomain(origin: nil) == "login.example.com")
        #expect(content.referringDomain(origin: "null") == "login.example.com")
    }

    @Test("device identifiers: a stable keyed hash per value and key, never the value")
    func deviceIdentifier() {
        let content = BankIDJourneyFixture.content()
        let other = BankIDOrderContent(
            serviceName: "Example", publicOrigin: "https://login.example.com",
            deviceKey: Array(repeating: 8, count: 32))
        let value = content.deviceIdentifier("cookie-1")
        #expect(value.count == 64 && value == content.deviceIdentifier("cookie-1"))
        #expect(value != content.deviceIdentifier("cookie-2"))
        #expect(value != other.deviceIdentifier("cookie-1"), "another key, another identifier")
        #expect(!value.contains("cookie"))
    }

    @Test("a web start without a User-Agent sends no web; one with it sends web and a new device cookie")
    func webWithoutUserAgent() async throws {
        let fixture = try BankIDJourneyFixture()
        let context = ClientContext(requestID: "r", ipAddress: "192.0.2.10", userAgent: nil)
        let started = try await fixture.service.start(
            intent: .login, device: .other, userVisibleText: nil, clientKind: .web,
            requester: BankIDRequester(),
            context: context)
        #expect(fixture.bankID.starts.last?.body["web"] == nil)
        #expect(fixture.bankID.starts.last?.body["app"] == nil)
        #expect(started.newDeviceCookie != nil)
        let held = try await fixture.start(.login)
        let web = try #require(fixture.bankID.starts.last?.body["web"] as? [String: String])
        #expect(web["userAgent"] == "journey-tests" && web["referringDomain"] == "login.example.com")
        #expect(
            web["deviceIdentifier"]
                == fixture.service.content.deviceIdentifier(held.started.newDeviceCookie ?? ""))
    }

    @Test("a native start needs a listed app and its device; the text and requirement follow the intent")
    func nativeAndContent() async throws {
        let fixture = try BankIDJourneyFixture(
            content: BankIDJourneyFixture.content(
                requirements: [.recovery: BankIDRequirement(pinCode: true, mrtd: true)],
                texts: [.login: BankIDOrderText(swedish: "Hej", english: "Hi", format: .simpleMarkdownV1)]))
        await #expect(throws: AuthError(.bankIDAppNotAllowed, "")) {
            try await fixture.start(.login, client: .native, details: BankIDStartDetails())
        }
        var app = BankIDJourneyFixture.app
        app.appIdentifier = "com.unlisted.app"
        await #expect(throws: AuthError(.bankIDAppNotAllowed, "")) {
            try await fixture.start(.login, client: .native, details: BankIDStartDetails(app: app))
        }
        app = BankIDJourneyFixture.app
        app.deviceModelName = String(repeating: "x", count: 257)
        await #expect(throws: AuthError(.bankIDInvalidRequest, "")) {
            try await fixture.start(.login, client: .native, details: BankIDStartDetails(app: app))
        }
        #expect(fixture.bankID.starts.isEmpty, "nothing refused reached BankID")

        _ = try await fixture.start(
            .login, client: .native,
            details: BankIDStartDetails(language: .english, app: BankIDJourneyFixture.app))
        var body = try #require(fixture.bankID.starts.last?.body)
        #expect(body["web"] == nil)
        #expect((body["app"] as? [String: String])?["appIdentifier"] == BankIDJourneyFixture.appIdentifier)
        #expect(body["userVisibleData"] as? String == BankIDValidation.base64("Hi"))
        #expect(body["userVisibleDataFormat"] as? String == "simpleMarkdownV1")
        #expect(body["requirement"] == nil)
        _ = try await fixture.start(.recovery)
        body = try #require(fixture.bankID.starts.last?.body)
        let requirement = try #require(body["requirement"] as? [String: Any])
        #expect(requirement["mrtd"] as? Bool == true && requirement["pinCode"] as? Bool == true)
        #expect(
            body["userVisibleData"] as? String
                == BankIDValidation.base64(
                    BankIDOrderContent.defaultTexts(serviceName: "Example")[.recovery]!.swedish))
    }
}
