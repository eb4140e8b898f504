import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

/// FIDO MDS3 BLOBs made here with a throwaway CA: signed like FIDO's (JWS, x5c chain to a root
/// the operator configures), then verified, tampered with and misconfigured.
@Suite("FIDO metadata BLOB")
struct MetadataBLOBTests {
    static let start = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01
    static let end = start.addingTimeInterval(3 * 365 * 86_400)
    static let now = start.addingTimeInterval(30 * 86_400)

    static let root = TestCertificateAuthority.root(
        name: .init(country: "US", organization: "Test FIDO", commonName: "Test MDS Root"), notBefore: start,
        notAfter: end)
    static let intermediate = root.intermediate(
        name: .init(organization: "Test FIDO", commonName: "Test MDS CA"))

    static let yubiKey = "ee882879-721c-4913-9775-3dfcce97072a"
    static let revokedKey = "11111111-2222-3333-4444-555555555555"

    /// A payload with one healthy and one revoked entry, and a U2F entry without an AAGUID.
    static func payload(nextUpdate: String = "2026-02-01", root attestationRoot: [UInt8] = [1, 2, 3])
        -> [String: Any]
    {
        [
            "legalHeader": "test", "no": 42, "nextUpdate": nextUpdate,
            "entries": [
                [
                    "aaguid": yubiKey,
                    "metadataStatement": [
                        "description": "YubiKey 5 Series", "attestationTypes": ["basic_full"],
                        "attestationRootCertificates": [Data(attestationRoot).base64EncodedString()],
                        "schema": 3,
                    ],
                    "statusReports": [
                        ["status": "FIDO_CERTIFIED_L2", "effectiveDate": "2020-05-12"],
                        ["status": "FIDO_CERTIFIED", "effectiveDate": "2019-01-04"],
                    ],
                    "timeOfLastStatusChange": "2020-05-12",
                ],
                [
                    "aaguid": revokedKey,
                    "metadataStatement": ["description": "Leaky Key"],
                    "statusReports": [
                        ["status": "FIDO_CERTIFIED", "effectiveDate": "2019-01-01"],
                        ["status": "ATTESTATION_KEY_COMPROMISE", "effectiveDate": "2021-01-01"],
                        ["status": "FIDO_CERTIFIED_L1", "effectiveDate": "2022-01-01"],
                    ],
                ],
                ["attestationCertificateKeyIdentifiers": ["abcd"], "statusReports": []],
            ],
        ]
    }

    /// Signs `payload` as FIDO would, with a leaf issued by `issuer`.
    static func blob(
        payload: [String: Any] = payload(), key: SoftwareKey = .generate(.ec(.p256)),
        issuer: TestCertificateAuthority = intermediate, alg: String = "ES256"
    ) throws -> [UInt8] {
        try TestMetadataBLOB.sign(payload: payload, key: key, issuer: issuer, alg: alg)
    }

