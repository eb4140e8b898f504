import CryptoCore
import MLDSA
import PasskeyCore
import Testing

/// COSE_Key parsing of ML-DSA keys: kty AKP (7), alg -48/-49/-50, the FIPS 204 key in `pub` (-1),
/// as draft-ietf-cose-dilithium defines them, with the same strictness as every other key type.
@Suite("COSE AKP (ML-DSA) keys")
struct COSEAKPKeyTests {
    static let algorithms: [COSEAlgorithm] = [.mlDSA44, .mlDSA65, .mlDSA87]

    /// The dilithium-py fixture's public key for `algorithm`.
    static func publicKey(_ algorithm: COSEAlgorithm) -> [UInt8] {
        let entry = MLDSACeremonyTests.dilithium.first { $0["name"] as! String == algorithm.name }!
        return hex(entry["publicKey"] as! String)
    }

    static func encode(_ map: CBORMap) -> [UInt8] { CBOREncoder.encode(.map(map)) }

    static func map(_ algorithm: COSEAlgorithm, pub: [UInt8]) -> CBORMap {
        [1: .integer(7), 3: .integer(algorithm.rawValue), -1: .bytes(pub)]
    }

    @Test(
        "an AKP key parses, re-encodes canonically and round-trips through its stored bytes",
        arguments: algorithms)
    func roundTrip(_ algorithm: COSEAlgorithm) throws {
        let pub = Self.publicKey(algorithm)
        let built = try COSEKey(algorithm: algorithm, parameters: .akp(publicKey: pub))
        let parsed = try COSEKey(encoded: Self.encode(Self.map(algorithm, pub: pub)))
        #expect(built == parsed)
        #expect(parsed.encoded == built.encoded)
        #expect(try COSEKey(encoded: parsed.encoded).parameters == .akp(publicKey: pub))
        #expect(parsed.keyType == .akp)
        #expect(parsed.algorithm.signatureAlgorithm.mlDSAParameterSet == algorithm.mlDSAParameterSet)
        #expect(parsed.description.contains("mlDSA"))
    }

    @Test(
        "a key of another parameter set's length, or one byte off, is cose.invalid_length",
        arguments: algorithms)
    func wrongLength(_ algorithm: COSEAlgorithm) {
        let pub = Self.publicKey(algorithm)
        for other in Self.algorithms where other != algorithm {
            expectCode(.coseInvalidLength) {
                _ = try COSEKey(encoded: Self.encode(Self.map(algorithm, pub: Self.publicKey(other))))
            }
        }
        for bad in [pub + [0], Array(pub.dropLast()), []] {
            expectCode(.coseInvalidLength) {
                _ = try COSEKey(encoded: Self.encode(Self.map(algorithm, pub: bad)))
            }
        }
    }

    @Test("AKP with a non-ML-DSA alg, or an ML-DSA alg on another key type, is cose.algorithm_mismatch")
    func mismatch() {
        let pub = Self.publicKey(.mlDSA65)
        expectCode(.coseAlgorithmMismatch) {
            _ = try COSEKey(encoded: Self.encode([1: .integer(7), 3: .integer(-7), -1: .bytes(pub)]))
        }
        expectCode(.coseAlgorithmMismatch) {
            _ = try COSEKey(encoded: Self.encode([1: .integer(2), 3: .integer(-49), -1: .bytes(pub)]))
        }
        expectCode(.coseAlgorithmMismatch) {
            _ = try COSEKey(
                encoded: Self.encode([1: .integer(1), 3: .integer(-49), -1: .integer(6), -2: .bytes(pub)]))
        }
    }

    @Test("AKP: pub missing or not bytes, priv present: the existing COSE codes")
    func structure() {
        let pub = Self.publicKey(.mlDSA44)
        expectCode(.coseMissingParameter) {
            _ = try COSEKey(encoded: Self.encode([1: .integer(7), 3: .integer(-48)]))
        }
        expectCode(.coseWrongType) {
            _ = try COSEKey(encoded: Self.encode([1: .integer(7), 3: .integer(-48), -1: .text("pub")]))
        }
        var withPrivate = Self.map(.mlDSA44, pub: pub)
        withPrivate[-2] = .bytes([UInt8](repeating: 1, count: 32))
        expectCode(.cosePrivateKey) { _ = try COSEKey(encoded: Self.encode(withPrivate)) }
        // An unregistered algorithm stays unsupported, whatever the key type.
        expectCode(.coseUnsupportedAlgorithm) {
            _ = try COSEKey(encoded: Self.encode([1: .integer(7), 3: .integer(-51), -1: .bytes(pub)]))
        }
    }

    @Test(
        "the key's SubjectPublicKeyInfo is RFC 9881's: the parameter set's OID, no parameters, the key",
        arguments: algorithms)
    func subjectPublicKeyInfo(_ algorithm: COSEAlgorithm) throws {
        let pub = Self.publicKey(algorithm)
        let key = try COSEKey(algorithm: algorithm, parameters: .akp(publicKey: pub))
        let oidLast: UInt8 =
            switch algorithm {
            case .mlDSA44: 0x11
            case .mlDSA65: 0x12
            default: 0x13
            }
        let algorithmIdentifier: [UInt8] = [
            0x30, 0x0B, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03, oidLast,
        ]
        let bitString = [0x03, 0x82, UInt8((pub.count + 1) >> 8), UInt8((pub.count + 1) & 0xFF), 0x00] + pub
        let body = algorithmIdentifier + bitString
        let expected = [0x30, 0x82, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
        #expect(key.publicKey.derRepresentation == expected)
        // And byte for byte what dilithium-py's own encoder writes.
        #expect(expected == MLDSACeremonyTests.subjectPublicKeyInfo(algorithm))
    }

    @Test("an ML-DSA key checks only its own algorithm's signatures")
    func algorithmBinding() throws {
        let key = try PublicKey(mlDSA: .mlDSA65, encoded: Self.publicKey(.mlDSA65))
        #expect(key.type == .mlDSA(.mlDSA65))
        #expect(SignatureAlgorithm.mlDSA65.accepts(key.type))
        #expect(!SignatureAlgorithm.mlDSA44.accepts(key.type))
        #expect(!SignatureAlgorithm.ed25519.accepts(key.type))
        #expect(!SignatureAlgorithm.mlDSA65.accepts(.ed25519))
        #expect(throws: CryptoError.self) {
            try PublicKey(mlDSA: .mlDSA44, encoded: Self.publicKey(.mlDSA65))
        }
    }
}
