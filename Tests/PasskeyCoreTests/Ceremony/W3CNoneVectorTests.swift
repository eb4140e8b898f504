import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

/// The W3C WebAuthn L3 §16 vectors without attestation: the plain ES256 credential, the cross-origin
/// and top-origin ones, and the longest credential ID; both ceremonies, under the origin policies.
@Suite("W3C §16 vectors without attestation")
struct W3CNoneVectorTests {
    typealias Vectors = W3CAttestationVectorTests

    static func relyingParty(topOrigins: Set<String> = []) -> RelyingParty {
        var rp = RelyingParty(id: "example.org", name: "Example", allowedOrigins: ["https://example.org"])
        rp.allowedTopOrigins = topOrigins
        return rp
    }

    static func register(_ name: String, _ rp: RelyingParty) throws(PasskeyError) -> VerifiedRegistration {
        let registration = Vectors.members(name, "registration")
        return try verifyRegistration(
            response: RegistrationResponseJSON(
                rawID: registration["credential_id"]!, clientDataJSON: registration["clientDataJSON"]!,
                attestationObject: registration["attestationObject"]!),
            expectedChallenge: registration["challenge"]!, relyingParty: rp, requireUserVerification: false,
            at: Vectors.now)
    }

    static func authenticate(_ name: String, _ registered: VerifiedRegistration, _ rp: RelyingParty)
        throws(PasskeyError) -> VerifiedAuthentication
    {
        let authentication = Vectors.members(name, "authentication")
        return try verifyAuthentication(
            response: AuthenticationResponseJSON(
                rawID: registered.credentialID, clientDataJSON: authentication["clientDataJSON"]!,
                authenticatorData: authentication["authenticatorData"]!,
                signature: authentication["signature"]!,
                userHandle: nil),
            expectedChallenge: authentication["challenge"]!, relyingParty: rp,
            credential: StoredCredential(
                id: registered.credentialID, publicKey: registered.publicKey, signCount: registered.signCount,
                userHandle: Vectors.userHandle, backupEligible: registered.backupEligible),
            expectedUserHandle: Vectors.userHandle, requireUserVerification: false)
    }

    @Test("none-es256 and the 1023-byte credential ID register and authenticate")
    func plain() throws {
        for name in ["none-es256", "none-es256-long-credential-id"] {
            let registered = try Self.register(name, Self.relyingParty())
            #expect(registered.attestationFormat == "none" && !registered.attestationTrusted)
            #expect(registered.credentialID == Vectors.members(name, "registration")["credential_id"])
            _ = try Self.authenticate(name, registered, Self.relyingParty())
        }
        #expect(
            try Self.register("none-es256-long-credential-id", Self.relyingParty()).credentialID.count == 1023
        )
    }

    @Test("§7.1 step 10: the crossOrigin vector is refused until top origins are allowed")
    func crossOrigin() throws {
        expectCode(.ceremonyCrossOriginNotAllowed) {
            _ = try Self.register("none-es256-crossOrigin", Self.relyingParty())
        }
        // It names no topOrigin, so any allowed set admits it: topOrigin is checked only when present.
        let rp = Self.relyingParty(topOrigins: ["https://example.com"])
        let registered = try Self.register("none-es256-crossOrigin", rp)
        _ = try Self.authenticate("none-es256-crossOrigin", registered, rp)
    }

    @Test("§7.1 step 10: the topOrigin vector passes only when https://example.com is an allowed top origin")
    func topOrigin() throws {
        expectCode(.ceremonyCrossOriginNotAllowed) {
            _ = try Self.register("none-es256-topOrigin", Self.relyingParty())
        }
        expectCode(.ceremonyTopOriginNotAllowed) {
            _ = try Self.register(
                "none-es256-topOrigin", Self.relyingParty(topOrigins: ["https://other.example"]))
        }
        let rp = Self.relyingParty(topOrigins: ["https://example.com"])
        let registered = try Self.register("none-es256-topOrigin", rp)
        _ = try Self.authenticate("none-es256-topOrigin", registered, rp)
    }
}
