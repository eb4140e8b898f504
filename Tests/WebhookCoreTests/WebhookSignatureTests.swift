import CryptoCore
import Foundation
import Testing
import WebhookCore

@Suite("Standard Webhooks signatures")
struct WebhookSignatureTests {
    static let secretText = "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="
    static let body = Array(
        #"{"type":"user.created","timestamp":"2026-01-01T00:00:00.000Z","data":{"userId":"usr_1","method":"admin"}}"#
            .utf8)

    @Test("the signature equals the standardwebhooks 1.1.0 library's Webhook.sign for the same input")
    func pythonVector() throws {
        // Computed with `Webhook(secret).sign("evt_abc", datetime.fromtimestamp(1767225600, utc), body)`.
        let secret = try #require(WebhookSecret(RedactedSecret(Self.secretText)))
        let signature = WebhookSignature.sign(
            id: "evt_abc", timestamp: 1_767_225_600, body: Self.body, secret: secret)
        #expect(signature == "v1,qS6GGIgtTHdwJKUoD1lhXqNnyZbWDJkjdEXE/f0CzE8=")
    }

    @Test("the id, the timestamp and every body byte are signed")
    func everyPartCounts() throws {
        let secret = try #require(WebhookSecret(RedactedSecret(Self.secretText)))
        let base = WebhookSignature.sign(
            id: "evt_abc", timestamp: 1_767_225_600, body: Self.body, secret: secret)
        #expect(
            WebhookSignature.sign(id: "evt_abd", timestamp: 1_767_225_600, body: Self.body, secret: secret)
                != base)
        #expect(
            WebhookSignature.sign(id: "evt_abc", timestamp: 1_767_225_601, body: Self.body, secret: secret)
                != base)
        #expect(
            WebhookSignature.sign(
                id: "evt_abc", timestamp: 1_767_225_600, body: Self.body + [0x20], secret: secret) != base)
    }

    func b64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

    @Test("a secret is whsec_ + base64 of 24 to 64 bytes, padded or not")
    func secrets() {
        let bytes24 = Array(repeating: UInt8(7), count: 24)
        let bytes64 = Array(repeating: UInt8(7), count: 64)
        #expect(WebhookSecret(RedactedSecret("whsec_" + b64(bytes24))) != nil)
        #expect(WebhookSecret(RedactedSecret("whsec_" + b64(bytes64))) != nil)
        // Unpadded: 32 bytes are 43 characters and one "=".
        #expect(WebhookSecret(RedactedSecret(String(Self.secretText.dropLast()))) != nil)
        #expect(WebhookSecret(RedactedSecret("whsec_" + b64(Array(bytes24.dropLast())))) == nil)
        #expect(WebhookSecret(RedactedSecret("whsec_" + b64(bytes64 + [1]))) == nil)
        #expect(WebhookSecret(RedactedSecret(b64(bytes24))) == nil, "the prefix is required")
        #expect(WebhookSecret(RedactedSecret("whsec_not base64!")) == nil)
        #expect(WebhookSecret(RedactedSecret("whsec_")) == nil)
    }

    @Test("https anywhere; http only to this machine; no fragment or user information")
    func urls() throws {
        for good in [
            "https://api.example.se/portvakt-events", "https://api.example.se:8443/hooks?x=1",
            "http://127.0.0.1:9000/hook", "http://localhost/hook", "http://[::1]:8000", "http://127.8.9.10/x",
        ] {
            #expect(throws: Never.self, "\(good)") { _ = try WebhookURL(good) }
        }
        for bad in [
            "http://api.example.se/hook", "http://10.0.0.1/hook", "ftp://example.se/x",
            "https://u:p@example.se/",
            "https://example.se/#frag", "https://", "https://Example.se/", "https://example.se/a b",
            "http://127.0.0.1.example.se/", "https://example.se:0/", "api.example.se/hook",
        ] {
            #expect(throws: WebhookError(.invalidURL, ""), "\(bad)") { _ = try WebhookURL(bad) }
        }
    }
}
