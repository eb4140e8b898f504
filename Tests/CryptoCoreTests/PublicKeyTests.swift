import CryptoCore
import Kernel
import TestSupport
import Testing

/// Decodes a fixture constant; fixtures are generated, so bad hex is a broken test, not a failure mode.
private func hex(_ text: String) -> [UInt8] {
    guard let bytes = Hex.decode(text) else { fatalError("fixture is not hex") }
    return bytes
}

private let message = OpenSSLCLIFixtures.message
private let rsaExponent: [UInt8] = [0x01, 0x00, 0x01]

@Suite("CryptoCore public keys")
struct PublicKeyTests {
    typealias F = OpenSSLCLIFixtures

    // MARK: Known answers from the openssl CLI

    @Test(
        "verifies ECDSA signatures made by the openssl CLI on every accepted curve",
        arguments: [
            (ECCurve.p256, F.p256X, F.p256Y, F.p256Signature, SignatureAlgorithm.ecdsaSHA256),
            (ECCurve.p384, F.p384X, F.p384Y, F.p384Signature, SignatureAlgorithm.ecdsaSHA384),
            (ECCurve.p521, F.p521X, F.p521Y, F.p521Signature, SignatureAlgorithm.ecdsaSHA512),
        ])
    func ecdsaKnownAnswers(
        curve: ECCurve, x: String, y: String, signature: String, algorithm: SignatureAlgorithm
    ) throws {
        let key = try PublicKey(curve: curve, x: hex(x), y: hex(y))
        #expect(key.type == .ec(curve))
        #expect(key.verify(signature: hex(signature), data: message, algorithm: algorithm))
        // The same signature over different data, or under another hash, must fail.
        #expect(!key.verify(signature: hex(signature), data: message + [0], algorithm: algorithm))
        let otherHash: SignatureAlgorithm = algorithm == .ecdsaSHA256 ? .ecdsaSHA384 : .ecdsaSHA256
        #expect(!key.verify(signature: hex(signature), data: message, algorithm: otherHash))
    }

