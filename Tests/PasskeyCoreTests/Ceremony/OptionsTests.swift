import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

/// A random source that always fails, to prove the failure surfaces with its own code.
private struct BrokenRandom: RandomSource {
    func bytes(_ count: Int) throws -> [UInt8] {
        throw CryptoError(.randomFailure, "broken")
    }
}

/// Parses options JSON back with Foundation, an independent parser, as a browser would.
private func object(_ bytes: [UInt8]) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
}

/// The bytes of a base64url member, failing the test when it is absent or not base64url.
private func decoded(_ value: Any?) throws -> [UInt8] {
    let text = try #require(value as? String)
    return try #require(Base64URL.decode(text))
}

@Suite("Options (L3 JSON forms)")
struct OptionsTests {
    @Test("registration options: every field of PublicKeyCredentialCreationOptionsJSON, parsed back")
    func registrationShape() throws {
        let random = SeededRandom(seed: "options")
        let options = try RegistrationOptions(
            relyingParty: Fixture.relyingParty, userName: "alice@example.com",
            userDisplayName: "Alice \"A\" Ö",
            excludeCredentials: [
                CredentialDescriptor(id: [1, 2, 3], transports: [.usb, .nfc]), CredentialDescriptor(id: [4]),
            ],
            attestation: .direct, authenticatorAttachment: .crossPlatform, hints: [.securityKey, .hybrid],
            timeoutMilliseconds: 120_000, random: random)
        let json = try object(options.json())
        #expect(
            Set(json.keys) == [
                "rp", "user", "challenge", "pubKeyCredParams", "timeout", "excludeCredentials",
                "authenticatorSelection", "hints", "attestation", "extensions",
            ])
        #expect(json["rp"] as? [String: String] == ["id": "example.com", "name": "Example"])
        let user = try #require(json["user"] as? [String: String])
        #expect(user["name"] == "alice@example.com" && user["displayName"] == "Alice \"A\" Ö")
        let userID = try decoded(user["id"])
        #expect(userID.count == 32 && userID == options.user.id)
        let challenge = try decoded(json["challenge"])
        #expect(challenge.count >= 32 && challenge == options.challenge && challenge != userID)
        let params = try #require(json["pubKeyCredParams"] as? [[String: Any]])
        #expect(params.map { $0["alg"] as? Int } == [-7, -8, -35, -36, -37, -257])
        #expect(params.allSatisfy { $0["type"] as? String == "public-key" })
        #expect(json["timeout"] as? Int == 120_000)
        let exclude = try #require(json["excludeCredentials"] as? [[String: Any]])
        #expect(exclude.count == 2)
        #expect(exclude[0]["id"] as? String == "AQID" && exclude[0]["type"] as? String == "public-key")
        #expect(exclude[0]["transports"] as? [String] == ["usb", "nfc"])
        #expect(exclude[1]["transports"] == nil)
        let selection = try #require(json["authenticatorSelection"] as? [String: Any])
        #expect(selection["authenticatorAttachment"] as? String == "cross-platform")
        #expect(selection["residentKey"] as? String == "required")
        #expect(selection["requireResidentKey"] as? Bool == true)
        #expect(selection["userVerification"] as? String == "required")
        #expect(json["hints"] as? [String] == ["security-key", "hybrid"])
        #expect(json["attestation"] as? String == "direct")
        #expect((json["extensions"] as? [String: Any])?["credProps"] as? Bool == true)
    }

    @Test("registration options: deterministic bytes for a seeded random source, keys in spec order")
    func registrationDeterministic() throws {
        func make() throws -> [UInt8] {
            try RegistrationOptions(
                relyingParty: Fixture.relyingParty, userName: "bob", userDisplayName: "Bob",
                userHandle: [9, 9], residentKey: .preferred, random: SeededRandom(seed: "fixed")
            ).json()
        }
        let text = String(decoding: try make(), as: UTF8.self)
        #expect(try make() == make())
        #expect(
            text.hasPrefix("{\"rp\":{\"id\":\"example.com\",\"name\":\"Example\"},\"user\":{\"id\":\"CQk\""))
        #expect(
            text.contains(
                "\"authenticatorSelection\":{\"residentKey\":\"preferred\",\"requireResidentKey\":false,\"userVerification\":\"required\"}"
            ))
        #expect(text.hasSuffix("\"hints\":[],\"attestation\":\"none\",\"extensions\":{\"credProps\":true}}"))
    }

    @Test(
        "registration options follow the relying party's algorithms and UV policy, so options and checks agree"
    )
    func registrationFollowsPolicy() throws {
        let rp = relyingParty {
            $0.allowedAlgorithms = [.edDSA, .es256]
            $0.userVerification = .preferred
        }
        let options = try RegistrationOptions(
            relyingParty: rp, userName: "c", userDisplayName: "C", residentKey: .discouraged,
            random: SystemRandom())
        let json = try object(options.json())
        #expect((json["pubKeyCredParams"] as? [[String: Any]])?.map { $0["alg"] as? Int } == [-8, -7])
        let selection = try #require(json["authenticatorSelection"] as? [String: Any])
        #expect(selection["userVerification"] as? String == "preferred")
        #expect(
            selection["residentKey"] as? String == "discouraged"
                && selection["requireResidentKey"] as? Bool == false)
        #expect(selection["authenticatorAttachment"] == nil)
    }

    @Test("authentication options: every field of PublicKeyCredentialRequestOptionsJSON, parsed back")
    func authenticationShape() throws {
        let options = try AuthenticationOptions(
            relyingParty: Fixture.relyingParty,
            allowCredentials: [CredentialDescriptor(id: Fixture.es256.id, transports: [.internal, .hybrid])],
            hints: [.clientDevice], timeoutMilliseconds: 60_000, random: SeededRandom())
        let json = try object(options.json())
        #expect(
            Set(json.keys) == [
                "challenge", "timeout", "rpId", "allowCredentials", "userVerification", "hints",
            ])
        #expect(try decoded(json["challenge"]) == options.challenge)
        #expect(options.challenge.count == 32)
        #expect(json["timeout"] as? Int == 60_000)
        #expect(json["rpId"] as? String == "example.com")
        let allow = try #require(json["allowCredentials"] as? [[String: Any]])
        #expect(allow.count == 1 && allow[0]["id"] as? String == Base64URL.encode(Fixture.es256.id))
        #expect(allow[0]["transports"] as? [String] == ["internal", "hybrid"])
        #expect(json["userVerification"] as? String == "required")
        #expect(json["hints"] as? [String] == ["client-device"])
        // Discoverable login: an empty list, not a missing one.
        let discoverable = try AuthenticationOptions(
            relyingParty: Fixture.relyingParty, random: SystemRandom())
        #expect(String(decoding: discoverable.json(), as: UTF8.self).contains("\"allowCredentials\":[]"))
    }

    @Test("options.invalid: short challenges and user handles outside 1…64 bytes")
    func invalidOptions() {
        expectCode(.optionsInvalid) {
            _ = try RegistrationOptions(
                relyingParty: Fixture.relyingParty, userName: "a", userDisplayName: "A", challengeLength: 16,
                random: SystemRandom())
        }
        for handle in [[], [UInt8](repeating: 1, count: 65)] {
            expectCode(.optionsInvalid) {
                _ = try RegistrationOptions(
                    relyingParty: Fixture.relyingParty, userName: "a", userDisplayName: "A",
                    userHandle: handle,
                    random: SystemRandom())
            }
        }
        expectCode(.optionsInvalid) {
            _ = try RegistrationOptions(
                relyingParty: relyingParty { $0.allowedAlgorithms = [] }, userName: "a", userDisplayName: "A",
                random: SystemRandom())
        }
        expectCode(.optionsInvalid) {
            _ = try AuthenticationOptions(
                relyingParty: Fixture.relyingParty, challengeLength: 8, random: SystemRandom())
        }
    }

    @Test("options.random_failure: a failing random source is reported, never papered over")
    func randomFailure() {
        expectCode(.optionsRandomFailure) {
            _ = try RegistrationOptions(
                relyingParty: Fixture.relyingParty, userName: "a", userDisplayName: "A",
                random: BrokenRandom())
        }
        expectCode(.optionsRandomFailure) {
            _ = try AuthenticationOptions(relyingParty: Fixture.relyingParty, random: BrokenRandom())
        }
    }

    @Test("config.invalid: origins that could never match exactly, empty RP ID, no algorithms")
    func configValidation() throws {
        try Fixture.relyingParty.validate()
        let android = "android:apk-key-hash:" + Base64URL.encode(Digest.sha256("cert"))
        try relyingParty {
            $0.allowedOrigins = ["https://example.com", "http://localhost:8080", android]
            $0.allowedTopOrigins = ["https://portal.example"]
        }.validate()
        let badOrigins = [
            "https://example.com/", "https://example.com:443", "http://localhost:80", "https://Example.com",
            "example.com", "https://*.example.com", "android:apk-key-hash:abc", "ftp://example.com",
            "https://example.com/login",
        ]
        for origin in badOrigins {
            expectCode(.configInvalid, "\(origin)") {
                try relyingParty { $0.allowedOrigins = [origin] }.validate()
            }
        }
        expectCode(.configInvalid) {
            try relyingParty { $0.allowedTopOrigins = ["https://x.example/"] }.validate()
        }
        expectCode(.configInvalid) { try relyingParty { $0.id = "" }.validate() }
        expectCode(.configInvalid) { try relyingParty { $0.id = "https://example.com" }.validate() }
        expectCode(.configInvalid) { try relyingParty { $0.name = "" }.validate() }
        expectCode(.configInvalid) { try relyingParty { $0.allowedOrigins = [] }.validate() }
        expectCode(.configInvalid) { try relyingParty { $0.allowedAlgorithms = [] }.validate() }
        expectCode(.configInvalid) {
            try relyingParty { $0.allowedAlgorithms = [.es256, .es256] }.validate()
        }
    }

    @Test("relying party defaults are strict: UV required, counter reject, no top origins, none accepted")
    func defaults() {
        let rp = Fixture.relyingParty
        #expect(rp.userVerification == .required)
        #expect(rp.counterPolicy == .reject)
        #expect(rp.allowedTopOrigins.isEmpty)
        #expect(rp.attestationPolicy == .acceptUntrusted)
        #expect(rp.allowedAlgorithms == [.es256, .edDSA, .es384, .es512, .ps256, .rs256])
        #expect(
            rp.attestationFormats.identifiers == [
                "android-key", "android-safetynet", "apple", "compound", "fido-u2f", "none", "packed", "tpm",
            ])
        #expect(rp.trustAnchors.anchors(forFormat: "apple") == [BundledTrustAnchors.appleWebAuthnRootCA])
        #expect(rp.metadata == nil)
    }
}
