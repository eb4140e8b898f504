import CryptoCore
import Foundation
import Kernel
import SessionCore
import Storage
import TestSupport
import Testing

/// The signing-key ring and the access tokens it signs, over a real SQLite store and a fixed
/// clock: which key signs when, what is published, when a reload happens, and what a wrong
/// key-encryption key does.
@Suite("Signing key ring")
struct SigningKeyRingTests {
    let clock = FixedClock()
    let kek = SigningKeyEncryptionKey(bytes: [UInt8](repeating: 0x42, count: 32))!
    let random = SeededRandom(seed: "ring")

    func key(activatingIn seconds: TimeInterval) throws -> SigningKeyRecord {
        try SigningKeyRecord.generate(
            kek: kek, at: clock.now(), activatesAt: clock.now().addingTimeInterval(seconds), random: random)
    }

    func publishedKids(_ ring: SigningKeyRing) throws -> [String] {
        let object = try JSONSerialization.jsonObject(with: Data(try ring.jwks())) as? [String: Any]
        return (object?["keys"] as? [[String: Any]])?.compactMap { $0["kid"] as? String } ?? []
    }

    @Test(
        "A rotation is published at once, signs from its activation, and the old key stays published until its grace ends"
    )
    func activationRetirementPurge() throws {
        let fixture = try TestStore(.sqlite, clock: clock)
        let store = fixture.store
        let ring = SigningKeyRing(repository: store, kek: kek, clock: clock)
        #expect(throws: SigningKeyError(.keyUnavailable, "")) { try ring.currentKey() }
        ring.invalidate()

        let first = try key(activatingIn: 0)
        #expect(try store.insertInitialSigningKeyIfNone(first, at: clock.now()))
        #expect(try !store.insertInitialSigningKeyIfNone(try key(activatingIn: 0), at: clock.now()))
        ring.invalidate()
        #expect(try ring.currentKey().kid == first.kid)
        #expect(try publishedKids(ring) == [first.kid])

        // Another instance rotates; the new key activates in 10 s.
        let second = try key(activatingIn: 10)
        let retiredUntil = second.activatesAt.addingTimeInterval(SigningKeyRing.retiredPublication)
        #expect(
            try store.rotateSigningKey(
                to: second, retiredUntil: retiredUntil, unpublishingAt: nil, onlyIfCurrentActivatedBefore: nil
            ))
        // Within the refresh interval this ring still holds its old view.
        clock.advance(by: 4)
        #expect(try publishedKids(ring) == [first.kid])
        // Past it, the ring reloads: both published, the old one still signs until 10 s.
        clock.advance(by: 1)
        #expect(try publishedKids(ring) == [first.kid, second.kid])
        #expect(try ring.currentKey().kid == first.kid)
        clock.advance(by: 5)
        #expect(try ring.currentKey().kid == second.kid)
        #expect(try publishedKids(ring) == [first.kid, second.kid])