    @Test("verifies an Ed25519 signature made by the openssl CLI")
    func ed25519KnownAnswer() throws {
        let key = try PublicKey(ed25519: hex(F.ed25519Raw))
        #expect(key.type == .ed25519)
        #expect(key.verify(signature: hex(F.ed25519Signature), data: message, algorithm: .ed25519))
        #expect(
            !key.verify(signature: hex(F.ed25519Signature), data: message.dropLast(), algorithm: .ed25519))
    }

    @Test(
        "verifies RSA PKCS#1 v1.5 and PSS signatures made by the openssl CLI",
        arguments: [
            (F.rsaPKCS1SHA1Signature, SignatureAlgorithm.rsaPKCS1SHA1),
            (F.rsaPKCS1SHA256Signature, SignatureAlgorithm.rsaPKCS1SHA256),
            (F.rsaPKCS1SHA384Signature, SignatureAlgorithm.rsaPKCS1SHA384),
            (F.rsaPKCS1SHA512Signature, SignatureAlgorithm.rsaPKCS1SHA512),
            (F.rsaPSSSHA256Signature, SignatureAlgorithm.rsaPSSSHA256),
        ])
    func rsaKnownAnswers(signature: String, algorithm: SignatureAlgorithm) throws {
        let key = try PublicKey(rsaModulus: hex(F.rsaModulus), exponent: rsaExponent)
        #expect(key.type == .rsa(bits: 2048))
        #expect(key.verify(signature: hex(signature), data: message, algorithm: algorithm))
        // Each signature is valid under exactly one of the RSA schemes.
        for other in SignatureAlgorithm.allCases where other != algorithm {
            #expect(!key.verify(signature: hex(signature), data: message, algorithm: other))
        }
    }

    @Test("a SubjectPublicKeyInfo key verifies the same signatures as one built from raw parts")
    func spkiKnownAnswers() throws {
        let cases: [(String, String, SignatureAlgorithm, PublicKeyType)] = [
            (F.p256SPKI, F.p256Signature, .ecdsaSHA256, .ec(.p256)),
            (F.p384SPKI, F.p384Signature, .ecdsaSHA384, .ec(.p384)),
            (F.p521SPKI, F.p521Signature, .ecdsaSHA512, .ec(.p521)),
            (F.ed25519SPKI, F.ed25519Signature, .ed25519, .ed25519),
            (F.rsaSPKI, F.rsaPKCS1SHA256Signature, .rsaPKCS1SHA256, .rsa(bits: 2048)),
        ]
        for (spki, signature, algorithm, type) in cases {
            let key = try PublicKey(derSubjectPublicKeyInfo: hex(spki))
            #expect(key.type == type)
            #expect(key.verify(signature: hex(signature), data: message, algorithm: algorithm))
            // Re-encoding gives back the exact DER the CLI wrote.
            #expect(key.derRepresentation == hex(spki))
        }
    }

    @Test("raw-part keys encode to the SubjectPublicKeyInfo the CLI produced")
    func rawPartsMatchSPKI() throws {
        #expect(
            try PublicKey(curve: .p256, x: hex(F.p256X), y: hex(F.p256Y)).derRepresentation == hex(F.p256SPKI)
        )
        #expect(
            try PublicKey(curve: .p521, x: hex(F.p521X), y: hex(F.p521Y)).derRepresentation == hex(F.p521SPKI)
        )
        #expect(try PublicKey(ed25519: hex(F.ed25519Raw)).derRepresentation == hex(F.ed25519SPKI))
        let rsa = try PublicKey(rsaModulus: hex(F.rsaModulus), exponent: rsaExponent)
        #expect(rsa.derRepresentation == hex(F.rsaSPKI))
    }

    @Test("EC keys built at once on 8 threads (copies of one shared curve template) each verify")
    func concurrentECKeys() async throws {
        let ok = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    (0..<100).allSatisfy { _ in
                        guard let key = try? PublicKey(curve: .p256, x: hex(F.p256X), y: hex(F.p256Y)) else {
                            return false
                        }
                        return key.verify(
                            signature: hex(F.p256Signature), data: message, algorithm: .ecdsaSHA256)
                            && key.derRepresentation == hex(F.p256SPKI)
                    }
                }
            }
            return await group.reduce(true) { $0 && $1 }
        }
        #expect(ok)
        // The template itself never gets a point: a fresh key still refuses one off the curve.
        var y = hex(F.p256Y)
        y[31] ^= 0x01
        #expect(throws: CryptoError(.invalidPublicKey, "")) {
            try PublicKey(curve: .p256, x: hex(F.p256X), y: y)
        }
    }

    // MARK: Rejections

    @Test("rejects an EC point that is not on the curve, on every accepted curve")
    func offCurvePoint() {
        for (curve, x, y) in [
            (ECCurve.p256, F.p256X, F.p256Y), (ECCurve.p384, F.p384X, F.p384Y),
            (ECCurve.p521, F.p521X, F.p521Y),
        ] {
            var y = hex(y)
            y[y.count - 1] ^= 0x01
            #expect(throws: CryptoError(.invalidPublicKey, "")) {
                try PublicKey(curve: curve, x: hex(x), y: y)
            }
        }
    }

    @Test("accepts the other point with the same x, (x, p - y): the check is the curve equation")
    func negatedPoint() throws {
        let p = hex("ffffffff00000001000000000000000000000000ffffffffffffffffffffffff")
        let y = hex(F.p256Y)
        // p - y, big-endian, byte by byte with borrow.
        var negated = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in (0..<32).reversed() {
            var difference = Int(p[index]) - Int(y[index]) - borrow
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 256 }
            negated[index] = UInt8(difference)
        }
        _ = try PublicKey(curve: .p256, x: hex(F.p256X), y: negated)
    }

    @Test("rejects EC coordinates of the wrong length for the curve")
    func wrongCoordinateLength() {
        #expect(throws: CryptoError(.invalidPublicKey, "")) {
            try PublicKey(curve: .p384, x: hex(F.p256X), y: hex(F.p256Y))
        }
        #expect(throws: CryptoError(.invalidPublicKey, "")) {
            try PublicKey(curve: .p256, x: hex(F.p256X) + [0], y: hex(F.p256Y))
        }
        #expect(throws: CryptoError(.invalidPublicKey, "")) {
            try PublicKey(curve: .p256, x: [UInt8](), y: [UInt8]())
        }
    }

    @Test("rejects a coordinate equal to the field prime instead of reducing it")
    func coordinateAtFieldPrime() throws {
        // The P-256 prime; a decoder that reduced mod p would read this x as 0.
        let p = hex("ffffffff00000001000000000000000000000000ffffffffffffffffffffffff")
        #expect(throws: CryptoError(.invalidPublicKey, "")) {
            try PublicKey(curve: .p256, x: p, y: hex(F.p256Y))
        }
        #expect(throws: CryptoError(.invalidPublicKey, "")) {
            try PublicKey(curve: .p256, x: hex(F.p256X), y: p)
        }
    }

    @Test("rejects the point at infinity written as zero coordinates")
    func pointAtInfinity() {
        let zero = [UInt8](repeating: 0, count: 32)
        #expect(throws: CryptoError(.invalidPublicKey, "")) {
            try PublicKey(curve: .p256, x: zero, y: zero)
        }
    }

    @Test("rejects RSA keys under 2048 bits, from raw parts and from DER")
    func weakRSA() {
        #expect(throws: CryptoError(.weakKey, "")) {
            try PublicKey(rsaModulus: hex(F.rsa1024Modulus), exponent: rsaExponent)
        }
        #expect(throws: CryptoError(.weakKey, "")) {
            try PublicKey(derSubjectPublicKeyInfo: hex(F.rsa1024SPKI))
        }
        // Leading zero bytes do not make a small modulus big.
        #expect(throws: CryptoError(.weakKey, "")) {
            try PublicKey(
                rsaModulus: [UInt8](repeating: 0, count: 200) + hex(F.rsa1024Modulus), exponent: rsaExponent)
        }
    }

    @Test("an RSA modulus with leading zero bytes is the same key and still verifies")
    func rsaLeadingZeros() throws {
        let key = try PublicKey(rsaModulus: [0, 0] + hex(F.rsaModulus), exponent: [0] + rsaExponent)
        #expect(key.type == .rsa(bits: 2048))
        #expect(
            key.verify(signature: hex(F.rsaPKCS1SHA256Signature), data: message, algorithm: .rsaPKCS1SHA256))
        #expect(key.derRepresentation == hex(F.rsaSPKI))
    }

    @Test("rejects RSA moduli over 8192 bits before parsing them")
    func hugeRSA() {
        let modulus = [UInt8](repeating: 0xff, count: 1025)
        #expect(throws: CryptoError(.unsupportedKeySize, "")) {
            try PublicKey(rsaModulus: modulus, exponent: rsaExponent)
        }
    }

    @Test("rejects RSA exponents that are even, one, or not below the modulus, and even moduli")
    func badRSAComponents() {
        let n = hex(F.rsaModulus)
        for exponent: [UInt8] in [[0x01, 0x00, 0x00], [0x01], [], n + [0x01]] {
            #expect(throws: CryptoError(.invalidPublicKey, "")) {
                try PublicKey(rsaModulus: n, exponent: exponent)
            }
        }
        var even = n
        even[even.count - 1] &= 0xfe
        #expect(throws: CryptoError(.invalidPublicKey, "")) {
            try PublicKey(rsaModulus: even, exponent: rsaExponent)
        }
    }

    @Test("rejects Ed25519 keys that are not 32 bytes")
    func ed25519Length() {
        #expect(throws: CryptoError(.invalidPublicKey, "")) {
            try PublicKey(ed25519: [UInt8](repeating: 1, count: 31))
        }
        #expect(throws: CryptoError(.invalidPublicKey, "")) {
            try PublicKey(ed25519: [UInt8](repeating: 1, count: 33))
        }
    }

    @Test(
        "rejects the small-order Ed25519 points, raw and in a SubjectPublicKeyInfo, and a y that is not below p"
    )
    func ed25519SmallOrder() {
        // The identity and the all-zero key (order 4); Docs/passkeycore.md lists all eight points.
        for raw in ["01" + String(repeating: "00", count: 31), String(repeating: "00", count: 32)] {
            #expect(throws: CryptoError(.smallOrderKey, "")) { try PublicKey(ed25519: hex(raw)) }
            // RFC 8410 SubjectPublicKeyInfo: SEQUENCE { SEQUENCE { id-Ed25519 }, BIT STRING key }.
            #expect(throws: CryptoError(.smallOrderKey, "")) {
                try PublicKey(derSubjectPublicKeyInfo: hex("302a300506032b6570032100" + raw))
            }
        }
        // y = 3 + p instead of y = 3: not canonical, so no key (RFC 8032 §5.1.3).
        #expect(throws: CryptoError(.invalidPublicKey, "")) {
            try PublicKey(ed25519: hex("f0" + String(repeating: "ff", count: 30) + "7f"))
        }
    }

    @Test("rejects DER that is malformed, truncated, followed by extra bytes, or of another curve")
    func badDER() {
        let der = hex(F.p256SPKI)
        #expect(throws: CryptoError(.invalidPublicKey, "")) {
            try PublicKey(derSubjectPublicKeyInfo: der.dropLast())
        }
        #expect(throws: CryptoError(.invalidPublicKey, "")) {
            try PublicKey(derSubjectPublicKeyInfo: der + [0])
        }
        #expect(throws: CryptoError(.invalidPublicKey, "")) {
            try PublicKey(derSubjectPublicKeyInfo: [UInt8]())
        }
        #expect(throws: CryptoError(.invalidPublicKey, "")) {
            try PublicKey(derSubjectPublicKeyInfo: [0x30, 0x03, 0x02, 0x01, 0x01])
        }
        #expect(throws: CryptoError(.unsupportedKeyType, "")) {
            try PublicKey(derSubjectPublicKeyInfo: hex(F.secp256k1SPKI))
        }
        // A point altered inside otherwise valid DER is caught by the curve check.
        var offCurve = der
        offCurve[offCurve.count - 1] ^= 0x01
        #expect(throws: CryptoError(.invalidPublicKey, "")) {
            try PublicKey(derSubjectPublicKeyInfo: offCurve)
        }
    }

    @Test("verify returns false, never traps, for algorithms that do not fit the key")
    func algorithmKeyMismatch() throws {
        let ec = try PublicKey(curve: .p256, x: hex(F.p256X), y: hex(F.p256Y))
        let ed = try PublicKey(ed25519: hex(F.ed25519Raw))
        let rsa = try PublicKey(rsaModulus: hex(F.rsaModulus), exponent: rsaExponent)
        for algorithm in SignatureAlgorithm.allCases {
            #expect(
                ec.verify(signature: hex(F.p256Signature), data: message, algorithm: algorithm)
                    == (algorithm == .ecdsaSHA256))
            #expect(
                ed.verify(signature: hex(F.ed25519Signature), data: message, algorithm: algorithm)
                    == (algorithm == .ed25519))
            #expect(!rsa.verify(signature: hex(F.p256Signature), data: message, algorithm: algorithm))
        }
    }

    @Test("verify returns false for empty, truncated, padded and random signatures")
    func garbageSignatures() throws {
        let keys: [(PublicKey, SignatureAlgorithm, String)] = [
            (try PublicKey(curve: .p256, x: hex(F.p256X), y: hex(F.p256Y)), .ecdsaSHA256, F.p256Signature),
            (try PublicKey(ed25519: hex(F.ed25519Raw)), .ed25519, F.ed25519Signature),
            (
                try PublicKey(rsaModulus: hex(F.rsaModulus), exponent: rsaExponent), .rsaPKCS1SHA256,
                F.rsaPKCS1SHA256Signature
            ),
            (
                try PublicKey(rsaModulus: hex(F.rsaModulus), exponent: rsaExponent), .rsaPSSSHA256,
                F.rsaPSSSHA256Signature
            ),
        ]
        var generator = SystemRandomNumberGenerator()
        for (key, algorithm, fixture) in keys {
            let good = hex(fixture)
            #expect(key.verify(signature: good, data: message, algorithm: algorithm))
            #expect(!key.verify(signature: [UInt8](), data: message, algorithm: algorithm))
            #expect(!key.verify(signature: good.dropLast(), data: message, algorithm: algorithm))
            #expect(!key.verify(signature: good + [0], data: message, algorithm: algorithm))
            #expect(!key.verify(signature: good, data: [UInt8](), algorithm: algorithm))
            // Every single-bit flip of the signature must be rejected.
            for index in stride(from: 0, to: good.count, by: max(1, good.count / 16)) {
                var flipped = good
                flipped[index] ^= 0x10
                #expect(!key.verify(signature: flipped, data: message, algorithm: algorithm))
            }
            for _ in 0..<50 {
                let length = Int.random(in: 0...600, using: &generator)
                let junk = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                #expect(!key.verify(signature: junk, data: message, algorithm: algorithm))
            }
        }
    }

    @Test("an ECDSA signature with non-canonical DER (extra leading zero) is rejected")
    func nonCanonicalDER() throws {
        let key = try PublicKey(curve: .p256, x: hex(F.p256X), y: hex(F.p256Y))
        let good = hex(F.p256Signature)
        // Rebuild the SEQUENCE with r given one redundant leading zero byte.
        let rLength = Int(good[3])
        let r = Array(good[4..<(4 + rLength)])
        let rest = Array(good[(4 + rLength)...])
        let body: [UInt8] = [0x02, UInt8(rLength + 1), 0x00] + r + rest
        let padded: [UInt8] = [0x30, UInt8(body.count)] + body
        #expect(!key.verify(signature: padded, data: message, algorithm: .ecdsaSHA256))
    }

    @Test(
        "EC keys from coordinates (checked with ECDSA_verify directly) and from SubjectPublicKeyInfo (EVP) agree on every signature variant, hash and curve"
    )
    func directECDSAMatchesEVP() throws {
        let cases: [(ECCurve, String, String, String, String, SignatureAlgorithm)] = [
            (.p256, F.p256X, F.p256Y, F.p256SPKI, F.p256Signature, .ecdsaSHA256),
            (.p384, F.p384X, F.p384Y, F.p384SPKI, F.p384Signature, .ecdsaSHA384),
            (.p521, F.p521X, F.p521Y, F.p521SPKI, F.p521Signature, .ecdsaSHA512),
        ]
        let ecdsa: [SignatureAlgorithm] = [.ecdsaSHA256, .ecdsaSHA384, .ecdsaSHA512]
        for (curve, x, y, spki, fixture, signedWith) in cases {
            let direct = try PublicKey(curve: curve, x: hex(x), y: hex(y))
            let evp = try PublicKey(derSubjectPublicKeyInfo: hex(spki))
            let good = hex(fixture)
            // The SEQUENCE's content, and its two INTEGERs, cut out of the DER.
            let headerLength = good[1] == 0x81 ? 3 : 2
            let content = Array(good[headerLength...])
            let rLength = Int(content[1])
            let r = Array(content[0..<(2 + rLength)])
            let s = Array(content[(2 + rLength)...])
            func sequence(_ body: [UInt8]) -> [UInt8] {
                body.count < 0x80
                    ? [0x30, UInt8(body.count)] + body : [0x30, 0x81, UInt8(body.count)] + body
            }
            let variants: [[UInt8]] = [
                good,
                // BER, not DER: a length in more bytes than it needs.
                [0x30, 0x82, 0x00, UInt8(content.count)] + content,
                good + [0],
                Array(good.dropLast()),
                sequence([0x02, UInt8(rLength + 1), 0x00] + r.dropFirst(2) + s),
                sequence(s + r),
                sequence([0x02, 0x01, 0x00] + s),
                sequence(r + [0x02, 0x01, 0x00]),
                sequence(r),
            ]
            for (index, signature) in variants.enumerated() {
                for algorithm in ecdsa {
                    for data in [message, message + [0]] {
                        let verdict = direct.verify(signature: signature, data: data, algorithm: algorithm)
                        #expect(
                            verdict == evp.verify(signature: signature, data: data, algorithm: algorithm),
                            "\(curve), variant \(index), \(algorithm)")
                        // Only the CLI's own signature over the message under the curve's hash holds.
                        #expect(verdict == (index == 0 && data == message && algorithm == signedWith))
                    }
                }
            }
        }
    }

    @Test("one key verifies concurrently from many tasks")
    func concurrentVerification() async throws {
        let key = try PublicKey(curve: .p256, x: hex(F.p256X), y: hex(F.p256Y))
        let signature = hex(F.p256Signature)
        let results = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<64 {
                group.addTask {
                    // Half the tasks check a wrong message, so failures and successes interleave.
                    let data = index.isMultiple(of: 2) ? message : message + [1]
                    return key.verify(signature: signature, data: data, algorithm: .ecdsaSHA256)
                        == index.isMultiple(of: 2)
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.count == 64 && results.allSatisfy { $0 })
    }

    @Test("description names the key type without key material")
    func description() throws {
        let key = try PublicKey(ed25519: hex(F.ed25519Raw))
        #expect(key.description == "PublicKey(ed25519)")
    }
}
