import Kernel

/// A request body that carries a credential response inside an envelope, such as
/// `{"challengeId": "…", "credential": {…}, "name": "…", "client": "web"}`.
///
/// The envelope is read by the same strict parser as the responses (duplicate members refused), and
/// the credential member is handed on as its exact bytes: re-serialising it through another JSON
/// library would hide duplicates inside it and cost a second parse on the login hot path.
public struct CredentialEnvelope: Sendable {
    /// The envelope's string members, other than `credential`; members of other types are refused.
    public let strings: [String: String]
    /// The `credential` member's bytes, for `RegistrationResponseJSON(json:)` or
    /// `AuthenticationResponseJSON(json:)`.
    public let credential: [UInt8]
    /// The `credential` member for `AuthenticationResponseJSON(_:)`: the value this parse built
    /// when asked to (`buildingCredential`), else its bytes.
    public let credentialJSON: CredentialJSON

    /// The largest envelope accepted: a registration response plus a few short members.
    public static let maximumLength = RegistrationResponseJSON.maximumLength + 4 * 1024

    /// Parses an envelope.
    /// - Parameters:
    ///   - json: The request body.
    ///   - buildingCredential: Whether to build the credential's value here, for a response parser
    ///     that reads it from `credentialJSON` (the login's), instead of only checking it by the
    ///     same rules for one that parses `credential` again. The same bytes are accepted and
    ///     refused either way, with the same errors.
    /// - Throws: `response.too_large`, `response.malformed_json` (not strict JSON, not an object, a
    ///   non-string member), `response.missing_field` (no `credential` object).
    public init(json: [UInt8], buildingCredential: Bool = false) throws(PasskeyError) {
        guard json.count <= Self.maximumLength else {
            throw PasskeyError(.responseTooLarge, "the request body is over \(Self.maximumLength) bytes")
        }
        if buildingCredential {
            // Every member built, the credential too; refusals in member order, as below.
            let members = try JSONReader.parseMembers(
                json, code: .responseMalformedJSON, what: "the request body")
            var strings = [String: String](minimumCapacity: members.count)
            var credential: (value: JSONValue, range: Range<Int>)?
            for member in members {
                if member.name == "credential" {
                    guard case .object = member.value else {
                        throw PasskeyError(.responseMalformedJSON, "\"credential\" must be an object")
                    }
                    credential = (member.value, member.range)
                    continue
                }
                guard case .string(let text) = member.value else {
                    throw PasskeyError(
                        .responseMalformedJSON, "\"\(member.name.prefix(40))\" must be a string")
                }
                strings[member.name] = text
            }
            guard let credential else {
                throw PasskeyError(.responseMissingField, "the request body has no \"credential\" object")
            }
            self.strings = strings
            self.credential = Array(json[credential.range])
            self.credentialJSON = CredentialJSON(parsed: credential.value, length: credential.range.count)
            return
        }
        // The credential is checked here by every strict rule, but built only once, by the
        // response parser that reads its bytes next.
        let (members, checked) = try JSONReader.parseMembers(
            json, checkingOnly: "credential", code: .responseMalformedJSON, what: "the request body")
        var strings = [String: String](minimumCapacity: members.count)
        // Refusals in member order, as when the credential was built here too.
        for position in 0...members.count {
            if let checked, checked.position == position, checked.typeName != "object" {
                throw PasskeyError(.responseMalformedJSON, "\"credential\" must be an object")
            }
            guard position < members.count else { break }
            let member = members[position]
            guard case .string(let text) = member.value else {
                throw PasskeyError(.responseMalformedJSON, "\"\(member.name.prefix(40))\" must be a string")
            }
            strings[member.name] = text
        }
        guard let checked else {
            throw PasskeyError(.responseMissingField, "the request body has no \"credential\" object")
        }
        let credential = Array(json[checked.range])
        self.strings = strings
        self.credential = credential
        self.credentialJSON = CredentialJSON(json: credential)
    }
}
