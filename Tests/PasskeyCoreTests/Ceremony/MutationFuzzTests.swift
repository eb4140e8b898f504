import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

/// Mutation fuzzing of valid responses: thousands of single-byte and single-bit changes, seeded so any
/// failure reproduces.
///
/// The rule each harness enforces, and why it is sound:
/// - Authentication: clientDataJSON and authenticatorData are covered by the signature, the signature is
///   checked, and rawId and userHandle are compared with the stored record. No byte of any of them is
///   outside what is signed or checked, so *every* mutation must fail. A success is a test failure.
/// - Authentication JSON text: a mutation may land in members that are neither signed nor checked
///   (authenticatorAttachment, clientExtensionResults, an unknown member name). It may verify only if
///   every signed or checked field decodes to exactly the original bytes.
/// - Registration with "none": nothing is signed, so the relying party can only check fields. A
///   mutation may verify only when (a) in clientDataJSON, the parsed client data is unchanged (for
///   example the crossOrigin member renamed, which reads as absent, i.e. false), or (b) in authData,
///   it lies in a field none attestation leaves unproven and the ceremony does not check — signCount,
///   the AAGUID, the BE/BS/reserved flag bits, or the credential public key — *and* the verified result
///   reports the mutated value, never the original. Any other verifying mutation (rpIdHash, UP/UV/AT/ED,
///   the credential ID, its length, fmt, attStmt, the CBOR structure) is a test failure.
@Suite("Mutation fuzz")
struct MutationFuzzTests {
    static let iterationsPerField = 1500

    /// Changes one byte: half the time one bit flips, otherwise the byte becomes another value.
    static func mutate(_ bytes: inout [UInt8], _ rng: inout SplitMix64) -> Int {
        let index = Int(rng.next() % UInt64(bytes.count))
        if rng.next() & 1 == 0 {
            bytes[index] ^= 1 << UInt8(rng.next() % 8)
        } else {
            bytes[index] ^= UInt8(1 + rng.next() % 255)
        }
        return index
    }

    @Test(
        "mutation fuzz: every single-byte change to a signed or checked assertion field fails without crashing"
    )
    func assertionFields() throws {
        var rng = SplitMix64(seed: 0x7e57_a55e)
        let stored = Fixture.stored(signCount: 3)
        let valid = Fixture.authenticator.authenticate(
            Fixture.es256, challenge: Fixture.challenge, origin: Fixture.origin,
            behaviour: behaviour { $0.signCount = 7 })
        _ = try Self.verifyAssertion(valid.json(), stored)
        let fields: [(String, WritableKeyPath<SoftwareAssertion, [UInt8]>)] = [
            ("clientDataJSON", \.clientDataJSON), ("authenticatorData", \.authenticatorData),
            ("signature", \.signature), ("rawId", \.rawID),
        ]
        var rejected = 0
        for (name, field) in fields {
            for _ in 0..<Self.iterationsPerField {
                var parts = valid
                let index = Self.mutate(&parts[keyPath: field], &rng)
                if (try? Self.verifyAssertion(parts.json(), stored)) != nil {
                    Issue.record("a mutation of \(name) at byte \(index) verified")
                } else {
                    rejected += 1
                }
            }
        }
        for _ in 0..<Self.iterationsPerField {
            var parts = valid
            var handle = try #require(parts.userHandle)
            let index = Self.mutate(&handle, &rng)
            parts.userHandle = handle
            if (try? Self.verifyAssertion(parts.json(), stored)) != nil {
                Issue.record("a mutation of userHandle at byte \(index) verified")
            } else {
                rejected += 1
            }
        }
        #expect(rejected == 5 * Self.iterationsPerField)
    }

