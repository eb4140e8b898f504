import AuthOrchestrator
import CryptoCore
import Foundation
import HTTPEngine
import Kernel
import SessionCore
import Storage
import TestSupport
import Testing

@testable import PortvaktAPI

/// Bodies written by hand on the sign-in path, and the small parsers beside them.
@Suite("Hand-written response bodies")
struct ResponseBodyTests {
    /// The body Foundation's encoder gives, and the hand-written one, as parsed JSON.
    private func bothForms(_ value: some JSONWritable) throws -> (NSDictionary, NSDictionary) {
        var writer = JSONWriter()
        value.write(to: &writer)
        let written = try JSONSerialization.jsonObject(with: Data(writer.bytes)) as? NSDictionary
        let encoded =
            try JSONSerialization.jsonObject(with: JSONCoding.encoder.encode(value)) as? NSDictionary
        return (try #require(written), try #require(encoded))
    }

    /// A session made but not stored (`prepare` writes nothing), so the store is only a stand-in.
    private func session(client: ClientKind) throws -> IssuedSession {
        let storage = try TestStore(.sqlite)
        return try SessionService(repository: storage.store, policy: SessionPolicy())
            .prepare(userID: "u1", clientKind: client, authMethod: .passkey)
    }

    @Test("a user view written by hand equals the encoded one, with and without a username")
    func userView() throws {
        let created = Date(timeIntervalSince1970: 1_790_000_000.123)
        for user in [
            User(id: "u1", username: "ada", displayName: "Ada \"the\" Lovelace\\ ✓\n", createdAt: created),
            User(id: "u2", username: nil, displayName: "", createdAt: created),
        ] {
            let (written, encoded) = try bothForms(UserView(user))
            #expect(written == encoded)
        }
    }

    @Test("a login response written by hand equals the encoded one, for web (no token) and native")
    func loginResponse() throws {
        let user = User(id: "u1", username: "ada", displayName: "Ada", createdAt: Date())
        for client in [ClientKind.web, .native] {
            let response = LoginResponse(
                user: UserView(user), session: SessionGrant(try session(client: client), client: client))
            let (written, encoded) = try bothForms(response)
            #expect(written == encoded)
            #expect(((written["session"] as? NSDictionary)?["token"] != nil) == (client == .native))
        }
    }

    /// Signals with every member, names that need escaping, and an empty list.
    private static let signals: [PasskeySignals] = {
        let rp = "example.com"
        return [
            PasskeySignals(unknownCredential: .init(rpID: rp, credentialID: "AAEC")),
            PasskeySignals(
                allAcceptedCredentials: .init(
                    rpID: rp, userID: "aGFuZGxl", allAcceptedCredentialIDs: ["AQ", "Ag"]),
                currentUserDetails: .init(
                    rpID: rp, userID: "aGFuZGxl", name: "ada", displayName: "Ada \"the\" Lovelace\\ ✓\n")),
            PasskeySignals(
                allAcceptedCredentials: .init(rpID: rp, userID: "aA", allAcceptedCredentialIDs: [])),
            PasskeySignals(),
        ]
    }()

    @Test("signals written by hand, encoded, and as a problem's extension value are one JSON document")
    func signalsView() throws {
        for signals in Self.signals {
            let view = SignalsView(signals)
            var writer = JSONWriter()
            view.write(to: &writer)
            let written = try JSONSerialization.jsonObject(with: Data(writer.bytes)) as? NSDictionary
            let encoded =
                try JSONSerialization.jsonObject(with: JSONCoding.encoder.encode(view)) as? NSDictionary
            let problem = ProblemDetails(
                status: 400, code: "passkey.login_failed", title: "Sign-in failed",
                extensions: ["signals": view.problemValue])
            let body =
                try JSONSerialization.jsonObject(with: JSONCoding.encoder.encode(problem)) as? NSDictionary
            #expect(written != nil && written == encoded)
            #expect(body?["signals"] as? NSDictionary == written)
        }
    }

    @Test("a login response with signals, written by hand, equals the encoded one")
    func loginResponseWithSignals() throws {
        let user = User(id: "u1", username: "ada", displayName: "Ada", createdAt: Date())
        let response = LoginResponse(
            user: UserView(user), session: SessionGrant(try session(client: .native), client: .native),
            signals: SignalsView(Self.signals[1]))
        let (written, encoded) = try bothForms(response)
        #expect(written == encoded)
        #expect(written["signals"] is NSDictionary)
    }

    @Test("JSON media types: application/json or +json, any case, parameters and optional whitespace")
    func mediaTypes() {
        for accepted in [
            "application/json", "Application/JSON", " application/json ; charset=utf-8",
            "\tapplication/json\t",
            "application/problem+json", "application/json;charset=UTF-8",
            // Not all ASCII: read by Characters rather than bytes, with the same rules.
            "application/json; title=\"skärm\"", "application/vnd.åäö+json",
        ] {
            #expect(HTTPRequest.isJSONMediaType(accepted), "\(accepted)")
        }
        for refused in [
            nil, "", "text/json", "application/jsonx", "application/x-www-form-urlencoded", "json",
            "application/", "+json", " ; application/json", "ápplication/json", "application/json\u{301}",
        ] {
            #expect(!HTTPRequest.isJSONMediaType(refused), "\(refused ?? "nil")")
        }
    }

    @Test("the {} shortcut of an optional body takes exactly {} with JSON whitespace around or inside")
    func emptyObjectShortcut() {
        // Braces, the four JSON whitespace bytes, and bytes that are not: VT, FF, NUL, a letter, [.
        let pool: [UInt8] =
            Array("{} \t\n\r".utf8) + [0x0b, 0x0c, 0x00, UInt8(ascii: "a"), UInt8(ascii: "[")]
        var bodies: [[UInt8]] = [[]]
        var frontier: [[UInt8]] = [[]]
        for _ in 1...5 {
            frontier = frontier.flatMap { body in pool.map { body + [$0] } }
            bodies += frontier
        }
        for body in bodies {
            // The rule as it was written before: the body without JSON whitespace is `{}`.
            let expected =
                body.filter { $0 != 0x20 && $0 != 0x09 && $0 != 0x0a && $0 != 0x0d } == Array("{}".utf8)
            #expect(HTTPRequest.isEmptyObject(body) == expected, "\(body)")
        }
    }

    @Test("optional whitespace is spaces and tabs only")
    func optionalWhitespace() {
        #expect(" \t token \t ".trimmingOWS() == "token")
        #expect("   ".trimmingOWS() == "")
        #expect("\ntoken\n".trimmingOWS() == "\ntoken\n")
        #expect("a b".trimmingOWS() == "a b")
    }

    @Test("an introspection answer written by hand equals the encoded one, active or not")
    func introspectionView() throws {
        var full = IntrospectionView(active: true)
        full.sub = "u1"
        full.sid = "s1"
        full.username = "ada \"the\" ✓"
        full.amr = ["passkey"]
        full.iat = 1_790_000_000
        full.exp = 1_792_592_000
        full.steppedUpUntil = 1_790_000_600
        var plain = full
        plain.username = nil
        plain.steppedUpUntil = nil
        for view in [IntrospectionView.inactive, full, plain] {
            let (written, encoded) = try bothForms(view)
            #expect(written == encoded)
        }
    }

    @Test("an introspection body read from the strict parse is the decoder's, or left to the decoder")
    func introspectionBody() throws {
        let bodies = [
            #"{"token": "pvs_abc"}"#, #"{"token": "pvs_abc", "extra": [1, {"a": null}]}"#,
            #"{"extra": true, "token": "t\u00e9\n"}"#, #"{"token": ""}"#, #"{"token": 5}"#,
            #"{"token": null}"#, #"{"token": ["pvs"]}"#, #"{}"#, #"[]"#, #""pvs_abc""#, #"{"Token": "x"}"#,
        ]
        for text in bodies {
            let body = Array(text.utf8)
            let read = IntrospectionBody(strict: try StrictJSON.parse(body))
            let decoded = try? JSONCoding.decoder.decode(IntrospectionBody.self, from: Data(body))
            #expect(read?.token == decoded?.token, "\(text)")
        }
    }
}
