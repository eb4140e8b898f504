import CryptoCore
public import FoundationEssentials
import Kernel

/// The "android-safetynet" attestation format (WebAuthn L3 §8.5, deprecated): a SafetyNet JWS
/// signed by Google for attest.android.com, whose nonce binds it to this registration.
///
/// Verification, each step with its own code:
/// 1. ver is non-empty text and response is a compact JWS whose header carries alg and x5c and whose
///    payload is a JSON object (`attestation.safetynet_response_invalid`).
/// 2. x5c is validated against the configured "android-safetynet" anchors and the bundled GlobalSign
///    root (`attestation.certificate_invalid`, `attestation.chain_invalid`; no anchor reached is
///    untrusted, not an error).
/// 3. The leaf is issued to attest.android.com (`attestation.safetynet_hostname_mismatch`).
/// 4. The JWS signature verifies, RS256 or ES256 (`attestation.safetynet_signature_invalid`).
/// 5. nonce is base64(SHA-256(authData ‖ clientDataHash)) (`attestation.safetynet_nonce_mismatch`).
/// 6. ctsProfileMatch is true (`attestation.safetynet_cts_profile_mismatch`).
/// 7. timestampMs is not after the validation time and not older than `maximumAge`
///    (`attestation.safetynet_timestamp_invalid`).
///
/// The signature is checked before any payload claim is read, so no claim is believed unsigned.
public struct AndroidSafetyNetAttestation: AttestationFormat {
    /// "android-safetynet".
    public let identifier = "android-safetynet"
    /// The host SafetyNet's signing certificate is issued to.
    public static let hostname = "attest.android.com"
    /// The default for `maximumAge`: SafetyNet answers within seconds of the nonce being made.
    public static let defaultMaximumAge: TimeInterval = 60

    /// How old the response's timestampMs may be at the validation time.
    public let maximumAge: TimeInterval

    /// The attStmt members the format defines.
    private static let members: Set<String> = ["ver", "response"]
    /// A JWS header or payload larger than this is not a SafetyNet response (real ones are ~10 KiB).
    static let maximumResponseLength = 64 * 1024

    /// Creates the format.
    ///
    /// - Parameters:
    ///   - maximumAge: How old timestampMs may be; 60 seconds by default.
    public init(maximumAge: TimeInterval = defaultMaximumAge) {
        self.maximumAge = maximumAge
    }

    /// Verifies a SafetyNet attestation statement (§8.5 verification procedure).
    ///
    /// - Returns: Type basic, the JWS x5c as trust path, and whether it reached an anchor.
    /// - Throws: `attestation.invalid_statement` for a malformed statement, `attestation.certificate_invalid`
    ///   or `attestation.chain_invalid` for a bad x5c, or the `attestation.safetynet_*` code of the failed step.
    public func verify(
        statement: CBORMap, authenticatorData: AuthenticatorData, authenticatorDataBytes: [UInt8],
        clientDataHash: [UInt8], context: AttestationContext
    ) throws(PasskeyError) -> AttestationOutcome {
        let response = try Self.decode(statement)
        let invalid = PasskeyError.Code.attestationSafetyNetResponseInvalid
        guard response.count <= Self.maximumResponseLength else {
            throw PasskeyError(invalid, "the SafetyNet response is larger than any genuine one")
        }
        let jws = try CompactJWS(response, code: invalid, what: "the SafetyNet response")
        guard
            case .object(let payload) = try JSONReader.parse(
                jws.payload, code: invalid, what: "SafetyNet payload")
        else { throw PasskeyError(invalid, "the SafetyNet payload is not a JSON object") }
        // The GlobalSign root comes with the relying party's default anchors (`BundledTrustAnchors`).
        let chain = try AttestationTrust.evaluate(
            x5c: jws.x5c, format: identifier, context: context, bindsAAGUID: false)
        try Self.verifyHostname(chain.leaf)
        try Self.verifySignature(jws, key: chain.leaf.publicKey)
        try Self.verifyNonce(payload, authenticatorDataBytes + clientDataHash)
        try Self.verifyCTSProfile(payload)
        try verifyTimestamp(payload, at: context.validationTime)
        return AttestationOutcome(
            type: .basic, trustPath: jws.x5c, trusted: chain.trusted, anchorsUsed: chain.anchor)
    }

    // MARK: Steps

