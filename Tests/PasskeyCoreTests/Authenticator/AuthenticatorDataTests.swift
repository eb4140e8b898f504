import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

/// Assembles authenticator data from parts, so each test states only what it changes.
private func authData(
    rpIDHash: [UInt8] = Digest.sha256("example.org"), flags: UInt8, signCount: UInt32 = 0,
    attested: [UInt8] = [], extensions: [UInt8] = []
) -> [UInt8] {
    var out = rpIDHash + [flags]
    out += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: signCount >> $0) }
    return out + attested + extensions
}

/// Attested credential data: AAGUID ‖ credentialIdLength ‖ credentialId ‖ key bytes.
private func attestedData(
    aaguid: [UInt8] = Array(1...16), credentialID: [UInt8] = Array(repeating: 0xc1, count: 16),
    declaredLength: Int? = nil, key: [UInt8]
) -> [UInt8] {
    let length = declaredLength ?? credentialID.count
    return aaguid + [UInt8(length >> 8), UInt8(length & 0xff)] + credentialID + key
}

/// Flag bits, spelled out so tests read like §6.1.
private enum Bit {
    static let up: UInt8 = 0x01
    static let rfu1: UInt8 = 0x02
    static let uv: UInt8 = 0x04
    static let be: UInt8 = 0x08
    static let bs: UInt8 = 0x10
    static let rfu2: UInt8 = 0x20
    static let at: UInt8 = 0x40
    static let ed: UInt8 = 0x80
}

/// Parses `bytes`, expecting failure with `code`.
private func expectRejected(
    _ code: PasskeyError.Code, _ bytes: [UInt8], _ comment: Comment? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(throws: PasskeyError(code, ""), comment, sourceLocation: sourceLocation) {
        try AuthenticatorData(bytes: bytes)
    }
}

/// A valid P-256 credential public key in canonical form.
private let p256Key = CBOREncoder.encode(.map(TestKeys.p256.coseMap(algorithm: .es256)))

@Suite("Authenticator data")
struct AuthenticatorDataTests {
    // MARK: W3C WebAuthn L3 §16.2 "ES256 Credential with No Attestation"

    /// The registration's attestation object from the specification's test vector (RP ID example.org).
    static let w3cAttestationObject = hex(
        """
        a363666d74646e6f6e656761747453746d74a068617574684461746158a4bfabc37432958b063360
        d3ad6461c9c4735ae7f8edd46592a5e0f01452b2e4b559000000008446ccb9ab1db374750b2367ff
        6f3a1f0020f91f391db4c9b2fde0ea70189cba3fb63f579ba6122b33ad94ff3ec330084be4a50102
        03262001215820afefa16f97ca9b2d23eb86ccb64098d20db90856062eb249c33a9b672f26df6122
        5820930a56b87a2fca66334b03458abf879717c12cc68ed73290af2e2664796b9220
        """)
    /// The same vector's assertion: authenticator data, client data JSON and signature.
    static let w3cAssertionAuthData = hex(
        "bfabc37432958b063360d3ad6461c9c4735ae7f8edd46592a5e0f01452b2e4b51900000000")
    static let w3cAssertionClientData = hex(
        """
        7b2274797065223a22776562617574686e2e676574222c226368616c6c656e6765223a224f63446e
        55685158756c5455506f334a5558543049393770767a7a59425039745a6368587961763031416722
        2c226f726967696e223a2268747470733a2f2f6578616d706c652e6f7267222c2263726f73734f72
        6967696e223a66616c73657d
        """)
    static let w3cAssertionSignature = hex(
        """
        3046022100f50a4e2e4409249c4a853ba361282f09841df4dd4547a13a87780218deffcd38022100
        8480ac0f0b93538174f575bf11a1dd5d78c6e486013f937295ea13653e331e87
        """)

