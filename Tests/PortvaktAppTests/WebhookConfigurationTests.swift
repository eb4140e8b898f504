import CryptoCore
import Foundation
import Kernel
import Testing

@testable import PortvaktApp

/// The `webhooks` section: endpoints with their URL, events and secret variable, checked
/// strictly; the secret comes only from the environment and is never shown.
@Suite("Configuration: webhooks")
struct WebhookConfigurationTests {
    static let secret = "whsec_" + Data(repeating: 9, count: 32).base64EncodedString()
    static let environment = ["PORTVAKT_WEBHOOK_APP": secret]

    static func document(_ endpoint: String, extra: String = "") -> String {
        #"{"webhooks": {"endpoints": [\#(endpoint)]\#(extra)}}"#
    }

    static let good =
        #"{"name": "app", "url": "https://api.example.se/hooks", "events": ["user.deleted", "session.revoked"], "secretVariable": "PORTVAKT_WEBHOOK_APP"}"#

    func parse(_ json: String, environment: [String: String] = Self.environment) throws
        -> PortvaktConfiguration
    {
        try PortvaktConfiguration.parse(json: Array(json.utf8), environment: environment)
    }

    func issues(_ json: String, environment: [String: String] = Self.environment) -> [String] {
        do {
            _ = try PortvaktConfiguration.parse(json: Array(json.utf8), environment: environment)
            Issue.record("expected \(json) to be refused")
            return []
        } catch {
            return error.issues.map(\.description)
        }
    }

    @Test("defaults: no endpoints, 10 s, 2 threads, 2 in flight, 7 days, 2 s doubling to 3600 s, 24 h")
    func defaults() throws {
        let settings = try parse("{}").webhooks
        #expect(settings == .init())
        #expect(settings.endpoints.isEmpty && settings.timeoutSeconds == 10 && settings.threads == 2)
        #expect(settings.maxInFlightPerEndpoint == 2 && settings.retentionDays == 7)
        #expect(
            settings.retry == .init(initialDelaySeconds: 2, maxDelaySeconds: 3600, giveUpAfterSeconds: 86_400)
        )
    }

    @Test("an endpoint reads its secret from its variable, and config show names only the variable")
    func endpoint() throws {
        let configuration = try parse(
            Self.document(Self.good, extra: #", "timeoutSeconds": 5, "retry": {"initialDelaySeconds": 1}"#))
        let endpoint = try #require(configuration.webhooks.endpoints.first)
        #expect(endpoint.name == "app" && endpoint.url == "https://api.example.se/hooks")
        #expect(endpoint.events == [.userDeleted, .sessionRevoked])
        #expect(endpoint.secret.value == Self.secret)
        #expect(
            configuration.webhooks.timeoutSeconds == 5
                && configuration.webhooks.retry.initialDelaySeconds == 1)
        let shown = configuration.effectiveJSON()
        #expect(shown.contains("\"secretVariable\": \"PORTVAKT_WEBHOOK_APP\""))
        #expect(!shown.contains(String(Self.secret.dropFirst(6).prefix(20))))
        #expect(try parse(shown) == configuration, "the shown form reads back equal")
        let all = try parse(
            Self.document(
                Self.good.replacingOccurrences(of: #"["user.deleted", "session.revoked"]"#, with: #"["*"]"#)))
        #expect(all.webhooks.endpoints.first?.events == nil)
        #expect(try parse(all.effectiveJSON()) == all)
    }

    @Test(
        "http only to loopback; an unknown event, a bad or missing secret and a secret in the file are refused"
    )
    func refusals() {
        func endpoint(_ replacing: String, with: String) -> String {
            Self.document(Self.good.replacingOccurrences(of: replacing, with: with))
        }
        #expect(
            issues(endpoint("https://api.example.se/hooks", with: "http://api.example.se/hooks")) == [
                "webhooks.endpoints[0].url: plain http is allowed only to this machine (localhost, 127.0.0.1, [::1]); use https"
            ])
        #expect(throws: Never.self) {
            try parse(endpoint("https://api.example.se/hooks", with: "http://127.0.0.1:9/x"))
        }
        #expect(
            issues(endpoint("\"user.deleted\"", with: "\"user.removed\"")).first?.hasPrefix(
                "webhooks.endpoints[0].events[0]: unknown event type \"user.removed\"") == true)
        #expect(issues(endpoint(#"["user.deleted", "session.revoked"]"#, with: "[]")).count == 1)
        #expect(
            issues(endpoint(#""user.deleted""#, with: #""*""#)) == [
                "webhooks.endpoints[0].events: \"*\" means every type; give it alone"
            ])
        let short = "whsec_" + Data(repeating: 9, count: 23).base64EncodedString()
        let bad = issues(Self.document(Self.good), environment: ["PORTVAKT_WEBHOOK_APP": short])
        #expect(
            bad == ["PORTVAKT_WEBHOOK_APP: must be whsec_ followed by the base64 of 24 to 64 random bytes"])
        #expect(!bad.joined().contains(short))
        #expect(
            issues(Self.document(Self.good), environment: [:]) == [
                "PORTVAKT_WEBHOOK_APP: is not set (the secret of webhook endpoint app)"
            ])
        #expect(issues(endpoint("PORTVAKT_WEBHOOK_APP", with: "PORTVAKT_BANKID_APP")).count == 1)
        #expect(
            issues(endpoint(#""name": "app""#, with: #""name": "app", "secret": "x""#)).first?.hasPrefix(
                "webhooks.endpoints[0].secret: a webhook secret is never read from the file") == true)
        #expect(
            issues(Self.document(Self.good + ", " + Self.good)) == [
                "webhooks.endpoints[1].name: another endpoint is named \"app\""
            ])
        #expect(issues(endpoint(#""name": "app""#, with: #""name": "a b""#)).count == 1)
        #expect(
            issues(
                Self.document(
                    Self.good, extra: #", "retry": {"initialDelaySeconds": 60, "maxDelaySeconds": 30}"#)) == [
                    "webhooks.retry.maxDelaySeconds: must not be below initialDelaySeconds (60), got 30"
                ])
        #expect(issues(Self.document(Self.good, extra: #", "timeoutSeconds": 31"#)).count == 1)
        #expect(issues(Self.document(Self.good, extra: #", "retries": 3"#)).count == 1)
    }
}
