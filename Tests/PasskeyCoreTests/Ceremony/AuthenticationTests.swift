import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

@Suite("§7.2 authentication ceremony")
struct AuthenticationTests {
    @Test(
        "§7.2: a passkey registered through §7.1 logs in end to end for every algorithm",
        arguments: Fixture.algorithms)
    func logsInEveryAlgorithm(_ algorithm: COSEAlgorithm) throws {
        let credential = try #require(Fixture.credentials[algorithm])
        let registered = try Fixture.register(credential)
        // Store what registration returned, as bytes, exactly as a database would.
        let stored = try StoredCredential(
            id: registered.credentialID, publicKeyBytes: registered.publicKeyBytes,
            signCount: registered.signCount,
            userHandle: Fixture.userHandle, backupEligible: registered.backupEligible)
        let result = try Fixture.authenticate(
            credential, behaviour: behaviour { $0.signCount = 1 }, stored: stored)
        #expect(result.credentialID == credential.id)
        #expect(result.signCount == 1)
        #expect(result.userHandle == Fixture.userHandle)
        #expect(result.userPresent && result.userVerified && result.backupEligible && result.backupState)
        #expect(!result.counterRegressed && !result.backupEligibilityChanged)
        #expect(result.authenticatorAttachment == .platform)
    }

    @Test("§7.2 step 5: rejects a credential that allowCredentials did not name; empty means any")
    func credentialNotAllowed() throws {
        expectCode(.ceremonyCredentialNotAllowed) {
            _ = try Fixture.authenticate(allowCredentials: [Fixture.otherUsersES256.id])
        }
        _ = try Fixture.authenticate(allowCredentials: [Fixture.otherUsersES256.id, Fixture.es256.id])
        _ = try Fixture.authenticate(allowCredentials: [])
    }

    @Test("§7.2 step 6: rejects a stored record for a different credential, and an over-long rawId")
    func credentialRecord() {
        expectCode(.ceremonyCredentialIDMismatch) {
            _ = try Fixture.authenticate(stored: Fixture.stored(Fixture.otherUsersES256))
        }
        expectCode(.ceremonyCredentialIDTooLong) {
            _ = try Fixture.authenticate(behaviour: behaviour { $0.rawID = Array(repeating: 2, count: 1024) })
        }
    }

    @Test("§7.2 step 6: the user handle is bound to the credential's owner and to the user who asked")
    func userHandleBinding() throws {
        // Username-first login for the owner: fine, with or without a returned handle.
        _ = try Fixture.authenticate(expectedUserHandle: Fixture.userHandle)
        _ = try Fixture.authenticate(
            behaviour: behaviour { $0.omitUserHandle = true }, expectedUserHandle: Fixture.userHandle)
        // The login named another user, but the credential belongs to this one (the Yubico advisory).
        let mallory = [UInt8](repeating: 0x5a, count: 32)
        let error = expectCode(.ceremonyUserHandleMismatch) {
            _ = try Fixture.authenticate(expectedUserHandle: mallory)
        }
        #expect(error?.message.contains("different user") == true)
        // The authenticator returned a handle that is not the owner's.
        expectCode(.ceremonyUserHandleMismatch) {
            _ = try Fixture.authenticate(behaviour: behaviour { $0.userHandle = mallory })
        }
        expectCode(.ceremonyUserHandleMismatch) {
            _ = try Fixture.authenticate(
                behaviour: behaviour { $0.userHandle = mallory }, expectedUserHandle: Fixture.userHandle)
        }
        // Discoverable login without a handle cannot identify the account.
        expectCode(.ceremonyUserHandleMissing) {
            _ = try Fixture.authenticate(behaviour: behaviour { $0.omitUserHandle = true })
        }
    }

    @Test("§7.2 step 10: rejects client data whose type is not webauthn.get")
    func typeMismatch() {
        expectCode(.ceremonyTypeMismatch) {
            _ = try Fixture.authenticate(behaviour: behaviour { $0.type = "webauthn.create" })
        }
        expectCode(.ceremonyTypeMismatch) {
            _ = try Fixture.authenticate(behaviour: behaviour { $0.type = "payment.get" })
        }
    }

