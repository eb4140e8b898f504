import CryptoCore
import Foundation
import Kernel
import MLDSA
import PasskeyCore
import Testing

/// ML-DSA passkeys (COSE -48, -49, -50, key type AKP) through Portvakt's real §7.1 and §7.2
/// ceremonies: py_webauthn's published responses, recorded at webauthn.io, and packed
/// self-attestations signed by dilithium-py (both in Tests/Fixtures, provenance in its README).
@Suite("ML-DSA passkeys")
struct MLDSACeremonyTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures")

    /// A fixture file as JSON; a missing or broken fixture is a broken checkout, so this traps.
    static func json(_ name: String) -> [String: Any] {
        try! JSONSerialization.jsonObject(with: Data(contentsOf: fixtures.appendingPathComponent(name)))
            as! [String: Any]
    }

    static let algorithms: [COSEAlgorithm] = [.mlDSA44, .mlDSA65, .mlDSA87]
    // Parsed once and only ever read, hence safe to share between the parallel tests.
    nonisolated(unsafe) static let pyWebAuthn = json("py-webauthn-mldsa-responses.json")
    nonisolated(unsafe) static let dilithium =
        (json("mldsa-dilithium-py-vectors.json")["parameterSets"] as! [[String: Any]])
    static let now = Date(timeIntervalSince1970: 1_767_225_600)

    /// py_webauthn's case for `algorithm` in `ceremony`, found by the parameter set in its test name.
    static func pyCase(_ ceremony: String, _ algorithm: COSEAlgorithm) -> [String: Any] {
        let digits = String(algorithm.name.suffix(2))
        return (pyWebAuthn[ceremony] as! [[String: Any]]).first {
            ($0["test"] as! String).contains("_\(digits)_")
        }!
    }

    static func relyingParty(_ id: String, _ origin: String, algorithms: [COSEAlgorithm]) -> RelyingParty {
        var rp = RelyingParty(id: id, name: "ML-DSA", allowedOrigins: [origin])
        rp.allowedAlgorithms = algorithms
        return rp
    }

    static func b64(_ text: Any?) -> [UInt8] { Base64URL.decode(text as! String)! }

    static func registerPyWebAuthn(_ algorithm: COSEAlgorithm, allowing allowed: [COSEAlgorithm]) throws
        -> VerifiedRegistration
    {
        let entry = pyCase("registration", algorithm)
        let body = try JSONSerialization.data(withJSONObject: entry["credential"]!)
        return try verifyRegistration(
            response: RegistrationResponseJSON(json: Array(body)), expectedChallenge: b64(entry["challenge"]),
            relyingParty: relyingParty(
                entry["rp_id"] as! String, entry["expected_origin"] as! String, algorithms: allowed),
            at: now)
    }

    @Test(
        "py_webauthn: the ML-DSA registration verifies through §7.1 and its key round-trips",
        arguments: algorithms)
    func pyWebAuthnRegistration(_ algorithm: COSEAlgorithm) throws {
        let registered = try Self.registerPyWebAuthn(algorithm, allowing: [algorithm])
        #expect(registered.algorithm == algorithm)
        #expect(registered.attestationFormat == "none")
        #expect(registered.publicKey.keyType == .akp)
        guard case .akp(let pub) = registered.publicKey.parameters else {
            Issue.record("not an AKP key")
            return
        }
        #expect(pub.count == algorithm.mlDSAParameterSet!.publicKeyByteCount)
        // What storage keeps is what a later login parses: the same key, byte for byte.
        let reloaded = try COSEKey(encoded: registered.publicKey.encoded)
        #expect(reloaded == registered.publicKey)
        #expect(reloaded.publicKey.type == .mlDSA(algorithm.mlDSAParameterSet!))
    }

    @Test(
        "§7.1 step 19: ML-DSA is refused at registration unless offered (it is off by default)",
        arguments: algorithms)
    func notOfferedByDefault(_ algorithm: COSEAlgorithm) {
        #expect(!RelyingParty.defaultAlgorithms.contains(algorithm))
        expectCode(.ceremonyAlgorithmNotAllowed) {
            _ = try Self.registerPyWebAuthn(algorithm, allowing: RelyingParty.defaultAlgorithms)
        }
    }

    @Test(
        "py_webauthn: the ML-DSA assertion verifies through §7.2, under the default algorithms too",
        arguments: algorithms)
    func pyWebAuthnAuthentication(_ algorithm: COSEAlgorithm) throws {
        let entry = Self.pyCase("authentication", algorithm)
        let credential = entry["credential"] as! [String: Any]
        let body = try JSONSerialization.data(withJSONObject: credential)
        let response = try AuthenticationResponseJSON(json: Array(body))
        let userHandle = Self.b64((credential["response"] as! [String: Any])["userHandle"])
        let stored = try StoredCredential(
            id: response.rawID, publicKeyBytes: Self.b64(entry["credential_public_key"]),
            signCount: UInt32(entry["sign_count"] as! Int), userHandle: userHandle, backupEligible: false)
        #expect(stored.publicKey.algorithm == algorithm)
        let rpID = entry["expected_rp_id"] as! String
        let origin = entry["expected_origin"] as! String
        // A stored ML-DSA credential keeps working when the operator offers only the defaults.
        for allowed in [[algorithm], RelyingParty.defaultAlgorithms] {
            let result = try verifyAuthentication(
                response: response, expectedChallenge: Self.b64(entry["challenge"]),
                relyingParty: Self.relyingParty(rpID, origin, algorithms: allowed), credential: stored,
                expectedUserHandle: userHandle)
            #expect(result.signCount == UInt32(entry["sign_count"] as! Int) + 1)
        }
        // The same assertion under a different challenge is refused before the signature matters;
        // with a flipped signature bit, by the signature check.
        var signature = response.signature
        signature[signature.count / 2] ^= 0x01
        let forged = AuthenticationResponseJSON(
            rawID: response.rawID, clientDataJSON: response.clientDataJSON,
            authenticatorData: response.authenticatorData, signature: signature, userHandle: userHandle)
        expectCode(.ceremonySignatureInvalid) {
            _ = try verifyAuthentication(
                response: forged, expectedChallenge: Self.b64(entry["challenge"]),
                relyingParty: Self.relyingParty(rpID, origin, algorithms: [algorithm]), credential: stored,
                expectedUserHandle: userHandle)
        }
    }

    // MARK: Packed self-attestation (dilithium-py)

    static func dilithiumWebAuthn(_ algorithm: COSEAlgorithm) -> [String: Any] {
        dilithium.first { $0["name"] as! String == algorithm.name }!["webauthn"] as! [String: Any]
    }

    static func hexMembers(_ entry: [String: Any], _ part: String) -> [String: [UInt8]] {
        (entry[part] as! [String: String]).mapValues(hex)
    }

    /// §7.1 on the fixture's packed self-attestation for `algorithm`, optionally with another
    /// attestation object.
    static func registerPacked(
        _ algorithm: COSEAlgorithm, attestationObject: [UInt8]? = nil, publicKey: [UInt8]? = nil
    ) throws -> VerifiedRegistration {
        let entry = dilithiumWebAuthn(algorithm)
        let registration = hexMembers(entry, "registration")
        return try verifyRegistration(
            response: RegistrationResponseJSON(
                rawID: hex(entry["credentialId"] as! String), clientDataJSON: registration["clientDataJSON"]!,
                attestationObject: attestationObject ?? registration["attestationObject"]!,
                publicKey: publicKey,
                publicKeyAlgorithm: publicKey.map { _ in algorithm.rawValue }),
            expectedChallenge: registration["challenge"]!,
            relyingParty: relyingParty("example.org", "https://example.org", algorithms: [algorithm]), at: now
        )
    }

    @Test(
        "dilithium-py: packed self-attestation with ML-DSA registers, then its assertion verifies",
        arguments: algorithms)
    func packedSelfAttestation(_ algorithm: COSEAlgorithm) throws {
        let entry = Self.dilithiumWebAuthn(algorithm)
        let credentialID = hex(entry["credentialId"] as! String)
        let rp = Self.relyingParty("example.org", "https://example.org", algorithms: [algorithm])
        let registered = try Self.registerPacked(algorithm)
        #expect(registered.attestationFormat == "packed")
        #expect(registered.attestationType == .selfAttestation)
        #expect(registered.algorithm == algorithm)
        #expect(registered.publicKey.encoded == hex(entry["credentialPublicKey"] as! String))

        let authentication = Self.hexMembers(entry, "authentication")
        let userHandle: [UInt8] = Array("ml-dsa".utf8)
        let stored = StoredCredential(
            id: credentialID, publicKey: try COSEKey(encoded: registered.publicKey.encoded), signCount: 0,
            userHandle: userHandle, backupEligible: registered.backupEligible)
        let result = try verifyAuthentication(
            response: AuthenticationResponseJSON(
                rawID: credentialID, clientDataJSON: authentication["clientDataJSON"]!,
                authenticatorData: authentication["authenticatorData"]!,
                signature: authentication["signature"]!,
                userHandle: nil),
            expectedChallenge: authentication["challenge"]!, relyingParty: rp, credential: stored,
            expectedUserHandle: userHandle)
        #expect(result.signCount == 1)
    }

    @Test(
        "packed self-attestation: a flipped bit in the attestation signature is refused",
        arguments: algorithms)
    func packedSignatureFlipped(_ algorithm: COSEAlgorithm) throws {
        var attestation = Self.hexMembers(Self.dilithiumWebAuthn(algorithm), "registration")[
            "attestationObject"]!
        // The statement's sig is the only byte string of the signature's length; flip a bit in it.
        let length = algorithm.mlDSAParameterSet!.signatureByteCount
        let head: [UInt8] = [0x59, UInt8(length >> 8), UInt8(length & 0xFF)]
        let start =
            try #require(
                (0..<(attestation.count - 3)).first { Array(attestation[$0..<($0 + 3)]) == head }) + 3
        attestation[start + 100] ^= 0x10
        expectCode(.attestationSignatureInvalid) {
            _ = try Self.registerPacked(algorithm, attestationObject: attestation)
        }
    }

    /// dilithium-py's SubjectPublicKeyInfo (RFC 9881) of the fixture key for `algorithm`.
    static func subjectPublicKeyInfo(_ algorithm: COSEAlgorithm) -> [UInt8] {
        hex(dilithium.first { $0["name"] as! String == algorithm.name }!["subjectPublicKeyInfo"] as! String)
    }

    @Test(
        "§5.2.1: the client's publicKey (getPublicKey(), SPKI) matches the ML-DSA key; another key's does not",
        arguments: algorithms)
    func publicKeyMember(_ algorithm: COSEAlgorithm) throws {
        let spki = Self.subjectPublicKeyInfo(algorithm)
        let registered = try Self.registerPacked(algorithm, publicKey: spki)
        #expect(registered.publicKey.publicKey.derRepresentation == spki)
        let other = Self.algorithms.first { $0 != algorithm }!
        expectCode(.responseInconsistent) {
            _ = try Self.registerPacked(algorithm, publicKey: Self.subjectPublicKeyInfo(other))
        }
    }
}
