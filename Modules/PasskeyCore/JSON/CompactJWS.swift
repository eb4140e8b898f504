import CryptoCore
import FoundationEssentials
import Kernel

/// A JWS in compact serialization whose header carries its signing certificate chain in x5c
/// (RFC 7515): the shape of FIDO MDS3 BLOBs and of Android SafetyNet responses.
struct CompactJWS {
    /// The header's alg.
    let algorithm: String
    /// The header's x5c, decoded from standard base64 to DER, leaf first.
    let x5c: [[UInt8]]
    /// The payload bytes (the callers parse them: SafetyNet strictly, MDS with its large entry list).
    let payload: [UInt8]
    /// The signature bytes.
    let signature: [UInt8]
    /// `BASE64URL(header).BASE64URL(payload)` exactly as received: what the signature covers.
    let signingInput: [UInt8]

    /// Splits and decodes `bytes`; every failure throws `code` with a message naming `what`.
    init(_ bytes: [UInt8], code: PasskeyError.Code, what: String) throws(PasskeyError) {
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3,
            let header = parts[0].withUnsafeBufferPointer({ Base64URL.decode(utf8: $0) }),
            let payload = parts[1].withUnsafeBufferPointer({ Base64URL.decode(utf8: $0) }),
            let signature = parts[2].withUnsafeBufferPointer({ Base64URL.decode(utf8: $0) }),
            !signature.isEmpty
        else { throw PasskeyError(code, "\(what) is not a compact JWS") }
        guard
            case .object(let fields) = try JSONReader.parse(header, code: code, what: "\(what)'s JWS header")
        else { throw PasskeyError(code, "\(what)'s JWS header is not a JSON object") }
        guard case .string(let algorithm)? = fields["alg"] else {
            throw PasskeyError(code, "\(what)'s JWS header has no alg")
        }
        guard case .array(let entries)? = fields["x5c"], !entries.isEmpty else {
            throw PasskeyError(code, "\(what)'s JWS header has no x5c")
        }
        var x5c: [[UInt8]] = []
        for entry in entries {
            // x5c is standard base64 (RFC 7515 §4.1.6), not base64url.
            guard case .string(let text) = entry, let der = Data(base64Encoded: text) else {
                throw PasskeyError(code, "an x5c entry of \(what) is not base64")
            }
            x5c.append([UInt8](der))
        }
        self.algorithm = algorithm
        self.x5c = x5c
        self.payload = payload
        self.signature = signature
        self.signingInput = Array(bytes[..<parts[1].endIndex])
    }

    /// Whether the signature verifies under `key`; nil when `algorithm` is not in `allowed` or
    /// `key` cannot make it. ECDSA signatures are JOSE's raw r‖s (RFC 7518 §3.4), converted for
    /// OpenSSL; one of the wrong length simply does not verify.
    func signatureVerifies(with key: PublicKey, allowed: Set<String>) -> Bool? {
        guard allowed.contains(algorithm) else { return nil }
        switch (algorithm, key.type) {
        case ("RS256", .rsa):
            return key.verify(signature: signature, data: signingInput, algorithm: .rsaPKCS1SHA256)
        case ("PS256", .rsa):
            return key.verify(signature: signature, data: signingInput, algorithm: .rsaPSSSHA256)
        case ("ES256", .ec(.p256)), ("ES384", .ec(.p384)), ("ES512", .ec(.p521)):
            guard case .ec(let curve) = key.type,
                let der = try? ECDSASignature.der(fromRaw: signature, curve: curve)
            else { return false }
            let digest: SignatureAlgorithm =
                switch curve {
                case .p256: .ecdsaSHA256
                case .p384: .ecdsaSHA384
                case .p521: .ecdsaSHA512
                }
            return key.verify(signature: der, data: signingInput, algorithm: digest)
        default: return nil
        }
    }
}