    @Test("§7.2 step 11: rejects a challenge that was not issued")
    func challengeMismatch() {
        expectCode(.ceremonyChallengeMismatch) {
            _ = try Fixture.authenticate(expectedChallenge: Array(repeating: 9, count: 32))
        }
        // Same bytes but one more: a prefix is not a match.
        expectCode(.ceremonyChallengeMismatch) {
            _ = try Fixture.authenticate(expectedChallenge: Fixture.challenge + [0])
        }
        expectCode(.ceremonyChallengeMismatch) {
            _ = try Fixture.authenticate(behaviour: behaviour { $0.challengeText = "not base64url!" })
        }
    }

    @Test("§7.2 step 12: rejects an origin that is not configured exactly")
    func originNotAllowed() {
        for origin in ["https://evil.example", "https://example.com:443", "https://example.com/", "null"] {
            expectCode(.ceremonyOriginNotAllowed, "\(origin)") {
                _ = try Fixture.authenticate(origin: origin)
            }
        }
    }

    @Test("§7.2 step 12: android:apk-key-hash origins are matched exactly when configured")
    func androidOrigin() throws {
        let android = "android:apk-key-hash:" + Base64URL.encode(Digest.sha256("play signing certificate"))
        expectCode(.ceremonyOriginNotAllowed) { _ = try Fixture.authenticate(origin: android) }
        let configured = relyingParty { $0.allowedOrigins.insert(android) }
        _ = try Fixture.authenticate(relyingParty: configured, origin: android)
        expectCode(.ceremonyOriginNotAllowed) {
            _ = try Fixture.authenticate(relyingParty: configured, origin: android.lowercased())
        }
    }

    @Test("§7.2 step 13: cross-origin is refused by default; topOrigin checked only when present")
    func crossAndTopOrigin() throws {
        expectCode(.ceremonyCrossOriginNotAllowed) {
            _ = try Fixture.authenticate(behaviour: behaviour { $0.crossOrigin = true })
        }
        let embedding = relyingParty { $0.allowedTopOrigins = ["https://portal.example"] }
        // An older browser that says crossOrigin without topOrigin: nothing to check beyond the opt-in.
        _ = try Fixture.authenticate(behaviour: behaviour { $0.crossOrigin = true }, relyingParty: embedding)
        _ = try Fixture.authenticate(
            behaviour: behaviour {
                $0.crossOrigin = true
                $0.topOrigin = "https://portal.example"
            }, relyingParty: embedding)
        expectCode(.ceremonyTopOriginNotAllowed) {
            _ = try Fixture.authenticate(
                behaviour: behaviour {
                    $0.crossOrigin = true
                    $0.topOrigin = "https://evil.example"
                }, relyingParty: embedding)
        }
        // A topOrigin is checked even when crossOrigin is (inconsistently) false.
        expectCode(.ceremonyTopOriginNotAllowed) {
            _ = try Fixture.authenticate(behaviour: behaviour { $0.topOrigin = "https://evil.example" })
        }
    }

    @Test("§7.2 step 14: rejects authenticator data scoped to another RP ID")
    func rpIDHashMismatch() {
        expectCode(.ceremonyRPIDHashMismatch) {
            _ = try Fixture.authenticate(behaviour: behaviour { $0.rpID = "example.org" })
        }
    }

    @Test("§7.2 step 15: rejects an assertion without user presence")
    func userNotPresent() {
        expectCode(.ceremonyUserNotPresent) {
            _ = try Fixture.authenticate(behaviour: behaviour { $0.flags.remove(.userPresent) })
        }
    }

    @Test("§7.2 step 16: UV policy — required rejects, preferred accepts, and a mismatch is named")
    func userVerification() throws {
        let noUV = behaviour { $0.flags.remove(.userVerified) }
        let error = expectCode(.ceremonyUserNotVerified) { _ = try Fixture.authenticate(behaviour: noUV) }
        #expect(error?.message.contains("did not verify the user") == true)
        let preferred = relyingParty { $0.userVerification = .preferred }
        #expect(try !Fixture.authenticate(behaviour: noUV, relyingParty: preferred).userVerified)
        let mismatch = expectCode(.ceremonyUserNotVerified) {
            _ = try Fixture.authenticate(
                behaviour: noUV, relyingParty: preferred, requireUserVerification: true)
        }
        #expect(mismatch?.message.contains("the options said userVerification \"preferred\"") == true)
        // The caller may relax UV for one ceremony (for example a low-risk re-authentication).
        _ = try Fixture.authenticate(behaviour: noUV, requireUserVerification: false)
    }

