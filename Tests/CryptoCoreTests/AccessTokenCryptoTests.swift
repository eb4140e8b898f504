import CryptoCore
import Kernel
import TestSupport
import Testing

/// The pieces signed access tokens are made of: ES256 signatures in JOSE's raw form, the sealed
/// box that keeps signing keys at rest, and JWK thumbprints (key ids).
@Suite("Access-token crypto")
struct AccessTokenCryptoTests {
    // MARK: DER to raw r‖s (RFC 7518 §3.4)

    @Test("DER to raw: short r and s are left-padded to 32 bytes each")
    func shortValues() throws {
        // SEQUENCE { INTEGER 1, INTEGER 0x0203 }
        let raw = try ECDSASignature.raw(
            fromDER: [0x30, 0x07, 0x02, 0x01, 0x01, 0x02, 0x02, 0x02, 0x03], curve: .p256)
        #expect(raw == [UInt8](repeating: 0, count: 31) + [1] + [UInt8](repeating: 0, count: 30) + [2, 3])
    }

    @Test("DER to raw: an INTEGER's 0x00 sign byte is dropped, not counted against the 32")
    func leadingZero() throws {
        let r = [0x80] + [UInt8](repeating: 0x11, count: 31)
        let s = [0xFF] + [UInt8](repeating: 0x22, count: 31)
        let der = try ECDSASignature.der(fromRaw: r + s, curve: .p256)
        // Both need the sign byte: 33-byte INTEGERs.
        #expect(der[1] == 70 && der[2...4] == [0x02, 0x21, 0x00])
        #expect(try ECDSASignature.raw(fromDER: der, curve: .p256) == r + s)
    }

    @Test("DER to raw and back is the identity for values with leading zero bytes")
    func roundTripLeadingZeroBytes() throws {
        let r = [0, 0, 0x7F] + [UInt8](repeating: 0x33, count: 29)
        let s = [UInt8](repeating: 0, count: 31) + [0x05]
        let der = try ECDSASignature.der(fromRaw: r + s, curve: .p256)
        #expect(try ECDSASignature.raw(fromDER: der, curve: .p256) == r + s)
    }

