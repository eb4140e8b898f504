import CryptoCore
import Kernel

/// The client extension outputs Portvakt reads (§5.1, `getClientExtensionResults()`); others are ignored.
public struct ClientExtensionResults: Sendable, Hashable {
    /// credProps.rk: whether the client reports the new credential as discoverable; nil when not reported.
    public var credentialPropertiesResidentKey: Bool?

    /// Creates extension results.
    public init(credentialPropertiesResidentKey: Bool? = nil) {
        self.credentialPropertiesResidentKey = credentialPropertiesResidentKey
    }
}

/// A credential response as a request carried it, before its members are read: its JSON bytes, or
/// the value an envelope's strict parse already built from them (`CredentialEnvelope(json:
/// buildingCredential: true)`), so that a login's credential is parsed once, not checked in the
/// envelope and parsed again from its bytes. Either way the response types read it by the same
/// rules, with the same length limit, in the same order.
public struct CredentialJSON: Sendable {
    enum Form: Sendable {
        /// Bytes still to be parsed.
        case bytes([UInt8])
        /// What the strict parser built from `length` bytes.
        case parsed(JSONValue, length: Int)
    }

    let form: Form

    /// A response's JSON bytes.
    public init(json: [UInt8]) { form = .bytes(json) }

    /// A value the strict parser built from `length` bytes of JSON.
    init(parsed value: JSONValue, length: Int) { form = .parsed(value, length: length) }
}

/// `RegistrationResponseJSON` (WebAuthn L3 §5.1): what `PublicKeyCredential.toJSON()` gives after
/// `navigator.credentials.create`, parsed strictly.
///
/// Binary members are base64 in either alphabet, padded or not (`Base64URL.decodeTolerant`: what
/// browsers and the client libraries that exist send), `id` must decode to the bytes of `rawId`,
/// `type` must be "public-key", duplicate members are refused and the whole document is bounded.
/// Unknown members are ignored, as WebIDL dictionaries do, so newer browsers keep working. The
/// bytes are what is verified, and `id` is kept in its canonical unpadded base64url form.
public struct RegistrationResponseJSON: Sendable, Hashable {
    /// The credential ID as canonical (unpadded) base64url text, whatever spelling was sent.
    public let id: String
    /// The credential ID.
    public let rawID: [UInt8]
    /// The client data bytes exactly as sent.
    public let clientDataJSON: [UInt8]
    /// The CBOR attestation object (fmt, attStmt, authData).
    public let attestationObject: [UInt8]
    /// The transports the authenticator reported; kept for allowCredentials later.
    public let transports: [AuthenticatorTransport]
    /// The authenticator data repeated for convenience (L3); must equal the attestation object's.
    public let authenticatorData: [UInt8]?
    /// The credential public key as DER SubjectPublicKeyInfo (L3 convenience); checked when present.
    public let publicKey: [UInt8]?
    /// The credential's COSE algorithm (L3 convenience); checked when present.
    public let publicKeyAlgorithm: Int64?
    /// Platform or cross-platform, when the client says; unknown values read as nil.
    public let authenticatorAttachment: AuthenticatorAttachment?
    /// The client extension outputs Portvakt reads.
    public let clientExtensionResults: ClientExtensionResults

    /// The largest response accepted: TPM attestation with two certificates stays under 10 KiB.
    public static let maximumLength = 64 * 1024

    /// Parses a registration response from its JSON bytes.
    ///
    /// - Parameter json: The UTF-8 request body.
    /// - Throws: `response.*` codes: `too_large`, `malformed_json`, `missing_field`, `wrong_type`,
    ///   `invalid_base64url`, `id_mismatch`, `unsupported_type`.
    public init(json: [UInt8]) throws(PasskeyError) {
        let envelope = try ResponseEnvelope(CredentialJSON(json: json), maximumLength: Self.maximumLength)
        let response = envelope.response
        self.id = envelope.id
        self.rawID = envelope.rawID
        self.clientDataJSON = try response.binary("clientDataJSON")
        self.attestationObject = try response.binary("attestationObject")
        self.transports = try response.transports()
        self.authenticatorData = try response.optionalBinary("authenticatorData")
        self.publicKey = try response.optionalBinary("publicKey")
        self.publicKeyAlgorithm = try response.optionalInteger("publicKeyAlgorithm")
        self.authenticatorAttachment = envelope.authenticatorAttachment
        self.clientExtensionResults = envelope.clientExtensionResults
    }

