public import CryptoCore
import Foundation

/// FIDO MDS3 BLOBs signed here, like FIDO's: a JWS whose header carries the signing certificate
/// (issued by a test CA) and its issuer in x5c.
public enum TestMetadataBLOB {
    /// Signs `payload` with a fresh leaf for `key` issued by `issuer`, as `alg` (ES256 or RS256).
    public static func sign(
        payload: [String: Any], key: SoftwareKey = .generate(.ec(.p256)), issuer: TestCertificateAuthority,
        alg: String = "ES256"
    ) throws -> [UInt8] {
        let leaf = issuer.issue(
            subject: .init(organization: "Test FIDO", commonName: "Test MDS Signer"),
            subjectPublicKeyInfo: key.subjectPublicKeyInfo)
        let header: [String: Any] = [
            "alg": alg, "typ": "JWT",
            "x5c": [leaf, issuer.certificateDER].map { Data($0).base64EncodedString() },
        ]
        let signingInput =
            Base64URL.encode(try JSONSerialization.data(withJSONObject: header)) + "."
            + Base64URL.encode(try JSONSerialization.data(withJSONObject: payload))
        let signature: [UInt8]
        switch key.kind {
        case .rsa: signature = key.sign(Array(signingInput.utf8), algorithm: .rsaPKCS1SHA256)
        default: signature = try rawSignature(key.sign(Array(signingInput.utf8), algorithm: .ecdsaSHA256))
        }
        return Array((signingInput + "." + Base64URL.encode(signature)).utf8)
    }

    /// A payload with one entry per (AAGUID, statuses), each status dated a year apart.
    public static func payload(
        entries: [(aaguid: String, name: String, statuses: [String])], nextUpdate: String
    )
        -> [String: Any]
    {
        [
            "legalHeader": "test", "no": 1, "nextUpdate": nextUpdate,
            "entries": entries.map { entry in
                [
                    "aaguid": entry.aaguid, "metadataStatement": ["description": entry.name],
                    "statusReports": entry.statuses.enumerated().map { index, status in
                        ["status": status, "effectiveDate": "\(2019 + index)-01-01"]
                    },
                ] as [String: Any]
            },
        ]
    }

    /// JWS ECDSA signatures are r‖s, 32 bytes each for P-256, not DER.
    static func rawSignature(_ der: [UInt8]) throws -> [UInt8] {
        var outer = DERReader(der)
        var sequence = try outer.readSequence()
        return try [sequence.readIntegerBytes(), sequence.readIntegerBytes()].flatMap { integer in
            let trimmed = Array(integer.drop { $0 == 0 })
            return [UInt8](repeating: 0, count: 32 - trimmed.count) + trimmed
        }
    }
}
