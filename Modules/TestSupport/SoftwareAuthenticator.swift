import COpenSSL
import CryptoCore
public import Foundation
import Kernel
public import PasskeyCore

/// A WebAuthn authenticator and client in software, for driving both ceremonies in tests.
///
/// It makes credentials with OpenSSL keys (P-256, P-384, P-521, Ed25519, RSA-2048 for PKCS#1 v1.5 and
/// PSS), answers with "none" attestation or, through `Behaviour.attestation`, with packed (self or
/// x5c), fido-u2f, apple or compound statements made over the ceremony's real bytes, and produces `RegistrationResponseJSON` and
/// `AuthenticationResponseJSON` as a browser's `toJSON()` does, with clientDataJSON serialized the way
/// browsers do (`{"type","challenge","origin","crossOrigin":false}`). Every field a relying party
/// checks has a knob in `Behaviour`, so a test can break exactly one step.
public struct SoftwareAuthenticator: Sendable {
    /// The AAGUID written into attested credential data.
    public var aaguid: UUID
    /// The transports reported at registration.
    public var transports: [String]
    /// The authenticatorAttachment reported, nil to omit it.
    public var attachment: String?

    /// A made-up AAGUID, fixed so tests can assert on it.
    public static let testAAGUID = UUID(uuidString: "9d3df6ba-282f-11ed-a261-0242ac120002")!

    /// Creates an authenticator.
    public init(
        aaguid: UUID = SoftwareAuthenticator.testAAGUID, transports: [String] = ["hybrid", "internal"],
        attachment: String? = "platform"
    ) {
        self.aaguid = aaguid
        self.transports = transports
        self.attachment = attachment
    }

    /// What the authenticator and client do in one ceremony; the defaults make a valid response.
    public struct Behaviour: Sendable {
        /// The flags byte, before AT/ED are added for the data present (default UP, UV, BE, BS).
        public var flags: AuthenticatorData.Flags = [
            .userPresent, .userVerified, .backupEligible, .backupState,
        ]
        /// UP in `flags`: clear it for a ceremony the user took no part in, as an authenticator
        /// answering a conditional create (an automatic passkey upgrade) does.
        public var userPresent: Bool {
            get { flags.contains(.userPresent) }
            set {
                if newValue { flags.insert(.userPresent) } else { flags.remove(.userPresent) }
            }
        }
        /// The signature counter to report.
        public var signCount: UInt32 = 0
        /// The RP ID hashed into authenticator data; nil uses the credential's.
        public var rpID: String? = nil
        /// C.type; nil gives the right one for the ceremony.
        public var type: String? = nil
        /// C.challenge as text; nil encodes the challenge given.
        public var challengeText: String? = nil
        /// C.crossOrigin.
        public var crossOrigin: Bool = false
        /// C.topOrigin, omitted when nil.
        public var topOrigin: String? = nil
        /// The user handle returned by an assertion; nil returns the credential's.
        public var userHandle: [UInt8]? = nil
        /// Leave the user handle out of the assertion (a non-discoverable credential).
        public var omitUserHandle: Bool = false
        /// rawId/id to send; nil sends the credential's ID.
        public var rawID: [UInt8]? = nil
        /// The attestation fmt.
        public var attestationFormat: String = "none"
        /// The attestation statement.
        public var attestationStatement: CBORMap = [:]
        /// A statement made over this ceremony's authenticator data and client data hash; when set it
        /// replaces `attestationFormat` and `attestationStatement`.
        public var attestation: SoftwareAttestation? = nil
        /// Changes the finished attStmt (a wrong alg, a damaged sig) after it was made and signed.
        public var editAttestationStatement: (@Sendable (inout CBORValue) -> Void)? = nil
        /// credProps.rk to report; nil omits credProps.
        public var residentKey: Bool? = true
        /// Write L3's convenience members (authenticatorData, publicKey, publicKeyAlgorithm).
        public var includeConvenienceMembers: Bool = true
        /// Put attested credential data into an assertion (which is malformed).
        public var attestedDataInAssertion: Bool = false
        /// Sign with this credential's key instead (a wrong-key signature).
        public var signWith: SoftwareCredential? = nil

        /// The defaults: a valid ceremony.
        public init() {}
    }

    /// Creates a credential for `rpID` and `userHandle` with a fresh key for `algorithm`.
    ///
    /// - Parameters:
    ///   - algorithm: ES256, ES384, ES512, EdDSA, RS256 or PS256 (RS384/RS512/RS1 also work).
    ///   - credentialID: The ID; nil draws 32 random bytes.
    public func makeCredential(
        algorithm: COSEAlgorithm, rpID: String, userHandle: [UInt8], credentialID: [UInt8]? = nil
    ) -> SoftwareCredential {
        let id = credentialID ?? SystemRandom().bytes(32)
        return SoftwareCredential(
            id: id, algorithm: algorithm, rpID: rpID, userHandle: userHandle,
            key: SoftwareKey.generate(Self.keyKind(for: algorithm)))
    }

