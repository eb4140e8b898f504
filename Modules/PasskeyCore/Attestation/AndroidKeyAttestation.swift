import CryptoCore
import FoundationEssentials

/// The "android-key" attestation format (WebAuthn L3 §8.4): Android Keystore attests the credential
/// key itself, and the attestation certificate's key description says how the key was made.
///
/// Verification, in the specification's order, each step with its own code:
/// 1. sig verifies over authData ‖ clientDataHash with the leaf key and alg
///    (`attestation.android_key_signature_invalid`).
/// 2. The leaf key is the credential key (`attestation.android_key_public_key_mismatch`).
/// 3. The key description (`attestation.android_key_description_invalid`) has attestationChallenge
///    equal to clientDataHash (`attestation.android_key_challenge_mismatch`), no allApplications in
///    either list (`attestation.android_key_all_applications`), and origin KM_ORIGIN_GENERATED and
///    purpose KM_PURPOSE_SIGN in the lists the policy reads (`attestation.android_key_authorization_invalid`).
/// 4. The x5c chain is validated against the configured "android-key" anchors and, unless turned
///    off, Google's bundled hardware attestation roots. Android key attestation does not bind the
///    AAGUID, so per-model anchors are never consulted.
public struct AndroidKeyAttestation: AttestationFormat {
    /// "android-key".
    public let identifier = "android-key"

    /// Which authorization lists must state origin KM_ORIGIN_GENERATED and purpose KM_PURPOSE_SIGN.
    public enum AuthorizationPolicy: String, Sendable, Hashable, CaseIterable {
        /// Both must be stated in teeEnforced: a trusted execution environment (or StrongBox)
        /// generated the key and restricts it to signing. The default.
        case trustedEnvironment
        /// Both must be stated in teeEnforced or softwareEnforced: software-backed keystores are
        /// accepted, and their claims are only as good as the Android OS that made them.
        case softwareAllowed
        /// Checked only where stated, in either list: an origin other than generated or a purpose set
        /// without sign is refused, absence is not. The most literal reading of §8.4, which the §16
        /// test vector (empty lists) satisfies; for emulators and test vectors, never production.
        case ifStated
    }

    /// Which lists origin and purpose are read from.
    public let authorizationPolicy: AuthorizationPolicy

    /// The attStmt members the format defines.
    private static let members: Set<String> = ["alg", "sig", "x5c"]

    /// Creates the format.
    ///
    /// - Parameters:
    ///   - authorizationPolicy: Where origin and purpose must be stated; `.trustedEnvironment` by default.
    public init(
        authorizationPolicy: AuthorizationPolicy = .trustedEnvironment
    ) {
        self.authorizationPolicy = authorizationPolicy
    }

    /// Verifies an Android key attestation statement (§8.4 verification procedure).
    ///
    /// - Returns: Type basic, the x5c trust path, and whether it reached an anchor.
    /// - Throws: `attestation.invalid_statement` for a malformed statement, `attestation.certificate_invalid`
    ///   or `attestation.chain_invalid` for a bad x5c, or the `attestation.android_key_*` code of the failed step.
    public func verify(
        statement: CBORMap, authenticatorData: AuthenticatorData, authenticatorDataBytes: [UInt8],
        clientDataHash: [UInt8], context: AttestationContext
    ) throws(PasskeyError) -> AttestationOutcome {
        let (alg, sig, x5c) = try Self.decode(statement)
        guard let credential = authenticatorData.attestedCredentialData else {
            throw PasskeyError(
                .attestationInvalidStatement, "android-key attestation needs attested credential data")
        }
        // Google's roots come with the relying party's default anchors (`BundledTrustAnchors`).
        let chain = try AttestationTrust.evaluate(
            x5c: x5c, format: identifier, context: context, bindsAAGUID: false)
        let leaf = chain.leaf

        // §8.4: sig over authenticatorData ‖ clientDataHash with the leaf key.
        guard alg.fits(leaf.publicKey.type),
            leaf.publicKey.verify(
                signature: sig, data: authenticatorDataBytes + clientDataHash,
                algorithm: alg.signatureAlgorithm)
        else {
            throw PasskeyError(
                .attestationAndroidKeySignatureInvalid,
                "sig does not verify with the attestation certificate's key")
        }
        // SubjectPublicKeyInfo has one DER encoding per key, so equal bytes mean equal keys.
        guard leaf.publicKey.derRepresentation == credential.credentialPublicKey.publicKey.derRepresentation
        else {
            throw PasskeyError(
                .attestationAndroidKeyPublicKeyMismatch,
                "the attestation certificate's key is not the credential key")
        }
        let description = try Self.keyDescription(leaf)
        try Self.verifyChallenge(description, clientDataHash)
        try Self.verifyScopedToRP(description)
        try verifyAuthorizations(description)
        return AttestationOutcome(
            type: .basic, trustPath: x5c, trusted: chain.trusted, anchorsUsed: chain.anchor)
    }

