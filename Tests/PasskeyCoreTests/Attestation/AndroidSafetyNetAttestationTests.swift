import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

/// The android-safetynet format (§8.5) against JWS responses built here: every rule refused with its code.
@Suite("android-safetynet attestation")
struct AndroidSafetyNetAttestationTests {
    typealias Builder = SafetyNetStatementBuilder

    static func builder(_ change: (inout Builder) -> Void) -> Builder {
        var value = Builder()
        change(&value)
        return value
    }

    @Test("§8.5: RS256 and ES256 responses verify as basic, trusted only with the anchor")
    func valid() throws {
        for builder in [
            Builder(),
            Self.builder {
                $0.signingKey = TestKeys.otherP256
                $0.jwsAlgorithm = "ES256"
            },
            Self.builder { $0.dnsNames = ["other.example", "attest.android.com"] },
        ] {
            let trusted = try builder.verify()
            #expect(trusted.type == .basic && trusted.trusted && trusted.trustPath.count == 2)
            let untrusted = try builder.verify(anchored: false)
            #expect(!untrusted.trusted && untrusted.anchorsUsed == nil)
        }
    }

    @Test(
        "§8.5 syntax: ver must be non-empty text and response a compact JWS with alg, x5c and a JSON payload")
    func malformed() {
        expectCode(.attestationSafetyNetResponseInvalid) { _ = try Self.builder { $0.version = "" }.verify() }
        expectCode(.attestationSafetyNetResponseInvalid) { _ = try Self.builder { $0.version = 12 }.verify() }
        let valid = Builder()
        let responses: [(String, [UInt8])] = [
            ("empty", []),
            ("two parts", Array("a.b".utf8)),
            ("four parts", valid.response + Array(".x".utf8)),
            ("not base64url", Array("%%.%%.%%".utf8)),
            (
                "empty signature",
                Array(
                    valid.response.split(separator: UInt8(ascii: "."))[0...1].joined(separator: [
                        UInt8(ascii: ".")
                    ])) + [UInt8(ascii: ".")]
            ),
        ]
        for (label, response) in responses {
            expectCode(.attestationSafetyNetResponseInvalid, "\(label)") {
                _ = try CraftedAttestation.verify(
                    AndroidSafetyNetAttestation(), statement: ["ver": "1", "response": .bytes(response)],
                    authenticatorData: valid.authenticatorData,
                    context: CraftedAttestation.context(format: "android-safetynet"))
            }
        }
        let headers = [
            "[]", "{\"alg\":\"RS256\"}", "{\"x5c\":[\"AA==\"]}", "{\"alg\":\"RS256\",\"x5c\":[]}",
            "{\"alg\":\"RS256\",\"x5c\":[\"!!\"]}",
            "{\"alg\":\"RS256\",\"alg\":\"RS256\",\"x5c\":[\"AA==\"]}",
        ]
        for header in headers {
            expectCode(.attestationSafetyNetResponseInvalid, "\(header)") {
                _ = try Self.builder { $0.headerOverride = header }.verify()
            }
        }
        expectCode(.attestationSafetyNetResponseInvalid) {
            _ = try Self.builder { $0.payloadOverride = "[1]" }.verify()
        }
        expectCode(.attestationSafetyNetResponseInvalid) {
            _ = try Self.builder { $0.payloadOverride = "{" }.verify()
        }
        expectCode(.attestationInvalidStatement) {
            _ = try CraftedAttestation.verify(
                AndroidSafetyNetAttestation(),
                statement: ["ver": "1", "response": .bytes(valid.response), "x5c": .array([])],
                authenticatorData: valid.authenticatorData,
                context: CraftedAttestation.context(format: "android-safetynet"))
        }
        expectCode(.attestationCertificateInvalid) {
            _ = try Self.builder { $0.headerOverride = "{\"alg\":\"RS256\",\"x5c\":[\"MAA=\"]}" }.verify()
        }
    }

    @Test("SafetyNet: the signing certificate must be issued to attest.android.com")
    func hostname() {
        let cases: [(String, (inout Builder) -> Void)] = [
            ("other CN", { $0.subject = .init(commonName: "attest.android.com.evil.example") }),
            ("no CN", { $0.subject = .init(organization: "Google") }),
            ("SAN without the host, CN right", { $0.dnsNames = ["example.com"] }),
            ("suffix match", { $0.dnsNames = ["evilattest.android.com"] }),
        ]
        for (label, change) in cases {
            expectCode(.attestationSafetyNetHostnameMismatch, "\(label)") {
                _ = try Self.builder(change).verify()
            }
        }
    }