    @Test("DER to raw refuses a negative value, one too long, non-minimal DER and trailing bytes")
    func refusals() {
        let negative: [UInt8] = [0x30, 0x06, 0x02, 0x01, 0x80, 0x02, 0x01, 0x01]
        #expect(throws: CryptoError(.invalidSignatureEncoding, "")) {
            try ECDSASignature.raw(fromDER: negative, curve: .p256)
        }
        // 33 bytes without a sign byte: larger than any P-256 value.
        let long = [0x30, 0x26, 0x02, 0x21, 0x01] + [UInt8](repeating: 0x44, count: 32) + [0x02, 0x01, 0x01]
        #expect(throws: CryptoError(.invalidSignatureEncoding, "")) {
            try ECDSASignature.raw(fromDER: long, curve: .p256)
        }
        let nonMinimal: [UInt8] = [0x30, 0x07, 0x02, 0x02, 0x00, 0x01, 0x02, 0x01, 0x01]
        #expect(throws: CryptoError(.derMalformed, "")) {
            try ECDSASignature.raw(fromDER: nonMinimal, curve: .p256)
        }
        let trailing: [UInt8] = [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01, 0x00]
        #expect(throws: CryptoError(.derTrailingData, "")) {
            try ECDSASignature.raw(fromDER: trailing, curve: .p256)
        }
        let three: [UInt8] = [0x30, 0x09, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01]
        #expect(throws: CryptoError(.derTrailingData, "")) {
            try ECDSASignature.raw(fromDER: three, curve: .p256)
        }
    }

    @Test("A P-256 signature made by SigningKey, turned raw and back, verifies under its public key")
    func signedRawVerifies() throws {
        let key = try SigningKey.generate(.p256)
        let publicKey = try PublicKey(derSubjectPublicKeyInfo: key.subjectPublicKeyInfo)
        let message = Array("header.payload".utf8)
        for _ in 0..<16 {
            let raw = try ECDSASignature.raw(fromDER: key.signSHA256(message), curve: .p256)
            #expect(raw.count == 64)
            let der = try ECDSASignature.der(fromRaw: raw, curve: .p256)
            #expect(publicKey.verify(signature: der, data: message, algorithm: .ecdsaSHA256))
        }
    }

    // MARK: SealedBox (AES-256-GCM)

    @Test("SealedBox matches the GCM specification's test case 16 (AES-256, 96-bit IV, AAD)")
    func gcmVector() throws {
        let key = try #require(Hex.decode("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"))
        let nonce = try #require(Hex.decode("cafebabefacedbaddecaf888"))
        let plaintext = try #require(
            Hex.decode(
                "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
            ))
        let aad = try #require(Hex.decode("feedfacedeadbeeffeedfacedeadbeefabaddad2"))
        let box = try SealedBox.seal(plaintext, key: key, nonce: nonce, associatedData: aad)
        #expect(
            Hex.encode(box)
                == "cafebabefacedbaddecaf888"
                + "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
                + "76fc6ece0f4e1768cddf8853bb2d551b")
        #expect(try SealedBox.open(box, key: key, associatedData: aad) == plaintext)
    }

    @Test("SealedBox opens only with the same key and associated data, and refuses any change")
    func sealedBoxRefusals() throws {
        let key = [UInt8](repeating: 7, count: 32)
        let other = [UInt8](repeating: 8, count: 32)
        let box = try SealedBox.seal(
            Array("a private key".utf8), key: key, nonce: [UInt8](repeating: 1, count: 12),
            associatedData: Array("kid-1".utf8))
        #expect(box.count == 12 + 13 + 16)
        #expect(
            try SealedBox.open(box, key: key, associatedData: Array("kid-1".utf8))
                == Array("a private key".utf8))
        let unopenable = CryptoError(.sealedBoxUnopenable, "")
        #expect(throws: unopenable) {
            try SealedBox.open(box, key: other, associatedData: Array("kid-1".utf8))
        }
        #expect(throws: unopenable) { try SealedBox.open(box, key: key, associatedData: Array("kid-2".utf8)) }
        for index in [0, 12, box.count - 1] {
            var changed = box
            changed[index] ^= 0x01
            #expect(throws: unopenable) {
                try SealedBox.open(changed, key: key, associatedData: Array("kid-1".utf8))
            }
        }
        #expect(throws: unopenable) {
            try SealedBox.open(Array(box.prefix(27)), key: key, associatedData: Array("kid-1".utf8))
        }
        #expect(throws: CryptoError(.keyFailure, "")) {
            try SealedBox.seal([1], key: [1, 2], nonce: [UInt8](repeating: 0, count: 12), associatedData: [])
        }
        // Nothing but the tag: an empty secret seals and opens too.
        let empty = try SealedBox.seal(
            [], key: key, nonce: [UInt8](repeating: 2, count: 12), associatedData: [])
        #expect(empty.count == 28)
        #expect(try SealedBox.open(empty, key: key, associatedData: []) == [])
    }

    // MARK: JWK thumbprints (RFC 7638)

    @Test("RFC 7638 §3.1: the example RSA key's SHA-256 thumbprint")
    func rfc7638Vector() {
        let n =
            "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
        // Given out of order: the thumbprint sorts the members itself.
        #expect(
            JWKThumbprint.sha256(requiredMembers: [("n", n), ("kty", "RSA"), ("e", "AQAB")])
                == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
    }

    /// A P-256 key made with `openssl ecparam`; x, y and the thumbprint computed apart, in Python
    /// (hashlib over the RFC 7638 member string).
    static let fixedSPKI =
        "3059301306072a8648ce3d020106082a8648ce3d0301070342000464d400f35a6f47e96e5825fdd822f19aeb99831f43804174899e8868e8bc664088fe4ff4fdd8424ec904bb8d6dc31ca679b9f02c3e4e1769140b1a6672bfd628"

    @Test("A P-256 SubjectPublicKeyInfo gives its JWK coordinates and RFC 7638 thumbprint")
    func p256JWK() throws {
        let jwk = try P256PublicJWK(subjectPublicKeyInfo: try #require(Hex.decode(Self.fixedSPKI)))
        #expect(jwk.x == "ZNQA81pvR-luWCX92CLxmuuZgx9DgEF0iZ6IaOi8ZkA")
        #expect(jwk.y == "iP5P9P3YQk7JBLuNbcMcpnm58Cw-ThdpFAsaZnK_1ig")
        #expect(jwk.thumbprint == "XuNySa_pC60Rjx5-Kido2ODi1Y_kZPQTQy5XBM4Dbf0")
    }

    @Test("A JWK is refused for an RSA key; a P-256 one rebuilds the very key")
    func otherKeysRefused() throws {
        let rsa = try SigningKey.generate(.rsa(bits: 2048))
        #expect(throws: CryptoError(.unsupportedKeyType, "")) {
            try P256PublicJWK(subjectPublicKeyInfo: rsa.subjectPublicKeyInfo)
        }
        let fresh = try SigningKey.generate(.p256)
        let jwk = try P256PublicJWK(subjectPublicKeyInfo: fresh.subjectPublicKeyInfo)
        // The coordinates rebuild the very key.
        let rebuilt = try PublicKey(
            curve: .p256, x: try #require(Base64URL.decode(jwk.x)), y: try #require(Base64URL.decode(jwk.y)))
        #expect(rebuilt.derRepresentation == fresh.subjectPublicKeyInfo)
    }
}