    /// The key an algorithm needs: its curve, Ed25519, or RSA-2048.
    static func keyKind(for algorithm: COSEAlgorithm) -> SoftwareKey.Kind {
        switch algorithm.keyType {
        case .ec2: .ec(algorithm.curve?.ecCurve ?? .p256)
        case .okp: .ed25519
        case .rsa: .rsa(bits: 2048)
        // Portvakt verifies ML-DSA but never signs with it; ML-DSA tests use dilithium-py's
        // signatures (Tests/Fixtures/mldsa-dilithium-py-vectors.json) instead.
        case .akp: preconditionFailure("the software authenticator cannot sign with \(algorithm.name)")
        }
    }

    /// Answers `navigator.credentials.create` for `credential`.
    public func register(
        _ credential: SoftwareCredential, challenge: [UInt8], origin: String,
        behaviour: Behaviour = Behaviour()
    ) -> SoftwareRegistration {
        let clientData = Self.clientDataJSON(
            type: behaviour.type ?? "webauthn.create", challenge: challenge, origin: origin,
            behaviour: behaviour)
        let authenticatorData = makeAuthenticatorData(
            credential, behaviour: behaviour, attested: true)
        var format = behaviour.attestationFormat
        var statement = CBORValue.map(behaviour.attestationStatement)
        if let attestation = behaviour.attestation {
            (format, statement) = attestation.make(
                credential: credential, authenticatorData: authenticatorData,
                clientDataHash: Digest.sha256(clientData))
        }
        behaviour.editAttestationStatement?(&statement)
        let attestationObject = CBOREncoder.encode(
            .map(["fmt": .text(format), "attStmt": statement, "authData": .bytes(authenticatorData)]))
        let convenience = behaviour.includeConvenienceMembers
        return SoftwareRegistration(
            rawID: behaviour.rawID ?? credential.id, clientDataJSON: clientData,
            attestationObject: attestationObject,
            transports: transports, authenticatorData: convenience ? authenticatorData : nil,
            publicKey: convenience ? credential.publicKey.publicKey.derRepresentation : nil,
            publicKeyAlgorithm: convenience ? credential.algorithm.rawValue : nil, attachment: attachment,
            residentKey: behaviour.residentKey)
    }

    /// Answers `navigator.credentials.get` with `credential`.
    public func authenticate(
        _ credential: SoftwareCredential, challenge: [UInt8], origin: String,
        behaviour: Behaviour = Behaviour()
    ) -> SoftwareAssertion {
        let clientData = Self.clientDataJSON(
            type: behaviour.type ?? "webauthn.get", challenge: challenge, origin: origin, behaviour: behaviour
        )
        let authenticatorData = makeAuthenticatorData(
            credential, behaviour: behaviour, attested: behaviour.attestedDataInAssertion)
        let signer = behaviour.signWith ?? credential
        let signature = signer.sign(authenticatorData + Digest.sha256(clientData))
        let userHandle = behaviour.omitUserHandle ? nil : (behaviour.userHandle ?? credential.userHandle)
        return SoftwareAssertion(
            rawID: behaviour.rawID ?? credential.id, clientDataJSON: clientData,
            authenticatorData: authenticatorData,
            signature: signature, userHandle: userHandle, attachment: attachment)
    }

    /// clientDataJSON as browsers serialize it (§5.8.1.1): type, challenge, origin, crossOrigin, then topOrigin.
    public static func clientDataJSON(type: String, challenge: [UInt8], origin: String, behaviour: Behaviour)
        -> [UInt8]
    {
        var text =
            "{\"type\":\(quoted(type)),\"challenge\":\(quoted(behaviour.challengeText ?? Base64URL.encode(challenge)))"
        text += ",\"origin\":\(quoted(origin)),\"crossOrigin\":\(behaviour.crossOrigin)"
        if let topOrigin = behaviour.topOrigin { text += ",\"topOrigin\":\(quoted(topOrigin))" }
        return Array((text + "}").utf8)
    }

    /// An attestation object: {fmt, attStmt, authData} in CTAP2 canonical order.
    public static func attestationObject(format: String, statement: CBORMap, authenticatorData: [UInt8])
        -> [UInt8]
    {
        CBOREncoder.encode(
            .map(["fmt": .text(format), "attStmt": .map(statement), "authData": .bytes(authenticatorData)]))
    }

