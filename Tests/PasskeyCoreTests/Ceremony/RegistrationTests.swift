import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

/// A format that vouches for every statement, standing in for the certificate formats the next
/// engineer plugs in: it proves the registry and the policy step work with a trusted outcome.
private struct VouchingFormat: AttestationFormat {
    let identifier = "test-vouching"

    func verify(
        statement: CBORMap, authenticatorData: AuthenticatorData, authenticatorDataBytes: [UInt8],
        clientDataHash: [UInt8], context: AttestationContext
    ) throws(PasskeyError) -> AttestationOutcome {
        // The contract: the format sees the exact signed bytes and the hash it would verify over.
        guard authenticatorDataBytes == authenticatorData.rawBytes, clientDataHash.count == 32 else {
            throw PasskeyError(.attestationInvalidStatement, "the ceremony passed inconsistent inputs")
        }
        let anchors =
            context.trustAnchors(forFormat: identifier) + context.trustAnchors(forAAGUID: context.aaguid)
        return AttestationOutcome(
            type: .basic, trustPath: [[0x30, 0x00]], trusted: !anchors.isEmpty, anchorsUsed: "test root")
    }
}

@Suite("§7.1 registration ceremony")
struct RegistrationTests {
    @Test(
        "§7.1: a none-attested passkey registers end to end for every algorithm",
        arguments: Fixture.algorithms)
    func registersEveryAlgorithm(_ algorithm: COSEAlgorithm) throws {
        let credential = try #require(Fixture.credentials[algorithm])
        let result = try Fixture.register(credential)
        #expect(result.credentialID == credential.id)
        #expect(result.publicKey == credential.publicKey)
        #expect(result.algorithm == algorithm)
        #expect(result.signCount == 0)
        #expect(result.aaguid == SoftwareAuthenticator.testAAGUID)
        #expect(result.userPresent && result.userVerified && result.backupEligible && result.backupState)
        #expect(result.transports == [.hybrid, .internal])
        #expect(result.attestationFormat == "none")
        #expect(result.attestationType == AttestationType.none)
        #expect(!result.attestationTrusted)
        #expect(result.attestationTrustPath.isEmpty)
        #expect(result.authenticatorAttachment == .platform)
        #expect(result.residentKey == true)
        // The stored bytes parse back to the same key, so a login can use them.
        #expect(try COSEKey(encoded: result.publicKeyBytes) == credential.publicKey)
    }

    @Test("§7.1: without L3 convenience members, credProps or attachment the registration still verifies")
    func minimalResponse() throws {
        let result = try Fixture.register(
            behaviour: behaviour {
                $0.includeConvenienceMembers = false
                $0.residentKey = nil
            })
        #expect(result.residentKey == nil)
    }

    @Test("§7.1 step 7: rejects client data whose type is not webauthn.create")
    func typeMismatch() {
        expectCode(.ceremonyTypeMismatch) {
            _ = try Fixture.register(behaviour: behaviour { $0.type = "webauthn.get" })
        }
    }

    @Test(
        "§7.1 step 8: rejects a challenge that was not issued, a second spelling of it, and an empty expectation"
    )
    func challengeMismatch() {
        expectCode(.ceremonyChallengeMismatch) {
            _ = try Fixture.register(expectedChallenge: Array(repeating: 7, count: 32))
        }
        // "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8" with padding is the same bytes spelled differently.
        expectCode(.ceremonyChallengeMismatch) {
            _ = try Fixture.register(
                behaviour: behaviour { $0.challengeText = Base64URL.encode(Fixture.challenge) + "=" })
        }
        expectCode(.ceremonyChallengeMismatch) {
            _ = try Fixture.register(behaviour: behaviour { $0.challengeText = "" }, expectedChallenge: [])
        }
    }

    @Test("§7.1 step 9: rejects an origin that is not configured, including a different port or scheme")
    func originNotAllowed() {
        for origin in [
            "https://evil.example", "https://example.com:8443", "http://example.com",
            "https://sub.example.com",
        ] {
            expectCode(.ceremonyOriginNotAllowed, "\(origin)") { _ = try Fixture.register(origin: origin) }
        }
    }

    @Test("§7.1 step 10: a cross-origin iframe is refused unless top origins are configured")
    func crossOrigin() throws {
        let framed = behaviour {
            $0.crossOrigin = true
            $0.topOrigin = "https://portal.example"
        }
        expectCode(.ceremonyCrossOriginNotAllowed) { _ = try Fixture.register(behaviour: framed) }
        let embedding = relyingParty { $0.allowedTopOrigins = ["https://portal.example"] }
        _ = try Fixture.register(behaviour: framed, relyingParty: embedding)
    }