    @Test("SafetyNet: the JWS signature must verify, RS256 or ES256 matching the certificate key")
    func signature() {
        let cases: [(String, (inout Builder) -> Void)] = [
            ("garbage", { $0.signatureOverride = Array(repeating: 1, count: 256) }),
            (
                "another key",
                { $0.signatureOverride = TestKeys.rsa2048.sign([1], algorithm: .rsaPKCS1SHA256) }
            ),
            (
                "ES256 on an RSA key",
                {
                    $0.jwsAlgorithm = "ES256"; $0.signatureOverride = Array(repeating: 1, count: 64)
                }
            ),
            ("none", { $0.jwsAlgorithm = "none" }),
            ("HS256", { $0.jwsAlgorithm = "HS256" }),
            (
                "ES256 DER instead of raw",
                {
                    $0.signingKey = TestKeys.otherP256
                    $0.jwsAlgorithm = "ES256"
                    $0.signatureOverride = TestKeys.otherP256.sign([1], algorithm: .ecdsaSHA256)
                }
            ),
        ]
        for (label, change) in cases {
            expectCode(.attestationSafetyNetSignatureInvalid, "\(label)") {
                _ = try Self.builder(change).verify()
            }
        }
        // A payload changed after signing.
        let original = Builder()
        var parts = original.response.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
            .map(Array.init)
        parts[1] = Array(
            Base64URL.encode(Array(original.payload.replacingOccurrences(of: "BASIC", with: "HARDWARE").utf8))
                .utf8)
        let tampered = Array(parts.joined(separator: [UInt8(ascii: ".")]))
        expectCode(.attestationSafetyNetSignatureInvalid) {
            _ = try CraftedAttestation.verify(
                AndroidSafetyNetAttestation(), statement: ["ver": "1", "response": .bytes(tampered)],
                authenticatorData: original.authenticatorData,
                context: CraftedAttestation.context(format: "android-safetynet"))
        }
    }

    @Test("§8.5: nonce must be base64(SHA-256(authData ‖ clientDataHash))")
    func nonce() {
        let builder = Builder()
        let digest = Digest.sha256(builder.authenticatorData + CraftedAttestation.clientDataHash)
        let cases = [
            Base64URL.encode(digest),  // base64url, not base64
            Data(digest).base64EncodedString().replacingOccurrences(of: "=", with: ""),
            Data(Digest.sha256(builder.authenticatorData)).base64EncodedString(),
            "",
        ]
        for nonce in cases where nonce != Data(digest).base64EncodedString() {
            expectCode(.attestationSafetyNetNonceMismatch, "\(nonce)") {
                _ = try Self.builder { $0.nonceOverride = nonce }.verify()
            }
        }
        expectCode(.attestationSafetyNetNonceMismatch) {
            _ = try Self.builder { $0.payloadOverride = "{\"ctsProfileMatch\":true,\"timestampMs\":1}" }
                .verify()
        }
    }

    @Test("SafetyNet: ctsProfileMatch must be true")
    func ctsProfile() {
        for value in ["false", "\"true\"", "1", "null"] {
            expectCode(.attestationSafetyNetCTSProfileMismatch, "\(value)") {
                _ = try Self.builder { $0.ctsProfileMatch = value }.verify()
            }
        }
    }

    @Test("SafetyNet: timestampMs must not be in the future nor older than the window")
    func timestamp() throws {
        let now = CraftedAttestation.now
        expectCode(.attestationSafetyNetTimestampInvalid, "stale") {
            _ = try Self.builder { $0.timestamp = now.addingTimeInterval(-61) }.verify()
        }
        expectCode(.attestationSafetyNetTimestampInvalid, "future") {
            _ = try Self.builder { $0.timestamp = now.addingTimeInterval(1) }.verify()
        }
        _ = try Self.builder { $0.timestamp = now.addingTimeInterval(-60) }.verify()
        _ = try Self.builder { $0.timestamp = now }.verify()
        // The window is configurable.
        _ = try Self.builder { $0.timestamp = now.addingTimeInterval(-600) }.verify(maximumAge: 900)
        let builder = Builder()
        let nonce = Data(Digest.sha256(builder.authenticatorData + CraftedAttestation.clientDataHash))
            .base64EncodedString()
        for timestamp in ["\"1767312000000\"", "1.7e12", "null"] {
            expectCode(.attestationSafetyNetTimestampInvalid, "\(timestamp)") {
                _ = try Self.builder {
                    $0.payloadOverride =
                        "{\"nonce\":\"\(nonce)\",\"ctsProfileMatch\":true,\"timestampMs\":\(timestamp)}"
                }.verify()
            }
        }
    }
}