    @Test("W3C §16.2 vector: the registration's authenticator data parses to the published credential")
    func w3cRegistration() throws {
        let attestation = try CBORDecoder().decode(Self.w3cAttestationObject)
        let object = try #require(attestation.mapValue)
        #expect(object[name: "fmt"] == "none")
        #expect(object[name: "attStmt"] == [:])
        let data = try AuthenticatorData(bytes: try #require(object[name: "authData"]?.bytesValue))
        // rpIdHash is SHA-256("example.org"), computed here independently of the vector.
        #expect(data.rpIDHash == Digest.sha256("example.org"))
        #expect(data.flags.rawValue == 0x59)
        #expect(data.userPresent && !data.userVerified && data.backupEligible && data.backupState)
        #expect(data.signCount == 0)
        #expect(data.extensions == nil)
        let credential = try #require(data.attestedCredentialData)
        #expect(credential.aaguid.uuidString == "8446CCB9-AB1D-B374-750B-2367FF6F3A1F")
        #expect(
            Hex.encode(credential.credentialID)
                == "f91f391db4c9b2fde0ea70189cba3fb63f579ba6122b33ad94ff3ec330084be4")
        #expect(credential.credentialPublicKey.algorithm == .es256)
        #expect(
            credential.credentialPublicKey.parameters
                == .ec2(
                    curve: .p256, x: hex("afefa16f97ca9b2d23eb86ccb64098d20db90856062eb249c33a9b672f26df61"),
                    y: hex("930a56b87a2fca66334b03458abf879717c12cc68ed73290af2e2664796b9220")))
    }

    @Test(
        "W3C §16.2 vector: the stored key verifies the published assertion over authData ‖ SHA-256(clientDataJSON)"
    )
    func w3cAssertion() throws {
        let registration = try CBORDecoder().decode(Self.w3cAttestationObject).mapValue![name: "authData"]!
            .bytesValue!
        let key = try #require(try AuthenticatorData(bytes: registration).attestedCredentialData)
            .credentialPublicKey
        // Storage round trip: the key is re-read from its stored bytes, as a login would.
        let stored = try COSEKey(encoded: key.encoded)
        let assertion = try AuthenticatorData(bytes: Self.w3cAssertionAuthData)
        #expect(assertion.attestedCredentialData == nil && assertion.flags.rawValue == 0x19)
        let signed = assertion.rawBytes + Digest.sha256(Self.w3cAssertionClientData)
        #expect(stored.verify(signature: Self.w3cAssertionSignature, data: signed))
        var tampered = signed
        tampered[32] ^= Bit.uv
        #expect(!stored.verify(signature: Self.w3cAssertionSignature, data: tampered))
    }

    // MARK: Parsing what is there

    @Test("an assertion's 37 bytes parse: rpIdHash, each flag bit, big-endian signCount")
    func assertionLayout() throws {
        let bytes = authData(flags: Bit.up | Bit.uv | Bit.be, signCount: 0x0102_0304)
        let data = try AuthenticatorData(bytes: bytes)
        #expect(data.rpIDHash == Digest.sha256("example.org"))
        #expect(data.userPresent && data.userVerified && data.backupEligible && !data.backupState)
        #expect(data.signCount == 16_909_060)
        #expect(data.attestedCredentialData == nil && data.extensions == nil)
        #expect(data.rawBytes == bytes)
        #expect(try AuthenticatorData(bytes: authData(flags: 0, signCount: .max)).signCount == .max)
    }

    @Test("reserved bits 1 and 5 are kept as sent and otherwise ignored, as §6.1 says")
    func reservedBits() throws {
        let data = try AuthenticatorData(bytes: authData(flags: Bit.up | Bit.rfu1 | Bit.rfu2))
        #expect(data.flags.rawValue == Bit.up | Bit.rfu1 | Bit.rfu2)
        #expect(data.userPresent && !data.userVerified)
    }

    @Test("AT: attested credential data yields the AAGUID, credential ID and a key that verifies")
    func attestedCredential() throws {
        let id = Array(repeating: UInt8(0xab), count: 64)
        let bytes = authData(
            flags: Bit.up | Bit.uv | Bit.at, attested: attestedData(credentialID: id, key: p256Key))
        let credential = try #require(try AuthenticatorData(bytes: bytes).attestedCredentialData)
        #expect(credential.aaguid.uuidString == "01020304-0506-0708-090A-0B0C0D0E0F10")
        #expect(credential.credentialID == id)
        #expect(credential.credentialPublicKey.encoded == p256Key)
        let message = Array("signed".utf8)
        #expect(
            credential.credentialPublicKey.verify(
                signature: TestKeys.p256.sign(message, algorithm: .ecdsaSHA256), data: message))
    }

    @Test("AT: a zero AAGUID, an empty credential ID and a 1023-byte one are all accepted")
    func credentialIDBounds() throws {
        let zero = [UInt8](repeating: 0, count: 16)
        let empty = try AuthenticatorData(
            bytes: authData(
                flags: Bit.at, attested: attestedData(aaguid: zero, credentialID: [], key: p256Key)))
        #expect(empty.attestedCredentialData?.aaguid == AttestedCredentialData.zeroAAGUID)
        #expect(empty.attestedCredentialData?.credentialID == [])
        let longest = [UInt8](repeating: 7, count: 1023)
        let full = try AuthenticatorData(
            bytes: authData(flags: Bit.at, attested: attestedData(credentialID: longest, key: p256Key)))
        #expect(full.attestedCredentialData?.credentialID == longest)
    }

    @Test("AT + ED: the key is cut by its own CBOR length and the extensions map follows it")
    func attestedWithExtensions() throws {
        let extensions = CBOREncoder.encode(["credProtect": 2, "hmac-secret": true])
        for (algorithm, key) in TestKeys.byAlgorithm {
            let keyBytes = CBOREncoder.encode(.map(key.coseMap(algorithm: algorithm)))
            let bytes = authData(
                flags: Bit.up | Bit.at | Bit.ed, attested: attestedData(key: keyBytes), extensions: extensions
            )
            let data = try AuthenticatorData(bytes: bytes)
            #expect(data.attestedCredentialData?.credentialPublicKey.encoded == keyBytes, "\(algorithm)")
            #expect(data.extensions?[name: "credProtect"] == 2)
            #expect(data.extensions?[name: "hmac-secret"] == true)
        }
    }

    @Test("ED without AT: an assertion's extensions map parses")
    func extensionsOnly() throws {
        let data = try AuthenticatorData(
            bytes: authData(
                flags: Bit.up | Bit.ed, extensions: CBOREncoder.encode(["largeBlobKey": .bytes([1])])))
        #expect(data.extensions?.count == 1)
        #expect(data.attestedCredentialData == nil)
        // An empty map is still a map.
        #expect(
            try AuthenticatorData(bytes: authData(flags: Bit.ed, extensions: [0xa0])).extensions?.isEmpty
                == true)
    }

    // MARK: Every error

    @Test("authdata.truncated: every length below 37 bytes")
    func truncatedFixedPart() {
        let full = authData(flags: Bit.up)
        for length in 0..<37 {
            expectRejected(.authDataTruncated, Array(full.prefix(length)), "\(length) bytes")
        }
    }

    @Test("authdata.truncated: cut inside the AAGUID, the ID length, the credential ID, or before the key")
    func truncatedAttestedData() {
        let attested = attestedData(key: p256Key)
        // 1...17 bytes: AAGUID or length cut; 18...33: inside the 16-byte ID; 34: key missing entirely.
        for length in 1...34 {
            expectRejected(
                .authDataTruncated, authData(flags: Bit.at, attested: Array(attested.prefix(length))),
                "\(length) bytes")
        }
        // A declared ID length longer than what follows.
        expectRejected(
            .authDataTruncated,
            authData(
                flags: Bit.at, attested: attestedData(credentialID: [1, 2], declaredLength: 500, key: [])))
    }

    @Test("cbor.* from the credential public key: a key cut short is cbor.truncated")
    func truncatedKey() {
        let attested = attestedData(key: p256Key)
        for cut in [1, 10, p256Key.count - 1] {
            expectRejected(
                .cborTruncated, authData(flags: Bit.at, attested: Array(attested.dropLast(cut))),
                "key short by \(cut)")
        }
        expectRejected(
            .cborIndefiniteLength, authData(flags: Bit.at, attested: attestedData(key: [0xbf, 0xff])))
    }

    @Test("cose.* from the credential public key: a bad key keeps its own code")
    func badKey() {
        var compressed = TestKeys.p256.coseMap(algorithm: .es256)
        compressed[-3] = true
        expectRejected(
            .coseCompressedPoint,
            authData(flags: Bit.at, attested: attestedData(key: CBOREncoder.encode(.map(compressed)))))
        expectRejected(
            .coseMalformed, authData(flags: Bit.at, attested: attestedData(key: CBOREncoder.encode([1, 2]))))
        var mismatch = TestKeys.p256.coseMap(algorithm: .es256)
        mismatch[3] = .integer(COSEAlgorithm.edDSA.rawValue)
        expectRejected(
            .coseAlgorithmMismatch,
            authData(flags: Bit.at, attested: attestedData(key: CBOREncoder.encode(.map(mismatch)))))
    }

    @Test("authdata.backup_state_without_eligibility: BS without BE, in assertions and registrations")
    func backupStateWithoutEligibility() throws {
        expectRejected(.authDataBackupStateWithoutEligibility, authData(flags: Bit.up | Bit.bs))
        expectRejected(
            .authDataBackupStateWithoutEligibility,
            authData(flags: Bit.bs | Bit.at, attested: attestedData(key: p256Key)))
        // BE with or without BS is fine.
        #expect(try AuthenticatorData(bytes: authData(flags: Bit.be | Bit.bs)).backupState)
        #expect(try !AuthenticatorData(bytes: authData(flags: Bit.be)).backupState)
    }

    @Test("authdata.missing_attested_credential_data: AT set with nothing after the fixed part")
    func missingAttestedData() {
        expectRejected(.authDataMissingAttestedCredentialData, authData(flags: Bit.up | Bit.at))
        expectRejected(.authDataMissingAttestedCredentialData, authData(flags: Bit.at | Bit.ed))
    }

    @Test("authdata.credential_id_too_long: 1024 bytes and the 65535 maximum the field can say")
    func credentialIDTooLong() {
        let id = [UInt8](repeating: 1, count: 1024)
        expectRejected(
            .authDataCredentialIDTooLong,
            authData(flags: Bit.at, attested: attestedData(credentialID: id, key: p256Key)))
        // Rejected from the header alone, before looking for that many bytes.
        expectRejected(
            .authDataCredentialIDTooLong,
            authData(flags: Bit.at, attested: attestedData(credentialID: [], declaredLength: 0xffff, key: []))
        )
    }

    @Test("authdata.missing_extensions: ED set with nothing after the fixed part or after the key")
    func missingExtensions() {
        expectRejected(.authDataMissingExtensions, authData(flags: Bit.up | Bit.ed))
        expectRejected(
            .authDataMissingExtensions, authData(flags: Bit.at | Bit.ed, attested: attestedData(key: p256Key))
        )
    }

    @Test("authdata.invalid_extensions: an array, a byte string, or a map with integer keys")
    func invalidExtensions() {
        for extensions: CBORValue in [[1, 2], .bytes([1]), [1: 2], ["ok": 1, 2: 3]] {
            expectRejected(
                .authDataInvalidExtensions,
                authData(flags: Bit.ed, extensions: CBOREncoder.encode(extensions)))
        }
        // Malformed CBOR in the extensions keeps its cbor.* code.
        expectRejected(.cborDuplicateKey, authData(flags: Bit.ed, extensions: hex("a2 6161 00 6161 01")))
        expectRejected(.cborTruncated, authData(flags: Bit.ed, extensions: hex("a1 6161")))
    }

    @Test("authdata.trailing_bytes: data without AT or ED, bytes after the key, bytes after the extensions")
    func trailingBytes() {
        // Attested credential data sent without its flag is just unexplained bytes.
        expectRejected(.authDataTrailingBytes, authData(flags: Bit.up, attested: attestedData(key: p256Key)))
        expectRejected(.authDataTrailingBytes, authData(flags: Bit.up, extensions: [0xa0]))
        expectRejected(
            .authDataTrailingBytes, authData(flags: Bit.at, attested: attestedData(key: p256Key) + [0x00]))
        // Extensions present but ED clear.
        expectRejected(
            .authDataTrailingBytes,
            authData(flags: Bit.at, attested: attestedData(key: p256Key), extensions: [0xa0]))
        expectRejected(.authDataTrailingBytes, authData(flags: Bit.ed, extensions: [0xa0, 0x00]))
        expectRejected(
            .authDataTrailingBytes,
            authData(flags: Bit.at | Bit.ed, attested: attestedData(key: p256Key), extensions: [0xa0, 0xa0]))
    }

    @Test("every authenticator data error code is reachable from crafted bytes")
    func everyAuthDataCodeCovered() {
        let covered: Set<PasskeyError.Code> = [
            .authDataTruncated, .authDataBackupStateWithoutEligibility,
            .authDataMissingAttestedCredentialData,
            .authDataCredentialIDTooLong, .authDataMissingExtensions, .authDataInvalidExtensions,
            .authDataTrailingBytes,
        ]
        #expect(Set(PasskeyError.Code.allCases.filter { $0.rawValue.hasPrefix("authdata.") }) == covered)
    }

    @Test("error messages say where the problem is and never echo credential bytes")
    func messages() {
        do {
            _ = try AuthenticatorData(
                bytes: authData(flags: Bit.at, attested: attestedData(key: Array(p256Key.dropLast()))))
            Issue.record("a truncated key was accepted")
        } catch {
            #expect(error.message.hasPrefix("credential public key:"))
            #expect(!error.description.contains(Hex.encode(TestKeys.p256.ecCoordinates.x)))
        }
    }

    @Test("10,000 mutated registrations and random tails never crash the parser")
    func mutationFuzz() {
        var generator = SplitMix64(seed: 0xa07d)
        let seeds = [
            authData(
                flags: Bit.up | Bit.at | Bit.ed, attested: attestedData(key: p256Key),
                extensions: CBOREncoder.encode(["credProtect": 1])),
            Self.w3cAssertionAuthData,
            authData(
                flags: Bit.up | Bit.at,
                attested: attestedData(
                    key: CBOREncoder.encode(.map(TestKeys.ed25519.coseMap(algorithm: .edDSA))))),
        ]
        for round in 0..<10_000 {
            var bytes = seeds[round % seeds.count]
            if round.isMultiple(of: 4) {
                // Random tail after the fixed part, with random flags.
                bytes =
                    Array(bytes.prefix(37))
                    + (0..<Int.random(in: 0...80, using: &generator)).map { _ in
                        UInt8.random(in: 0...255, using: &generator)
                    }
                bytes[32] = UInt8.random(in: 0...255, using: &generator)
            } else {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(
                    in: 0...255, using: &generator)
            }
            if let data = try? AuthenticatorData(bytes: bytes) {
                // Whatever parses must be consistent with its own flags.
                #expect((data.attestedCredentialData != nil) == data.flags.contains(.attestedCredentialData))
                #expect((data.extensions != nil) == data.flags.contains(.extensionData))
                #expect(!data.backupState || data.backupEligible)
            }
        }
    }
}