    // MARK: Steps

    /// §8.4 syntax: alg, sig and x5c, nothing else.
    static func decode(_ statement: CBORMap) throws(PasskeyError) -> (COSEAlgorithm, [UInt8], [[UInt8]]) {
        for entry in statement {
            guard case .text(let name) = entry.key, members.contains(name) else {
                throw PasskeyError(
                    .attestationInvalidStatement,
                    "android-key attStmt has a member the format does not define")
            }
        }
        guard case .integer(let raw)? = statement[name: "alg"], let alg = COSEAlgorithm(rawValue: raw) else {
            throw PasskeyError(
                .attestationInvalidStatement, "android-key attStmt needs alg, a supported COSE algorithm")
        }
        guard case .bytes(let sig)? = statement[name: "sig"] else {
            throw PasskeyError(.attestationInvalidStatement, "android-key attStmt needs sig as a byte string")
        }
        guard let x5c = try AttestationTrust.x5c(in: statement) else {
            throw PasskeyError(.attestationInvalidStatement, "android-key attStmt needs x5c")
        }
        return (alg, sig, x5c)
    }

    /// The leaf's key description extension, parsed.
    static func keyDescription(_ leaf: Certificate) throws(PasskeyError) -> AndroidKeyDescription {
        guard let item = leaf.extensions.first(where: { $0.oid == AndroidKeyDescription.oid }) else {
            throw PasskeyError(
                .attestationAndroidKeyDescriptionInvalid, "the attestation certificate has no key description"
            )
        }
        return try AndroidKeyDescription(extensionValue: item.value)
    }

    /// §8.4: attestationChallenge is clientDataHash, so the attestation was made for this ceremony.
    static func verifyChallenge(_ description: AndroidKeyDescription, _ clientDataHash: [UInt8])
        throws(PasskeyError)
    {
        guard ConstantTime.equals(description.attestationChallenge, clientDataHash) else {
            throw PasskeyError(
                .attestationAndroidKeyChallengeMismatch, "attestationChallenge is not the client data hash")
        }
    }

    /// §8.4: allApplications is in neither list, so the key is scoped to this RP ID.
    static func verifyScopedToRP(_ description: AndroidKeyDescription) throws(PasskeyError) {
        guard !description.softwareEnforced.allApplications, !description.teeEnforced.allApplications else {
            throw PasskeyError(
                .attestationAndroidKeyAllApplications,
                "the key is usable by all applications, not scoped to the RP ID")
        }
    }

    /// §8.4: origin is KM_ORIGIN_GENERATED and purpose includes KM_PURPOSE_SIGN, in the lists the
    /// policy reads (teeEnforced only unless software-enforced keys are allowed).
    func verifyAuthorizations(_ description: AndroidKeyDescription) throws(PasskeyError) {
        let lists =
            authorizationPolicy == .trustedEnvironment
            ? [description.teeEnforced] : [description.teeEnforced, description.softwareEnforced]
        let source = authorizationPolicy == .trustedEnvironment ? "teeEnforced" : "the authorization lists"
        let origins = lists.compactMap(\.origin)
        let purposes = lists.compactMap(\.purposes)
        // Every stated origin must be "generated": an imported key in one list is not outweighed by the other.
        guard origins.allSatisfy({ $0 == AndroidKeyDescription.originGenerated }),
            !origins.isEmpty || authorizationPolicy == .ifStated
        else {
            throw PasskeyError(
                .attestationAndroidKeyAuthorizationInvalid,
                "\(source) does not state origin KM_ORIGIN_GENERATED")
        }
        let signs = purposes.contains { $0.contains(AndroidKeyDescription.purposeSign) }
        guard signs || (authorizationPolicy == .ifStated && purposes.isEmpty) else {
            throw PasskeyError(
                .attestationAndroidKeyAuthorizationInvalid, "\(source) does not state purpose KM_PURPOSE_SIGN"
            )
        }
    }
}

/// The Android key attestation extension (OID 1.3.6.1.4.1.11129.2.1.17), the `KeyDescription`
/// schema of Android's key attestation documentation, read with CryptoCore's strict DER reader.
///
/// Only the fields WebAuthn checks are decoded into values (purpose, origin, allApplications, the
/// challenge and the security levels); every other authorization must still be one well-formed
/// `[n] EXPLICIT` element, and no tag may repeat in a list. Malformed input throws
/// `attestation.android_key_description_invalid`, never traps.
public struct AndroidKeyDescription: Hashable, Sendable {
    /// The extension's OID.
    public static let oid = "1.3.6.1.4.1.11129.2.1.17"
    /// KM_ORIGIN_GENERATED: the key was generated inside Keystore.
    public static let originGenerated = 0
    /// KM_PURPOSE_SIGN.
    public static let purposeSign = 2

