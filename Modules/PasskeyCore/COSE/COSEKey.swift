public import CryptoCore
public import FoundationEssentials
import MLDSA

/// A credential public key in COSE_Key form (RFC 9052 §7), parsed, checked and ready to verify with.
///
/// Parsing is strict in the way WebAuthn L3 §5.8.5 and §6.5.1.1 need: `kty` and `alg` are required,
/// the algorithm must belong to the key type and the curve to the algorithm, coordinates must have the
/// exact length of their curve, points must be uncompressed and on the curve, Ed25519 keys must be
/// canonical and not of small order, RSA keys need at least 2048 bits, ML-DSA keys (kty AKP) have
/// their parameter set's exact length, and private parameters are refused. Labels COSE defines but
/// WebAuthn does not use (`kid`, `key_ops`, `base_iv`) are ignored, as RFC 9052 allows.
///
/// The verifying key is built once, during parsing, and kept: verifying with a stored `COSEKey` costs
/// one signature check and nothing else. The original bytes are kept for storage.
public struct COSEKey: Sendable, Hashable, CustomStringConvertible {
    /// The key material, by key type.
    public enum Parameters: Sendable, Hashable {
        /// An EC2 key: curve and uncompressed affine coordinates.
        case ec2(curve: COSECurve, x: [UInt8], y: [UInt8])
        /// An OKP key: curve and the encoded public key.
        case okp(curve: COSECurve, x: [UInt8])
        /// An RSA key: modulus and public exponent, big-endian.
        case rsa(n: [UInt8], e: [UInt8])
        /// An AKP key: the algorithm's own public key encoding (for ML-DSA, FIPS 204 pkEncode).
        case akp(publicKey: [UInt8])

        /// The COSE key type of these parameters.
        public var keyType: COSEKeyType {
            switch self {
            case .ec2: .ec2
            case .okp: .okp
            case .rsa: .rsa
            case .akp: .akp
            }
        }
    }

    /// COSE_Key labels (RFC 9052 §7.1, RFC 9053 §7, RFC 8230 §4); negative ones depend on `kty`.
    private enum Label {
        static let kty: Int64 = 1
        static let alg: Int64 = 3
        static let crv: Int64 = -1
        static let x: Int64 = -2
        static let y: Int64 = -3
        static let n: Int64 = -1
        static let e: Int64 = -2
        /// `pub` for AKP keys (draft-ietf-cose-dilithium §4).
        static let pub: Int64 = -1
        /// `d` for EC2 and OKP keys.
        static let ellipticPrivate: [Int64] = [-4]
        /// `priv` for AKP keys.
        static let akpPrivate: [Int64] = [-2]
        /// d, p, q, dP, dQ, qInv, other, r_i, d_i, t_i for RSA keys.
        static let rsaPrivate: [Int64] = [-3, -4, -5, -6, -7, -8, -9, -10, -11, -12]
    }

    /// The algorithm the key signs with (label 3).
    public let algorithm: COSEAlgorithm
    /// The key material.
    public let parameters: Parameters
    /// The COSE_Key exactly as received, for storage; re-parsing it gives back an equal key.
    public let encoded: [UInt8]
    /// The validated key (OpenSSL's, or for ML-DSA the MLDSA module's), reusable across any number of
    /// verifications and threads.
    public let publicKey: PublicKey

    /// The key type (label 1).
    public var keyType: COSEKeyType { parameters.keyType }

    /// Parses a COSE_Key from its CBOR encoding, which must be exactly one map.
    ///
    /// - Parameters:
    ///   - encoded: The CBOR bytes, as stored or as cut out of authenticator data.
    ///   - decoder: The CBOR decoder and its limits.
    /// - Throws: `PasskeyError` with a `cbor.*` code for bad CBOR, or a `cose.*` code for a bad key.
    public init(encoded: [UInt8], decoder: CBORDecoder = CBORDecoder()) throws(PasskeyError) {
        // decode, not decodePrefix: a stored key is exactly one item, and trailing bytes mean corruption.
        let value = try decoder.decode(encoded)
        try self.init(value: value, encoded: encoded)
    }

    /// Builds and checks a key from its parts, encoding it in CTAP2 canonical form.
    ///
    /// For the software authenticator and tests; the result is what an authenticator would send.
    /// - Throws: `PasskeyError` with a `cose.*` code when the parts do not make a valid key.
    public init(algorithm: COSEAlgorithm, parameters: Parameters) throws(PasskeyError) {
        var map: CBORMap = [
            .integer(Label.kty): .integer(parameters.keyType.rawValue),
            .integer(Label.alg): .integer(algorithm.rawValue),
        ]
        switch parameters {
        case .ec2(let curve, let x, let y):
            map[.integer(Label.crv)] = .integer(curve.rawValue)
            map[.integer(Label.x)] = .bytes(x)
            map[.integer(Label.y)] = .bytes(y)
        case .okp(let curve, let x):
            map[.integer(Label.crv)] = .integer(curve.rawValue)
            map[.integer(Label.x)] = .bytes(x)
        case .rsa(let n, let e):
            map[.integer(Label.n)] = .bytes(n)
            map[.integer(Label.e)] = .bytes(e)
        case .akp(let publicKey):
            map[.integer(Label.pub)] = .bytes(publicKey)
        }
        // Going through the parsing path means a key built here obeys exactly the rules a received one does.
        let value = CBORValue.map(map)
        try self.init(value: value, encoded: CBOREncoder.encode(value))
    }

