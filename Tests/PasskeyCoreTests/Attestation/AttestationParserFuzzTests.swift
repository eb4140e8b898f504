import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

/// Seeded fuzz loops over the TPM and Android parsers and the formats built on them: random and
/// mutated input must end in a PasskeyError with the parser's code, never a trap, and a mutated
/// signed structure must never verify.
@Suite("Attestation parser fuzz")
struct AttestationParserFuzzTests {
    /// One random edit: overwrite, flip a bit, truncate, insert or drop a byte.
    static func mutate(_ bytes: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var out = bytes
        guard !out.isEmpty else { return [UInt8.random(in: 0...255, using: &rng)] }
        let index = Int.random(in: 0..<out.count, using: &rng)
        switch Int.random(in: 0..<5, using: &rng) {
        case 0: out[index] = UInt8.random(in: 0...255, using: &rng)
        case 1: out[index] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
        case 2: out.removeSubrange(index...)
        case 3: out.insert(UInt8.random(in: 0...255, using: &rng), at: index)
        default: out.remove(at: index)
        }
        return out
    }

    static func random(_ rng: inout SplitMix64, maximum: Int = 400) -> [UInt8] {
        (0..<Int.random(in: 0...maximum, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    /// Runs `parse`, allowing success or `code` only.
    static func expectOnly(_ code: PasskeyError.Code, _ input: [UInt8], _ parse: ([UInt8]) throws -> Void) {
        do {
            try parse(input)
        } catch let error as PasskeyError {
            #expect(error.code == code, "\(Hex.encode(input.prefix(48))): \(error)")
        } catch {
            Issue.record("a foreign error: \(error)")
        }
    }

    @Test("TPMT_PUBLIC, TPMS_ATTEST and KeyDescription parsers survive random and mutated input")
    func parsers() {
        var rng = SplitMix64(seed: 0x7_0d4_a77e)
        let pubAreas = [
            TPMStatementBuilder().pubArea, TPMStatementBuilder(credentialKey: TestKeys.rsa2048).pubArea,
        ]
        let certInfo = TPMStatementBuilder().certInfo
        let description = AndroidKeyStatementBuilder().keyDescription
        for round in 0..<3000 {
            let noise = Self.random(&rng)
            Self.expectOnly(.attestationTPMPubAreaInvalid, noise) { _ = try TPMPublicArea(bytes: $0) }
            Self.expectOnly(.attestationTPMCertInfoInvalid, noise) { _ = try TPMCertifyInfo(bytes: $0) }
            Self.expectOnly(.attestationAndroidKeyDescriptionInvalid, noise) {
                _ = try AndroidKeyDescription(extensionValue: $0)
            }
            var pubArea = pubAreas[round % 2]
            var info = certInfo
            var key = description
            for _ in 0...Int.random(in: 0..<3, using: &rng) {
                pubArea = Self.mutate(pubArea, &rng)
                info = Self.mutate(info, &rng)
                key = Self.mutate(key, &rng)
            }
            Self.expectOnly(.attestationTPMPubAreaInvalid, pubArea) {
                _ = try TPMPublicArea(bytes: $0).name()
            }
            Self.expectOnly(.attestationTPMCertInfoInvalid, info) { _ = try TPMCertifyInfo(bytes: $0) }
            Self.expectOnly(.attestationAndroidKeyDescriptionInvalid, key) {
                _ = try AndroidKeyDescription(extensionValue: $0)
            }
        }
    }

    @Test("tpm: any mutation of certInfo or pubArea fails verification, with an attestation code")
    func tpmStatements() {
        var rng = SplitMix64(seed: 0x7_0d4_5747)
        let builder = TPMStatementBuilder()
        let statement = builder.statement
        let context = CraftedAttestation.context(
            format: "tpm", anchors: [CraftedAttestation.root.certificateDER])
        for round in 0..<400 {
            var mutated = statement
            let member = round % 2 == 0 ? "certInfo" : "pubArea"
            guard case .bytes(let original)? = statement[name: member] else { return }
            let changed = Self.mutate(original, &rng)
            guard changed != original else { continue }
            mutated[.text(member)] = .bytes(changed)
            do throws(PasskeyError) {
                _ = try CraftedAttestation.verify(
                    TPMAttestation(), statement: mutated, authenticatorData: builder.authenticatorData,
                    context: context)
                Issue.record("a mutated \(member) verified: \(Hex.encode(changed))")
            } catch {
                #expect(error.code.rawValue.hasPrefix("attestation."))
            }
        }
    }

    @Test("android-safetynet: mutated responses never crash and never verify with changed content")
    func safetyNetResponses() {
        var rng = SplitMix64(seed: 0x5afe_7e7)
        let builder = SafetyNetStatementBuilder()
        let response = builder.response
        let parts = response.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        let context = CraftedAttestation.context(
            format: "android-safetynet", anchors: [CraftedAttestation.root.certificateDER])
        for _ in 0..<400 {
            let changed = Self.mutate(response, &rng)
            do throws(PasskeyError) {
                _ = try CraftedAttestation.verify(
                    AndroidSafetyNetAttestation(), statement: ["ver": "1", "response": .bytes(changed)],
                    authenticatorData: builder.authenticatorData, context: context)
                // Only a different spelling of the same signature can verify: the signed text is unchanged.
                let changedParts = changed.split(
                    separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
                #expect(
                    changedParts.count == 3 && Array(changedParts[0]) == Array(parts[0])
                        && Array(changedParts[1]) == Array(parts[1]))
            } catch {
                #expect(error.code.rawValue.hasPrefix("attestation."))
            }
        }
    }
}
