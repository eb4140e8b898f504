import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

/// The W3C WebAuthn L3 §16 test vectors for tpm and android-key, run through both ceremonies.
///
/// The vectors come from the specification (Tests/Fixtures), not from this code: their certificates
/// chain to the fixture's attestationCACertificate, which is an anchor only when a test says so.
@Suite("W3C §16 vectors: tpm and android-key")
struct W3CTPMAndroidKeyVectorTests {
    /// One vector's public inputs, decoded from hex.
    struct Vector {
        let registrationChallenge: [UInt8]
        let registrationClientData: [UInt8]
        let attestationObject: [UInt8]
        let credentialID: [UInt8]
        let aaguid: [UInt8]
        let authenticationChallenge: [UInt8]
        let authenticationClientData: [UInt8]
        let authenticatorData: [UInt8]
        let signature: [UInt8]
    }

    /// The fixture file's shape: hex strings throughout.
    struct FixtureFile: Decodable, Sendable {
        struct Entry: Decodable, Sendable {
            let anchor: String
            let registration: [String: String]
            let authentication: [String: String]
        }
        let attestationCACertificate: String
        let vectors: [Entry]
    }

    static let fixture: FixtureFile = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures/w3c-webauthn-l3-test-vectors.json")
        guard let data = try? Data(contentsOf: url),
            let file = try? JSONDecoder().decode(FixtureFile.self, from: data)
        else { fatalError("cannot read \(url.path)") }
        return file
    }()

    /// The root every attested vector chains to.
    static let attestationCA = hex(fixture.attestationCACertificate)
    /// Inside every vector certificate's validity (they run to 3024).
    static let validationTime = Date(timeIntervalSince1970: 1_767_225_600)

    static func vector(_ anchor: String) -> Vector {
        let entry = fixture.vectors.first { $0.anchor == anchor }!
        let registration = entry.registration
        let authentication = entry.authentication
        return Vector(
            registrationChallenge: hex(registration["challenge"]!),
            registrationClientData: hex(registration["clientDataJSON"]!),
            attestationObject: hex(registration["attestationObject"]!),
            credentialID: hex(registration["credential_id"]!), aaguid: hex(registration["aaguid"]!),
            authenticationChallenge: hex(authentication["challenge"]!),
            authenticationClientData: hex(authentication["clientDataJSON"]!),
            authenticatorData: hex(authentication["authenticatorData"]!),
            signature: hex(authentication["signature"]!))
    }

    static func relyingParty(
        anchors: [String: [[UInt8]]] = [:], policy: RelyingParty.AttestationPolicy = .acceptUntrusted
    ) -> RelyingParty {
        var rp = RelyingParty(id: "example.org", name: "Example", allowedOrigins: ["https://example.org"])
        rp.userVerification = .preferred
        rp.trustAnchors = StaticTrustAnchors(perFormat: anchors)
        rp.attestationPolicy = policy
        // The §16 android-key vector's authorization lists are empty (a Software-level key
        // description), so only the "if stated" reading of origin and purpose accepts it; the
        // default policy's refusal is its own test below.
        rp.attestationFormats.register(AndroidKeyAttestation(authorizationPolicy: .ifStated))
        return rp
    }

    static func register(_ vector: Vector, _ rp: RelyingParty) throws(PasskeyError) -> VerifiedRegistration {
        try verifyRegistration(
            response: RegistrationResponseJSON(
                rawID: vector.credentialID, clientDataJSON: vector.registrationClientData,
                attestationObject: vector.attestationObject),
            expectedChallenge: vector.registrationChallenge, relyingParty: rp, at: validationTime)
    }

    @Test(
        "§16 tpm-es256 and android-key-es256: trusted with the vectors' CA as anchor, then the assertion verifies",
        arguments: [
            ("tpm-es256", "tpm", AttestationType.attestationCA), ("android-key-es256", "android-key", .basic),
        ])
    func trustedRegistrationAndAssertion(anchor: String, format: String, type: AttestationType) throws {
        let vector = Self.vector(anchor)
        let rp = Self.relyingParty(anchors: [format: [Self.attestationCA]], policy: .requireTrusted)
        let registration = try Self.register(vector, rp)
        #expect(registration.attestationFormat == format)
        #expect(registration.attestationType == type)
        #expect(registration.attestationTrusted)
        #expect(registration.attestationAnchor != nil)
        #expect(registration.credentialID == vector.credentialID)
        #expect(withUnsafeBytes(of: registration.aaguid.uuid) { Array($0) } == vector.aaguid)
        #expect(registration.algorithm == .es256)
        #expect(registration.attestationTrustPath.count >= 1)

        let stored = StoredCredential(
            id: registration.credentialID, publicKey: registration.publicKey,
            signCount: registration.signCount,
            userHandle: [1, 2, 3], backupEligible: registration.backupEligible)
        let assertion = try verifyAuthentication(
            response: AuthenticationResponseJSON(
                rawID: vector.credentialID, clientDataJSON: vector.authenticationClientData,
                authenticatorData: vector.authenticatorData, signature: vector.signature, userHandle: nil),
            expectedChallenge: vector.authenticationChallenge, relyingParty: rp, credential: stored,
            expectedUserHandle: [1, 2, 3])
        #expect(assertion.credentialID == vector.credentialID)

        // The assertion's signature is bound to its data: one flipped byte fails it.
        var damaged = vector.signature
        damaged[damaged.count - 1] ^= 0x01
        expectCode(.ceremonySignatureInvalid) {
            _ = try verifyAuthentication(
                response: AuthenticationResponseJSON(
                    rawID: vector.credentialID, clientDataJSON: vector.authenticationClientData,
                    authenticatorData: vector.authenticatorData, signature: damaged, userHandle: nil),
                expectedChallenge: vector.authenticationChallenge, relyingParty: rp, credential: stored,
                expectedUserHandle: [1, 2, 3])
        }
    }

    @Test(
        "§16 tpm-es256 and android-key-es256 without the anchor: verified but untrusted, refused under requireTrusted",
        arguments: ["tpm-es256", "android-key-es256"])
    func untrustedWithoutAnchor(anchor: String) throws {
        let vector = Self.vector(anchor)
        let registration = try Self.register(vector, Self.relyingParty())
        #expect(!registration.attestationTrusted)
        #expect(registration.attestationAnchor == nil)
        expectCode(.attestationUntrusted) {
            _ = try Self.register(vector, Self.relyingParty(policy: .requireTrusted))
        }
        // The anchor of another format does not count.
        expectCode(.attestationUntrusted) {
            _ = try Self.register(
                vector, Self.relyingParty(anchors: ["packed": [Self.attestationCA]], policy: .requireTrusted))
        }
    }

    @Test(
        "§16 android-key-es256 under the default policy: empty teeEnforced is refused, as it is for software keys"
    )
    func androidKeyVectorNeedsTEEByDefault() {
        let vector = Self.vector("android-key-es256")
        for policy in [AndroidKeyAttestation.AuthorizationPolicy.trustedEnvironment, .softwareAllowed] {
            var rp = Self.relyingParty(anchors: ["android-key": [Self.attestationCA]])
            rp.attestationFormats.register(AndroidKeyAttestation(authorizationPolicy: policy))
            expectCode(.attestationAndroidKeyAuthorizationInvalid, "\(policy)") {
                _ = try Self.register(vector, rp)
            }
        }
    }

    @Test("§16 vectors: a challenge other than the vector's fails before attestation is looked at")
    func wrongChallenge() {
        let vector = Self.vector("tpm-es256")
        expectCode(.ceremonyChallengeMismatch) {
            _ = try verifyRegistration(
                response: RegistrationResponseJSON(
                    rawID: vector.credentialID, clientDataJSON: vector.registrationClientData,
                    attestationObject: vector.attestationObject),
                expectedChallenge: Array(repeating: 0, count: 32), relyingParty: Self.relyingParty(),
                at: Self.validationTime)
        }
    }
}