    /// Checks a decoded COSE_Key; `encoded` must be the bytes `value` was decoded from.
    init(value: CBORValue, encoded: [UInt8]) throws(PasskeyError) {
        guard case .map(let map) = value else {
            throw PasskeyError(.coseMalformed, "a COSE_Key must be a CBOR map, found \(value.typeName)")
        }
        // RFC 9052 §7: labels are integers or text strings; anything else is not a COSE_Key.
        for entry in map {
            switch entry.key {
            case .integer, .text: continue
            default: throw PasskeyError(.coseMalformed, "a COSE_Key label is a \(entry.key.typeName)")
            }
        }

        // kty, then alg, then their pairing: each failure gets the most specific code available.
        let ktyValue = try Self.integer(map, Label.kty, "kty")
        guard let kty = COSEKeyType(rawValue: ktyValue) else {
            throw PasskeyError(.coseUnsupportedKeyType, "kty \(ktyValue) is not EC2, OKP, RSA or AKP")
        }
        // WebAuthn L3 §5.8.5: the credential public key must name its algorithm.
        let algValue = try Self.integer(map, Label.alg, "alg")
        guard let alg = COSEAlgorithm(rawValue: algValue) else {
            throw PasskeyError(
                .coseUnsupportedAlgorithm, "alg \(algValue) is not an algorithm Portvakt verifies")
        }
        guard alg.keyType == kty else {
            throw PasskeyError(.coseAlgorithmMismatch, "alg \(alg) needs kty \(alg.keyType), found \(kty)")
        }
        // A public key that ships its private half means a broken or hostile authenticator.
        let privateLabels =
            switch kty {
            case .rsa: Label.rsaPrivate
            case .akp: Label.akpPrivate
            case .ec2, .okp: Label.ellipticPrivate
            }
        if privateLabels.contains(where: { map[label: $0] != nil }) {
            throw PasskeyError(.cosePrivateKey, "the COSE_Key carries private key parameters")
        }

        let parameters: Parameters
        switch kty {
        case .ec2: parameters = try Self.ec2Parameters(map, algorithm: alg)
        case .okp: parameters = try Self.okpParameters(map, algorithm: alg)
        case .rsa:
            // Sizes and values are judged by CryptoCore when the key is built, below.
            parameters = .rsa(n: try Self.bytes(map, Label.n, "n"), e: try Self.bytes(map, Label.e, "e"))
        case .akp: parameters = try Self.akpParameters(map, algorithm: alg)
        }
        self.algorithm = alg
        self.parameters = parameters
        self.encoded = encoded
        // Built last and once: every structural error is reported before OpenSSL sees anything.
        self.publicKey = try Self.buildPublicKey(parameters, algorithm: alg)
    }

    /// Verifies `signature` over `data` with this key under its own algorithm.
    ///
    /// - Returns: True only for a valid signature; malformed signatures return false, never trap.
    public func verify(signature: some ContiguousBytes, data: some ContiguousBytes) -> Bool {
        publicKey.verify(signature: signature, data: data, algorithm: algorithm.signatureAlgorithm)
    }

    /// Keys are equal when their stored encodings are.
    public static func == (lhs: COSEKey, rhs: COSEKey) -> Bool { lhs.encoded == rhs.encoded }

    /// Hashes the stored encoding.
    public func hash(into hasher: inout Hasher) { hasher.combine(encoded) }

    /// Names the algorithm and key type only.
    public var description: String { "COSEKey(\(algorithm), \(publicKey.type))" }

    // MARK: Parameter checks

    /// The EC2 parameters, with the curve bound to the algorithm and exact coordinate lengths.
    private static func ec2Parameters(_ map: CBORMap, algorithm: COSEAlgorithm) throws(PasskeyError)
        -> Parameters
    {
        let curve = try curve(map, algorithm: algorithm, keyType: .ec2)
        let x = try bytes(map, Label.x, "x")
        // y as a boolean is RFC 9053's point compression (the sign bit); WebAuthn requires both coordinates.
        guard let yValue = map[label: Label.y] else {
            throw PasskeyError(.coseMissingParameter, "an EC2 key needs y")
        }
        if case .boolean = yValue {
            throw PasskeyError(.coseCompressedPoint, "compressed EC points are not accepted")
        }
        guard case .bytes(let y) = yValue else {
            throw PasskeyError(.coseWrongType, "y must be a byte string, found \(yValue.typeName)")
        }
        // Exact lengths: leading zeros are part of the encoding (RFC 9053 §7.1.1), never trimmed.
        let size = curve.coordinateByteCount
        guard x.count == size, y.count == size else {
            throw PasskeyError(.coseInvalidLength, "\(curve) coordinates must be \(size) bytes each")
        }
        return .ec2(curve: curve, x: x, y: y)
    }