    /// §8.5 syntax: ver (non-empty text) and response (bytes), nothing else.
    static func decode(_ statement: CBORMap) throws(PasskeyError) -> [UInt8] {
        for entry in statement {
            guard case .text(let name) = entry.key, members.contains(name) else {
                throw PasskeyError(
                    .attestationInvalidStatement,
                    "android-safetynet attStmt has a member the format does not define")
            }
        }
        guard case .text(let version)? = statement[name: "ver"], !version.isEmpty else {
            throw PasskeyError(
                .attestationSafetyNetResponseInvalid, "android-safetynet attStmt needs ver, non-empty text")
        }
        guard case .bytes(let response)? = statement[name: "response"] else {
            throw PasskeyError(
                .attestationSafetyNetResponseInvalid, "android-safetynet attStmt needs response as bytes")
        }
        return response
    }

    /// The leaf names attest.android.com: in a SAN dNSName when it has any, else in its subject CN.
    static func verifyHostname(_ leaf: Certificate) throws(PasskeyError) {
        let dnsNames = try Self.dnsNames(leaf)
        // RFC 6125 §6.4.4: with DNS names in the SAN, the CN is not consulted.
        let matches =
            dnsNames.isEmpty
            ? leaf.subject.commonName?.lowercased() == hostname
            : dnsNames.contains { $0.lowercased() == hostname }
        guard matches else {
            throw PasskeyError(
                .attestationSafetyNetHostnameMismatch,
                "the JWS signing certificate is not issued to \(hostname)")
        }
    }

    /// The dNSName entries of the leaf's subjectAltName, if it has one.
    static func dnsNames(_ leaf: Certificate) throws(PasskeyError) -> [String] {
        guard let san = leaf.extensions.first(where: { $0.oid == Certificate.OID.subjectAlternativeName })
        else {
            return []
        }
        var names: [String] = []
        do throws(CryptoError) {
            var outer = DERReader(san.value)
            var general = try outer.readSequence()
            try outer.finish()
            while !general.isAtEnd {
                let element = try general.readElement()
                // dNSName is [2] IMPLICIT IA5String.
                guard element.tag == .contextSpecific(2, constructed: false) else { continue }
                names.append(try element.retagged(as: .ia5String).string())
            }
        } catch {
            throw PasskeyError(
                .attestationSafetyNetHostnameMismatch,
                "the JWS signing certificate's subjectAltName is malformed",
                underlying: error)
        }
        return names
    }

    /// The JWS signature over `header.payload` verifies with the leaf key: RS256, or ES256 as raw r‖s.
    static func verifySignature(_ jws: CompactJWS, key: PublicKey) throws(PasskeyError) {
        guard let valid = jws.signatureVerifies(with: key, allowed: ["RS256", "ES256"]) else {
            throw PasskeyError(
                .attestationSafetyNetSignatureInvalid,
                "JWS alg \(jws.algorithm.prefix(16)) is not RS256 or ES256 for the signing certificate's key")
        }
        guard valid else {
            throw PasskeyError(
                .attestationSafetyNetSignatureInvalid, "the SafetyNet JWS signature does not verify")
        }
    }

    /// §8.5: nonce is the standard (padded) base64 of SHA-256(authenticatorData ‖ clientDataHash).
    static func verifyNonce(_ payload: JSONObject, _ attToBeSigned: [UInt8]) throws(PasskeyError) {
        let expected = Data(Digest.sha256(attToBeSigned)).base64EncodedString()
        guard case .string(let nonce)? = payload["nonce"],
            ConstantTime.equals(Array(nonce.utf8), Array(expected.utf8))
        else {
            throw PasskeyError(
                .attestationSafetyNetNonceMismatch, "the SafetyNet nonce does not bind this registration")
        }
    }

    /// SafetyNet's documentation: ctsProfileMatch true means a genuine, compatible Android device.
    static func verifyCTSProfile(_ payload: JSONObject) throws(PasskeyError) {
        guard case .bool(true)? = payload["ctsProfileMatch"] else {
            throw PasskeyError(.attestationSafetyNetCTSProfileMismatch, "ctsProfileMatch is not true")
        }
    }

    /// timestampMs lies in [validationTime − maximumAge, validationTime]: a response from the future
    /// or from long ago was not made for this registration.
    func verifyTimestamp(_ payload: JSONObject, at time: Date) throws(PasskeyError) {
        guard case .integer(let milliseconds)? = payload["timestampMs"] else {
            throw PasskeyError(
                .attestationSafetyNetTimestampInvalid, "timestampMs is absent or not an integer")
        }
        let issued = Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1000)
        guard issued <= time else {
            throw PasskeyError(
                .attestationSafetyNetTimestampInvalid, "timestampMs is after the validation time")
        }
        guard time.timeIntervalSince(issued) <= maximumAge else {
            throw PasskeyError(
                .attestationSafetyNetTimestampInvalid, "timestampMs is more than \(Int(maximumAge)) s old")
        }
    }
}
