import CryptoCore
import FoundationEssentials
import Kernel
import PasskeyCore

/// `portvakt webauthn verify-registration` and `verify-authentication`: the PasskeyCore verifier
/// on the command line, for scripts and for checking a client's output by hand.
///
/// Each reads one response JSON on standard input and prints one JSON object: `{"ok": true, ...}`
/// with exit 0, or `{"ok": false, "error": {"code", "message"}}` with exit 1. Bad usage (a
/// missing or malformed option) exits 2 with a message on standard error and nothing on standard
/// output, so a script can tell "the response is bad" from "I called it wrong".
enum VerifyCommands {
    static func registration(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Options.parse(
            arguments, command: "webauthn verify-registration",
            flags: ["--rp-id", "--challenge", "--at", "--metadata", "--metadata-root"],
            repeatable: ["--origin", "--trust-anchor", "--algorithm"],
            switches: ["--require-uv", "--require-trusted"])
        var relyingParty = try relyingParty(options)
        relyingParty.allowedAlgorithms = try algorithms(options.all("--algorithm"))
        let challenge = try challenge(options)
        let anchors = try trustAnchors(options.all("--trust-anchor"))
        if !anchors.isEmpty {
            // The CLI has no per-format configuration: every anchor given serves every format.
            let perFormat = Dictionary(
                uniqueKeysWithValues: relyingParty.attestationFormats.identifiers.map { ($0, anchors) })
            relyingParty.trustAnchors = StaticTrustAnchors(perFormat: perFormat)
        }
        let time = try validationTime(options["--at"])
        if options.isSet("--require-trusted") { relyingParty.attestationPolicy = .requireTrusted }
        relyingParty.metadata = try metadata(options, at: time)
        let input = StandardIO.readAll()
        do {
            let response = try RegistrationResponseJSON(json: input)
            let verified = try verifyRegistration(
                response: response, expectedChallenge: challenge, relyingParty: relyingParty,
                requireUserVerification: options.isSet("--require-uv"), at: time)
            return emit([
                "ok": true, "fmt": verified.attestationFormat,
                "attestationType": verified.attestationType.rawValue,
                "trusted": verified.attestationTrusted, "aaguid": verified.aaguid.uuidString.lowercased(),
                "provider": ProviderNames.bundled.name(for: verified) ?? JSONNull(),
                "credentialId": Base64URL.encode(verified.credentialID),
                "publicKey": Base64URL.encode(verified.publicKeyBytes),
                "alg": Int(verified.algorithm.rawValue),
                "signCount": Int(verified.signCount), "flags": flags(verified.flags),
                "transports": verified.transports.map(\.rawValue),
                "metadata": verified.authenticatorMetadata.map { entry -> [String: Any] in
                    [
                        "name": entry.name ?? JSONNull(),
                        "status": entry.statusReports.last?.rawValue ?? JSONNull(),
                        "compromised": entry.statusReports.contains(where: \.isCompromise),
                    ]
                } ?? JSONNull(),
            ])
        } catch {
            return failure(error)
        }
    }

    static func authentication(_ arguments: ArraySlice<String>) throws -> Int32 {
        let options = try Options.parse(
            arguments, command: "webauthn verify-authentication",
            flags: ["--rp-id", "--challenge", "--public-key", "--sign-count", "--user-handle"],
            repeatable: ["--origin"], switches: ["--require-uv"])
        let relyingParty = try relyingParty(options)
        let challenge = try challenge(options)
        guard let keyBytes = Base64URL.decode(try options.required("--public-key")) else {
            throw UsageError("--public-key must be a COSE key in base64url")
        }
        let publicKey: COSEKey
        do {
            publicKey = try COSEKey(encoded: keyBytes)
        } catch {
            throw UsageError("--public-key is not a usable COSE key (\(error.code.rawValue))")
        }
        guard let signCount = UInt32(try options.required("--sign-count")) else {
            throw UsageError("--sign-count must be a whole number from 0 to 4294967295")
        }
        let ownerHandle = try options["--user-handle"].map { text throws(UsageError) -> [UInt8] in
            guard let bytes = Base64URL.decode(text) else {
                throw UsageError("--user-handle must be base64url")
            }
            return bytes
        }
        let input = StandardIO.readAll()
        do {
            let response = try AuthenticationResponseJSON(json: input)
            // The CLI knows no accounts: it checks as a login that named its user. Without
            // --user-handle the response's own handle stands in for the owner's, so the binding
            // check passes and is the caller's to make. BE likewise has no stored value to differ from.
            let owner = ownerHandle ?? response.userHandle ?? []
            let backupEligible =
                (try? AuthenticatorData(bytes: response.authenticatorData))?.backupEligible ?? false
            let credential = StoredCredential(
                id: response.rawID, publicKey: publicKey, signCount: signCount, userHandle: owner,
                backupEligible: backupEligible)
            let verified = try verifyAuthentication(
                response: response, expectedChallenge: challenge, relyingParty: relyingParty,
                credential: credential,
                expectedUserHandle: owner, requireUserVerification: options.isSet("--require-uv"))
            return emit([
                "ok": true, "credentialId": Base64URL.encode(verified.credentialID),
                "signCount": Int(verified.signCount), "flags": flags(verified.flags),
                "counterRegressed": verified.counterRegressed,
                "userHandle": Base64URL.encode(verified.userHandle),
            ])
        } catch {
            return failure(error)
        }
    }

