import HTTPEngine
import PasskeyCore
import SessionCore

/// The WebAuthn Level 3 JSON the passkey routes carry, described for the API document. These
/// bodies are not Swift `Codable` types: the options are written by PasskeyCore's JSON writer
/// and the credentials read by its strict parser, so their schemas are stated here, with every
/// enumeration's values taken from PasskeyCore's own types.
enum WebAuthnSchemas {
    static let base64URL = JSONSchema.string(pattern: "^[A-Za-z0-9_-]*$").described("base64url, no padding")

    private static func values<T: CaseIterable & RawRepresentable>(_ type: T.Type) -> JSONSchema
    where T.RawValue == String {
        .string(values: T.allCases.map(\.rawValue))
    }

    private static let descriptor = JSONSchema.object(
        [
            .init("type", .string(values: ["public-key"])),
            .init("id", base64URL),
            .init("transports", .array(.string()), required: false),
        ], closed: true)

    /// `PublicKeyCredentialCreationOptionsJSON`, as `RegistrationOptions.json()` writes it.
    static let creationOptions = JSONSchema.object(
        [
            .init("rp", .object([.init("id", .string()), .init("name", .string())], closed: true)),
            .init(
                "user",
                .object(
                    [.init("id", base64URL), .init("name", .string()), .init("displayName", .string())],
                    closed: true)),
            .init("challenge", base64URL),
            .init(
                "pubKeyCredParams",
                .array(
                    .object(
                        [.init("type", .string(values: ["public-key"])), .init("alg", .integer)], closed: true
                    ))),
            .init("timeout", .integer),
            .init("excludeCredentials", .array(descriptor)),
            .init(
                "authenticatorSelection",
                .object(
                    [
                        .init(
                            "authenticatorAttachment", values(AuthenticatorAttachment.self), required: false),
                        .init("residentKey", values(ResidentKeyRequirement.self)),
                        .init("requireResidentKey", .boolean),
                        .init("userVerification", values(UserVerificationRequirement.self)),
                    ], closed: true)),
            .init("hints", .array(values(PublicKeyCredentialHint.self))),
            .init("attestation", values(AttestationConveyance.self)),
            .init("extensions", .object([.init("credProps", .boolean)], closed: true)),
        ], closed: true)

    /// `PublicKeyCredentialRequestOptionsJSON`, as `AuthenticationOptions.json()` writes it.
    static let requestOptions = JSONSchema.object(
        [
            .init("challenge", base64URL),
            .init("timeout", .integer),
            .init("rpId", .string()),
            .init("allowCredentials", .array(descriptor)),
            .init("userVerification", values(UserVerificationRequirement.self)),
            .init("hints", .array(values(PublicKeyCredentialHint.self))),
        ], closed: true)

    /// The members every credential response has (`PublicKeyCredential.toJSON()`); clients may
    /// send more, which the parser ignores.
    private static func credential(_ response: [JSONSchema.Property]) -> JSONSchema {
        .object([
            .init("id", base64URL),
            .init("rawId", base64URL),
            .init("type", .string(values: ["public-key"])),
            .init("response", .object(response)),
            .init("authenticatorAttachment", .nullable(.string()), required: false),
            .init("clientExtensionResults", .object([]), required: false),
        ])
    }

    /// `RegistrationResponseJSON`.
    static let registrationResponse = credential([
        .init("clientDataJSON", base64URL),
        .init("attestationObject", base64URL),
        .init("transports", .array(.string()), required: false),
        .init("authenticatorData", base64URL, required: false),
        .init("publicKey", base64URL, required: false),
        .init("publicKeyAlgorithm", .integer, required: false),
    ])

    /// `AuthenticationResponseJSON`.
    static let authenticationResponse = credential([
        .init("clientDataJSON", base64URL),
        .init("authenticatorData", base64URL),
        .init("signature", base64URL),
        .init("userHandle", .nullable(base64URL), required: false),
    ])

    /// A finalize body (`FinalizeBody`): the challenge id, the credential, an optional passkey
    /// name (registration) and the client kind.
    static func finalizeBody(credential: JSONSchema, named: Bool) -> JSONSchema {
        var members: [JSONSchema.Property] = [
            .init("challengeId", .string()),
            .init("credential", credential),
            .init(
                "client", values(ClientKind.self).described("web (the default) or native"), required: false),
        ]
        if named { members.append(.init("name", .string(), required: false)) }
        return .object(members)
    }

    /// `{"challengeId": …, "publicKey": <options>}`, the initialize routes' answer.
    static func optionsResponse(_ options: JSONSchema) -> JSONSchema {
        .object([.init("challengeId", .string()), .init("publicKey", options)], closed: true)
    }
}

/// The registration finalize body, described for the API document.
enum RegistrationFinalizeSchema: JSONSchemaDescribed {
    static var jsonSchema: JSONSchema {
        WebAuthnSchemas.finalizeBody(credential: WebAuthnSchemas.registrationResponse, named: true)
    }
}

/// The login finalize body, described for the API document.
enum LoginFinalizeSchema: JSONSchemaDescribed {
    static var jsonSchema: JSONSchema {
        WebAuthnSchemas.finalizeBody(credential: WebAuthnSchemas.authenticationResponse, named: false)
    }
}

/// The registration initialize answer.
enum CreationOptionsSchema: JSONSchemaDescribed {
    static var jsonSchema: JSONSchema { WebAuthnSchemas.optionsResponse(WebAuthnSchemas.creationOptions) }
}

/// The login initialize answer.
enum RequestOptionsSchema: JSONSchemaDescribed {
    static var jsonSchema: JSONSchema { WebAuthnSchemas.optionsResponse(WebAuthnSchemas.requestOptions) }
}
