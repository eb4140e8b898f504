/// A P-256 public key as a JSON Web Key (RFC 7517, RFC 7518 §6.2): what a JWKS publishes for
/// ES256 verifiers, and its RFC 7638 thumbprint, which names the key (`kid`).
public struct P256PublicJWK: Sendable, Equatable {
    /// The x coordinate, 32 bytes, base64url.
    public let x: String
    /// The y coordinate, 32 bytes, base64url.
    public let y: String

    private static let ecPublicKeyOID = "1.2.840.10045.2.1"
    private static let p256OID = "1.2.840.10045.3.1.7"

    /// Reads a DER SubjectPublicKeyInfo holding an uncompressed P-256 point (what
    /// `SigningKey.subjectPublicKeyInfo` writes for a `.p256` key).
    /// - Throws: `CryptoError(.unsupportedKeyType)` for another algorithm or curve,
    ///   `.invalidPublicKey` for a compressed or mis-sized point, the DER codes for bad DER.
    public init(subjectPublicKeyInfo der: [UInt8]) throws(CryptoError) {
        var outer = DERReader(der)
        var info = try outer.readElement(.sequence).contents()
        try outer.finish()
        var algorithm = try info.readElement(.sequence).contents()
        let kind = try algorithm.readElement(.objectIdentifier).objectIdentifier()
        // Another algorithm's parameters are not an OID (RSA's are NULL): judge the kind first.
        guard kind == Self.ecPublicKeyOID,
            try algorithm.readOptionalElement(.objectIdentifier)?.objectIdentifier() == Self.p256OID
        else {
            throw CryptoError(.unsupportedKeyType, "a P-256 JWK needs an EC key on P-256")
        }
        try algorithm.finish()
        let point = try info.readElement(.bitString).bitString()
        try info.finish()
        guard point.unusedBits == 0, point.bytes.count == 65, point.bytes[0] == 0x04 else {
            throw CryptoError(.invalidPublicKey, "expected an uncompressed P-256 point")
        }
        x = Base64URL.encode(Array(point.bytes[1...32]))
        y = Base64URL.encode(Array(point.bytes[33...64]))
    }

    /// The RFC 7638 thumbprint: SHA-256 over the required members `crv`, `kty`, `x`, `y` in
    /// that (lexicographic) order, base64url.
    public var thumbprint: String {
        JWKThumbprint.sha256(requiredMembers: [("crv", "P-256"), ("kty", "EC"), ("x", x), ("y", y)])
    }
}

/// RFC 7638 JWK thumbprints.
public enum JWKThumbprint {
    /// The SHA-256 thumbprint of a key given by its required members (§3.2): written as JSON
    /// with the names in lexicographic order, no whitespace, then hashed and base64url-encoded.
    /// The members' values here are strings, as for every key type RFC 7518 defines.
    public static func sha256(requiredMembers: [(String, String)]) -> String {
        var writer = JSONWriter()
        writer.object { object in
            for (name, value) in requiredMembers.sorted(by: {
                Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8))
            }) {
                object.member(name, value)
            }
        }
        return Base64URL.encode(Digest.sha256(writer.bytes))
    }
}
