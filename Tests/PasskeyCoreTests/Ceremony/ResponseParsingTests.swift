import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

/// A valid assertion's JSON as text, for tests that edit it.
private func assertionText() -> String {
    String(
        decoding: Fixture.authenticator.authenticate(
            Fixture.es256, challenge: Fixture.challenge, origin: Fixture.origin
        ).json(), as: UTF8.self)
}

private func parseAssertion(_ text: String) throws(PasskeyError) -> AuthenticationResponseJSON {
    try AuthenticationResponseJSON(json: Array(text.utf8))
}

@Suite("Response JSON and client data parsing")
struct ResponseParsingTests {
    @Test("a browser-shaped assertion parses into its parts")
    func parsesAssertion() throws {
        let parts = Fixture.authenticator.authenticate(
            Fixture.es256, challenge: Fixture.challenge, origin: Fixture.origin)
        let response = try AuthenticationResponseJSON(json: parts.json())
        #expect(response.rawID == parts.rawID && response.id == Base64URL.encode(parts.rawID))
        #expect(response.clientDataJSON == parts.clientDataJSON)
        #expect(response.authenticatorData == parts.authenticatorData)
        #expect(response.signature == parts.signature)
        #expect(response.userHandle == parts.userHandle)
        #expect(response.authenticatorAttachment == .platform)
        // Null and absent user handles both mean none; unknown members and attachments are ignored.
        let nulled = assertionText().replacingOccurrences(
            of: "\"userHandle\":\"\(Base64URL.encode(Fixture.userHandle))\"", with: "\"userHandle\":null")
        #expect(try parseAssertion(nulled).userHandle == nil)
        let future = assertionText().replacingOccurrences(of: "\"platform\"", with: "\"quantum\"")
            .replacingOccurrences(
                of: "\"type\":\"public-key\"", with: "\"type\":\"public-key\",\"futureMember\":[1,2.5e3,{}]")
        #expect(try parseAssertion(future).authenticatorAttachment == nil)
    }

    @Test("a registration response parses transports, convenience members and credProps")
    func parsesRegistration() throws {
        let parts = Fixture.authenticator.register(
            Fixture.es256, challenge: Fixture.challenge, origin: Fixture.origin)
        let response = try RegistrationResponseJSON(json: parts.json())
        #expect(response.transports == [.hybrid, .internal])
        #expect(response.authenticatorData == parts.authenticatorData)
        #expect(response.publicKey == parts.publicKey)
        #expect(response.publicKeyAlgorithm == -7)
        #expect(response.clientExtensionResults.credentialPropertiesResidentKey == true)
        #expect(response.attestationObject == parts.attestationObject)
    }

    @Test("response.malformed_json: syntax errors, duplicates, bad UTF-8, trailing content, depth")
    func malformedJSON() {
        let valid = assertionText()
        let broken: [[UInt8]] = [
            Array("".utf8), Array("{".utf8), Array((valid + "x").utf8), Array(valid.dropLast().utf8),
            Array(valid.replacingOccurrences(of: "{\"id\"", with: "{\"id\":\"x\",\"id\"").utf8),
            Array("{\"type\":\"public-key\",}".utf8), Array("{'type':1}".utf8), Array("{\"a\":01}".utf8),
            Array("{\"a\":\"\\ud800\"}".utf8), Array("{\"a\":\"\u{01}\"}".utf8),
            Array("{\"a\":\"\\x\"}".utf8),
            [0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d],
            Array((String(repeating: "[", count: 40) + String(repeating: "]", count: 40)).utf8),
            Array("{\"a\":tru}".utf8), Array("{\"a\":-}".utf8), Array("{\"a\":1.}".utf8),
        ]
        for bytes in broken {
            expectCode(.responseMalformedJSON, "\(String(decoding: bytes, as: UTF8.self))") {
                _ = try AuthenticationResponseJSON(json: bytes)
            }
        }
    }