    @Test("an ES256 BLOB chaining to the configured root verifies and answers by AAGUID")
    func verifiesES256() throws {
        let verified = try MetadataBLOB.verify(
            jws: Self.blob(), rootCertificate: Self.root.certificateDER, at: Self.now)
        #expect(verified.serialNumber == 42 && verified.legalHeader == "test")
        #expect(verified.entryCount == 2, "the U2F entry has no AAGUID and is skipped")
        let entry = try #require(verified.metadataEntry(for: UUID(uuidString: Self.yubiKey)!))
        #expect(entry.description == "YubiKey 5 Series")
        #expect(entry.attestationRootCertificates == [[1, 2, 3]])
        #expect(entry.attestationTypes == ["basic_full"])
        #expect(
            entry.currentStatus?.rawValue == "FIDO_CERTIFIED_L2", "reports are ordered by date, not position")
        #expect(!entry.isCompromised)
        #expect(verified.metadataEntry(for: UUID()) == nil)
        // The ceremony's view of the same entry: the name and the roots, reports oldest first.
        let seen = try #require(verified.entry(for: UUID(uuidString: Self.yubiKey)!))
        #expect(seen.name == "YubiKey 5 Series" && seen.attestationRootCertificates == [[1, 2, 3]])
        #expect(seen.statusReports.map(\.rawValue) == ["FIDO_CERTIFIED", "FIDO_CERTIFIED_L2"])
    }

    @Test("an RS256 BLOB verifies too")
    func verifiesRS256() throws {
        let blob = try Self.blob(key: .generate(.rsa(bits: 2048)), alg: "RS256")
        #expect(
            try MetadataBLOB.verify(jws: blob, rootCertificate: Self.root.certificateDER, at: Self.now)
                .entryCount == 2)
    }

    @Test("a model once reported compromised stays compromised, even when certified again later")
    func compromised() throws {
        let verified = try MetadataBLOB.verify(
            jws: Self.blob(), rootCertificate: Self.root.certificateDER, at: Self.now)
        let entry = try #require(verified.metadataEntry(for: UUID(uuidString: Self.revokedKey)!))
        #expect(entry.isCompromised)
        #expect(entry.currentStatus?.rawValue == "FIDO_CERTIFIED_L1")
    }

    @Test("nextUpdate is midnight UTC of its calendar date, by Foundation's Gregorian calendar")
    func nextUpdateDates() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        for text in ["1970-01-01", "2000-02-29", "2024-02-29", "2026-02-01", "2099-12-31", "1900-03-01"] {
            let parts = text.split(separator: "-").map { Int($0)! }
            let expected = calendar.date(
                from: DateComponents(year: parts[0], month: parts[1], day: parts[2]))!
            let blob = try MetadataBLOB.verify(
                jws: Self.blob(payload: Self.payload(nextUpdate: text)),
                rootCertificate: Self.root.certificateDER, at: Self.now)
            #expect(blob.nextUpdate == expected, "\(text)")
        }
        for text in ["2023-02-29", "1900-02-29", "2026-04-31", "2026-13-01", "2026-00-10"] {
            #expect(throws: PasskeyError.self, "\(text)") {
                try MetadataBLOB.verify(
                    jws: Self.blob(payload: Self.payload(nextUpdate: text)),
                    rootCertificate: Self.root.certificateDER, at: Self.now)
            }
        }
    }

    @Test("a BLOB past its nextUpdate is reported stale")
    func stale() throws {
        let verified = try MetadataBLOB.verify(
            jws: Self.blob(), rootCertificate: Self.root.certificateDER, at: Self.now)
        #expect(!verified.isStale(at: Self.now))
        #expect(verified.isStale(at: Self.start.addingTimeInterval(40 * 86_400)))
    }

    @Test("a changed payload no longer verifies: metadata.signature_invalid")
    func tampered() throws {
        let blob = try Self.blob()
        let parts = blob.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).map(Array.init)
        var payload = try #require(
            try JSONSerialization.jsonObject(
                with: Data(Base64URL.decode(String(decoding: parts[1], as: UTF8.self))!)) as? [String: Any])
        payload["no"] = 43
        let forged =
            parts[0] + Array(".".utf8)
            + Array(Base64URL.encode(try JSONSerialization.data(withJSONObject: payload)).utf8)
            + Array(".".utf8) + parts[2]
        #expect(throws: PasskeyError(.metadataSignatureInvalid, "")) {
            try MetadataBLOB.verify(jws: forged, rootCertificate: Self.root.certificateDER, at: Self.now)
        }
    }

    @Test("a BLOB signed under another root is refused: metadata.untrusted_chain")
    func otherRoot() throws {
        let impostor = TestCertificateAuthority.root(
            name: .init(commonName: "Test MDS Root"), notBefore: Self.start, notAfter: Self.end)
        let blob = try Self.blob(issuer: impostor)
        #expect(throws: PasskeyError(.metadataUntrustedChain, "")) {
            try MetadataBLOB.verify(jws: blob, rootCertificate: Self.root.certificateDER, at: Self.now)
        }
        // Nor does it help to validate at a time outside the chain's validity.
        #expect(throws: PasskeyError(.metadataUntrustedChain, "")) {
            try MetadataBLOB.verify(
                jws: try Self.blob(), rootCertificate: Self.root.certificateDER,
                at: Self.end.addingTimeInterval(86_400))
        }
    }

    @Test("an algorithm the signing key cannot make is refused: metadata.unsupported_algorithm")
    func wrongAlgorithm() throws {
        for alg in ["RS256", "none", "HS256"] {
            #expect(throws: PasskeyError(.metadataUnsupportedAlgorithm, "")) {
                try MetadataBLOB.verify(
                    jws: try Self.blob(alg: alg), rootCertificate: Self.root.certificateDER, at: Self.now)
            }
        }
    }

    @Test(
        "malformed BLOBs are refused with metadata.malformed",
        arguments: ["", "a.b", "a.b.c.d", "!!.!!.!!", "e30.e30.AAAA", "eyJhbGciOiJFUzI1NiJ9.e30.AAAA"])
    func malformed(_ text: String) {
        #expect(throws: PasskeyError(.metadataMalformed, "")) {
            try MetadataBLOB.verify(
                jws: Array(text.utf8), rootCertificate: Self.root.certificateDER, at: Self.now)
        }
    }

    @Test("a signed BLOB whose payload is not metadata is refused with metadata.malformed")
    func badPayload() throws {
        for payload: [String: Any] in [["no": 1], Self.payload(nextUpdate: "next week")] {
            #expect(throws: PasskeyError(.metadataMalformed, "")) {
                try MetadataBLOB.verify(
                    jws: try Self.blob(payload: payload), rootCertificate: Self.root.certificateDER,
                    at: Self.now)
            }
        }
    }
}
