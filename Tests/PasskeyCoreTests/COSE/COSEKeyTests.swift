import CryptoCore
import Kernel
import PasskeyCore
import TestSupport
import Testing

/// Encodes a map with its entries in the given order, not canonical order, as a sloppy authenticator might.
func encodeInInsertionOrder(_ map: CBORMap) -> [UInt8] {
    var out = CBOREncoder.encode(.map(CBORMap()))
    out[0] = 0xa0 | UInt8(map.count)
    for entry in map {
        out += CBOREncoder.encode(entry.key)
        out += CBOREncoder.encode(entry.value)
    }
    return out
}

/// Parses `map` as a COSE_Key, expecting failure with `code`.
private func expectRejected(
    _ code: PasskeyError.Code, _ map: CBORMap, _ comment: Comment? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(throws: PasskeyError(code, ""), comment, sourceLocation: sourceLocation) {
        try COSEKey(encoded: CBOREncoder.encode(.map(map)))
    }
}

private let message = Array("a WebAuthn assertion's authenticatorData ‖ SHA-256(clientDataJSON)".utf8)

@Suite("COSE keys")
struct COSEKeyTests {
    // MARK: Round trips with freshly generated keys

    @Test(
        "every algorithm: a key generated with OpenSSL signs and its COSE_Key verifies",
        arguments: TestKeys.byAlgorithm)
    func signAndVerify(algorithm: COSEAlgorithm, key: SoftwareKey) throws {
        let cose = try COSEKey(algorithm: algorithm, parameters: key.coseParameters)
        #expect(cose.algorithm == algorithm)
        #expect(cose.keyType == algorithm.keyType)
        let signature = key.sign(message, algorithm: algorithm.signatureAlgorithm)
        #expect(cose.verify(signature: signature, data: message))
        // Parsing the stored bytes gives the same key back, and it still verifies.
        let reparsed = try COSEKey(encoded: cose.encoded)
        #expect(reparsed == cose)
        #expect(reparsed.parameters == cose.parameters)
        #expect(reparsed.verify(signature: signature, data: message))
    }

    @Test(
        "every algorithm: a tampered signature, a changed message or an empty signature fails",
        arguments: TestKeys.byAlgorithm)
    func tampering(algorithm: COSEAlgorithm, key: SoftwareKey) throws {
        let cose = try COSEKey(algorithm: algorithm, parameters: key.coseParameters)
        let signature = key.sign(message, algorithm: algorithm.signatureAlgorithm)
        for index in [0, signature.count / 2, signature.count - 1] {
            var tampered = signature
            tampered[index] ^= 0x01
            #expect(!cose.verify(signature: tampered, data: message))
        }
        var changed = message
        changed[0] ^= 0x01
        #expect(!cose.verify(signature: signature, data: changed))
        #expect(!cose.verify(signature: [UInt8](), data: message))
        #expect(!cose.verify(signature: signature + [0], data: message))
    }

