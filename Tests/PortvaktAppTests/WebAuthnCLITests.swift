import CryptoCore
import Foundation
import Kernel
import TestSupport
import Testing

/// `portvakt webauthn ...` as integrators run it, on the W3C WebAuthn L3 §16.2 vector
/// ("ES256 Credential with No Attestation", RP ID example.org).
@Suite("portvakt webauthn", .serialized)
struct WebAuthnCLITests {
    static let attestationObjectHex =
        "a363666d74646e6f6e656761747453746d74a068617574684461746158a4bfabc37432958b063360"
        + "d3ad6461c9c4735ae7f8edd46592a5e0f01452b2e4b559000000008446ccb9ab1db374750b2367ff"
        + "6f3a1f0020f91f391db4c9b2fde0ea70189cba3fb63f579ba6122b33ad94ff3ec330084be4a50102"
        + "03262001215820afefa16f97ca9b2d23eb86ccb64098d20db90856062eb249c33a9b672f26df6122"
        + "5820930a56b87a2fca66334b03458abf879717c12cc68ed73290af2e2664796b9220"
    static let assertionAuthDataHex =
        "bfabc37432958b063360d3ad6461c9c4735ae7f8edd46592a5e0f01452b2e4b51900000000"
    static let assertionClientDataHex =
        "7b2274797065223a22776562617574686e2e676574222c226368616c6c656e6765223a224f63446e"
        + "55685158756c5455506f334a5558543049393770767a7a59425039745a6368587961763031416722"
        + "2c226f726967696e223a2268747470733a2f2f6578616d706c652e6f7267222c2263726f73734f72"
        + "6967696e223a66616c73657d"

    func inspect(_ input: String) throws -> (status: Int32, json: [String: Any]) {
        let result = try PortvaktProcess.run(["webauthn", "inspect"], stdin: input)
        let json =
            (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any] ?? [:]
        return (result.status, json)
    }

