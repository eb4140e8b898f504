// Passkey assertion benchmark: the full path (AuthenticationResponseJSON bytes in, VerifiedAuthentication
// out, with a pre-parsed COSEKey as a credential cache holds it) against raw OpenSSL verification of the
// same signature over the same bytes with a prebuilt key, on one thread, in alternating rounds so machine
// load drifts hit both alike. Prints name=value:unit pairs for Benchmarks/record.py.
import COpenSSL
import CryptoCore
import Foundation
import PasskeyCore
import TestSupport

let rounds = Int(ProcessInfo.processInfo.environment["BENCH_ROUNDS"] ?? "") ?? 5
let seconds = Double(ProcessInfo.processInfo.environment["BENCH_SECONDS"] ?? "") ?? 1.0

let rpID = "example.com"
let origin = "https://example.com"
let challenge = [UInt8](repeating: 7, count: 32)
let userHandle = [UInt8](repeating: 1, count: 32)
let relyingParty = RelyingParty(id: rpID, name: "Bench", allowedOrigins: [origin])
let authenticator = SoftwareAuthenticator()

var figures: [String] = []
for (name, algorithm, digest) in [
    ("es256", COSEAlgorithm.es256, "SHA256" as String?), ("eddsa", .edDSA, nil), ("rs256", .rs256, "SHA256"),
] {
    let credential = authenticator.makeCredential(algorithm: algorithm, rpID: rpID, userHandle: userHandle)
    let assertion = authenticator.authenticate(credential, challenge: challenge, origin: origin)
    let json = assertion.json()
    let stored = StoredCredential(
        id: credential.id, publicKey: credential.publicKey, signCount: 0, userHandle: userHandle,
        backupEligible: true)
    let full = {
        do {
            let response = try AuthenticationResponseJSON(json: json)
            _ = try verifyAuthentication(
                response: response, expectedChallenge: challenge, relyingParty: relyingParty,
                credential: stored,
                expectedUserHandle: nil)
            return true
        } catch {
            return false
        }
    }
    let raw = RawOpenSSLVerifier.make(
        spki: credential.publicKey.publicKey.derRepresentation, digest: digest,
        signature: assertion.signature,
        data: assertion.authenticatorData + Digest.sha256(assertion.clientDataJSON))
    var fullRates: [Double] = []
    var rawRates: [Double] = []
    for _ in 0..<rounds {
        rawRates.append(Benchmarking.rate(seconds: seconds, raw))
        fullRates.append(Benchmarking.rate(seconds: seconds, full))
    }
    // Medians resist a single disturbed round on a shared machine.
    let fullMedian = fullRates.sorted()[rounds / 2]
    let rawMedian = rawRates.sorted()[rounds / 2]
    figures.append("passkey_\(name)_assertion_full=\(Int(fullMedian)):ops/s")
    figures.append("passkey_\(name)_raw_openssl=\(Int(rawMedian)):ops/s")
    figures.append("passkey_\(name)_ratio=\(String(format: "%.3f", fullMedian / rawMedian)):full/raw")
}
// Registrations with packed x5c attestation: response JSON in, VerifiedRegistration out, the
// attestation signature checked and its chain validated to a configured root.
do {
    let start = Date(timeIntervalSince1970: 1_767_225_600)
    let root = TestCertificateAuthority.root(
        name: .init(country: "SE", organization: "Bench", commonName: "Bench Attestation Root"),
        notBefore: start,
        notAfter: start.addingTimeInterval(10 * 365 * 86_400))
    let attestationKey = SoftwareKey.generate(.ec(.p256))
    let leaf = root.issue(
        subject: .init(
            country: "SE", organization: "Bench", organizationalUnit: "Authenticator Attestation",
            commonName: "Bench Authenticator"),
        subjectPublicKeyInfo: attestationKey.subjectPublicKeyInfo)
    var trusting = relyingParty
    trusting.trustAnchors = StaticTrustAnchors(perFormat: ["packed": [root.certificateDER]])
    var behaviour = SoftwareAuthenticator.Behaviour()
    behaviour.attestation = .packed(key: attestationKey, algorithm: .es256, x5c: [leaf])
    let credential = authenticator.makeCredential(algorithm: .es256, rpID: rpID, userHandle: userHandle)
    let json = authenticator.register(credential, challenge: challenge, origin: origin, behaviour: behaviour)
        .json()
    let at = start.addingTimeInterval(86_400)
    let register = {
        do {
            let verified = try verifyRegistration(
                response: try RegistrationResponseJSON(json: json), expectedChallenge: challenge,
                relyingParty: trusting, at: at)
            return verified.attestationTrusted
        } catch {
            return false
        }
    }
    let rates = (0..<rounds).map { _ in Benchmarking.rate(seconds: seconds, register) }
    figures.append("passkey_packed_x5c_registration=\(Int(rates.sorted()[rounds / 2])):ops/s")
}
// Signature checks alone through COSEKey.verify, with the key parsed once as a credential cache
// holds it: ML-DSA (the MLDSA module, OpenSSL 3.0 has none) beside ES256 (OpenSSL) in the same
// run, alternating rounds. ML-DSA keys and signatures are dilithium-py's (Tests/Fixtures); the
// full path adds an ML-DSA-65 assertion (JSON in, VerifiedAuthentication out).
do {
    let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Tests/Fixtures/mldsa-dilithium-py-vectors.json")
    let sets = try! JSONSerialization.jsonObject(with: Data(contentsOf: fixture)) as! [String: Any]
    func bytes(_ hex: Any?) -> [UInt8] {
        let text = Array((hex as! String).utf8)
        return stride(from: 0, to: text.count, by: 2).map {
            UInt8(String(decoding: text[$0..<($0 + 2)], as: UTF8.self), radix: 16)!
        }
    }
    let es256 = authenticator.makeCredential(algorithm: .es256, rpID: rpID, userHandle: userHandle)
    let es256Assertion = authenticator.authenticate(es256, challenge: challenge, origin: origin)
    let es256Data = es256Assertion.authenticatorData + Digest.sha256(es256Assertion.clientDataJSON)
    var checks: [(String, () -> Bool)] = [
        ("es256", { es256.publicKey.verify(signature: es256Assertion.signature, data: es256Data) })
    ]
    var mlDSA65Full: (() -> Bool)? = nil
    for entry in sets["parameterSets"] as! [[String: Any]] {
        let webauthn = entry["webauthn"] as! [String: Any]
        let key = try! COSEKey(encoded: bytes(webauthn["credentialPublicKey"]))
        let assertion = webauthn["authentication"] as! [String: String]
        let signature = bytes(assertion["signature"])
        let authenticatorData = bytes(assertion["authenticatorData"])
        let clientData = bytes(assertion["clientDataJSON"])
        let data = authenticatorData + Digest.sha256(clientData)
        let name = (entry["name"] as! String).replacingOccurrences(of: "-", with: "").lowercased()
        checks.append((name, { key.verify(signature: signature, data: data) }))
        if key.algorithm == .mlDSA65 {
            var offering = RelyingParty(
                id: "example.org", name: "Bench", allowedOrigins: ["https://example.org"])
            offering.allowedAlgorithms = [.mlDSA65]
            let credentialID = bytes(webauthn["credentialId"])
            let stored = StoredCredential(
                id: credentialID, publicKey: key, signCount: 0, userHandle: userHandle, backupEligible: false)
            let response = AuthenticationResponseJSON(
                rawID: credentialID, clientDataJSON: clientData, authenticatorData: authenticatorData,
                signature: signature, userHandle: nil)
            let expected = bytes(assertion["challenge"])
            mlDSA65Full = {
                (try? verifyAuthentication(
                    response: response, expectedChallenge: expected, relyingParty: offering,
                    credential: stored,
                    expectedUserHandle: userHandle)) != nil
            }
        }
    }
    if let mlDSA65Full { checks.append(("mldsa65_assertion_full", mlDSA65Full)) }
    var rates: [String: [Double]] = [:]
    for _ in 0..<rounds {
        for (name, check) in checks {
            rates[name, default: []].append(Benchmarking.rate(seconds: seconds, check))
        }
    }
    for (name, _) in checks {
        let unit = name.hasSuffix("_full") ? "" : "_verify"
        figures.append("signature_\(name)\(unit)=\(Int(rates[name]!.sorted()[rounds / 2])):ops/s")
    }
}
print(figures.joined(separator: " "))
