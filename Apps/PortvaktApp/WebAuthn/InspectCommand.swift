import CryptoCore
import FoundationEssentials
import Kernel
import PasskeyCore

/// `portvakt webauthn inspect`: decodes whatever WebAuthn data it is given and prints every field
/// readably, for integrators debugging a client. It verifies nothing and is lenient where the
/// verifier is strict: it shows as much as it can decode and lists what it could not.
///
/// Input (standard input): a RegistrationResponseJSON or AuthenticationResponseJSON, a
/// clientDataJSON object, or base64url/hex/base64 of an attestation object or authenticator data.
enum InspectCommand {
    /// The decoded fields, or nil when nothing could be recognised.
    /// - Throws: why, when the input is a JSON object to the eye but not strict JSON (a duplicate
    ///   member, say), which is also why a ceremony would refuse it.
    static func inspect(_ input: [UInt8]) throws(StrictJSON.SyntaxError) -> [String: Any]? {
        let text = String(decoding: input, as: UTF8.self).trimmingWhitespaceAndNewlines()
        if text.hasPrefix("{") {
            guard let object = try JSONText.parse(Array(text.utf8)) as? [String: Any] else { return nil }
            if object["response"] is [String: Any] { return credential(object) }
            if object["type"] is String, object["challenge"] is String {
                return ["kind": "clientData", "clientData": object]
            }
            return nil
        }
        // Hex digits are also base64url characters: try every reading, hex first.
        let candidates = [
            Hex.decode(text), Base64URL.decode(text), Data(base64Encoded: text).map { [UInt8]($0) },
        ]
        for bytes in candidates.compactMap({ $0 }) {
            var report = Report()
            if let attestation = report.attestationObject(bytes) {
                return ["kind": "attestationObject", "attestationObject": attestation].merging(
                    report.errorsField
                ) {
                    a, _ in a
                }
            }
            report = Report()
            if let authData = report.authenticatorData(bytes) {
                return ["kind": "authenticatorData", "authenticatorData": authData].merging(
                    report.errorsField
                ) {
                    a, _ in a
                }
            }
        }
        return nil
    }

    /// A credential (registration or authentication response) with every nested part decoded.
    private static func credential(_ object: [String: Any]) -> [String: Any] {
        var report = Report()
        let response = object["response"] as? [String: Any] ?? [:]
        var out: [String: Any] = [
            "kind": response["attestationObject"] != nil ? "registrationResponse" : "authenticationResponse"
        ]
        for key in ["id", "rawId", "type", "authenticatorAttachment", "clientExtensionResults"] {
            if let value = object[key] { out[key] = value }
        }
        var decoded: [String: Any] = [:]
        if let clientData = response["clientDataJSON"] as? String {
            decoded["clientDataJSON"] = report.clientData(clientData)
        }
        if let attestation = response["attestationObject"] as? String {
            if let bytes = report.base64url(attestation, field: "attestationObject") {
                decoded["attestationObject"] = report.attestationObject(bytes)
            }
        }
        if let authData = response["authenticatorData"] as? String,
            let bytes = report.base64url(authData, field: "authenticatorData")
        {
            decoded["authenticatorData"] = report.authenticatorData(bytes)
        }
        for key in ["signature", "userHandle", "publicKey", "publicKeyAlgorithm", "transports"] {
            if let value = response[key] { decoded[key] = value }
        }
        if let userHandle = response["userHandle"] as? String, let bytes = Base64URL.decode(userHandle) {
            decoded["userHandleText"] = String(validating: bytes, as: UTF8.self) ?? JSONNull()
        }
        out["response"] = decoded
        return out.merging(report.errorsField) { a, _ in a }
    }

    /// Collects what could not be decoded, with where and why.
    private struct Report {
        var errors: [[String: String]] = []

        var errorsField: [String: Any] { errors.isEmpty ? [:] : ["errors": errors] }

        mutating func fail(_ field: String, _ error: any Error) {
            let (code, message): (String, String) =
                switch error {
                case let error as any CodedError: (error.codeName, error.message)
                default: ("inspect.undecodable", String(describing: error))
                }
            errors.append(["field": field, "code": code, "message": message])
        }

        mutating func base64url(_ text: String, field: String) -> [UInt8]? {
            guard let bytes = Base64URL.decode(text) else {
                errors.append(["field": field, "code": "inspect.not_base64url", "message": "not base64url"])
                return nil
            }
            return bytes
        }

