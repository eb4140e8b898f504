import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

private typealias A = AttestationFixture

@Suite("compound attestation (§8.9)")
struct CompoundAttestationTests {
    static let anchors = ["packed": [A.root.certificateDER]]

    @Test("§8.9: every member verifies; a trusted member's outcome is the result")
    func trustedMemberWins() throws {
        let result = try A.register(
            .compound([.packedSelf, A.packed()]), relyingParty: A.relyingParty(anchors: Self.anchors))
        #expect(result.attestationFormat == "compound")
        #expect(result.attestationType == .basic)
        #expect(result.attestationTrusted)
        #expect(result.attestationTrustPath.count == 2)
        let strict = A.relyingParty(anchors: Self.anchors, policy: .requireTrusted)
        #expect(
            try A.register(.compound([A.packed(), .packedSelf]), relyingParty: strict).attestationTrusted)
    }

    @Test("§8.9: with no trusted member, the strongest type is reported, untrusted")
    func strongestUntrusted() throws {
        let result = try A.register(.compound([.packedSelf, A.packed()]))
        #expect(result.attestationType == .basic)
        #expect(!result.attestationTrusted)
        let selves = try A.register(.compound([.packedSelf, .packedSelf]))
        #expect(selves.attestationType == .selfAttestation)
        // Of equally strong members, the first is reported.
        let first = [A.packedLeaf(), A.intermediate.certificateDER]
        let second = [A.packedLeaf()]
        let equals = try A.register(.compound([.packedSelf, A.packed(x5c: first), A.packed(x5c: second)]))
        #expect(equals.attestationTrustPath == first)
        expectCode(.attestationUntrusted) {
            _ = try A.register(
                .compound([.packedSelf, A.packed()]), relyingParty: A.relyingParty(policy: .requireTrusted))
        }
    }

    @Test("§8.9: one bad member fails the ceremony with that member's code, even beside a trusted one")
    func badMember() {
        let forged = SoftwareAttestation.packed(
            key: SoftwareKey.generate(.ec(.p256)), algorithm: .es256,
            x5c: [A.packedLeaf(), A.intermediate.certificateDER])
        let error = expectCode(.attestationSignatureInvalid) {
            _ = try A.register(
                .compound([A.packed(), forged]), relyingParty: A.relyingParty(anchors: Self.anchors))
        }
        #expect(error?.message.contains("compound statement 1 (packed)") == true)
        let apple = SoftwareAttestation.apple(ca: A.intermediate, chain: [], certifiedKey: A.attestationKey)
        expectCode(.attestationPublicKeyMismatch) { _ = try A.register(.compound([.packedSelf, apple])) }
    }

    @Test("§8.9 syntax: 2 to 8 members, each exactly {fmt, attStmt}, none compound")
    func syntax() {
        expectCode(.attestationInvalidStatement) { _ = try A.register(.compound([.packedSelf])) }
        expectCode(.attestationInvalidStatement) {
            _ = try A.register(.compound(Array(repeating: .packedSelf, count: 9)))
        }
        expectCode(.attestationInvalidStatement) {
            _ = try A.register(.compound([.packedSelf, .compound([.packedSelf, .packedSelf])]))
        }
        let edits: [@Sendable (inout CBORValue) -> Void] = [
            { if case .array(var items) = $0 { items[0] = .map(["fmt": "packed"]); $0 = .array(items) } },
            { if case .array(var items) = $0 { items[0] = .array([]); $0 = .array(items) } },
            { if case .array(var items) = $0 { setMember(&items[0], "extra", 1); $0 = .array(items) } },
            { if case .array(var items) = $0 { setMember(&items[0], "attStmt", [1]); $0 = .array(items) } },
        ]
        for edit in edits {
            expectCode(.attestationInvalidStatement) {
                _ = try A.register(.compound([.packedSelf, .packedSelf]), edit: edit)
            }
        }
        // compound's attStmt is an array; a map is refused, and other formats refuse an array.
        expectCode(.attestationInvalidStatement) {
            _ = try Fixture.register(behaviour: behaviour { $0.attestationFormat = "compound" })
        }
        expectCode(.attestationMalformed) {
            _ = try A.register(.packedSelf) { $0 = .array([]) }
        }
    }

    @Test("§8.9: members use the relying party's registry, so a closed or unknown format stays refused")
    func membersUseTheRelyingPartysFormats() {
        var closed = A.relyingParty()
        closed.attestationFormats.unregister("packed")
        expectCode(.attestationUnsupportedFormat) {
            _ = try A.register(.compound([.packedSelf, .packedSelf]), relyingParty: closed)
        }
        expectCode(.attestationUnsupportedFormat) {
            _ = try A.register(.compound([.packedSelf, .packedSelf])) { value in
                if case .array(var items) = value {
                    setMember(&items[1], "fmt", "Packed"); value = .array(items)
                }
            }
        }
    }
}
