import CryptoCore
import FoundationEssentials

/// Everything the ceremonies need to know about this relying party: a plain value with strict defaults.
///
/// The defaults refuse what a deployment has not said it wants: only the origins listed are accepted,
/// cross-origin iframes are refused, user verification is required, a counter regression is an error.
/// Attestation is the exception: `none` is accepted by default, because consumer passkeys (iCloud
/// Keychain, Google Password Manager) send nothing else, and strict attestation is an opt-in policy.
public struct RelyingParty: Sendable {
    /// What to do when the signature counter did not increase from a non-zero value (§7.2 step 22).
    public enum CounterPolicy: String, Sendable, Hashable, CaseIterable {
        /// Fail the login with `ceremony.counter_regression`.
        case reject
        /// Accept the login and set `VerifiedAuthentication.counterRegressed` for the caller to act on.
        case flag
    }

    /// How much attestation trust registration requires (§7.1 steps 23 and 27).
    public enum AttestationPolicy: String, Sendable, Hashable, CaseIterable {
        /// Accept `none`, self and untrusted chains; the result says what was proven.
        case acceptUntrusted
        /// Only attestations that chain to a configured trust anchor (`attestation.untrusted` otherwise).
        case requireTrusted
    }

    /// The algorithms offered and accepted by default, most preferred first: ES256 is what nearly every
    /// authenticator supports, EdDSA is fast, RSA last for Windows Hello's TPM keys. ML-DSA is left
    /// out until a deployment asks for it (its keys and signatures are 1.3 to 4.6 kB, and few
    /// authenticators make them yet); a stored ML-DSA credential verifies whatever is listed here.
    public static let defaultAlgorithms: [COSEAlgorithm] = [.es256, .edDSA, .es384, .es512, .ps256, .rs256]

    /// The RP ID: the domain credentials are scoped to ("example.com"), hashed into authenticator data.
    public var id: String {
        // Kept in step here so every ceremony compares against a hash computed once, not per login.
        didSet { idHash = Digest.sha256(id) }
    }
    /// The name authenticators may show to the user.
    public var name: String
    /// The exact origins accepted in C.origin: web origins ("https://example.com", "http://localhost:8080")
    /// and Android app origins ("android:apk-key-hash:<base64url SHA-256 of the signing certificate>").
    /// Matched as whole strings: no wildcards, and the port is part of the origin.
    public var allowedOrigins: Set<String>
    /// The exact top-level origins this relying party may be embedded under in a cross-origin iframe.
    /// Empty (the default) refuses every cross-origin ceremony.
    public var allowedTopOrigins: Set<String>
    /// The user verification policy; options use it and verification enforces it (default required).
    public var userVerification: UserVerificationRequirement
    /// The reaction to a signature counter regression (default reject).
    public var counterPolicy: CounterPolicy
    /// The attestation trust policy (default acceptUntrusted).
    public var attestationPolicy: AttestationPolicy
    /// The algorithms offered in pubKeyCredParams, in this order, and the only ones registration accepts.
    public var allowedAlgorithms: [COSEAlgorithm]
    /// The attestation formats verified; an fmt not registered here is refused.
    public var attestationFormats: AttestationFormatRegistry
    /// Where attestation trust anchors come from: the bundled roots by default (`BundledTrustAnchors`);
    /// to add configured ones and keep the bundled, use `CombinedTrustAnchors([BundledTrustAnchors(), configured])`.
    public var trustAnchors: any TrustAnchorSource
    /// Authenticator metadata (FIDO MDS3), when the deployment loads it.
    public var metadata: (any AuthenticatorMetadataSource)?

    /// Creates a relying party with strict defaults for everything but its identity and origins.
    ///
    /// - Parameters:
    ///   - id: The RP ID (a registrable domain or "localhost").
    ///   - name: The display name.
    ///   - allowedOrigins: The exact origins accepted; at least one.
    public init(id: String, name: String, allowedOrigins: Set<String>) {
        self.id = id
        self.idHash = Digest.sha256(id)
        self.name = name
        self.allowedOrigins = allowedOrigins
        self.allowedTopOrigins = []
        self.userVerification = .required
        self.counterPolicy = .reject
        self.attestationPolicy = .acceptUntrusted
        self.allowedAlgorithms = Self.defaultAlgorithms
        self.attestationFormats = .default
        self.trustAnchors = BundledTrustAnchors()
        self.metadata = nil
    }

    /// SHA-256 of the RP ID, as authenticator data carries it.
    private(set) var idHash: [UInt8]

    /// Checks the configuration for values that could never work, so `portvakt config check` can say so.
    ///
    /// - Throws: `config.invalid` naming the first problem: an empty RP ID or name, no origins, an
    ///   origin that is not a bare web origin or a well-formed `android:apk-key-hash:` origin, or no
    ///   algorithms.
    public func validate() throws(PasskeyError) {
        guard !id.isEmpty, id == id.lowercased(), !id.contains("/"), !id.contains(":") else {
            throw PasskeyError(.configInvalid, "the RP ID must be a lowercase domain without scheme or port")
        }
        guard !name.isEmpty else { throw PasskeyError(.configInvalid, "the RP name is empty") }
        guard !allowedOrigins.isEmpty else { throw PasskeyError(.configInvalid, "no origins are allowed") }
        for origin in allowedOrigins.union(allowedTopOrigins) {
            guard Self.isOrigin(origin) else {
                throw PasskeyError(
                    .configInvalid,
                    "\"\(origin)\" is not an origin: use scheme://host[:port] with no path or trailing slash, "
                        + "or android:apk-key-hash:<base64url SHA-256>")
            }
        }
        guard !allowedAlgorithms.isEmpty else {
            throw PasskeyError(.configInvalid, "no algorithms are allowed")
        }
        guard Set(allowedAlgorithms).count == allowedAlgorithms.count else {
            throw PasskeyError(.configInvalid, "an algorithm is listed twice")
        }
    }

    /// True for strings that a browser or Android could ever send as an origin, in the form they send it.
    static func isOrigin(_ text: String) -> Bool {
        let androidPrefix = "android:apk-key-hash:"
        if text.hasPrefix(androidPrefix) {
            // A SHA-256 in unpadded base64url is exactly 43 characters.
            let hash = String(text.dropFirst(androidPrefix.count))
            return hash.utf8.count == 43 && Base64URL.decode(hash)?.count == 32
        }
        // Browsers serialize origins in lowercase with the default port omitted, so a configured
        // "https://example.com:443" or "https://Example.com" could never match exactly.
        guard let components = URLComponents(string: text), let scheme = components.scheme,
            scheme == "https" || scheme == "http", let host = components.host, !host.isEmpty,
            text == text.lowercased(), components.path.isEmpty, components.query == nil,
            components.fragment == nil, components.user == nil
        else { return false }
        // A wildcard or any other character outside a DNS name or bracketed IPv6 literal never matches.
        let hostCharacters = host.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"),
                UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: "]"):
                true
            default: false
            }
        }
        guard hostCharacters else { return false }
        if let port = components.port {
            return !(scheme == "https" && port == 443) && !(scheme == "http" && port == 80)
        }
        return true
    }
}