        mutating func clientData(_ encoded: String) -> Any? {
            guard let bytes = base64url(encoded, field: "clientDataJSON") else { return nil }
            do {
                return ["json": try JSONText.parse(bytes), "sha256": Hex.encode(Digest.sha256(bytes))]
            } catch {
                // The verifier's own rule, so the reason is why a ceremony refuses these bytes.
                errors.append([
                    "field": "clientDataJSON", "code": "inspect.not_json",
                    "message": "not strict JSON: \(error.reason) at byte \(error.offset)",
                ])
                return String(decoding: bytes, as: UTF8.self)
            }
        }

        mutating func attestationObject(_ bytes: [UInt8]) -> [String: Any]? {
            let map: CBORMap
            do {
                guard let decoded = try CBORDecoder().decode(bytes).mapValue else { return nil }
                map = decoded
            } catch {
                return nil
            }
            guard let format = map["fmt"]?.textValue, let authData = map["authData"]?.bytesValue else {
                return nil
            }
            var out: [String: Any] = ["fmt": format]
            out["attStmt"] = map["attStmt"].map(Self.json) ?? JSONNull()
            out["authData"] = authenticatorData(authData)
            return out
        }

        mutating func authenticatorData(_ bytes: [UInt8]) -> [String: Any]? {
            let data: AuthenticatorData
            do {
                data = try AuthenticatorData(bytes: bytes)
            } catch {
                fail("authenticatorData", error)
                return nil
            }
            var out: [String: Any] = [
                "rpIdHash": Hex.encode(data.rpIDHash),
                "flags": [
                    "byte": "0x" + Hex.encode([data.flags.rawValue]),
                    "UP": data.userPresent, "UV": data.userVerified, "BE": data.backupEligible,
                    "BS": data.backupState, "AT": data.flags.contains(.attestedCredentialData),
                    "ED": data.flags.contains(.extensionData),
                ],
                "signCount": Int(data.signCount),
                "length": bytes.count,
            ]
            if let credential = data.attestedCredentialData {
                let aaguid = credential.aaguid.uuidString.lowercased()
                out["attestedCredentialData"] = [
                    "aaguid": aaguid,
                    "provider": ProviderNames.bundled.name(for: credential.aaguid) ?? JSONNull(),
                    "credentialId": Base64URL.encode(credential.credentialID),
                    "credentialIdLength": credential.credentialID.count,
                    "credentialPublicKey": Self.describe(credential.credentialPublicKey),
                ]
            }
            if let extensions = data.extensions { out["extensions"] = Self.json(.map(extensions)) }
            return out
        }

        static func describe(_ key: COSEKey) -> [String: Any] {
            var out: [String: Any] = [
                "alg": Int(key.algorithm.rawValue), "algName": key.algorithm.name,
                "kty": String(describing: key.keyType), "cose": Base64URL.encode(key.encoded),
            ]
            switch key.parameters {
            case .ec2(let curve, let x, let y):
                out["crv"] = String(describing: curve)
                out["x"] = Base64URL.encode(x)
                out["y"] = Base64URL.encode(y)
            case .okp(let curve, let x):
                out["crv"] = String(describing: curve)
                out["x"] = Base64URL.encode(x)
            case .rsa(let n, let e):
                out["n"] = Base64URL.encode(n)
                out["e"] = Base64URL.encode(e)
                out["bits"] = n.drop { $0 == 0 }.count * 8
            case .akp(let publicKey):
                out["pub"] = Base64URL.encode(publicKey)
            }
            return out
        }

        /// CBOR as JSON: byte strings become base64url with their length, map keys text.
        static func json(_ value: CBORValue) -> Any {
            switch value {
            case .integer(let number): return number
            case .bytes(let bytes): return ["base64url": Base64URL.encode(bytes), "length": bytes.count]
            case .text(let text): return text
            case .array(let items): return items.map(json)
            case .boolean(let flag): return flag
            case .null: return JSONNull()
            case .map(let map):
                var out: [String: Any] = [:]
                for entry in map {
                    let key: String =
                        switch entry.key {
                        case .text(let text): text
                        case .integer(let number): String(number)
                        default: entry.key.typeName
                        }
                    out[key] = json(entry.value)
                }
                return out
            }
        }
    }
}