        // Published until the grace ends, then gone from the set and deletable.
        clock.set(retiredUntil.addingTimeInterval(-1))
        #expect(try publishedKids(ring) == [first.kid, second.kid])
        #expect(try store.deleteSigningKeys(unpublishedBefore: clock.now()) == 0)
        // The set is rendered per reload: a key leaves it at the first reload past its end.
        clock.set(retiredUntil)
        #expect(try store.signingKeys(publishedAt: clock.now()).map(\.kid) == [second.kid])
        clock.advance(by: SigningKeyRing.refreshInterval)
        #expect(try publishedKids(ring) == [second.kid])
        #expect(try store.deleteSigningKeys(unpublishedBefore: clock.now()) == 1)
        #expect(try store.signingKeys(publishedAt: nil).map(\.kid) == [second.kid])
    }

    @Test("A clock that went back makes the ring reload")
    func clockBack() throws {
        let fixture = try TestStore(.sqlite, clock: clock)
        let ring = SigningKeyRing(repository: fixture.store, kek: kek, clock: clock)
        #expect(try publishedKids(ring) == [])
        let first = try key(activatingIn: 0)
        #expect(try fixture.store.insertInitialSigningKeyIfNone(first, at: clock.now()))
        clock.advance(by: -1)
        #expect(try publishedKids(ring) == [first.kid])
    }

    @Test("Retiring the current key at once unpublishes it and every older one")
    func retireCurrent() throws {
        let fixture = try TestStore(.sqlite, clock: clock)
        let store = fixture.store
        let first = try key(activatingIn: 0)
        _ = try store.insertInitialSigningKeyIfNone(first, at: clock.now())
        let replacement = try key(activatingIn: 0)
        _ = try store.rotateSigningKey(
            to: replacement, retiredUntil: clock.now().addingTimeInterval(3660), unpublishingAt: clock.now(),
            onlyIfCurrentActivatedBefore: nil)
        let ring = SigningKeyRing(repository: store, kek: kek, clock: clock)
        #expect(try publishedKids(ring) == [replacement.kid])
        #expect(try ring.currentKey().kid == replacement.kid)
    }

    @Test("A key sealed under another key-encryption key is unavailable, never used")
    func wrongKEK() throws {
        let fixture = try TestStore(.sqlite, clock: clock)
        _ = try fixture.store.insertInitialSigningKeyIfNone(try key(activatingIn: 0), at: clock.now())
        let other = try #require(SigningKeyEncryptionKey(bytes: [UInt8](repeating: 0x43, count: 32)))
        let ring = SigningKeyRing(repository: fixture.store, kek: other, clock: clock)
        #expect(throws: SigningKeyError(.keyUnavailable, "")) { try ring.currentKey() }
        // Still published: verifiers keep checking the tokens already out.
        #expect(try publishedKids(ring).count == 1)
    }

    @Test("The key-encryption key is base64 of exactly 32 bytes; its id is 8 bytes of its SHA-256")
    func kekForm() throws {
        #expect(SigningKeyEncryptionKey(base64: Base64.encode([UInt8](repeating: 1, count: 31))) == nil)
        #expect(SigningKeyEncryptionKey(base64: "not base64!") == nil)
        let key = try #require(
            SigningKeyEncryptionKey(base64: Base64.encode([UInt8](repeating: 1, count: 32))))
        #expect(key.id == Hex.encode(Array(Digest.sha256([UInt8](repeating: 1, count: 32)).prefix(8))))
        #expect("\(key)".contains(key.id) && !"\(key)".contains("AQEB"))
    }

    @Test(
        "A token is an ES256 JWS over the claims, verifiable with the published key, exp capped at the session's end"
    )
    func issuedToken() throws {
        let fixture = try TestStore(.sqlite, clock: clock)
        let first = try key(activatingIn: 0)
        _ = try fixture.store.insertInitialSigningKeyIfNone(first, at: clock.now())
        let ring = SigningKeyRing(repository: fixture.store, kek: kek, clock: clock)
        let issuer = AccessTokenIssuer(
            ring: ring, issuer: "https://id.example.se", audience: ["api"], lifetime: 300, clock: clock,
            random: random)
        let now = clock.now()
        let session = Session(
            id: "ses_1", userID: "usr_1", tokenHash: [], clientKind: .native, authMethod: .enrollment,
            createdAt: now, lastSeenAt: now, expiresAt: now.addingTimeInterval(120.7))
        let issued = try issuer.issue(for: session)
        let parts = issued.token.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        let header = try #require(Base64URL.decode(parts[0]))
        #expect(
            String(decoding: header, as: UTF8.self) == #"{"alg":"ES256","kid":"\#(first.kid)","typ":"JWT"}"#)
        let payload = try #require(Base64URL.decode(parts[1]))
        let claims = try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
        let issuedAt = Int(now.timeIntervalSince1970)
        #expect(claims["iss"] as? String == "https://id.example.se")
        #expect(claims["sub"] as? String == "usr_1" && claims["sid"] as? String == "ses_1")
        #expect(claims["aud"] as? String == "api")
        #expect(claims["amr"] as? [String] == ["passkey"])
        #expect(claims["iat"] as? Int == issuedAt)
        // 120.7 s left in the session: the token ends with it (rounded down), not in 300 s.
        #expect(claims["exp"] as? Int == issuedAt + 120)
        #expect((claims["jti"] as? String)?.count == 22)
        let signature = try #require(Base64URL.decode(parts[2]))
        #expect(signature.count == 64)
        let publicKey = try PublicKey(derSubjectPublicKeyInfo: first.publicKey)
        #expect(
            publicKey.verify(
                signature: try ECDSASignature.der(fromRaw: signature, curve: .p256),
                data: Array("\(parts[0]).\(parts[1])".utf8), algorithm: .ecdsaSHA256))
        // A long session: the configured lifetime decides.
        let long = Session(
            id: "ses_2", userID: "usr_1", tokenHash: [], clientKind: .web, authMethod: .bankid,
            createdAt: now,
            lastSeenAt: now, expiresAt: now.addingTimeInterval(86_400))
        let second = try issuer.issue(for: long)
        #expect(second.claims.expiresAt == Int64(issuedAt + 300) && second.claims.amr == ["bankid"])
        #expect(second.claims.jwtID != issued.claims.jwtID)
        // Several audiences are an array.
        let several = AccessTokenIssuer(
            ring: ring, issuer: "https://id.example.se", audience: ["api", "web"], lifetime: 300,
            clock: clock,
            random: random)
        #expect(
            String(decoding: try several.issue(for: long).claims.json, as: UTF8.self).contains(
                #""aud":["api","web"]"#))
    }
}
