import Kernel

/// The client data a browser or platform collected and the authenticator signed over (WebAuthn L3
/// §5.8.1), parsed from the exact clientDataJSON bytes.
///
/// Parsed with a full JSON parser rather than the §5.8.1.2 limited-verification shortcut, so any
/// well-formed member order works; duplicate members are refused so that this parser and the
/// browser's serializer cannot disagree. Unknown members are ignored, as §5.8.1 requires
/// (`tokenBinding` among them: Token Binding is obsolete and no browser sends it any more).
public struct CollectedClientData: Sendable, Hashable {
    /// "webauthn.create" or "webauthn.get" (or anything else a hostile client sends).
    public let type: String
    /// The challenge as sent: base64url text, compared after decoding.
    public let challenge: String
    /// The origin of the calling page or app.
    public let origin: String
    /// True when the call came from a cross-origin iframe; absent means false.
    public let crossOrigin: Bool
    /// The top-level origin, present only for cross-origin calls (L3).
    public let topOrigin: String?

    /// The longest clientDataJSON accepted: browsers send about 150 bytes, Android apps a little more.
    public static let maximumLength = 8 * 1024

    /// Parses client data from its exact bytes.
    ///
    /// - Parameter bytes: clientDataJSON as sent; hashing for signatures uses these, never a re-encoding.
    /// - Throws: `clientdata.malformed` for anything but a strict JSON object in UTF-8 (or over 8 KiB),
    ///   `clientdata.missing_field` without type, challenge or origin, `clientdata.wrong_type` for a
    ///   member of the wrong JSON type.
    public init(bytes: [UInt8]) throws(PasskeyError) {
        guard bytes.count <= Self.maximumLength else {
            throw PasskeyError(.clientDataMalformed, "clientDataJSON is \(bytes.count) bytes, over the limit")
        }
        let value = try JSONReader.parse(bytes, code: .clientDataMalformed, what: "clientDataJSON")
        guard case .object(let object) = value else {
            throw PasskeyError(
                .clientDataMalformed, "clientDataJSON must be an object, found \(value.typeName)")
        }
        self.type = try Self.string(object, "type")
        self.challenge = try Self.string(object, "challenge")
        self.origin = try Self.string(object, "origin")
        switch object["crossOrigin"] {
        case nil: self.crossOrigin = false
        case .bool(let flag): self.crossOrigin = flag
        case let other?:
            throw PasskeyError(.clientDataWrongType, "crossOrigin must be a boolean, found \(other.typeName)")
        }
        switch object["topOrigin"] {
        case nil: self.topOrigin = nil
        case .string(let text): self.topOrigin = text
        case let other?:
            throw PasskeyError(.clientDataWrongType, "topOrigin must be a string, found \(other.typeName)")
        }
    }

    private static func string(_ object: JSONObject, _ name: String) throws(PasskeyError) -> String {
        guard let value = object[name] else {
            throw PasskeyError(.clientDataMissingField, "clientDataJSON has no \(name)")
        }
        guard case .string(let text) = value else {
            throw PasskeyError(.clientDataWrongType, "\(name) must be a string, found \(value.typeName)")
        }
        return text
    }
}
