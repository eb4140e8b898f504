import CryptoCore
import Foundation
import PasskeyCore
import Testing

/// Real Windows Hello (TPM 2.0) registrations published with py_webauthn's test suite
/// (Tests/Fixtures/README.md), run through the registration ceremony exactly as the client sent
/// them: standard-alphabet `attestationObject`s, padded `clientDataJSON`s, no
/// `clientExtensionResults`. Their AIK chains end at Microsoft's TPM root, the anchor here.
@Suite("py_webauthn's TPM registrations, as sent")
struct PyWebAuthnTPMCaptureTests {
    struct FixtureFile: Decodable, Sendable {
        struct Capture: Decodable, Sendable {
            let name: String
            /// The RegistrationResponseJSON text, byte for byte as in py_webauthn's test.
            let credential: String
            let challenge: String
            let rpId: String
            let origin: String
            let credentialId: String
        }
        let validAt: String
        let microsoftTPMRootCA2014: String
        let captures: [Capture]
    }

    static let fixture: FixtureFile = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/py-webauthn-tpm-registrations.json")
        guard let data = try? Data(contentsOf: url),
            let file = try? JSONDecoder().decode(FixtureFile.self, from: data)
        else { fatalError("cannot read \(url.path)") }
        return file
    }()

    /// Inside every capture's AIK certificate validity (they ran out in 2025).
    static let validationTime = ISO8601DateFormatter().date(from: fixture.validAt)!

    static func capture(_ name: String) -> FixtureFile.Capture {
        fixture.captures.first { $0.name == name }!
    }

    static func relyingParty(_ capture: FixtureFile.Capture, anchored: Bool) -> RelyingParty {
        var rp = RelyingParty(id: capture.rpId, name: "Test", allowedOrigins: [capture.origin])
        rp.userVerification = .preferred
        if anchored {
            rp.trustAnchors = StaticTrustAnchors(perFormat: [
                "tpm": [Hex.decode(fixture.microsoftTPMRootCA2014)!]
            ])
            rp.attestationPolicy = .requireTrusted
        }
        return rp
    }

    static func register(_ capture: FixtureFile.Capture, json: String, anchored: Bool = true)
        throws(PasskeyError) -> VerifiedRegistration
    {
        try verifyRegistration(
            response: RegistrationResponseJSON(json: Array(json.utf8)),
            expectedChallenge: Base64URL.decode(capture.challenge)!,
            relyingParty: relyingParty(capture, anchored: anchored), at: validationTime)
    }

    static let asSent = [
        "attestation_surface_pro_4", "attestation_dell_xps_13", "attestation_lenovo_carbon_x1",
    ]

    @Test(
        "the three Windows Hello captures verify exactly as sent, trusted to Microsoft's TPM root",
        arguments: asSent)
    func verifiesAsSent(name: String) throws {
        let capture = Self.capture(name)
        let response = capture.credential
        // What makes these captures the test: not the canonical form browsers send.
        let members = try #require(
            (try JSONSerialization.jsonObject(with: Data(response.utf8)) as? [String: Any])?["response"]
                as? [String: String])
        #expect(members.values.contains { $0.contains("+") || $0.contains("/") || $0.hasSuffix("=") })
        let registration = try Self.register(capture, json: response)
        #expect(registration.attestationFormat == "tpm")
        #expect(registration.attestationType == .attestationCA)
        #expect(registration.attestationTrusted)
        #expect(registration.credentialID == Base64URL.decode(capture.credentialId))
        #expect(registration.algorithm == .rs256)
        // The canonical id is what the response keeps for lookups.
        let parsed = try RegistrationResponseJSON(json: Array(response.utf8))
        #expect(parsed.id == capture.credentialId)
    }

    @Test(
        "the same captures rewritten as canonical base64url verify to the same credential", arguments: asSent)
    func canonicalSpellingIsTheSameCredential(name: String) throws {
        let capture = Self.capture(name)
        var object = try #require(
            try JSONSerialization.jsonObject(with: Data(capture.credential.utf8)) as? [String: Any])
        var members = try #require(object["response"] as? [String: String])
        for (key, value) in members {
            members[key] = Base64URL.encode(try #require(Base64URL.decodeTolerant(value)))
        }
        object["response"] = members
        let canonical = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        let asSent = try Self.register(capture, json: capture.credential)
        let rewritten = try Self.register(capture, json: canonical)
        #expect(asSent.credentialID == rewritten.credentialID)
        #expect(asSent.publicKeyBytes == rewritten.publicKeyBytes)
        #expect(asSent.attestationTrustPath == rewritten.attestationTrustPath)
    }

    @Test(
        "a capture with one base64 member in a mixed alphabet, or stray padding, is refused",
        arguments: asSent)
    func notBase64IsRefused(name: String) throws {
        let capture = Self.capture(name)
        let credential = capture.credential
        // The attestation objects are in the standard alphabet: one `-` makes them mixed.
        let attestation = try #require(credential.range(of: "\"attestationObject\": \"")?.upperBound)
        var mixed = credential
        let fifth = mixed.index(attestation, offsetBy: 4)
        mixed.replaceSubrange(fifth...fifth, with: "-")
        expectCode(.responseInvalidBase64URL) { _ = try Self.register(capture, json: mixed) }
        let padded = credential.replacingOccurrences(
            of: "\"rawId\": \"\(capture.credentialId)\"", with: "\"rawId\": \"\(capture.credentialId)==\"")
        #expect(padded != credential)
        expectCode(.responseInvalidBase64URL) { _ = try Self.register(capture, json: padded) }
    }

    @Test(
        "the ECC capture (canonical base64url) verifies too, and none verifies without the anchor under requireTrusted"
    )
    func eccAndUntrusted() throws {
        let ecc = Self.capture("tpm_with_ecc_public_area_type")
        let registration = try Self.register(ecc, json: ecc.credential)
        #expect(registration.attestationTrusted && registration.algorithm == .es256)
        for name in Self.asSent {
            let capture = Self.capture(name)
            var rp = Self.relyingParty(capture, anchored: false)
            rp.attestationPolicy = .requireTrusted
            expectCode(.attestationUntrusted) {
                _ = try verifyRegistration(
                    response: RegistrationResponseJSON(json: Array(capture.credential.utf8)),
                    expectedChallenge: Base64URL.decode(capture.challenge)!, relyingParty: rp,
                    at: Self.validationTime)
            }
            // Attestation verified but not trusted is what the default (acceptUntrusted) policy takes.
            #expect(try !Self.register(capture, json: capture.credential, anchored: false).attestationTrusted)
        }
    }
}