    @Test(
        "every algorithm: a signature by another key of the same type fails", arguments: TestKeys.byAlgorithm)
    func wrongKey(algorithm: COSEAlgorithm, key: SoftwareKey) throws {
        let other: SoftwareKey =
            switch key.kind {
            case .rsa: TestKeys.otherRSA2048
            case .ec(.p256): TestKeys.otherP256
            default: SoftwareKey.generate(key.kind)
            }
        let cose = try COSEKey(algorithm: algorithm, parameters: key.coseParameters)
        #expect(
            !cose.verify(
                signature: other.sign(message, algorithm: algorithm.signatureAlgorithm), data: message))
    }

    @Test("RSA signatures under one RSA algorithm never verify under another")
    func rsaAlgorithmsAreDistinct() throws {
        let rsa: [COSEAlgorithm] = [.rs256, .rs384, .rs512, .ps256, .rs1]
        for signer in rsa {
            let signature = TestKeys.rsa2048.sign(message, algorithm: signer.signatureAlgorithm)
            for verifier in rsa {
                let cose = try COSEKey(algorithm: verifier, parameters: TestKeys.rsa2048.coseParameters)
                #expect(cose.verify(signature: signature, data: message) == (signer == verifier))
            }
        }
    }

    @Test("the original bytes are kept exactly, even when the authenticator did not sort the map")
    func keepsOriginalBytes() throws {
        let canonical = TestKeys.p256.coseMap(algorithm: .es256)
        // Reverse the entries: the same key, a different (non-canonical) encoding.
        let reversed = CBORMap(uniqueKeysWithValues: canonical.reversed().map { ($0.key, $0.value) })
        let bytes = encodeInInsertionOrder(reversed)
        #expect(bytes != CBOREncoder.encode(.map(canonical)))
        let key = try COSEKey(encoded: bytes)
        #expect(key.encoded == bytes)
        #expect(key.verify(signature: TestKeys.p256.sign(message, algorithm: .ecdsaSHA256), data: message))
    }

    @Test("unknown COSE labels such as kid and key_ops are ignored, as RFC 9052 allows")
    func ignoresOtherLabels() throws {
        var map = TestKeys.ed25519.coseMap(algorithm: .edDSA)
        map[2] = .bytes([1, 2, 3])  // kid
        map[4] = [2]  // key_ops: verify
        map["vendor"] = "x"
        #expect(throws: Never.self) { try COSEKey(encoded: CBOREncoder.encode(.map(map))) }
    }

    // MARK: Known answers from the openssl CLI

    @Test("COSE keys built from openssl CLI keys verify the CLI's signatures under every algorithm")
    func cliKnownAnswers() throws {
        typealias F = OpenSSLCLIFixtures
        let cases: [(COSEAlgorithm, COSEKey.Parameters, String)] = [
            (.es256, .ec2(curve: .p256, x: hex(F.p256X), y: hex(F.p256Y)), F.p256Signature),
            (.es384, .ec2(curve: .p384, x: hex(F.p384X), y: hex(F.p384Y)), F.p384Signature),
            (.es512, .ec2(curve: .p521, x: hex(F.p521X), y: hex(F.p521Y)), F.p521Signature),
            (.edDSA, .okp(curve: .ed25519, x: hex(F.ed25519Raw)), F.ed25519Signature),
            (.rs1, .rsa(n: hex(F.rsaModulus), e: [1, 0, 1]), F.rsaPKCS1SHA1Signature),
            (.rs256, .rsa(n: hex(F.rsaModulus), e: [1, 0, 1]), F.rsaPKCS1SHA256Signature),
            (.rs384, .rsa(n: hex(F.rsaModulus), e: [1, 0, 1]), F.rsaPKCS1SHA384Signature),
            (.rs512, .rsa(n: hex(F.rsaModulus), e: [1, 0, 1]), F.rsaPKCS1SHA512Signature),
            (.ps256, .rsa(n: hex(F.rsaModulus), e: [1, 0, 1]), F.rsaPSSSHA256Signature),
        ]
        for (algorithm, parameters, signature) in cases {
            let key = try COSEKey(algorithm: algorithm, parameters: parameters)
            #expect(key.verify(signature: hex(signature), data: F.message), "\(algorithm)")
            #expect(!key.verify(signature: hex(signature), data: F.message.dropFirst()), "\(algorithm)")
        }
    }

    @Test("a known ES256 COSE_Key encoding parses to the expected coordinates (hand-assembled bytes)")
    func knownEncoding() throws {
        typealias F = OpenSSLCLIFixtures
        // a5 01 02 03 26 20 01 21 58 20 <x> 22 58 20 <y>: the layout every ES256 passkey sends.
        let bytes = hex("a5 01 02 03 26 20 01 21 5820" + F.p256X + "22 5820" + F.p256Y)
        let key = try COSEKey(encoded: bytes)
        #expect(key.parameters == .ec2(curve: .p256, x: hex(F.p256X), y: hex(F.p256Y)))
        #expect(key.algorithm == .es256 && key.publicKey.type == .ec(.p256))
        #expect(key.verify(signature: hex(F.p256Signature), data: F.message))
        #expect(try COSEKey(algorithm: .es256, parameters: key.parameters).encoded == bytes)
    }

    @Test("the algorithm, key type and curve enums carry the IANA registry values")
    func registryValues() {
        #expect(
            COSEAlgorithm.allCases.map(\.rawValue) == [
                -7, -8, -35, -36, -37, -257, -258, -259, -65535, -48, -49, -50,
            ])
        #expect(
            COSEAlgorithm.allCases.map(\.name) == [
                "ES256", "EdDSA", "ES384", "ES512", "PS256", "RS256", "RS384", "RS512", "RS1", "ML-DSA-44",
                "ML-DSA-65", "ML-DSA-87",
            ])
        #expect(COSEAlgorithm.allCases.allSatisfy { COSEAlgorithm(name: $0.name) == $0 })
        #expect(COSEKeyType.allCases.map(\.rawValue) == [1, 2, 3, 7])
        #expect(COSECurve.allCases.map(\.rawValue) == [1, 2, 3, 6])
        #expect(COSECurve.allCases.map(\.coordinateByteCount) == [32, 48, 66, 32])
    }

    // MARK: Rejections, one code at a time

    @Test("cose.malformed: not a map, or a label that is neither integer nor text")
    func malformed() {
        #expect(throws: PasskeyError(.coseMalformed, "")) {
            try COSEKey(encoded: CBOREncoder.encode([1, 2]))
        }
        #expect(throws: PasskeyError(.coseMalformed, "")) {
            try COSEKey(encoded: CBOREncoder.encode(.bytes([1])))
        }
        var map = TestKeys.p256.coseMap(algorithm: .es256)
        map[.bytes([1])] = 0
        expectRejected(.coseMalformed, map)
    }

    @Test("CBOR errors in the key bytes surface with their cbor.* code")
    func cborErrors() {
        let bytes = CBOREncoder.encode(.map(TestKeys.p256.coseMap(algorithm: .es256)))
        #expect(throws: PasskeyError(.cborTrailingBytes, "")) { try COSEKey(encoded: bytes + [0]) }
        #expect(throws: PasskeyError(.cborTruncated, "")) { try COSEKey(encoded: Array(bytes.dropLast())) }
    }

    @Test("cose.missing_parameter: kty, alg, crv, x, y, n and e are each required")
    func missingParameters() {
        let ec = TestKeys.p256.coseMap(algorithm: .es256)
        for label: Int64 in [1, 3, -1, -2, -3] {
            var map = ec
            map[.integer(label)] = nil
            expectRejected(.coseMissingParameter, map, "EC2 without label \(label)")
        }
        let okp = TestKeys.ed25519.coseMap(algorithm: .edDSA)
        for label: Int64 in [-1, -2] {
            var map = okp
            map[.integer(label)] = nil
            expectRejected(.coseMissingParameter, map, "OKP without label \(label)")
        }
        let rsa = TestKeys.rsa2048.coseMap(algorithm: .rs256)
        for label: Int64 in [-1, -2] {
            var map = rsa
            map[.integer(label)] = nil
            expectRejected(.coseMissingParameter, map, "RSA without label \(label)")
        }
    }

    @Test("cose.wrong_type: text kty, text alg, text crv, and non-byte x, y, n, e")
    func wrongTypes() {
        let ec = TestKeys.p256.coseMap(algorithm: .es256)
        let replacements: [(Int64, CBORValue)] = [
            (1, "EC2"), (3, "ES256"), (-1, "P-256"), (-2, 5), (-3, "y"),
        ]
        for (label, value) in replacements {
            var map = ec
            map[.integer(label)] = value
            expectRejected(.coseWrongType, map, "label \(label)")
        }
        for label: Int64 in [-1, -2] {
            var map = TestKeys.rsa2048.coseMap(algorithm: .rs256)
            map[.integer(label)] = 65537
            expectRejected(.coseWrongType, map, "RSA label \(label)")
        }
    }

    @Test("cose.unsupported_key_type: symmetric (4), HSS-LMS (5) and unassigned key types")
    func unsupportedKeyType() {
        for kty: Int64 in [0, 4, 5, 6, -1] {
            var map = TestKeys.p256.coseMap(algorithm: .es256)
            map[1] = .integer(kty)
            expectRejected(.coseUnsupportedKeyType, map, "kty \(kty)")
        }
    }

    @Test("cose.unsupported_algorithm: ES256K, Ed448-only, HMAC and unassigned values")
    func unsupportedAlgorithm() {
        for alg: Int64 in [-47, -53, 5, 0, -65534, -7 + 65536] {
            var map = TestKeys.p256.coseMap(algorithm: .es256)
            map[3] = .integer(alg)
            expectRejected(.coseUnsupportedAlgorithm, map, "alg \(alg)")
        }
    }

    @Test("cose.algorithm_mismatch: EdDSA with EC2, ES256 with OKP, RS256 with EC2, ES256 with RSA")
    func algorithmMismatch() {
        var map = TestKeys.p256.coseMap(algorithm: .es256)
        map[3] = .integer(COSEAlgorithm.edDSA.rawValue)
        expectRejected(.coseAlgorithmMismatch, map, "EdDSA on EC2")
        map[3] = .integer(COSEAlgorithm.rs256.rawValue)
        expectRejected(.coseAlgorithmMismatch, map, "RS256 on EC2")
        var okp = TestKeys.ed25519.coseMap(algorithm: .edDSA)
        okp[3] = .integer(COSEAlgorithm.es256.rawValue)
        expectRejected(.coseAlgorithmMismatch, okp, "ES256 on OKP")
        var rsa = TestKeys.rsa2048.coseMap(algorithm: .rs256)
        rsa[3] = .integer(COSEAlgorithm.es256.rawValue)
        expectRejected(.coseAlgorithmMismatch, rsa, "ES256 on RSA")
    }

    @Test("cose.curve_mismatch: ES256 on P-384, ES384 on P-256, ES512 on P-256, Ed25519 on EC2, P-256 on OKP")
    func curveMismatch() {
        // Correct coordinates for the named curve, so only the alg/crv pairing is wrong.
        var p384 = TestKeys.p384.coseMap(algorithm: .es384)
        p384[3] = .integer(COSEAlgorithm.es256.rawValue)
        expectRejected(.coseCurveMismatch, p384, "ES256 on P-384")
        var p256 = TestKeys.p256.coseMap(algorithm: .es256)
        p256[3] = .integer(COSEAlgorithm.es384.rawValue)
        expectRejected(.coseCurveMismatch, p256, "ES384 on P-256")
        p256[3] = .integer(COSEAlgorithm.es512.rawValue)
        expectRejected(.coseCurveMismatch, p256, "ES512 on P-256")
        var ec2 = TestKeys.p256.coseMap(algorithm: .es256)
        ec2[-1] = .integer(COSECurve.ed25519.rawValue)
        expectRejected(.coseCurveMismatch, ec2, "Ed25519 curve on EC2")
        var okp = TestKeys.ed25519.coseMap(algorithm: .edDSA)
        okp[-1] = .integer(COSECurve.p256.rawValue)
        expectRejected(.coseCurveMismatch, okp, "P-256 curve on OKP")
    }

    @Test("cose.unsupported_curve: Ed448, X25519, secp256k1 and unassigned curves")
    func unsupportedCurve() {
        for crv: Int64 in [4, 5, 7, 8, 0, -1] {
            var map = TestKeys.ed25519.coseMap(algorithm: .edDSA)
            map[-1] = .integer(crv)
            expectRejected(.coseUnsupportedCurve, map, "crv \(crv)")
        }
    }

    @Test(
        "cose.invalid_length: coordinates one byte short or long, P-521 without its leading zero, short Ed25519"
    )
    func invalidLengths() {
        for (key, algorithm) in [
            (TestKeys.p256, COSEAlgorithm.es256), (TestKeys.p384, .es384), (TestKeys.p521, .es512),
        ] {
            let (x, y) = key.ecCoordinates
            for (label, value) in [
                (Int64(-2), Array(x.dropFirst())), (-2, x + [0]), (-3, Array(y.dropFirst())), (-3, [0] + y),
            ] {
                var map = key.coseMap(algorithm: algorithm)
                map[.integer(label)] = .bytes(value)
                expectRejected(.coseInvalidLength, map, "\(algorithm) label \(label) of \(value.count) bytes")
            }
        }
        // A P-521 coordinate is 66 bytes even though its top byte holds at most one bit.
        var p521 = TestKeys.p521.coseMap(algorithm: .es512)
        p521[-2] = .bytes(Array(TestKeys.p521.ecCoordinates.x.suffix(65)))
        expectRejected(.coseInvalidLength, p521, "P-521 x trimmed to 65 bytes")
        var okp = TestKeys.ed25519.coseMap(algorithm: .edDSA)
        okp[-2] = .bytes(Array(TestKeys.ed25519.ed25519PublicKey.prefix(31)))
        expectRejected(.coseInvalidLength, okp, "31-byte Ed25519")
    }

    @Test("cose.compressed_point: y given as a sign bit is refused")
    func compressedPoint() {
        for sign in [true, false] {
            var map = TestKeys.p256.coseMap(algorithm: .es256)
            map[-3] = .boolean(sign)
            expectRejected(.coseCompressedPoint, map)
        }
    }

    @Test("cose.private_key: a d (EC2, OKP) or any private RSA parameter is refused")
    func privateKey() {
        var ec = TestKeys.p256.coseMap(algorithm: .es256)
        ec[-4] = .bytes([UInt8](repeating: 1, count: 32))
        expectRejected(.cosePrivateKey, ec)
        var okp = TestKeys.ed25519.coseMap(algorithm: .edDSA)
        okp[-4] = .bytes([UInt8](repeating: 1, count: 32))
        expectRejected(.cosePrivateKey, okp)
        for label: Int64 in [-3, -4, -5, -6, -7, -8] {
            var rsa = TestKeys.rsa2048.coseMap(algorithm: .rs256)
            rsa[.integer(label)] = .bytes([1])
            expectRejected(.cosePrivateKey, rsa, "RSA label \(label)")
        }
    }

    @Test(
        "cose.invalid_key: a point off the curve, an even RSA modulus or exponent, with the crypto cause kept"
    )
    func invalidKey() throws {
        var ec = TestKeys.p256.coseMap(algorithm: .es256)
        var y = TestKeys.p256.ecCoordinates.y
        y[31] ^= 1
        ec[-3] = .bytes(y)
        do {
            _ = try COSEKey(encoded: CBOREncoder.encode(.map(ec)))
            Issue.record("an off-curve point was accepted")
        } catch {
            #expect(error.code == .coseInvalidKey)
            #expect((error.underlying as? CryptoError)?.code == .invalidPublicKey)
        }
        let (n, e) = TestKeys.rsa2048.rsaComponents
        var evenModulus = n
        evenModulus[evenModulus.count - 1] &= 0xfe
        var rsa = TestKeys.rsa2048.coseMap(algorithm: .rs256)
        rsa[-1] = .bytes(evenModulus)
        expectRejected(.coseInvalidKey, rsa, "even modulus")
        rsa[-1] = .bytes(n)
        rsa[-2] = .bytes(e.dropLast() + [e.last! & 0xfe])
        expectRejected(.coseInvalidKey, rsa, "even exponent")
    }

    @Test(
        "cose.small_order_key: each of the eight small-order Ed25519 points, in each of its encodings, is refused",
        arguments: SmallOrderEd25519.encodings.map(\.hex))
    func smallOrderEd25519(encoding: String) {
        var okp = TestKeys.ed25519.coseMap(algorithm: .edDSA)
        okp[-2] = .bytes(hex(encoding))
        do {
            let key = try COSEKey(encoded: CBOREncoder.encode(.map(okp)))
            // What accepting it would mean: with the identity, R = identity and S = 0 sign anything.
            let forged = hex(SmallOrderEd25519.encodings[0].hex) + [UInt8](repeating: 0, count: 32)
            Issue.record(
                "accepted; the forged signature verifies: \(key.verify(signature: forged, data: message))")
        } catch {
            #expect(error.code == .coseSmallOrderKey)
            #expect((error.underlying as? CryptoError)?.code == .smallOrderKey)
        }
        // Built from parts, the way the software authenticator makes keys, the rule is the same.
        #expect(throws: PasskeyError(.coseSmallOrderKey, "")) {
            try COSEKey(algorithm: .edDSA, parameters: .okp(curve: .ed25519, x: hex(encoding)))
        }
    }

    @Test("cose.invalid_key: an Ed25519 key with y ≥ p is refused although its point is on the curve")
    func nonCanonicalEd25519() throws {
        var okp = TestKeys.ed25519.coseMap(algorithm: .edDSA)
        okp[-2] = .bytes(hex(SmallOrderEd25519.canonicalY3))
        _ = try COSEKey(encoded: CBOREncoder.encode(.map(okp)))
        okp[-2] = .bytes(hex(SmallOrderEd25519.nonCanonicalY3))
        expectRejected(.coseInvalidKey, okp, "y = 3 + p")
    }

    @Test("cose.weak_key: a 1024-bit RSA key is refused for every RSA algorithm")
    func weakRSA() {
        for algorithm in [COSEAlgorithm.rs256, .rs384, .rs512, .ps256, .rs1] {
            expectRejected(.coseWeakKey, TestKeys.rsa1024.coseMap(algorithm: algorithm), "\(algorithm)")
        }
    }

    @Test("every COSE error code is reachable from a crafted key")
    func everyCOSECodeCovered() {
        let covered: Set<PasskeyError.Code> = [
            .coseMalformed, .coseMissingParameter, .coseWrongType, .coseUnsupportedKeyType,
            .coseUnsupportedAlgorithm,
            .coseUnsupportedCurve, .coseAlgorithmMismatch, .coseCurveMismatch, .coseInvalidLength,
            .coseCompressedPoint,
            .cosePrivateKey, .coseInvalidKey, .coseWeakKey, .coseSmallOrderKey,
        ]
        #expect(Set(PasskeyError.Code.allCases.filter { $0.rawValue.hasPrefix("cose.") }) == covered)
    }

    @Test("5,000 single-byte mutations of valid COSE keys never crash parsing or verification")
    func mutationFuzz() {
        var generator = SplitMix64(seed: 0xc05e)
        let seeds = TestKeys.byAlgorithm.map { CBOREncoder.encode(.map($0.1.coseMap(algorithm: $0.0))) }
        let signature = TestKeys.p256.sign(message, algorithm: .ecdsaSHA256)
        for round in 0..<5_000 {
            var bytes = seeds[round % seeds.count]
            let position = Int.random(in: 0..<bytes.count, using: &generator)
            bytes[position] = UInt8.random(in: 0...255, using: &generator)
            if let key = try? COSEKey(encoded: bytes) {
                // Whatever survives mutation must still be a consistent, usable key.
                #expect(key.encoded == bytes)
                _ = key.verify(signature: signature, data: message)
            }
        }
    }
}