    /// Where an attestation or key lives (the `SecurityLevel` ENUMERATED).
    public struct SecurityLevel: RawRepresentable, Hashable, Sendable {
        /// The ENUMERATED value.
        public let rawValue: Int
        /// Wraps a value; unknown future levels are kept as read.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Software (0).
        public static let software = SecurityLevel(rawValue: 0)
        /// TrustedEnvironment (1).
        public static let trustedEnvironment = SecurityLevel(rawValue: 1)
        /// StrongBox (2).
        public static let strongBox = SecurityLevel(rawValue: 2)
    }

    /// One `AuthorizationList`: the fields WebAuthn reads, plus every tag present.
    public struct AuthorizationList: Hashable, Sendable {
        /// `purpose [1] SET OF INTEGER`; nil when absent.
        public let purposes: [Int]?
        /// `allApplications [600] NULL` is present.
        public let allApplications: Bool
        /// `origin [702] INTEGER`; nil when absent.
        public let origin: Int?
        /// Every tag number in the list, in order.
        public let tags: [UInt32]
    }

    /// attestationVersion.
    public let attestationVersion: Int
    /// attestationSecurityLevel.
    public let attestationSecurityLevel: SecurityLevel
    /// keymasterVersion (keyMintVersion from version 100).
    public let keymasterVersion: Int
    /// keymasterSecurityLevel (keyMintSecurityLevel).
    public let keymasterSecurityLevel: SecurityLevel
    /// attestationChallenge: for WebAuthn, the client data hash.
    public let attestationChallenge: [UInt8]
    /// uniqueId (empty unless the app asked for one).
    public let uniqueID: [UInt8]
    /// softwareEnforced.
    public let softwareEnforced: AuthorizationList
    /// teeEnforced (hardwareEnforced).
    public let teeEnforced: AuthorizationList

    /// Parses the extension value.
    ///
    /// - Parameter extensionValue: The extnValue contents (the KeyDescription DER).
    /// - Throws: `attestation.android_key_description_invalid` for anything that is not one KeyDescription.
    public init(extensionValue: [UInt8]) throws(PasskeyError) {
        do throws(CryptoError) {
            var outer = DERReader(extensionValue)
            var sequence = try outer.readSequence()
            try outer.finish()
            attestationVersion = try sequence.readInteger()
            attestationSecurityLevel = SecurityLevel(rawValue: try sequence.readEnumerated())
            keymasterVersion = try sequence.readInteger()
            keymasterSecurityLevel = SecurityLevel(rawValue: try sequence.readEnumerated())
            attestationChallenge = try sequence.readOctetString()
            uniqueID = try sequence.readOctetString()
            softwareEnforced = try Self.authorizationList(&sequence)
            teeEnforced = try Self.authorizationList(&sequence)
            try sequence.finish()
        } catch {
            throw PasskeyError(
                .attestationAndroidKeyDescriptionInvalid,
                "the key description is malformed: \(error.message)",
                underlying: error)
        }
    }

    /// Reads one AuthorizationList SEQUENCE of `[n] EXPLICIT` authorizations.
    private static func authorizationList(_ reader: inout DERReader) throws(CryptoError) -> AuthorizationList
    {
        var list = try reader.readSequence()
        var purposes: [Int]? = nil
        var origin: Int? = nil
        var tags: [UInt32] = []
        while !list.isAtEnd {
            let element = try list.readElement()
            guard element.tag.tagClass == .contextSpecific, element.tag.isConstructed else {
                throw CryptoError(.derUnexpectedTag, "an authorization is not an explicit context tag")
            }
            let tag = element.tag.number
            // A repeated tag would let two values disagree about one authorization.
            guard !tags.contains(tag) else {
                throw CryptoError(.derMalformed, "authorization [\(tag)] appears twice")
            }
            tags.append(tag)
            var inner = try element.contents()
            switch tag {
            case 1:
                var set = try inner.readSet()
                var values: [Int] = []
                while !set.isAtEnd { values.append(try set.readInteger()) }
                purposes = values
            case 600:
                try inner.readNull()
            case 702:
                origin = try inner.readInteger()
            default:
                // Not read, but it must still be one well-formed element.
                _ = try inner.readElement()
            }
            try inner.finish()
        }
        return AuthorizationList(
            purposes: purposes, allApplications: tags.contains(600), origin: origin, tags: tags)
    }
}

extension COSEAlgorithm {
    /// Whether a certificate key of `type` can make signatures of this algorithm as WebAuthn pins it:
    /// ECDSA on its own curve (ES384 on P-256 verifies in OpenSSL but is not ES384), RSA for the
    /// RSA algorithms, Ed25519 for EdDSA, ML-DSA of the same parameter set. Attestation statements name alg separately from the key
    /// that signs, so the pair is checked before the signature.
    func fits(_ type: PublicKeyType) -> Bool {
        switch type {
        case .ec(let curve): self.curve?.ecCurve == curve
        case .rsa: keyType == .rsa
        case .ed25519: self == .edDSA
        case .mlDSA(let set): mlDSAParameterSet == set
        }
    }
}
