public import FoundationEssentials

/// The attestation roots Portvakt ships, per format: public certificates that every deployment
/// trusts the same way, so operators need not configure them.
///
/// Formats with one issuer ship their roots: "apple" (Apple's anonymization CA), "android-key"
/// (Google's hardware attestation roots; the newer P-384 root must be configured) and
/// "android-safetynet" (GlobalSign Root CA). Formats with many vendors (packed, fido-u2f, tpm) take
/// their roots from configuration or FIDO metadata. Combine with configured anchors through
/// `CombinedTrustAnchors`.
public struct BundledTrustAnchors: TrustAnchorSource {
    /// The Apple WebAuthn Root CA (P-384, self-signed, valid 2020-03-18 to 2045-03-15, SHA-256
    /// fingerprint 0915DD5C07A28DB549D1F677BB5A75D4BFBE9561A773424327762E9E02F9BB29), as Apple
    /// publishes it at https://www.apple.com/certificateauthority/Apple_WebAuthn_Root_CA.pem.
    ///
    /// Taken from the stored public repository eclipse-vertx/vertx-auth,
    /// vertx-auth-webauthn/src/main/java/io/vertx/ext/auth/webauthn/impl/attestation/AppleAttestation.java
    /// (`APPLE_WEBAUTHN_ROOT_CA`); the fingerprint matches the one recorded independently in another
    /// project's provenance note, and a test pins it, the subject and the validity.
    public static let appleWebAuthnRootCA: [UInt8] = {
        let base64 = """
            MIICEjCCAZmgAwIBAgIQaB0BbHo84wIlpQGUKEdXcTAKBggqhkjOPQQDAzBLMR8w
            HQYDVQQDDBZBcHBsZSBXZWJBdXRobiBSb290IENBMRMwEQYDVQQKDApBcHBsZSBJ
            bmMuMRMwEQYDVQQIDApDYWxpZm9ybmlhMB4XDTIwMDMxODE4MjEzMloXDTQ1MDMx
            NTAwMDAwMFowSzEfMB0GA1UEAwwWQXBwbGUgV2ViQXV0aG4gUm9vdCBDQTETMBEG
            A1UECgwKQXBwbGUgSW5jLjETMBEGA1UECAwKQ2FsaWZvcm5pYTB2MBAGByqGSM49
            AgEGBSuBBAAiA2IABCJCQ2pTVhzjl4Wo6IhHtMSAzO2cv+H9DQKev3//fG59G11k
            xu9eI0/7o6V5uShBpe1u6l6mS19S1FEh6yGljnZAJ+2GNP1mi/YK2kSXIuTHjxA/
            pcoRf7XkOtO4o1qlcaNCMEAwDwYDVR0TAQH/BAUwAwEB/zAdBgNVHQ4EFgQUJtdk
            2cV4wlpn0afeaxLQG2PxxtcwDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2cA
            MGQCMFrZ+9DsJ1PW9hfNdBywZDsWDbWFp28it1d/5w2RPkRX3Bbn/UbDTNLx7Jr3
            jAGGiQIwHFj+dJZYUJR786osByBelJYsVZd2GbHQu209b5RCmGQ21gpSAk9QZW4B
            1bWeT0vT
            """
        // A constant in the source: failing to decode is a broken build, caught by the pinning test.
        return Array(Data(base64Encoded: base64.filter { !$0.isWhitespace })!)
    }()

    /// The bundled roots per fmt identifier.
    public static let perFormat: [String: [[UInt8]]] = [
        "apple": [appleWebAuthnRootCA],
        "android-key": BundledAttestationRoots.googleHardwareAttestation,
        "android-safetynet": BundledAttestationRoots.globalSignRootCA,
    ]

    /// Creates the source.
    public init() {}

    /// The bundled roots for a format; empty for formats without one.
    public func anchors(forFormat identifier: String) -> [[UInt8]] { Self.perFormat[identifier] ?? [] }

    /// No roots are bundled per model: those come from configuration or metadata.
    public func anchors(forAAGUID aaguid: UUID) -> [[UInt8]] { [] }
}

/// Several anchor sources as one: the anchors of each, in order, duplicates removed.
///
/// The usual form is `CombinedTrustAnchors([BundledTrustAnchors(), StaticTrustAnchors(...)])`:
/// the bundled roots plus those the operator configured.
public struct CombinedTrustAnchors: TrustAnchorSource {
    /// The sources, consulted in order.
    public var sources: [any TrustAnchorSource]

    /// Combines `sources`.
    public init(_ sources: [any TrustAnchorSource]) { self.sources = sources }

    /// Every source's anchors for the format.
    public func anchors(forFormat identifier: String) -> [[UInt8]] {
        unique(sources.flatMap { $0.anchors(forFormat: identifier) })
    }

    /// Every source's anchors for the AAGUID.
    public func anchors(forAAGUID aaguid: UUID) -> [[UInt8]] {
        unique(sources.flatMap { $0.anchors(forAAGUID: aaguid) })
    }

    /// Drops repeats so a root both bundled and configured is parsed once per validation.
    private func unique(_ anchors: [[UInt8]]) -> [[UInt8]] {
        var seen: Set<[UInt8]> = []
        return anchors.filter { seen.insert($0).inserted }
    }
}