    @Test("inspect decodes an attestation object given as hex or base64url, naming every field")
    func attestationObject() throws {
        let bytes = try #require(Hex.decode(Self.attestationObjectHex))
        for input in [Self.attestationObjectHex, Base64URL.encode(bytes)] {
            let (status, json) = try inspect(input)
            #expect(status == 0)
            #expect(json["kind"] as? String == "attestationObject")
            let object = try #require(json["attestationObject"] as? [String: Any])
            #expect(object["fmt"] as? String == "none")
            let authData = try #require(object["authData"] as? [String: Any])
            #expect(authData["rpIdHash"] as? String == Hex.encode(Digest.sha256("example.org")))
            let flags = try #require(authData["flags"] as? [String: Any])
            #expect(
                flags["UP"] as? Bool == true && flags["UV"] as? Bool == false && flags["BS"] as? Bool == true)
            let credential = try #require(authData["attestedCredentialData"] as? [String: Any])
            #expect(credential["aaguid"] as? String == "8446ccb9-ab1d-b374-750b-2367ff6f3a1f")
            let key = try #require(credential["credentialPublicKey"] as? [String: Any])
            #expect(key["algName"] as? String == "ES256" && key["crv"] as? String == "p256")
        }
    }

    @Test("inspect decodes an AuthenticationResponseJSON with its client data and authenticator data")
    func authenticationResponse() throws {
        let clientData = Base64URL.encode(try #require(Hex.decode(Self.assertionClientDataHex)))
        let authData = Base64URL.encode(try #require(Hex.decode(Self.assertionAuthDataHex)))
        let response = """
            {"id": "-R85HbTJsv3g6nAYnLo_tj9Xm6YSKzOtlP8-wzAIS-Q", "rawId": "-R85HbTJsv3g6nAYnLo_tj9Xm6YSKzOtlP8-wzAIS-Q",
             "type": "public-key", "response": {"clientDataJSON": "\(clientData)", "authenticatorData": "\(authData)",
             "signature": "MEYCIQD1", "userHandle": null}, "clientExtensionResults": {}}
            """
        let (status, json) = try inspect(response)
        #expect(status == 0)
        #expect(json["kind"] as? String == "authenticationResponse")
        let decoded = try #require(json["response"] as? [String: Any])
        let client = try #require((decoded["clientDataJSON"] as? [String: Any])?["json"] as? [String: Any])
        #expect(
            client["type"] as? String == "webauthn.get"
                && client["origin"] as? String == "https://example.org")
        let data = try #require(decoded["authenticatorData"] as? [String: Any])
        #expect(data["signCount"] as? Int == 0)
    }

    @Test("inspect reports what it cannot decode, and refuses input that is no WebAuthn data")
    func undecodable() throws {
        let broken = #"{"id": "x", "response": {"clientDataJSON": "!!", "authenticatorData": "AAAA"}}"#
        let (status, json) = try inspect(broken)
        #expect(status == 0)
        let errors = try #require(json["errors"] as? [[String: String]])
        #expect(errors.map { $0["field"] } == ["clientDataJSON", "authenticatorData"])
        #expect(errors.last?["code"] == "authdata.truncated")
        #expect(try inspect("hello world").status == 1)
        #expect(try PortvaktProcess.run(["webauthn", "inspect", "--pretty"]).status == 2)
    }

    @Test("inspect shows client data the verifier would refuse as text, with the strict parser's reason")
    func clientDataNotStrictJSON() throws {
        // Two "challenge" members: JSON to a lenient parser, refused by every ceremony.
        let clientData =
            #"{"type":"webauthn.get","challenge":"a","challenge":"b","origin":"https://example.org"}"#
        let duplicated = Base64URL.encode(Array(clientData.utf8))
        let authData = Base64URL.encode(try #require(Hex.decode(Self.assertionAuthDataHex)))
        let (status, json) = try inspect(
            #"{"id": "x", "response": {"clientDataJSON": "\#(duplicated)", "authenticatorData": "\#(authData)"}}"#
        )
        #expect(status == 0)
        let errors = try #require(json["errors"] as? [[String: String]])
        #expect(errors.map { $0["code"] } == ["inspect.not_json"])
        #expect(errors.first?["message"] == "not strict JSON: duplicate member name at byte 50")
        let decoded = try #require(json["response"] as? [String: Any])
        #expect((decoded["clientDataJSON"] as? String)?.contains(#""challenge":"b""#) == true)
        // Numbers, nulls and lists longer than a request body may hold come back as they were sent.
        let list = "[" + (0..<300).map { "\($0)" }.joined(separator: ",") + "]"
        let (_, wide) = try inspect(
            #"{"type": "webauthn.create", "challenge": "c", "n": [1.5, 2.0, -0, 1e2, null], "list": \#(list)}"#
        )
        let client = try #require(wide["clientData"] as? [String: Any])
        // A response whose own JSON is not strict is refused with the reason, as a ceremony would.
        let refused = try PortvaktProcess.run(
            ["webauthn", "inspect"], stdin: #"{"id": "x", "id": "y", "response": {}}"#)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("not strict JSON: duplicate member name at byte 16"))
        #expect((client["list"] as? [Int])?.count == 300)
        let numbers = try #require(client["n"] as? [Any])
        #expect(numbers.count == 5 && (numbers[0] as? Double) == 1.5 && (numbers[3] as? Int) == 100)
    }

    // MARK: verify-registration and verify-authentication

    /// One W3C §16 vector from Tests/Fixtures.
    struct Vector {
        let registration: [String: String]
        let authentication: [String: String]

        init(_ anchor: String) throws {
            let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Fixtures/w3c-webauthn-l3-test-vectors.json")
            let root = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
            let vectors = try #require(root["vectors"] as? [[String: Any]])
            let vector = try #require(vectors.first { $0["anchor"] as? String == anchor })
            registration = try #require(vector["registration"] as? [String: String])
            authentication = try #require(vector["authentication"] as? [String: String])
        }

        func b64(_ hex: String?) -> String { Base64URL.encode(Hex.decode(hex ?? "") ?? []) }

        var registrationJSON: String {
            let id = b64(registration["credential_id"])
            return """
                {"id":"\(id)","rawId":"\(id)","type":"public-key","clientExtensionResults":{},
                 "response":{"clientDataJSON":"\(b64(registration["clientDataJSON"]))",
                 "attestationObject":"\(b64(registration["attestationObject"]))","transports":["internal"]}}
                """
        }

        var authenticationJSON: String {
            let id = b64(registration["credential_id"])
            return """
                {"id":"\(id)","rawId":"\(id)","type":"public-key","clientExtensionResults":{},
                 "response":{"clientDataJSON":"\(b64(authentication["clientDataJSON"]))",
                 "authenticatorData":"\(b64(authentication["authenticatorData"]))",
                 "signature":"\(b64(authentication["signature"]))"}}
                """
        }
    }

    func run(_ arguments: [String], stdin: String) throws -> (
        status: Int32, json: [String: Any], stderr: String
    ) {
        let result = try PortvaktProcess.run(["webauthn"] + arguments, stdin: stdin)
        let json =
            (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any] ?? [:]
        return (result.status, json, result.stderr)
    }

    @Test("verify-registration accepts the W3C none-ES256 vector and prints the credential")
    func verifyRegistration() throws {
        let vector = try Vector("none-es256")
        let (status, json, _) = try run(
            [
                "verify-registration", "--rp-id", "example.org", "--origin", "https://example.org",
                "--challenge",
                vector.b64(vector.registration["challenge"]),
            ], stdin: vector.registrationJSON)
        #expect(status == 0)
        #expect(json["ok"] as? Bool == true)
        #expect(json["fmt"] as? String == "none" && json["attestationType"] as? String == "none")
        #expect(json["trusted"] as? Bool == false)
        #expect(json["aaguid"] as? String == "8446ccb9-ab1d-b374-750b-2367ff6f3a1f")
        #expect(json["credentialId"] as? String == vector.b64(vector.registration["credential_id"]))
        #expect(json["alg"] as? Int == -7 && json["signCount"] as? Int == 0)
        let flags = try #require(json["flags"] as? [String: Bool])
        #expect(flags == ["UP": true, "UV": false, "BE": true, "BS": true])
        #expect((json["publicKey"] as? String)?.isEmpty == false)
    }

    /// py_webauthn's ML-DSA-65 registration and assertion (Tests/Fixtures), as request bodies.
    struct PyWebAuthnMLDSA {
        let registration: [String: Any]
        let authentication: [String: Any]

        init() throws {
            let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Fixtures/py-webauthn-mldsa-responses.json")
            let root = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
            func find(_ ceremony: String) throws -> [String: Any] {
                let cases = try #require(root[ceremony] as? [[String: Any]])
                return try #require(cases.first { ($0["test"] as? String)?.contains("_65_") == true })
            }
            registration = try find("registration")
            authentication = try find("authentication")
        }

        static func body(_ entry: [String: Any]) throws -> String {
            String(decoding: try JSONSerialization.data(withJSONObject: entry["credential"]!), as: UTF8.self)
        }
    }

    @Test(
        "verify-registration: an ML-DSA-65 passkey needs --algorithm ML-DSA-65; verify-authentication takes its key"
    )
    func mlDSA() throws {
        let fixture = try PyWebAuthnMLDSA()
        let challenge = try #require(fixture.registration["challenge"] as? String)
        let base = [
            "verify-registration", "--rp-id", "webauthn.io", "--origin", "https://webauthn.io", "--challenge",
            challenge,
        ]
        let refused = try run(base, stdin: PyWebAuthnMLDSA.body(fixture.registration))
        #expect(refused.status == 1)
        #expect(
            (refused.json["error"] as? [String: Any])?["code"] as? String == "ceremony.algorithm_not_allowed")
        let accepted = try run(
            base + ["--algorithm", "ES256", "--algorithm", "ML-DSA-65"],
            stdin: PyWebAuthnMLDSA.body(fixture.registration))
        #expect(accepted.status == 0)
        #expect(accepted.json["alg"] as? Int == -49)
        let unknown = try run(
            base + ["--algorithm", "ML-DSA-66"], stdin: PyWebAuthnMLDSA.body(fixture.registration))
        #expect(unknown.status == 2 && unknown.stderr.contains("ML-DSA-66"))

        let auth = fixture.authentication
        let signed = try run(
            [
                "verify-authentication", "--rp-id", "webauthn.io", "--origin", "https://webauthn.io",
                "--challenge", try #require(auth["challenge"] as? String),
                "--public-key", try #require(auth["credential_public_key"] as? String),
                "--sign-count", String(try #require(auth["sign_count"] as? Int)),
            ], stdin: PyWebAuthnMLDSA.body(auth))
        #expect(signed.status == 0)
        #expect(signed.json["signCount"] as? Int == (auth["sign_count"] as? Int).map { $0 + 1 })

        // inspect names the AKP key and its algorithm.
        let credential = try #require(fixture.registration["credential"] as? [String: Any])
        let response = try #require(credential["response"] as? [String: Any])
        let (status, json) = try inspect(try #require(response["attestationObject"] as? String))
        #expect(status == 0)
        let object = try #require(json["attestationObject"] as? [String: Any])
        let authData = try #require(object["authData"] as? [String: Any])
        let attested = try #require(authData["attestedCredentialData"] as? [String: Any])
        let key = try #require(attested["credentialPublicKey"] as? [String: Any])
        #expect(key["algName"] as? String == "ML-DSA-65" && key["kty"] as? String == "akp")
        #expect((key["pub"] as? String).flatMap(Base64URL.decode)?.count == 1952)
    }

    @Test("verify-registration reports each failure as ok:false with the verifier's code, exit 1")
    func verifyRegistrationFailures() throws {
        let vector = try Vector("none-es256")
        let challenge = vector.b64(vector.registration["challenge"])
        let base = ["verify-registration", "--rp-id", "example.org", "--challenge", challenge]
        let cases: [([String], String)] = [
            (base + ["--origin", "https://example.com"], "ceremony.origin_not_allowed"),
            (base + ["--origin", "https://example.org", "--require-uv"], "ceremony.user_not_verified"),
            (
                [
                    "verify-registration", "--rp-id", "example.com", "--origin", "https://example.org",
                    "--challenge", challenge,
                ],
                "ceremony.rp_id_hash_mismatch"
            ),
            (
                [
                    "verify-registration", "--rp-id", "example.org", "--origin", "https://example.org",
                    "--challenge", "AAAA",
                ],
                "ceremony.challenge_mismatch"
            ),
        ]
        for (arguments, code) in cases {
            let (status, json, _) = try run(arguments, stdin: vector.registrationJSON)
            #expect(status == 1, "\(code)")
            #expect(json["ok"] as? Bool == false)
            #expect((json["error"] as? [String: String])?["code"] == code)
        }
        let (status, json, _) = try run(base + ["--origin", "https://example.org"], stdin: "{}")
        #expect(status == 1 && (json["error"] as? [String: String])?["code"]?.hasPrefix("response.") == true)
    }

    @Test("bad usage exits 2 and names the option, printing nothing on standard output")
    func verifyUsage() throws {
        let vector = try Vector("none-es256")
        let cases: [[String]] = [
            ["verify-registration", "--rp-id", "example.org", "--origin", "https://example.org"],
            ["verify-registration", "--rp-id", "example.org", "--challenge", "AAAA"],
            [
                "verify-registration", "--rp-id", "example.org", "--origin", "example.org", "--challenge",
                "AAAA",
            ],
            [
                "verify-registration", "--rp-id", "example.org", "--origin", "https://example.org",
                "--challenge",
                "AAAA", "--at", "yesterday",
            ],
            [
                "verify-registration", "--rp-id", "example.org", "--origin", "https://example.org",
                "--challenge",
                "AAAA", "--trust-anchor", "/nonexistent.pem",
            ],
            [
                "verify-authentication", "--rp-id", "example.org", "--origin", "https://example.org",
                "--challenge",
                "AAAA", "--public-key", "AAAA", "--sign-count", "0",
            ],
            [
                "verify-authentication", "--rp-id", "example.org", "--origin", "https://example.org",
                "--challenge",
                "AAAA", "--public-key", "AAAA", "--sign-count", "-1",
            ],
        ]
        for arguments in cases {
            let result = try PortvaktProcess.run(["webauthn"] + arguments, stdin: vector.registrationJSON)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains("--"), "the message names the option")
        }
    }

    @Test("verify-authentication checks the W3C vector's assertion with the registered key")
    func verifyAuthentication() throws {
        let vector = try Vector("none-es256")
        let registered = try run(
            [
                "verify-registration", "--rp-id", "example.org", "--origin", "https://example.org",
                "--challenge",
                vector.b64(vector.registration["challenge"]),
            ], stdin: vector.registrationJSON)
        let publicKey = try #require(registered.json["publicKey"] as? String)
        let arguments = [
            "verify-authentication", "--rp-id", "example.org", "--origin", "https://example.org",
            "--challenge",
            vector.b64(vector.authentication["challenge"]), "--public-key", publicKey,
        ]
        let (status, json, _) = try run(arguments + ["--sign-count", "0"], stdin: vector.authenticationJSON)
        #expect(status == 0)
        #expect(json["ok"] as? Bool == true && json["signCount"] as? Int == 0)
        #expect((json["flags"] as? [String: Bool])?["UP"] == true)

        // A tampered signature, and a stored counter the assertion's 0 regresses from.
        var tampered = vector.authenticationJSON
        tampered = tampered.replacingOccurrences(of: "\"signature\":\"ME", with: "\"signature\":\"MF")
        let bad = try run(arguments + ["--sign-count", "0"], stdin: tampered)
        #expect(bad.status == 1)
        let regressed = try run(arguments + ["--sign-count", "7"], stdin: vector.authenticationJSON)
        #expect((regressed.json["error"] as? [String: String])?["code"] == "ceremony.counter_regression")
        let otherUser = try run(
            arguments + ["--sign-count", "0", "--user-handle", "AQID"], stdin: vector.authenticationJSON)
        #expect(
            otherUser.status == 0,
            "a login naming a user checks the stored owner, and the vector returns no handle")
    }

    @Test("verify-registration reads a FIDO MDS3 BLOB: a compromised model is flagged, strict mode refuses")
    func verifyWithMetadata() throws {
        let directory = try TemporaryDirectory()
        let start = Date(timeIntervalSince1970: 1_767_225_600)
        let root = TestCertificateAuthority.root(
            name: .init(commonName: "Test MDS Root"), notBefore: start,
            notAfter: start.addingTimeInterval(86_400 * 365))
        let blob = try TestMetadataBLOB.sign(
            payload: TestMetadataBLOB.payload(
                entries: [
                    ("8446ccb9-ab1d-b374-750b-2367ff6f3a1f", "Test Key", ["FIDO_CERTIFIED", "REVOKED"])
                ],
                nextUpdate: "2026-02-01"),
            issuer: root)
        try Data(blob).write(to: directory.url.appendingPathComponent("blob.jwt"))
        let pem =
            "-----BEGIN CERTIFICATE-----\n"
            + Data(root.certificateDER).base64EncodedString(options: .lineLength64Characters)
            + "\n-----END CERTIFICATE-----\n"
        try Data(pem.utf8).write(to: directory.url.appendingPathComponent("root.pem"))

        let vector = try Vector("none-es256")
        let arguments = [
            "verify-registration", "--rp-id", "example.org", "--origin", "https://example.org", "--challenge",
            vector.b64(vector.registration["challenge"]), "--at", "2026-01-10T00:00:00Z", "--metadata",
            directory.path("blob.jwt"), "--metadata-root", directory.path("root.pem"),
        ]
        let flagged = try run(arguments, stdin: vector.registrationJSON)
        #expect(flagged.status == 0)
        let metadata = try #require(flagged.json["metadata"] as? [String: Any])
        #expect(metadata["name"] as? String == "Test Key" && metadata["status"] as? String == "REVOKED")
        #expect(metadata["compromised"] as? Bool == true)
        #expect(
            flagged.json["provider"] as? String == "Test Key", "FIDO metadata names models the list does not")

        let strict = try run(arguments + ["--require-trusted"], stdin: vector.registrationJSON)
        #expect(strict.status == 1)
        #expect((strict.json["error"] as? [String: String])?["code"] == "attestation.untrusted")

        // A BLOB checked against the wrong root, or outside its certificates' validity, is refused.
        let late = arguments.map { $0 == "2026-01-10T00:00:00Z" ? "2028-01-01T00:00:00Z" : $0 }
        let refused = try run(late, stdin: vector.registrationJSON)
        #expect(refused.status == 2 && refused.stderr.contains("metadata.untrusted_chain"))
    }
}
