import BankIDCore
import CryptoCore
import Kernel
import TestSupport
import Testing

@Suite("Identity at rest: keyed digests of personal numbers")
struct IdentityTests {
    let old = try! IdentityKey(id: "k2025", secret: Array(repeating: 1, count: 32))
    let new = try! IdentityKey(id: "k2026", secret: Array(repeating: 2, count: 32))

    @Test("the digest is HMAC-SHA256 under the current key, and differs per key and per number")
    func digest() throws {
        let hasher = try IdentityHasher(currentKeyID: "k2026", keys: [old, new])
        let number = try PersonalNumber(Fixtures.personalNumber)
        let digest = hasher.digest(number)
        #expect(digest.keyID == "k2026")
        #expect(
            digest.value
                == HMAC.authenticate(
                    .sha256, key: Array(repeating: UInt8(2), count: 32),
                    data: Array("portvakt.bankid.personal-number.v1:198112289874".utf8)))
        #expect(digest != hasher.digest(try PersonalNumber(Fixtures.otherPersonalNumber)))
        #expect(!digest.description.contains(Fixtures.personalNumber))
    }

    @Test("rotation: digests made with an old key still match; candidates cover every key")
    func rotation() throws {
        let number = try PersonalNumber(Fixtures.personalNumber)
        let before = try IdentityHasher(currentKeyID: "k2025", keys: [old]).digest(number)
        let after = try IdentityHasher(currentKeyID: "k2026", keys: [old, new])
        #expect(after.matches(number, before))
        #expect(after.needsRekey(before))
        #expect(!after.needsRekey(after.digest(number)))
        #expect(after.candidates(number).map(\.keyID) == ["k2026", "k2025"])
        #expect(after.candidates(number).contains(before))
        #expect(!after.matches(try PersonalNumber(Fixtures.otherPersonalNumber), before))
        let dropped = try IdentityHasher(currentKeyID: "k2026", keys: [new])
        #expect(!dropped.matches(number, before), "a removed key matches nothing")
    }

    @Test("keys: ids unique and well formed, secrets of 32 bytes or more, the current key configured")
    func keyChecks() {
        #expect(throws: BankIDError(.configuration, "")) {
            try IdentityKey(id: "k1", secret: Array(repeating: 1, count: 31))
        }
        #expect(throws: BankIDError(.configuration, "")) {
            try IdentityKey(id: "bad id", secret: Array(repeating: 1, count: 32))
        }
        #expect(throws: BankIDError(.configuration, "")) {
            try IdentityHasher(currentKeyID: "k9", keys: [old])
        }
        #expect(throws: BankIDError(.configuration, "")) {
            try IdentityHasher(currentKeyID: "k2025", keys: [old, old])
        }
        #expect("\(new)" == "IdentityKey(k2026)")
    }
}