    @Test("§7.2 step 18: a BE change is reported, never refused")
    func backupEligibilityChange() throws {
        let gained = try Fixture.authenticate(stored: Fixture.stored(backupEligible: false))
        #expect(gained.backupEligibilityChanged && gained.backupEligible)
        let lost = try Fixture.authenticate(
            behaviour: behaviour { $0.flags.subtract([.backupEligible, .backupState]) },
            stored: Fixture.stored(backupEligible: true))
        #expect(lost.backupEligibilityChanged && !lost.backupEligible)
        #expect(
            try !Fixture.authenticate(stored: Fixture.stored(backupEligible: true)).backupEligibilityChanged)
    }

    @Test("§6.1: an assertion carrying attested credential data is refused")
    func unexpectedAttestedCredential() {
        expectCode(.ceremonyUnexpectedAttestedCredential) {
            _ = try Fixture.authenticate(behaviour: behaviour { $0.attestedDataInAssertion = true })
        }
    }

    @Test("§7.2 step 21: rejects a signature by another key or over other data")
    func signatureInvalid() throws {
        expectCode(.ceremonySignatureInvalid) {
            _ = try Fixture.authenticate(behaviour: behaviour { $0.signWith = Fixture.otherUsersES256 })
        }
        for algorithm in Fixture.algorithms {
            let credential = try #require(Fixture.credentials[algorithm])
            var parts = Fixture.authenticator.authenticate(
                credential, challenge: Fixture.challenge, origin: Fixture.origin)
            parts.signature[parts.signature.count / 2] ^= 0x01
            expectCode(.ceremonySignatureInvalid, "\(algorithm)") {
                _ = try verifyAuthentication(
                    response: AuthenticationResponseJSON(json: parts.json()),
                    expectedChallenge: Fixture.challenge,
                    relyingParty: Fixture.relyingParty, credential: Fixture.stored(credential),
                    expectedUserHandle: nil)
            }
        }
    }

    @Test("§7.2 step 22: 0→0 is fine, an increase is fine, a regression rejects or flags by policy")
    func counter() throws {
        // Synced passkeys never count.
        #expect(try !Fixture.authenticate(stored: Fixture.stored(signCount: 0)).counterRegressed)
        // Increase, including from 0.
        #expect(
            try Fixture.authenticate(
                behaviour: behaviour { $0.signCount = 6 }, stored: Fixture.stored(signCount: 5)
            ).signCount == 6)
        #expect(try Fixture.authenticate(behaviour: behaviour { $0.signCount = 1 }).signCount == 1)
        // Regression: equal, lower, and back to zero from a non-zero value.
        for (stored, received) in [(5, 5), (5, 4), (5, 0)] as [(UInt32, UInt32)] {
            let error = expectCode(.ceremonyCounterRegression, "\(stored)→\(received)") {
                _ = try Fixture.authenticate(
                    behaviour: behaviour { $0.signCount = received },
                    stored: Fixture.stored(signCount: stored))
            }
            #expect(error?.message.contains("from \(stored) to \(received)") == true)
            let flagged = try Fixture.authenticate(
                behaviour: behaviour { $0.signCount = received },
                relyingParty: relyingParty { $0.counterPolicy = .flag },
                stored: Fixture.stored(signCount: stored))
            #expect(flagged.counterRegressed && flagged.signCount == received)
        }
    }

    @Test("§7.2: a stored key whose bytes no longer parse keeps its cose code")
    func corruptStoredKey() {
        #expect(throws: PasskeyError(.cborTruncated, "")) {
            try StoredCredential(
                id: [1], publicKeyBytes: Array(Fixture.es256.publicKey.encoded.dropLast()), signCount: 0,
                userHandle: [1], backupEligible: false)
        }
    }
}