    @Test(
        "mutation fuzz: JSON text mutations of an assertion verify only when no signed or checked byte changed"
    )
    func assertionJSONText() throws {
        var rng = SplitMix64(seed: 0x15_0a7e)
        let stored = Fixture.stored(signCount: 3)
        let valid = Fixture.authenticator.authenticate(
            Fixture.es256, challenge: Fixture.challenge, origin: Fixture.origin,
            behaviour: behaviour { $0.signCount = 7 })
        let json = valid.json()
        for _ in 0..<(2 * Self.iterationsPerField) {
            var mutated = json
            let index = Self.mutate(&mutated, &rng)
            guard (try? Self.verifyAssertion(mutated, stored)) != nil else { continue }
            let response = try AuthenticationResponseJSON(json: mutated)
            let unchanged =
                response.rawID == valid.rawID && response.clientDataJSON == valid.clientDataJSON
                && response.authenticatorData == valid.authenticatorData
                && response.signature == valid.signature
                && response.userHandle == valid.userHandle
            #expect(
                unchanged, "a JSON mutation at byte \(index) verified with different signed or checked bytes")
        }
    }

    @Test(
        "mutation fuzz: registration mutations verify only in fields none leaves unproven, and are reported as sent"
    )
    func registration() throws {
        var rng = SplitMix64(seed: 0x0e61_57e2)
        let valid = Fixture.authenticator.register(
            Fixture.es256, challenge: Fixture.challenge, origin: Fixture.origin,
            behaviour: behaviour {
                $0.includeConvenienceMembers = false
                $0.signCount = 5
            })
        _ = try Self.verifyRegistration(valid)
        let authData = try #require(
            try CBORDecoder().decode(valid.attestationObject).mapValue?[name: "authData"]?.bytesValue)
        // Canonical order puts authData last, so its bytes are the attestation object's tail.
        let authDataOffset = valid.attestationObject.count - authData.count
        #expect(Array(valid.attestationObject[authDataOffset...]) == authData)
        let originalClientData = try CollectedClientData(bytes: valid.clientDataJSON)
        // Counts the verifying mutations the rules allowed, to show the harness really meets them.
        var acceptedUnproven = 0

        for _ in 0..<Self.iterationsPerField {
            var parts = valid
            let index = Self.mutate(&parts.clientDataJSON, &rng)
            guard (try? Self.verifyRegistration(parts)) != nil else { continue }
            #expect(
                try CollectedClientData(bytes: parts.clientDataJSON) == originalClientData,
                "a clientDataJSON mutation at byte \(index) verified and changed the client data")
        }
        for _ in 0..<Self.iterationsPerField {
            var mutated = authData
            let index = Self.mutate(&mutated, &rng)
            var parts = valid
            parts.attestationObject = SoftwareAuthenticator.attestationObject(
                format: "none", statement: [:], authenticatorData: mutated)
            guard let result = try? Self.verifyRegistration(parts) else { continue }
            acceptedUnproven += 1
            try Self.expectUnprovenField(index, original: authData, mutated: mutated, result: result)
        }
        for _ in 0..<Self.iterationsPerField {
            var parts = valid
            let index = Self.mutate(&parts.attestationObject, &rng)
            guard let result = try? Self.verifyRegistration(parts) else { continue }
            guard index >= authDataOffset else {
                Issue.record("a mutation of the attestation object's structure at byte \(index) verified")
                continue
            }
            acceptedUnproven += 1
            try Self.expectUnprovenField(
                index - authDataOffset, original: authData,
                mutated: Array(parts.attestationObject[authDataOffset...]),
                result: result)
        }
        for _ in 0..<Self.iterationsPerField {
            var parts = valid
            let index = Self.mutate(&parts.rawID, &rng)
            if (try? Self.verifyRegistration(parts)) != nil {
                Issue.record("a rawId mutation at byte \(index) verified")
            }
        }
        // signCount and the AAGUID are 20 of about 150 authData bytes: some mutations must land there.
        #expect(acceptedUnproven > 0)
    }

    /// A verifying authData mutation must be in signCount, BE/BS/reserved flags, the AAGUID or the key,
    /// and the result must report the mutated value.
    static func expectUnprovenField(
        _ index: Int, original: [UInt8], mutated: [UInt8], result: VerifiedRegistration
    ) throws {
        let parsed = try AuthenticatorData(bytes: mutated)
        let credential = try #require(parsed.attestedCredentialData)
        let keyStart = 37 + 16 + 2 + credential.credentialID.count
        switch index {
        case 32:
            let changed = original[32] ^ mutated[32]
            let unproven: UInt8 = 0x02 | 0x08 | 0x10 | 0x20
            #expect(changed & ~unproven == 0, "a flags mutation touching UP/UV/AT/ED verified")
            #expect(result.flags == parsed.flags)
        case 33..<37:
            #expect(result.signCount == parsed.signCount && result.signCount != 5)
        case 37..<53:
            #expect(result.aaguid == credential.aaguid && result.aaguid != SoftwareAuthenticator.testAAGUID)
        case keyStart..<mutated.count:
            #expect(
                result.publicKey == credential.credentialPublicKey
                    && result.publicKey != Fixture.es256.publicKey)
        default:
            Issue.record("an authData mutation at byte \(index) verified outside the unproven fields")
        }
    }

    static func verifyAssertion(_ json: [UInt8], _ stored: StoredCredential) throws(PasskeyError)
        -> VerifiedAuthentication
    {
        try verifyAuthentication(
            response: AuthenticationResponseJSON(json: json), expectedChallenge: Fixture.challenge,
            relyingParty: Fixture.relyingParty, credential: stored, expectedUserHandle: nil)
    }

    static func verifyRegistration(_ parts: SoftwareRegistration) throws(PasskeyError) -> VerifiedRegistration
    {
        try PasskeyCore.verifyRegistration(
            response: RegistrationResponseJSON(json: parts.json()), expectedChallenge: Fixture.challenge,
            relyingParty: Fixture.relyingParty, at: Fixture.now)
    }
}