    /// Builds a response from its parts, for tests and for callers that decoded it elsewhere.
    ///
    /// `id` is derived from `rawID`, so the result always passes the id check.
    public init(
        rawID: [UInt8], clientDataJSON: [UInt8], attestationObject: [UInt8],
        transports: [AuthenticatorTransport] = [], authenticatorData: [UInt8]? = nil,
        publicKey: [UInt8]? = nil,
        publicKeyAlgorithm: Int64? = nil, authenticatorAttachment: AuthenticatorAttachment? = nil,
        clientExtensionResults: ClientExtensionResults = ClientExtensionResults()
    ) {
        self.id = Base64URL.encode(rawID)
        self.rawID = rawID
        self.clientDataJSON = clientDataJSON
        self.attestationObject = attestationObject
        self.transports = transports
        self.authenticatorData = authenticatorData
        self.publicKey = publicKey
        self.publicKeyAlgorithm = publicKeyAlgorithm
        self.authenticatorAttachment = authenticatorAttachment
        self.clientExtensionResults = clientExtensionResults
    }
}

/// `AuthenticationResponseJSON` (WebAuthn L3 §5.1): what `toJSON()` gives after
/// `navigator.credentials.get`, parsed strictly by the same rules as registration responses.
public struct AuthenticationResponseJSON: Sendable, Hashable {
    /// The credential ID as canonical (unpadded) base64url text, whatever spelling was sent.
    public let id: String
    /// The credential ID; the caller looks the stored credential up by it.
    public let rawID: [UInt8]
    /// The client data bytes exactly as sent.
    public let clientDataJSON: [UInt8]
    /// The authenticator data bytes exactly as sent.
    public let authenticatorData: [UInt8]
    /// The assertion signature.
    public let signature: [UInt8]
    /// The user handle the authenticator stored with the credential; nil when it returned none.
    public let userHandle: [UInt8]?
    /// Platform or cross-platform, when the client says; unknown values read as nil.
    public let authenticatorAttachment: AuthenticatorAttachment?
    /// The client extension outputs Portvakt reads.
    public let clientExtensionResults: ClientExtensionResults

    /// The largest response accepted; an assertion is well under 4 KiB even with RSA-8192, about
    /// 7 KiB with ML-DSA-87 (a 4,627-byte signature).
    public static let maximumLength = 16 * 1024

    /// Parses an authentication response from its JSON bytes.
    ///
    /// - Parameter json: The UTF-8 request body.
    /// - Throws: the same `response.*` codes as `RegistrationResponseJSON.init(json:)`.
    public init(json: [UInt8]) throws(PasskeyError) {
        try self.init(CredentialJSON(json: json))
    }

    /// Reads an authentication response from its bytes or from the value an envelope's parse built,
    /// by exactly the rules of `init(json:)`.
    ///
    /// - Parameter credential: The response's bytes, or its parsed value.
    /// - Throws: the same `response.*` codes as `init(json:)`.
    public init(_ credential: CredentialJSON) throws(PasskeyError) {
        let envelope = try ResponseEnvelope(credential, maximumLength: Self.maximumLength)
        let response = envelope.response
        self.id = envelope.id
        self.rawID = envelope.rawID
        self.clientDataJSON = try response.binary("clientDataJSON")
        self.authenticatorData = try response.binary("authenticatorData")
        self.signature = try response.binary("signature")
        // toJSON omits a null user handle; some libraries write null instead. Both mean "none".
        self.userHandle = try response.optionalBinary("userHandle")
        self.authenticatorAttachment = envelope.authenticatorAttachment
        self.clientExtensionResults = envelope.clientExtensionResults
    }

    /// Builds a response from its parts; `id` is derived from `rawID`.
    public init(
        rawID: [UInt8], clientDataJSON: [UInt8], authenticatorData: [UInt8], signature: [UInt8],
        userHandle: [UInt8]?, authenticatorAttachment: AuthenticatorAttachment? = nil,
        clientExtensionResults: ClientExtensionResults = ClientExtensionResults()
    ) {
        self.id = Base64URL.encode(rawID)
        self.rawID = rawID
        self.clientDataJSON = clientDataJSON
        self.authenticatorData = authenticatorData
        self.signature = signature
        self.userHandle = userHandle
        self.authenticatorAttachment = authenticatorAttachment
        self.clientExtensionResults = clientExtensionResults
    }
}

/// The members both response forms share, checked once: id, rawId, type, response, attachment, extensions.
private struct ResponseEnvelope {
    let id: String
    let rawID: [UInt8]
    let response: ResponseMembers
    let authenticatorAttachment: AuthenticatorAttachment?
    let clientExtensionResults: ClientExtensionResults