    /// Authenticator data: rpIdHash ‖ flags ‖ signCount ‖ (AAGUID ‖ idLength ‖ id ‖ COSE key).
    private func makeAuthenticatorData(_ credential: SoftwareCredential, behaviour: Behaviour, attested: Bool)
        -> [UInt8]
    {
        var flags = behaviour.flags.rawValue
        if attested { flags |= AuthenticatorData.Flags.attestedCredentialData.rawValue }
        var out = Digest.sha256(behaviour.rpID ?? credential.rpID) + [flags]
        out += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: behaviour.signCount >> $0) }
        if attested {
            out += withUnsafeBytes(of: aaguid.uuid) { Array($0) }
            out += [UInt8(credential.id.count >> 8), UInt8(credential.id.count & 0xff)]
            out += credential.id
            out += credential.publicKey.encoded
        }
        return out
    }
}

/// An attestation statement the software authenticator makes over the ceremony's real bytes.
///
/// Certificates come from the test (usually `TestCertificateAuthority`); the knobs that only a broken
/// authenticator would turn (a foreign nonce, a certificate for another key) are explicit parameters.
public indirect enum SoftwareAttestation: Sendable {
    /// packed self attestation: alg is the credential's, sig is made with the credential key.
    case packedSelf
    /// packed with x5c: `key` signs under `algorithm`; `x5c` is its certificate chain, leaf first.
    case packed(key: SoftwareKey, algorithm: COSEAlgorithm, x5c: [[UInt8]])
    /// fido-u2f: `key` (P-256) signs the U2F registration message; `x5c` should be its one certificate.
    case fidoU2F(key: SoftwareKey, x5c: [[UInt8]])
    /// apple: `ca` issues a certificate for the credential key carrying the nonce, followed by `chain`.
    /// `nonce` replaces the right nonce, `certifiedKey` the credential key (to make broken statements).
    case apple(
        ca: TestCertificateAuthority, chain: [[UInt8]], nonce: [UInt8]? = nil,
        certifiedKey: SoftwareKey? = nil)
    /// compound: an array of {fmt, attStmt} members, each made as its case says.
    case compound([SoftwareAttestation])

    /// The fmt and attStmt for `credential` over `authenticatorData` and `clientDataHash`.
    public func make(credential: SoftwareCredential, authenticatorData: [UInt8], clientDataHash: [UInt8])
        -> (format: String, statement: CBORValue)
    {
        let signed = authenticatorData + clientDataHash
        switch self {
        case .packedSelf:
            return (
                "packed",
                .map(["alg": .integer(credential.algorithm.rawValue), "sig": .bytes(credential.sign(signed))])
            )
        case .packed(let key, let algorithm, let x5c):
            let signature = key.sign(signed, algorithm: algorithm.signatureAlgorithm)
            return (
                "packed",
                .map([
                    "alg": .integer(algorithm.rawValue), "sig": .bytes(signature),
                    "x5c": .array(x5c.map { .bytes($0) }),
                ])
            )
        case .fidoU2F(let key, let x5c):
            guard case .ec2(_, let x, let y) = credential.publicKey.parameters else {
                fatalError("fido-u2f needs an EC2 credential")
            }
            // The U2F registration message the signature covers (FIDO U2F Raw Message Formats §4.3).
            let rpIDHash = Array(authenticatorData.prefix(32))
            let message = [0x00] + rpIDHash + clientDataHash + credential.id + [0x04] + x + y
            return (
                "fido-u2f",
                .map([
                    "sig": .bytes(key.sign(message, algorithm: .ecdsaSHA256)),
                    "x5c": .array(x5c.map { .bytes($0) }),
                ])
            )
        case .apple(let ca, let chain, let nonce, let certifiedKey):
            let extensionValue = DERWriter.sequence([
                DERWriter.explicit(1, DERWriter.octetString(nonce ?? Digest.sha256(signed)))
            ])
            let leaf = ca.issue(
                subject: .init(commonName: "Apple-style credential certificate"),
                subjectPublicKeyInfo: certifiedKey?.subjectPublicKeyInfo
                    ?? credential.publicKey.publicKey.derRepresentation,
                extensions: [.init(oid: "1.2.840.113635.100.8.2", value: extensionValue)])
            return ("apple", .map(["x5c": .array(([leaf] + chain).map { .bytes($0) })]))
        case .compound(let members):
            let statements: [CBORValue] = members.map { member in
                let (format, statement) = member.make(
                    credential: credential, authenticatorData: authenticatorData,
                    clientDataHash: clientDataHash)
                return .map(["fmt": .text(format), "attStmt": statement])
            }
            return ("compound", .array(statements))
        }
    }
}

