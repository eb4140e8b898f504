public import CryptoCore
import FoundationEssentials

/// What every certificate-based attestation format (packed x5c, fido-u2f, apple, android-key,
/// android-safetynet, tpm) needs from its x5c: parse it, bound it, and assess it against the relying
/// party's anchors.
///
/// The rules, and why:
/// - x5c is leaf first, then the chain as the authenticator sent it; it must hold 1 to
///   `maximumCertificates` DER certificates, each parsed strictly by CryptoCore.
/// - Anchors come only from `AttestationContext` (configuration, bundled roots, metadata), never from
///   x5c: a self-signed root carried in x5c is just another untrusted certificate.
/// - Reaching no anchor is not an error: the statement may still be valid, so the result says
///   `trusted: false` and the ceremony's attestation policy decides.
/// - A chain that does reach an anchor but is broken (expired or not yet valid at
///   `context.validationTime`, a bad signature, an issuer that is not a CA) is refused with
///   `attestation.chain_invalid`: it names a trusted issuer and does not deserve its trust.
public enum AttestationTrust {
    /// The most certificates accepted in x5c, leaf included; real chains hold two to four.
    public static let maximumCertificates = 8

    /// Reads the optional x5c member of an attestation statement as DER byte strings, leaf first.
    ///
    /// - Parameter statement: attStmt.
    /// - Returns: nil when x5c is absent (packed self attestation); otherwise its entries.
    /// - Throws: `attestation.certificate_invalid` when x5c is not an array of 1 to
    ///   `maximumCertificates` byte strings.
    public static func x5c(in statement: CBORMap) throws(PasskeyError) -> [[UInt8]]? {
        guard let value = statement[name: "x5c"] else { return nil }
        guard case .array(let entries) = value else {
            throw PasskeyError(
                .attestationCertificateInvalid, "x5c must be an array, found \(value.typeName)")
        }
        var certificates: [[UInt8]] = []
        for entry in entries {
            guard case .bytes(let der) = entry else {
                throw PasskeyError(.attestationCertificateInvalid, "x5c entries must be byte strings")
            }
            certificates.append(der)
        }
        try checkCount(certificates.count)
        return certificates
    }

    /// Parses x5c into certificates, leaf first.
    ///
    /// - Parameter x5c: DER certificates, leaf first.
    /// - Returns: The parsed certificates in the same order.
    /// - Throws: `attestation.certificate_invalid` for an empty or oversized chain or a certificate
    ///   CryptoCore refuses (the `CryptoError` is the underlying cause).
    public static func certificates(x5c: [[UInt8]]) throws(PasskeyError) -> [Certificate] {
        try checkCount(x5c.count)
        var parsed: [Certificate] = []
        for (index, der) in x5c.enumerated() {
            do {
                parsed.append(try Certificate(der: der))
            } catch {
                throw PasskeyError(
                    .attestationCertificateInvalid, "x5c[\(index)] is not an acceptable certificate",
                    underlying: error)
            }
        }
        return parsed
    }

    /// Parses x5c and validates it from its leaf to the relying party's anchors at the context's time.
    ///
    /// The anchors are `context.trustAnchors(forFormat: format)`, plus
    /// `context.trustAnchors(forAAGUID: context.aaguid)` when `bindsAAGUID` is true. Pass true only
    /// once the format has proven that the leaf belongs to that AAGUID (packed's id-fido-gen-ce-aaguid
    /// extension checked equal to authData's); otherwise the AAGUID is the authenticator's unproven
    /// claim and must not select anchors.
    ///
    /// - Parameters:
    ///   - x5c: DER certificates, leaf first, as the statement carries them.
    ///   - format: The fmt identifier whose configured anchors apply.
    ///   - context: Validation time, anchors and metadata.
    ///   - bindsAAGUID: Whether the AAGUID's anchors (configuration and metadata) may be used.
    /// - Returns: The parsed leaf; whether a path reached an anchor; that anchor's subject when it did.
    /// - Throws: `attestation.certificate_invalid` (see `certificates(x5c:)`), `attestation.chain_invalid`
    ///   when the chain reaches an anchor but does not validate, `config.invalid` when a configured anchor
    ///   is not a certificate.
    public static func evaluate(
        x5c: [[UInt8]], format: String, context: AttestationContext, bindsAAGUID: Bool
    ) throws(PasskeyError) -> (leaf: Certificate, trusted: Bool, anchor: String?) {
        try evaluate(
            chain: certificates(x5c: x5c), format: format, context: context, bindsAAGUID: bindsAAGUID)
    }

    /// `evaluate(x5c:format:context:bindsAAGUID:)` for a chain already parsed with `certificates(x5c:)`,
    /// for formats that must read the leaf before they know whether it binds the AAGUID.
    ///
    /// - Parameter chain: The parsed x5c, leaf first; not empty.
    public static func evaluate(
        chain: [Certificate], format: String, context: AttestationContext, bindsAAGUID: Bool
    ) throws(PasskeyError) -> (leaf: Certificate, trusted: Bool, anchor: String?) {
        try checkCount(chain.count)
        let leaf = chain[0]
        var anchorDERs = context.trustAnchors(forFormat: format)
        if bindsAAGUID { anchorDERs += context.trustAnchors(forAAGUID: context.aaguid) }
        guard !anchorDERs.isEmpty else { return (leaf, false, nil) }
        let anchors = try parseAnchors(anchorDERs)
        do throws(CryptoError) {
            let path = try CertificateChainValidator.validate(
                leaf: leaf, intermediates: Array(chain.dropFirst()), anchors: anchors,
                at: context.validationTime)
            return (leaf, true, path.last.map { $0.subject.description })
        } catch let error where error.code == .chainUntrusted {
            return (leaf, false, nil)
        } catch {
            throw PasskeyError(
                .attestationChainInvalid, "the x5c chain reaches a trust anchor but does not validate",
                underlying: error)
        }
    }

    /// Refuses an empty x5c (every format that has one needs a leaf) and an oversized one.
    private static func checkCount(_ count: Int) throws(PasskeyError) {
        guard count >= 1 else {
            throw PasskeyError(.attestationCertificateInvalid, "x5c holds no certificate")
        }
        guard count <= maximumCertificates else {
            throw PasskeyError(
                .attestationCertificateInvalid,
                "x5c holds \(count) certificates, at most \(maximumCertificates)")
        }
    }

    /// Parses configured anchors; a bad one is the operator's mistake, reported as configuration.
    private static func parseAnchors(_ ders: [[UInt8]]) throws(PasskeyError) -> [Certificate] {
        var anchors: [Certificate] = []
        for der in ders {
            do {
                anchors.append(try Certificate(der: der))
            } catch {
                throw PasskeyError(
                    .configInvalid, "a configured trust anchor is not a certificate", underlying: error)
            }
        }
        return anchors
    }
}
