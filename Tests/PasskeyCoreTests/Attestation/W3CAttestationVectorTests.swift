import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

/// The W3C WebAuthn L3 §16 test vectors for the formats implemented here, through the whole §7.1
/// ceremony and then §7.2 with the key the registration returned.
///
/// Every attestation vector chains to the fixture's one attestationCACertificate, so that root is
/// configured as the anchor for the vector's format (trusted) or left out (untrusted, refused under
/// requireTrusted). Vectors are read from Tests/Fixtures, shared with other test targets.
@Suite("W3C §16 attestation vectors")
struct W3CAttestationVectorTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        let name: String
        let format: String
        let attestationType: AttestationType
        let algorithm: COSEAlgorithm
        var testDescription: String { name }
    }

    static let vectors: [Vector] = [
        Vector(
            name: "packed-self-es256", format: "packed", attestationType: .selfAttestation, algorithm: .es256),
        Vector(name: "packed-es256", format: "packed", attestationType: .basic, algorithm: .es256),
        Vector(name: "packed-es384", format: "packed", attestationType: .basic, algorithm: .es384),
        Vector(name: "packed-es512", format: "packed", attestationType: .basic, algorithm: .es512),
        Vector(name: "packed-rs256", format: "packed", attestationType: .basic, algorithm: .rs256),
        Vector(name: "packed-eddsa", format: "packed", attestationType: .basic, algorithm: .edDSA),
        Vector(name: "apple-es256", format: "apple", attestationType: .anonymizationCA, algorithm: .es256),
        Vector(name: "fido-u2f-es256", format: "fido-u2f", attestationType: .basic, algorithm: .es256),
    ]

    /// The fixture, hex-decoded: attestationCACertificate, and per vector name its parts' members.
    static let fixture: (attestationCA: [UInt8], vectors: [String: [String: [String: [UInt8]]]]) = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/w3c-webauthn-l3-test-vectors.json")
        // A missing or broken fixture is a broken checkout: trap with the reason.
        let data = try! Data(contentsOf: url)
        let json = try! JSONSerialization.jsonObject(with: data) as! [String: Any]
        var vectors: [String: [String: [String: [UInt8]]]] = [:]
        for vector in json["vectors"] as! [[String: Any]] {
            var parts: [String: [String: [UInt8]]] = [:]
            for part in ["registration", "authentication"] {
                parts[part] = (vector[part] as! [String: String]).mapValues(hex)
            }
            vectors[vector["anchor"] as! String] = parts
        }
        return (hex(json["attestationCACertificate"] as! String), vectors)
    }()
    static let attestationCA = fixture.attestationCA
    /// Inside every vector certificate's validity (2024 to 3024).
    static let now = Date(timeIntervalSince1970: 1_767_225_600)
    static let userHandle: [UInt8] = Array(repeating: 0x42, count: 16)

    /// The vector's registration or authentication members, hex-decoded.
    static func members(_ name: String, _ part: String) -> [String: [UInt8]] {
        fixture.vectors[name]![part]!
    }

    static func relyingParty(
        anchorFor format: String?, policy: RelyingParty.AttestationPolicy = .acceptUntrusted
    )
        -> RelyingParty
    {
        var rp = RelyingParty(id: "example.org", name: "Example", allowedOrigins: ["https://example.org"])
        rp.attestationPolicy = policy
        rp.trustAnchors = CombinedTrustAnchors([
            BundledTrustAnchors(),
            StaticTrustAnchors(perFormat: format.map { [$0: [attestationCA]] } ?? [:]),
        ])
        return rp
    }

    static func register(_ name: String, _ relyingParty: RelyingParty) throws(PasskeyError)
        -> VerifiedRegistration
    {
        let registration = members(name, "registration")
        let response = RegistrationResponseJSON(
            rawID: registration["credential_id"]!, clientDataJSON: registration["clientDataJSON"]!,
            attestationObject: registration["attestationObject"]!)
        return try verifyRegistration(
            response: response, expectedChallenge: registration["challenge"]!, relyingParty: relyingParty,
            requireUserVerification: false, at: now)
    }

    @Test("§8 vector registers, trusted with the fixture CA as the format's anchor", arguments: vectors)
    func trustedWithAnchor(_ vector: Vector) throws {
        let result = try Self.register(vector.name, Self.relyingParty(anchorFor: vector.format))
        #expect(result.attestationFormat == vector.format)
        #expect(result.attestationType == vector.attestationType)
        #expect(result.algorithm == vector.algorithm)
        #expect(result.credentialID == Self.members(vector.name, "registration")["credential_id"])
        // Self attestation has no chain, so it can never be trusted.
        #expect(result.attestationTrusted == (vector.attestationType != .selfAttestation))
        #expect(result.attestationTrustPath.isEmpty == (vector.attestationType == .selfAttestation))
        if result.attestationTrusted {
            #expect(result.attestationAnchor?.contains("WebAuthn test vectors") == true)
        }
    }

    @Test(
        "§7.1 step 27: without the anchor the vector is untrusted, and refused under requireTrusted",
        arguments: vectors)
    func untrustedWithoutAnchor(_ vector: Vector) throws {
        let result = try Self.register(vector.name, Self.relyingParty(anchorFor: nil))
        #expect(!result.attestationTrusted)
        #expect(result.attestationType == vector.attestationType)
        expectCode(.attestationUntrusted) {
            _ = try Self.register(vector.name, Self.relyingParty(anchorFor: nil, policy: .requireTrusted))
        }
        // Anchors for a different format never apply.
        let other = vector.format == "packed" ? "fido-u2f" : "packed"
        #expect(try !Self.register(vector.name, Self.relyingParty(anchorFor: other)).attestationTrusted)
    }

    @Test("§7.2: the vector's assertion verifies with the key its registration returned", arguments: vectors)
    func authenticationHalf(_ vector: Vector) throws {
        let registered = try Self.register(vector.name, Self.relyingParty(anchorFor: vector.format))
        let authentication = Self.members(vector.name, "authentication")
        let response = AuthenticationResponseJSON(
            rawID: registered.credentialID, clientDataJSON: authentication["clientDataJSON"]!,
            authenticatorData: authentication["authenticatorData"]!, signature: authentication["signature"]!,
            userHandle: nil)
        let stored = StoredCredential(
            id: registered.credentialID, publicKey: registered.publicKey, signCount: registered.signCount,
            userHandle: Self.userHandle, backupEligible: registered.backupEligible)
        let result = try verifyAuthentication(
            response: response, expectedChallenge: authentication["challenge"]!,
            relyingParty: Self.relyingParty(anchorFor: vector.format), credential: stored,
            expectedUserHandle: Self.userHandle, requireUserVerification: false)
        #expect(result.credentialID == registered.credentialID)
    }

    @Test("packed-ed448: an Ed448 credential is refused as an unsupported algorithm, trusted anchor or not")
    func ed448IsRefused() {
        // The credential key (alg Ed448) is refused while authenticator data is parsed, before the
        // attestation statement is looked at: no anchor can make an unverifiable key acceptable.
        expectCode(.coseUnsupportedAlgorithm) {
            _ = try Self.register("packed-ed448", Self.relyingParty(anchorFor: "packed"))
        }
    }
}