    /// The relying party the options describe; an unusable one is bad usage.
    private static func relyingParty(_ options: Options) throws(UsageError) -> RelyingParty {
        let rpID = try options.required("--rp-id")
        let origins = options.all("--origin")
        guard !origins.isEmpty else { throw UsageError("missing required option '--origin'") }
        var relyingParty = RelyingParty(id: rpID, name: rpID, allowedOrigins: Set(origins))
        // Whether UV is required is the --require-uv switch's to say, passed to each ceremony.
        relyingParty.userVerification = options.isSet("--require-uv") ? .required : .preferred
        do {
            try relyingParty.validate()
        } catch {
            throw UsageError("--rp-id/--origin: \(error.message)")
        }
        return relyingParty
    }

    /// The algorithms the relying party offered (`--algorithm`, IANA names, in order); the
    /// server's defaults when none is given, so ML-DSA registrations need `--algorithm ML-DSA-65`
    /// as the server needs `relyingParty.algorithms`.
    private static func algorithms(_ names: [String]) throws(UsageError) -> [COSEAlgorithm] {
        guard !names.isEmpty else { return RelyingParty.defaultAlgorithms }
        var algorithms: [COSEAlgorithm] = []
        for name in names {
            guard let algorithm = COSEAlgorithm(name: name) else {
                let known = COSEAlgorithm.allCases.map(\.name).joined(separator: ", ")
                throw UsageError("--algorithm \(name) is not one of \(known)")
            }
            if !algorithms.contains(algorithm) { algorithms.append(algorithm) }
        }
        return algorithms
    }

    private static func challenge(_ options: Options) throws(UsageError) -> [UInt8] {
        guard let challenge = Base64URL.decode(try options.required("--challenge")), !challenge.isEmpty else {
            throw UsageError("--challenge must be the challenge's bytes in base64url")
        }
        return challenge
    }

    /// Every certificate in the PEM files given; an unreadable file or one without a certificate
    /// is bad usage, named by its path.
    private static func trustAnchors(_ paths: [String], option: String = "--trust-anchor") throws(UsageError)
        -> [[UInt8]]
    {
        var anchors: [[UInt8]] = []
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw UsageError("\(option): cannot read \(path)")
            }
            let certificates: [Certificate]
            do {
                certificates = try Certificate.certificates(pem: String(decoding: data, as: UTF8.self))
            } catch {
                throw UsageError("\(option): \(path) is not PEM (\(error.code.rawValue))")
            }
            guard !certificates.isEmpty else {
                throw UsageError("--trust-anchor: \(path) holds no certificate")
            }
            anchors += certificates.map(\.der)
        }
        return anchors
    }

    /// The FIDO MDS3 BLOB of `--metadata`, verified against the root in `--metadata-root` at the
    /// validation time; nil when no BLOB is given. A BLOB that does not verify is bad usage: the
    /// command would otherwise run with less metadata than the caller asked for.
    private static func metadata(_ options: Options, at time: Date) throws(UsageError) -> MetadataBLOB? {
        guard let path = options["--metadata"] else {
            if options["--metadata-root"] != nil { throw UsageError("--metadata-root needs --metadata") }
            return nil
        }
        guard let rootPath = options["--metadata-root"] else {
            throw UsageError(
                "--metadata needs --metadata-root, the FIDO root certificate to check it against")
        }
        guard let blob = FileManager.default.contents(atPath: path) else {
            throw UsageError("--metadata: cannot read \(path)")
        }
        guard let root = try trustAnchors([rootPath], option: "--metadata-root").first else {
            throw UsageError("--metadata-root: \(rootPath) holds no certificate")
        }
        do {
            return try MetadataBLOB.verify(
                jws: [UInt8](blob).filter { $0 != 0x0a && $0 != 0x0d }, rootCertificate: root, at: time)
        } catch {
            throw UsageError("--metadata: \(path) does not verify (\(error.code.rawValue): \(error.message))")
        }
    }

    /// `--at` as an RFC 3339 instant, or now.
    private static func validationTime(_ text: String?) throws(UsageError) -> Date {
        guard let text else { return Date() }
        for style in [Date.ISO8601FormatStyle(), Date.ISO8601FormatStyle(includingFractionalSeconds: true)] {
            if let date = try? style.parse(text) { return date }
        }
        throw UsageError("--at must be an RFC 3339 time such as 2026-01-01T00:00:00Z")
    }

    private static func flags(_ flags: AuthenticatorData.Flags) -> [String: Bool] {
        [
            "UP": flags.contains(.userPresent), "UV": flags.contains(.userVerified),
            "BE": flags.contains(.backupEligible), "BS": flags.contains(.backupState),
        ]
    }

    private static func failure(_ error: any Error) -> Int32 {
        let (code, message): (String, String) =
            switch error {
            case let error as any CodedError: (error.codeName, error.message)
            default: ("internal", "verification failed")
            }
        _ = emit(["ok": false, "error": ["code": code, "message": message]])
        return 1
    }

    private static func emit(_ object: [String: Any]) -> Int32 {
        let data =
            (try? JSONText.data(object, sortedKeys: true)) ?? Array("{}".utf8)
        StandardIO.writeOutput(data + Array("\n".utf8))
        return 0
    }
}