/// A registration answer in parts, so tests can damage one part and re-serialize.
public struct SoftwareRegistration: Sendable {
    /// rawId (and id, its base64url).
    public var rawID: [UInt8]
    /// response.clientDataJSON.
    public var clientDataJSON: [UInt8]
    /// response.attestationObject.
    public var attestationObject: [UInt8]
    /// response.transports.
    public var transports: [String]
    /// response.authenticatorData (L3 convenience), omitted when nil.
    public var authenticatorData: [UInt8]?
    /// response.publicKey (DER SubjectPublicKeyInfo), omitted when nil.
    public var publicKey: [UInt8]?
    /// response.publicKeyAlgorithm, omitted when nil.
    public var publicKeyAlgorithm: Int64?
    /// authenticatorAttachment, omitted when nil.
    public var attachment: String?
    /// clientExtensionResults.credProps.rk, credProps omitted when nil.
    public var residentKey: Bool?

    /// `RegistrationResponseJSON` as `toJSON()` writes it.
    public func json() -> [UInt8] {
        var response =
            "\"clientDataJSON\":\(b64(clientDataJSON)),\"attestationObject\":\(b64(attestationObject))"
        response += ",\"transports\":[\(transports.map(quoted).joined(separator: ","))]"
        if let authenticatorData { response += ",\"authenticatorData\":\(b64(authenticatorData))" }
        if let publicKey { response += ",\"publicKey\":\(b64(publicKey))" }
        if let publicKeyAlgorithm { response += ",\"publicKeyAlgorithm\":\(publicKeyAlgorithm)" }
        let extensions = residentKey.map { "{\"credProps\":{\"rk\":\($0)}}" } ?? "{}"
        var text =
            "{\"id\":\(b64(rawID)),\"rawId\":\(b64(rawID)),\"response\":{\(response)},\"type\":\"public-key\""
        text += ",\"clientExtensionResults\":\(extensions)"
        if let attachment { text += ",\"authenticatorAttachment\":\(quoted(attachment))" }
        return Array((text + "}").utf8)
    }
}

/// An assertion in parts, so tests can damage one part and re-serialize.
public struct SoftwareAssertion: Sendable {
    /// rawId (and id, its base64url).
    public var rawID: [UInt8]
    /// response.clientDataJSON.
    public var clientDataJSON: [UInt8]
    /// response.authenticatorData.
    public var authenticatorData: [UInt8]
    /// response.signature.
    public var signature: [UInt8]
    /// response.userHandle, omitted when nil.
    public var userHandle: [UInt8]?
    /// authenticatorAttachment, omitted when nil.
    public var attachment: String?

    /// `AuthenticationResponseJSON` as `toJSON()` writes it.
    public func json() -> [UInt8] {
        var response =
            "\"clientDataJSON\":\(b64(clientDataJSON)),\"authenticatorData\":\(b64(authenticatorData))"
        response += ",\"signature\":\(b64(signature))"
        if let userHandle { response += ",\"userHandle\":\(b64(userHandle))" }
        var text =
            "{\"id\":\(b64(rawID)),\"rawId\":\(b64(rawID)),\"response\":{\(response)},\"type\":\"public-key\""
        text += ",\"clientExtensionResults\":{}"
        if let attachment { text += ",\"authenticatorAttachment\":\(quoted(attachment))" }
        return Array((text + "}").utf8)
    }
}

/// A credential held by the software authenticator: ID, owner, and the private key.
public final class SoftwareCredential: Sendable {
    /// The credential ID.
    public let id: [UInt8]
    /// The COSE algorithm it signs with.
    public let algorithm: COSEAlgorithm
    /// The RP ID it is scoped to.
    public let rpID: String
    /// The owner's user handle.
    public let userHandle: [UInt8]
    /// The public half, as it appears in attested credential data.
    public let publicKey: COSEKey
    private let key: SoftwareKey

    init(id: [UInt8], algorithm: COSEAlgorithm, rpID: String, userHandle: [UInt8], key: SoftwareKey) {
        self.id = id
        self.algorithm = algorithm
        self.rpID = rpID
        self.userHandle = userHandle
        self.key = key
        // A generated key always makes a valid COSE key; failing here is a broken test environment.
        self.publicKey = try! COSEKey(algorithm: algorithm, parameters: key.coseParameters)
    }

    /// Signs `data` as the authenticator would for this credential's algorithm.
    public func sign(_ data: [UInt8]) -> [UInt8] { key.sign(data, algorithm: algorithm.signatureAlgorithm) }
}

private func quoted(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

private func b64(_ bytes: [UInt8]) -> String { "\"\(Base64URL.encode(bytes))\"" }