    init(_ credential: CredentialJSON, maximumLength: Int) throws(PasskeyError) {
        let value: JSONValue
        switch credential.form {
        case .bytes(let json):
            guard json.count <= maximumLength else {
                throw PasskeyError(
                    .responseTooLarge, "the response is \(json.count) bytes, at most \(maximumLength)")
            }
            value = try JSONReader.parse(json, code: .responseMalformedJSON, what: "the response")
        case .parsed(let parsed, let length):
            // The same limit on the same bytes; the envelope's parse applied the syntax rules.
            guard length <= maximumLength else {
                throw PasskeyError(
                    .responseTooLarge, "the response is \(length) bytes, at most \(maximumLength)")
            }
            value = parsed
        }
        guard case .object(let top) = value else {
            throw PasskeyError(.responseWrongType, "the response must be an object, found \(value.typeName)")
        }
        let members = ResponseMembers(object: top, path: "")
        let type = try members.string("type")
        guard type == "public-key" else {
            throw PasskeyError(.responseUnsupportedType, "type must be \"public-key\"")
        }
        let id = try members.binary("id")
        let rawID = try members.binary("rawId")
        // §5.1: id is base64url(rawId). Compared as bytes, since either may be sent in another
        // spelling; the canonical text is what is kept, so lookups and logs see one form.
        guard id == rawID else {
            throw PasskeyError(.responseIDMismatch, "id and rawId are not the same credential ID")
        }
        guard let responseValue = top["response"] else {
            throw PasskeyError(.responseMissingField, "the response has no response member")
        }
        guard case .object(let responseObject) = responseValue else {
            throw PasskeyError(
                .responseWrongType, "response must be an object, found \(responseValue.typeName)")
        }
        self.id = Base64URL.encode(rawID)
        self.rawID = rawID
        self.response = ResponseMembers(object: responseObject, path: "response.")
        switch top["authenticatorAttachment"] {
        case .string(let text): self.authenticatorAttachment = AuthenticatorAttachment(rawValue: text)
        case nil, .null: self.authenticatorAttachment = nil
        case let other?:
            throw PasskeyError(
                .responseWrongType, "authenticatorAttachment must be a string, found \(other.typeName)")
        }
        self.clientExtensionResults = try Self.extensions(top["clientExtensionResults"])
    }

    /// Reads credProps.rk; everything else in the extension results is the client's business.
    private static func extensions(_ value: JSONValue?) throws(PasskeyError) -> ClientExtensionResults {
        // Required by L3 but absent from some native wrappers; absence carries no risk, so it reads as {}.
        guard let value else { return ClientExtensionResults() }
        guard case .object(let object) = value else {
            throw PasskeyError(
                .responseWrongType, "clientExtensionResults must be an object, found \(value.typeName)")
        }
        guard let credProps = object["credProps"] else { return ClientExtensionResults() }
        guard case .object(let props) = credProps else {
            throw PasskeyError(.responseWrongType, "credProps must be an object, found \(credProps.typeName)")
        }
        switch props["rk"] {
        case nil: return ClientExtensionResults()
        case .bool(let rk): return ClientExtensionResults(credentialPropertiesResidentKey: rk)
        case let other?:
            throw PasskeyError(.responseWrongType, "credProps.rk must be a boolean, found \(other.typeName)")
        }
    }
}

/// Typed access to one JSON object's members, with error messages naming the member's path.
private struct ResponseMembers {
    let object: JSONObject
    let path: String

    func string(_ name: String) throws(PasskeyError) -> String {
        guard let value = object[name] else {
            throw PasskeyError(.responseMissingField, "the response has no \(path)\(name)")
        }
        guard case .string(let text) = value else {
            throw PasskeyError(.responseWrongType, "\(path)\(name) must be a string, found \(value.typeName)")
        }
        return text
    }

    func binary(_ name: String) throws(PasskeyError) -> [UInt8] {
        try decode(string(name), name)
    }

    /// A binary member that may be absent or null.
    func optionalBinary(_ name: String) throws(PasskeyError) -> [UInt8]? {
        switch object[name] {
        case nil, .null: return nil
        case .string(let text): return try decode(text, name)
        case let other?:
            throw PasskeyError(.responseWrongType, "\(path)\(name) must be a string, found \(other.typeName)")
        }
    }

    func optionalInteger(_ name: String) throws(PasskeyError) -> Int64? {
        switch object[name] {
        case nil, .null: return nil
        case .integer(let number): return number
        case let other?:
            throw PasskeyError(
                .responseWrongType, "\(path)\(name) must be an integer, found \(other.typeName)")
        }
    }

    /// The transports array; absent reads as empty (older clients do not send it).
    func transports() throws(PasskeyError) -> [AuthenticatorTransport] {
        guard let value = object["transports"] else { return [] }
        guard case .array(let items) = value else {
            throw PasskeyError(
                .responseWrongType, "\(path)transports must be an array, found \(value.typeName)")
        }
        var transports: [AuthenticatorTransport] = []
        for item in items {
            guard case .string(let name) = item else {
                throw PasskeyError(.responseWrongType, "\(path)transports holds a \(item.typeName)")
            }
            transports.append(AuthenticatorTransport(rawValue: name))
        }
        return transports
    }

    private func decode(_ text: String, _ name: String) throws(PasskeyError) -> [UInt8] {
        guard let bytes = Base64URL.decodeTolerant(text) else {
            throw PasskeyError(
                .responseInvalidBase64URL,
                "\(path)\(name) is not base64 (url or standard alphabet, unpadded or correctly padded)")
        }
        return bytes
    }
}