    @Test("response.too_large, missing_field, wrong_type, invalid_base64url, id_mismatch, unsupported_type")
    func structuralCodes() {
        expectCode(.responseTooLarge) {
            _ = try AuthenticationResponseJSON(json: [UInt8](repeating: 0x20, count: 16 * 1024 + 1))
        }
        expectCode(.responseTooLarge) {
            _ = try RegistrationResponseJSON(json: [UInt8](repeating: 0x20, count: 64 * 1024 + 1))
        }
        let valid = assertionText()
        let signature = "\"signature\":"
        expectCode(.responseMissingField) {
            _ = try parseAssertion(valid.replacingOccurrences(of: signature, with: "\"signatur\":"))
        }
        expectCode(.responseMissingField) {
            _ = try parseAssertion(valid.replacingOccurrences(of: "\"response\":", with: "\"respons\":"))
        }
        expectCode(.responseWrongType) { _ = try parseAssertion("[]") }
        expectCode(.responseWrongType) {
            _ = try parseAssertion(
                valid.replacingOccurrences(of: "\"type\":\"public-key\"", with: "\"type\":1"))
        }
        expectCode(.responseWrongType) {
            _ = try parseAssertion(
                valid.replacingOccurrences(
                    of: "\"clientExtensionResults\":{}", with: "\"clientExtensionResults\":[]"))
        }
        expectCode(.responseWrongType) {
            _ = try parseAssertion(valid.replacingOccurrences(of: "\"platform\"", with: "7"))
        }
        expectCode(.responseInvalidBase64URL) {
            _ = try parseAssertion(valid.replacingOccurrences(of: signature + "\"", with: signature + "\"*"))
        }
        expectCode(.responseIDMismatch) {
            _ = try parseAssertion(valid.replacingOccurrences(of: "{\"id\":\"", with: "{\"id\":\"AAAA"))
        }
        expectCode(.responseUnsupportedType) {
            _ = try parseAssertion(valid.replacingOccurrences(of: "\"public-key\"", with: "\"password\""))
        }
        // Registration-specific members.
        let registration = String(
            decoding: Fixture.authenticator.register(
                Fixture.es256, challenge: Fixture.challenge, origin: Fixture.origin
            )
            .json(), as: UTF8.self)
        for (from, to) in [
            ("\"transports\":[", "\"transports\":[1,"),
            ("\"publicKeyAlgorithm\":-7", "\"publicKeyAlgorithm\":-7.5"),
            ("{\"credProps\":{\"rk\":true}}", "{\"credProps\":{\"rk\":1}}"),
            ("{\"credProps\":{\"rk\":true}}", "{\"credProps\":[true]}"),
        ] {
            expectCode(.responseWrongType, "\(to)") {
                _ = try RegistrationResponseJSON(
                    json: Array(registration.replacingOccurrences(of: from, with: to).utf8))
            }
        }
    }

    @Test("binary members: stray bits refused; rawId padded or in the standard alphabet is the same id")
    func tolerantBase64() throws {
        let valid = assertionText()
        let id = Base64URL.encode(Fixture.es256.id)
        // 32 bytes encode to 43 characters: the last carries 2 unused bits. Setting one changes the text
        // but not (in a lenient decoder) the bytes.
        let last = id.last!
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let index = alphabet.firstIndex(of: last)!
        let stray = String(id.dropLast()) + String(alphabet[index | 1])
        expectCode(.responseInvalidBase64URL) {
            _ = try parseAssertion(
                valid.replacingOccurrences(of: "\"rawId\":\"\(id)\"", with: "\"rawId\":\"\(stray)\""))
        }
        expectCode(.responseInvalidBase64URL) {
            _ = try parseAssertion(
                valid.replacingOccurrences(of: "\"rawId\":\"\(id)\"", with: "\"rawId\":\"\(id)==\""))
        }
        // Another spelling of the same bytes is the same credential, kept in canonical form.
        let standard =
            id.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/") + "="
        for (member, spelling) in [
            ("rawId", id + "="), ("rawId", standard), ("id", standard), ("id", id + "="),
        ] {
            let parsed = try parseAssertion(
                valid.replacingOccurrences(
                    of: "\"\(member)\":\"\(id)\"", with: "\"\(member)\":\"\(spelling)\""))
            #expect(parsed.id == id && parsed.rawID == Fixture.es256.id, "\(member): \(spelling)")
        }
        // id and rawId must still name the same bytes.
        let other = Base64URL.encode(Fixture.es256.id.map { $0 ^ 1 })
        expectCode(.responseIDMismatch) {
            _ = try parseAssertion(
                valid.replacingOccurrences(of: "\"rawId\":\"\(id)\"", with: "\"rawId\":\"\(other)\""))
        }
    }