    /// The OKP parameters: Ed25519 with a 32-byte key.
    private static func okpParameters(_ map: CBORMap, algorithm: COSEAlgorithm) throws(PasskeyError)
        -> Parameters
    {
        let curve = try curve(map, algorithm: algorithm, keyType: .okp)
        let x = try bytes(map, Label.x, "x")
        // RFC 8032 keys have one fixed length; anything else cannot be an Ed25519 point.
        guard x.count == curve.coordinateByteCount else {
            throw PasskeyError(.coseInvalidLength, "an Ed25519 key is \(curve.coordinateByteCount) bytes")
        }
        return .okp(curve: curve, x: x)
    }

    /// The AKP parameters: an ML-DSA public key of exactly its parameter set's length.
    private static func akpParameters(_ map: CBORMap, algorithm: COSEAlgorithm) throws(PasskeyError)
        -> Parameters
    {
        let publicKey = try bytes(map, Label.pub, "pub")
        // alg.keyType == .akp was checked, and every AKP algorithm is an ML-DSA one.
        guard let set = algorithm.mlDSAParameterSet, publicKey.count == set.publicKeyByteCount else {
            let expected =
                algorithm.mlDSAParameterSet.map { "\($0.publicKeyByteCount) bytes" } ?? "an ML-DSA key"
            throw PasskeyError(
                .coseInvalidLength, "an \(algorithm.name) public key is \(expected), got \(publicKey.count)")
        }
        return .akp(publicKey: publicKey)
    }

    /// The curve, checked against the key type first (a wrong-family curve) and then the algorithm.
    private static func curve(
        _ map: CBORMap, algorithm: COSEAlgorithm, keyType: COSEKeyType
    ) throws(PasskeyError) -> COSECurve {
        let value = try integer(map, Label.crv, "crv")
        guard let curve = COSECurve(rawValue: value) else {
            throw PasskeyError(.coseUnsupportedCurve, "crv \(value) is not a curve Portvakt accepts")
        }
        guard curve.keyType == keyType else {
            throw PasskeyError(.coseCurveMismatch, "crv \(curve) does not belong to kty \(keyType)")
        }
        guard curve == algorithm.curve else {
            throw PasskeyError(.coseCurveMismatch, "alg \(algorithm) is not used with crv \(curve)")
        }
        return curve
    }

    /// A required integer parameter.
    private static func integer(_ map: CBORMap, _ label: Int64, _ name: String) throws(PasskeyError) -> Int64
    {
        guard let value = map[label: label] else {
            throw PasskeyError(.coseMissingParameter, "the COSE_Key has no \(name)")
        }
        guard case .integer(let number) = value else {
            throw PasskeyError(.coseWrongType, "\(name) must be an integer, found \(value.typeName)")
        }
        return number
    }

    /// A required byte-string parameter.
    private static func bytes(_ map: CBORMap, _ label: Int64, _ name: String) throws(PasskeyError) -> [UInt8]
    {
        guard let value = map[label: label] else {
            throw PasskeyError(.coseMissingParameter, "the COSE_Key has no \(name)")
        }
        guard case .bytes(let bytes) = value else {
            throw PasskeyError(.coseWrongType, "\(name) must be a byte string, found \(value.typeName)")
        }
        return bytes
    }

    /// Builds the CryptoCore key, turning CryptoCore's verdicts into COSE codes and keeping them as cause.
    private static func buildPublicKey(_ parameters: Parameters, algorithm: COSEAlgorithm)
        throws(PasskeyError)
        -> PublicKey
    {
        do throws(CryptoError) {
            switch parameters {
            case .ec2(let curve, let x, let y):
                // ec2Parameters only admits the three NIST curves, which all have an ECCurve.
                guard let ecCurve = curve.ecCurve else {
                    throw CryptoError(.unsupportedKeyType, "not an EC2 curve")
                }
                return try PublicKey(curve: ecCurve, x: x, y: y)
            case .okp(_, let x):
                return try PublicKey(ed25519: x)
            case .rsa(let n, let e):
                return try PublicKey(rsaModulus: n, exponent: e)
            case .akp(let publicKey):
                // akpParameters only admits ML-DSA algorithms.
                guard let set = algorithm.mlDSAParameterSet else {
                    throw CryptoError(.unsupportedKeyType, "not an AKP algorithm")
                }
                return try PublicKey(mlDSA: set, encoded: publicKey)
            }
        } catch {
            // Size problems get their own code so an operator can tell "old authenticator" from "forged".
            switch error.code {
            case .weakKey, .unsupportedKeySize:
                throw PasskeyError(.coseWeakKey, error.message, underlying: error)
            // A key that any signature can be forged for is a forgery signal, never an old device.
            case .smallOrderKey:
                throw PasskeyError(.coseSmallOrderKey, error.message, underlying: error)
            default:
                throw PasskeyError(.coseInvalidKey, error.message, underlying: error)
            }
        }
    }
}