    @Test("§7.1 step 10: a present topOrigin must be one of the configured top origins")
    func topOriginNotAllowed() {
        let embedding = relyingParty { $0.allowedTopOrigins = ["https://portal.example"] }
        expectCode(.ceremonyTopOriginNotAllowed) {
            _ = try Fixture.register(
                behaviour: behaviour {
                    $0.crossOrigin = true
                    $0.topOrigin = "https://evil.example"
                }, relyingParty: embedding)
        }
    }

    @Test("§7.1 step 12: rejects an attestation object that is not exactly {fmt, attStmt, authData}")
    func malformedAttestationObject() throws {
        let valid = Fixture.authenticator.register(
            Fixture.es256, challenge: Fixture.challenge, origin: Fixture.origin,
            behaviour: behaviour { $0.includeConvenienceMembers = false })
        let authData = try #require(
            try CBORDecoder().decode(valid.attestationObject).mapValue?[name: "authData"]?.bytesValue)
        let broken: [CBORValue] = [
            .array([]),
            .map(["fmt": "none", "attStmt": .map([:])]),
            .map(["fmt": "none", "attStmt": .map([:]), "authData": .bytes(authData), "extra": 1]),
            .map(["fmt": 1, "attStmt": .map([:]), "authData": .bytes(authData)]),
            .map(["fmt": "none", "attStmt": .array([]), "authData": .bytes(authData)]),
            .map(["fmt": "none", "attStmt": .map([:]), "authData": .text("x")]),
        ]
        for value in broken {
            var parts = valid
            parts.attestationObject = CBOREncoder.encode(value)
            expectCode(.attestationMalformed) { try verify(parts) }
        }
        // Broken CBOR keeps its own code.
        var truncated = valid
        truncated.attestationObject.removeLast()
        expectCode(.cborTruncated) { try verify(truncated) }
    }

    @Test("§7.1 step 13: rejects authenticator data scoped to another RP ID")
    func rpIDHashMismatch() {
        expectCode(.ceremonyRPIDHashMismatch) {
            _ = try Fixture.register(behaviour: behaviour { $0.rpID = "evil.com" })
        }
    }

    @Test("§7.1 step 14: rejects a registration without user presence")
    func userNotPresent() {
        expectCode(.ceremonyUserNotPresent) {
            _ = try Fixture.register(behaviour: behaviour { $0.flags.remove(.userPresent) })
        }
    }

    @Test("§7.1 step 14: a conditional-mediation registration may lack user presence, not verification")
    func conditionalMediation() throws {
        let notPresent = behaviour { $0.flags.remove(.userPresent) }
        let json = Fixture.authenticator.register(
            Fixture.es256, challenge: Fixture.challenge, origin: Fixture.origin, behaviour: notPresent
        ).json()
        let verified = try verifyRegistration(
            response: RegistrationResponseJSON(json: json), expectedChallenge: Fixture.challenge,
            relyingParty: Fixture.relyingParty, conditionalMediation: true, at: Fixture.now)
        #expect(!verified.userPresent && verified.credentialID == Fixture.es256.id)
        // The same response without the caller saying the options were conditional is refused.
        expectCode(.ceremonyUserNotPresent) {
            _ = try verifyRegistration(
                response: RegistrationResponseJSON(json: json), expectedChallenge: Fixture.challenge,
                relyingParty: Fixture.relyingParty, at: Fixture.now)
        }
        // UV stays the policy's: conditional does not lower it.
        let neither = behaviour {
            $0.flags.remove(.userPresent)
            $0.flags.remove(.userVerified)
        }
        expectCode(.ceremonyUserNotVerified) {
            _ = try verifyRegistration(
                response: RegistrationResponseJSON(
                    json: Fixture.authenticator.register(
                        Fixture.es256, challenge: Fixture.challenge, origin: Fixture.origin,
                        behaviour: neither
                    ).json()),
                expectedChallenge: Fixture.challenge, relyingParty: Fixture.relyingParty,
                conditionalMediation: true, at: Fixture.now)
        }
    }

    @Test("§7.1 step 15: UV is enforced under a required policy and the message names the mismatch")
    func userNotVerified() throws {
        let noUV = behaviour { $0.flags.remove(.userVerified) }
        let strict = expectCode(.ceremonyUserNotVerified) { _ = try Fixture.register(behaviour: noUV) }
        #expect(strict?.message.contains("\"required\"") == true)
        // Policy "preferred" (so the options said preferred) but this ceremony demands UV: say so.
        let lenient = relyingParty { $0.userVerification = .preferred }
        let mismatch = expectCode(.ceremonyUserNotVerified) {
            _ = try Fixture.register(behaviour: noUV, relyingParty: lenient, requireUserVerification: true)
        }
        #expect(mismatch?.message.contains("userVerification \"preferred\"") == true)
        #expect(mismatch?.message.contains("set the policy to \"required\"") == true)
        // Without the override, preferred accepts a registration without UV.
        #expect(try !Fixture.register(behaviour: noUV, relyingParty: lenient).userVerified)
    }

    @Test("§7.1 step 16: BS without BE keeps its structural code")
    func backupStateWithoutEligibility() {
        expectCode(.authDataBackupStateWithoutEligibility) {
            _ = try Fixture.register(behaviour: behaviour { $0.flags.remove(.backupEligible) })
        }
    }

    @Test("§7.1 step 19: rejects an algorithm the relying party did not offer")
    func algorithmNotAllowed() throws {
        let es256Only = relyingParty { $0.allowedAlgorithms = [.es256] }
        expectCode(.ceremonyAlgorithmNotAllowed) {
            _ = try Fixture.register(try #require(Fixture.credentials[.edDSA]), relyingParty: es256Only)
        }
    }

    @Test("§7.1 step 19 precondition: registration authenticator data must carry the credential")
    func missingAttestedCredential() throws {
        var parts = Fixture.authenticator.register(
            Fixture.es256, challenge: Fixture.challenge, origin: Fixture.origin,
            behaviour: behaviour { $0.includeConvenienceMembers = false })
        let bare = Digest.sha256(Fixture.rpID) + [0x1d, 0, 0, 0, 0]
        parts.attestationObject = SoftwareAuthenticator.attestationObject(
            format: "none", statement: [:], authenticatorData: bare)
        expectCode(.ceremonyMissingAttestedCredential) { try verify(parts) }
    }

    @Test("§7.1 step 21: an fmt that is not registered is refused, matched case-sensitively")
    func unsupportedFormat() {
        for format in ["None", "Packed", "FIDO-U2F", "TPM", "packed2", "test-vouching"] {
            expectCode(.attestationUnsupportedFormat, "\(format)") {
                _ = try Fixture.register(behaviour: behaviour { $0.attestationFormat = format })
            }
        }
        var registry = AttestationFormatRegistry.default
        registry.unregister("none")
        expectCode(.attestationUnsupportedFormat) {
            _ = try Fixture.register(relyingParty: relyingParty { $0.attestationFormats = registry })
        }
        #expect(
            AttestationFormatRegistry.default.identifiers == [
                "android-key", "android-safetynet", "apple", "compound", "fido-u2f", "none", "packed", "tpm",
            ])
    }

    @Test("§7.1 step 22: the none format refuses a non-empty statement")
    func noneWithStatement() {
        expectCode(.attestationInvalidStatement) {
            _ = try Fixture.register(behaviour: behaviour { $0.attestationStatement = ["sig": .bytes([1])] })
        }
    }

    @Test("§7.1 step 25: rejects a credential ID over 1023 bytes, and a rawId that is not the attested ID")
    func credentialID() {
        expectCode(.ceremonyCredentialIDTooLong) {
            _ = try Fixture.register(behaviour: behaviour { $0.rawID = Array(repeating: 1, count: 1024) })
        }
        expectCode(.ceremonyCredentialIDMismatch) {
            _ = try Fixture.register(behaviour: behaviour { $0.rawID = Array(repeating: 1, count: 32) })
        }
    }

    @Test(
        "§7.1 step 27: requireTrusted refuses none; a trusted plug-in format passes; compromised models fail")
    func attestationPolicy() throws {
        let strict = relyingParty { $0.attestationPolicy = .requireTrusted }
        expectCode(.attestationUntrusted) { _ = try Fixture.register(relyingParty: strict) }

        var vouching = strict
        vouching.attestationFormats.register(VouchingFormat())
        let plugged = behaviour { $0.attestationFormat = "test-vouching" }
        // Registered but no anchors configured: verified, not trusted, refused by the strict policy.
        expectCode(.attestationUntrusted) {
            _ = try Fixture.register(behaviour: plugged, relyingParty: vouching)
        }
        // Accepted as untrusted under the default policy, with the outcome reported.
        var lenient = vouching
        lenient.attestationPolicy = .acceptUntrusted
        let untrusted = try Fixture.register(behaviour: plugged, relyingParty: lenient)
        #expect(untrusted.attestationType == .basic && !untrusted.attestationTrusted)

        // Anchors per AAGUID from metadata make it trusted.
        let aaguid = SoftwareAuthenticator.testAAGUID
        vouching.metadata = InMemoryMetadataSource(entries: [
            aaguid: AuthenticatorMetadata(name: "Test Key", attestationRootCertificates: [[0x30, 0x00]])
        ])
        let trusted = try Fixture.register(behaviour: plugged, relyingParty: vouching)
        #expect(trusted.attestationTrusted && trusted.attestationAnchor == "test root")
        #expect(trusted.attestationTrustPath == [[0x30, 0x00]])
        #expect(trusted.authenticatorMetadata?.name == "Test Key")

        // Configured per-format anchors work the same way.
        var perFormat = strict
        perFormat.attestationFormats.register(VouchingFormat())
        perFormat.trustAnchors = StaticTrustAnchors(perFormat: ["test-vouching": [[0x30, 0x00]]])
        #expect(try Fixture.register(behaviour: plugged, relyingParty: perFormat).attestationTrusted)

        // A revoked model is refused in strict mode and reported otherwise.
        vouching.metadata = InMemoryMetadataSource(entries: [
            aaguid: AuthenticatorMetadata(
                name: "Test Key", attestationRootCertificates: [[0x30, 0x00]],
                statusReports: [.fidoCertified, .revoked])
        ])
        expectCode(.attestationAuthenticatorCompromised) {
            _ = try Fixture.register(behaviour: plugged, relyingParty: vouching)
        }
        vouching.attestationPolicy = .acceptUntrusted
        let flagged = try Fixture.register(behaviour: plugged, relyingParty: vouching)
        #expect(flagged.authenticatorMetadata?.statusReports.contains(.revoked) == true)
    }

    @Test(
        "§5.2.1: authenticatorData, publicKey and publicKeyAlgorithm must agree with the attestation object")
    func convenienceMembers() throws {
        let valid = Fixture.authenticator.register(
            Fixture.es256, challenge: Fixture.challenge, origin: Fixture.origin)
        var parts = valid
        parts.authenticatorData?[0] ^= 1
        expectCode(.responseInconsistent) { try verify(parts) }
        parts = valid
        parts.publicKeyAlgorithm = -8
        expectCode(.responseInconsistent) { try verify(parts) }
        parts = valid
        parts.publicKey = Fixture.otherUsersES256.publicKey.publicKey.derRepresentation
        expectCode(.responseInconsistent) { try verify(parts) }
    }

    @Test("§7.1: an android:apk-key-hash origin is accepted only when configured")
    func androidOrigin() throws {
        let android = "android:apk-key-hash:" + Base64URL.encode(Digest.sha256("release signing certificate"))
        expectCode(.ceremonyOriginNotAllowed) { _ = try Fixture.register(origin: android) }
        let configured = relyingParty { $0.allowedOrigins.insert(android) }
        _ = try Fixture.register(relyingParty: configured, origin: android)
        // A different signing certificate (the upload key rather than Play's) is another origin.
        let upload = "android:apk-key-hash:" + Base64URL.encode(Digest.sha256("upload signing certificate"))
        expectCode(.ceremonyOriginNotAllowed) {
            _ = try Fixture.register(relyingParty: configured, origin: upload)
        }
    }

    @Test(
        "§7.1 step 19: a credential public key of small order is refused with cose.small_order_key",
        arguments: SmallOrderEd25519.encodings.map(\.hex))
    func smallOrderCredentialKey(encoding: String) throws {
        let credential = try #require(Fixture.credentials[.edDSA])
        var parts = Fixture.authenticator.register(
            credential, challenge: Fixture.challenge, origin: Fixture.origin,
            behaviour: behaviour { $0.includeConvenienceMembers = false })
        // The authenticator's own key ends the authenticator data; a hostile one sends another.
        let authData = try #require(
            try CBORDecoder().decode(parts.attestationObject).mapValue?[name: "authData"]?.bytesValue)
        let ownKey = credential.publicKey.encoded
        #expect(Array(authData.suffix(ownKey.count)) == ownKey)
        var map = TestKeys.ed25519.coseMap(algorithm: .edDSA)
        map[-2] = .bytes(hex(encoding))
        parts.attestationObject = SoftwareAuthenticator.attestationObject(
            format: "none", statement: [:],
            authenticatorData: authData.dropLast(ownKey.count) + CBOREncoder.encode(.map(map)))
        expectCode(.coseSmallOrderKey) { try verify(parts) }
    }

    /// Verifies a registration built from (possibly damaged) parts.
    private func verify(_ parts: SoftwareRegistration) throws(PasskeyError) {
        _ = try verifyRegistration(
            response: RegistrationResponseJSON(json: parts.json()), expectedChallenge: Fixture.challenge,
            relyingParty: Fixture.relyingParty, at: Fixture.now)
    }
}