    @Test("clientdata: browser serialization, any member order, unknown members ignored, escapes decoded")
    func clientDataParsing() throws {
        let browser = try CollectedClientData(
            bytes: Array(
                "{\"type\":\"webauthn.get\",\"challenge\":\"AAEC\",\"origin\":\"https://example.com\",\"crossOrigin\":false,\"other_keys_can_be_added_here\":\"do not compare clientDataJSON against a template. See https://goo.gl/yabPex\"}"
                    .utf8))
        #expect(
            browser.type == "webauthn.get" && browser.challenge == "AAEC"
                && browser.origin == "https://example.com")
        #expect(!browser.crossOrigin && browser.topOrigin == nil)
        let reordered = try CollectedClientData(
            bytes: Array(
                " {\"origin\":\"https:\\/\\/example.com\",\"tokenBinding\":{\"status\":\"present\"},\"topOrigin\":\"https://top.example\",\"crossOrigin\":true,\"challenge\":\"AAEC\",\"type\":\"webauthn.\\u0067et\"} "
                    .utf8))
        #expect(reordered.origin == "https://example.com" && reordered.type == "webauthn.get")
        #expect(reordered.crossOrigin && reordered.topOrigin == "https://top.example")
    }

    @Test("clientdata.malformed, missing_field and wrong_type")
    func clientDataCodes() {
        let cases: [(PasskeyError.Code, String)] = [
            (.clientDataMalformed, "not json"),
            (.clientDataMalformed, "[]"),
            (
                .clientDataMalformed,
                "{\"type\":\"webauthn.get\",\"type\":\"webauthn.create\",\"challenge\":\"\",\"origin\":\"\"}"
            ),
            (.clientDataMissingField, "{\"challenge\":\"AA\",\"origin\":\"https://example.com\"}"),
            (.clientDataMissingField, "{\"type\":\"webauthn.get\",\"origin\":\"https://example.com\"}"),
            (.clientDataMissingField, "{\"type\":\"webauthn.get\",\"challenge\":\"AA\"}"),
            (.clientDataWrongType, "{\"type\":1,\"challenge\":\"AA\",\"origin\":\"o\"}"),
            (
                .clientDataWrongType,
                "{\"type\":\"t\",\"challenge\":\"AA\",\"origin\":\"o\",\"crossOrigin\":\"false\"}"
            ),
            (
                .clientDataWrongType,
                "{\"type\":\"t\",\"challenge\":\"AA\",\"origin\":\"o\",\"topOrigin\":null}"
            ),
        ]
        for (code, text) in cases {
            expectCode(code, "\(text)") { _ = try CollectedClientData(bytes: Array(text.utf8)) }
        }
        expectCode(.clientDataMalformed) {
            _ = try CollectedClientData(bytes: [UInt8](repeating: 0x20, count: 8193))
        }
    }

    @Test("every response, client data, options, config, ceremony and attestation code has a test")
    func everyCodeCovered() {
        let covered: Set<PasskeyError.Code> = [
            .responseMalformedJSON, .responseTooLarge, .responseMissingField, .responseWrongType,
            .responseInvalidBase64URL, .responseIDMismatch, .responseUnsupportedType, .responseInconsistent,
            .clientDataMalformed, .clientDataMissingField, .clientDataWrongType,
            .optionsInvalid, .optionsRandomFailure, .configInvalid,
            .ceremonyTypeMismatch, .ceremonyChallengeMismatch, .ceremonyOriginNotAllowed,
            .ceremonyCrossOriginNotAllowed, .ceremonyTopOriginNotAllowed, .ceremonyRPIDHashMismatch,
            .ceremonyUserNotPresent, .ceremonyUserNotVerified, .ceremonyAlgorithmNotAllowed,
            .ceremonyCredentialIDTooLong, .ceremonyCredentialIDMismatch, .ceremonyMissingAttestedCredential,
            .ceremonyUnexpectedAttestedCredential, .ceremonySignatureInvalid, .ceremonyCounterRegression,
            .ceremonyUserHandleMissing, .ceremonyUserHandleMismatch, .ceremonyCredentialNotAllowed,
            .attestationMalformed, .attestationUnsupportedFormat, .attestationInvalidStatement,
            .attestationUntrusted, .attestationAuthenticatorCompromised,
            .attestationCertificateInvalid, .attestationChainInvalid, .attestationCertificateRequirements,
            .attestationAAGUIDMismatch, .attestationSignatureInvalid, .attestationAlgorithmMismatch,
            .attestationUnsupportedAlgorithm, .attestationNonceMismatch, .attestationPublicKeyMismatch,
            // tpm, android-key, android-safetynet: Tests/PasskeyCoreTests/Attestation.
            .attestationTPMUnsupportedVersion, .attestationTPMPubAreaInvalid, .attestationTPMCertInfoInvalid,
            .attestationTPMPublicKeyMismatch, .attestationTPMExtraDataMismatch, .attestationTPMNameMismatch,
            .attestationTPMSignatureInvalid, .attestationTPMCertificateInvalid, .attestationTPMAAGUIDMismatch,
            .attestationAndroidKeySignatureInvalid, .attestationAndroidKeyPublicKeyMismatch,
            .attestationAndroidKeyDescriptionInvalid, .attestationAndroidKeyChallengeMismatch,
            .attestationAndroidKeyAllApplications, .attestationAndroidKeyAuthorizationInvalid,
            .attestationSafetyNetResponseInvalid, .attestationSafetyNetHostnameMismatch,
            .attestationSafetyNetSignatureInvalid, .attestationSafetyNetNonceMismatch,
            .attestationSafetyNetCTSProfileMismatch, .attestationSafetyNetTimestampInvalid,
        ]
        let prefixes = ["response.", "clientdata.", "options.", "config.", "ceremony.", "attestation."]
        let all = Set(
            PasskeyError.Code.allCases.filter { code in prefixes.contains { code.rawValue.hasPrefix($0) } })
        #expect(all == covered)
    }
}
