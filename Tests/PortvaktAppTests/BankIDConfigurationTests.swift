import BankIDCore
import CryptoCore
import Foundation
import Kernel
import TestSupport
import Testing

@testable import PortvaktApp

@Suite("Configuration: bankid")
struct BankIDConfigurationTests {
    /// Base64 of 32 bytes: an acceptable identity key (never printed by the code under test).
    static let key = Data(repeating: 7, count: 32).base64EncodedString()
    static let passphrase = "qwerty123-secret"

    func parse(_ json: String, environment: [String: String] = [:]) throws -> PortvaktConfiguration {
        try PortvaktConfiguration.parse(json: Array(json.utf8), environment: environment)
    }

    func issues(_ json: String, environment: [String: String] = [:]) -> [ConfigurationIssue] {
        do {
            _ = try PortvaktConfiguration.parse(json: Array(json.utf8), environment: environment)
            Issue.record("expected \(json) to be refused")
            return []
        } catch {
            return error.issues
        }
    }

    /// A test-environment section with every file in `directory`.
    func testSection(_ directory: TemporaryDirectory, extra: String = "") throws -> String {
        try Data(Self.key.utf8).write(to: URL(fileURLWithPath: directory.path("k2026")))
        return """
            {"bankid": {"environment": "test", "caCertificate": "\(directory.path("ca.pem"))",
              "clientCertificate": "\(directory.path("rp.p12"))", "currentIdentityKey": "k2026",
              "identityKeys": {"k2026": {"file": "\(directory.path("k2026"))"},
                               "k2025": {"environment": "PORTVAKT_BANKID_KEY_K2025"}}\(extra)},
             "methods": {"bankid": {"link": false, "recovery": false}}}
            """
    }

    @Test("the default is the simulator with nothing required, and documented limits")
    func defaults() throws {
        let bankid = try parse("{}").bankid
        #expect(bankid == PortvaktConfiguration.BankIDSettings())
        #expect(bankid.environment == .simulator && bankid.effectiveBaseURL == nil)
        #expect(bankid.connectTimeoutSeconds == 5 && bankid.requestTimeoutSeconds == 10)
        #expect(bankid.threads == 4 && bankid.maxQueued == 256 && bankid.certificateWarningDays == 30)
        #expect(bankid.transportConfiguration == nil, "left to the embedded simulator")
        #expect(try bankid.identityHasher() == nil)
    }

    @Test("a test deployment: files, passphrase from the environment, keys from a file and a variable")
    func testEnvironment() throws {
        let directory = try TemporaryDirectory()
        let environment = [
            "PORTVAKT_BANKID_PASSPHRASE": Self.passphrase,
            "PORTVAKT_BANKID_KEY_K2025": Data(repeating: 1, count: 48).base64EncodedString(),
        ]
        let c = try parse(try testSection(directory), environment: environment)
        #expect(c.bankid.effectiveBaseURL == "https://appapi2.test.bankid.com/rp/v6.0")
        let transport = try #require(c.bankid.transportConfiguration)
        #expect(transport.baseURL == BankIDTransportConfiguration.testBaseURL)
        #expect(transport.caCertificatePath == directory.path("ca.pem"))
        #expect(
            transport.clientIdentity
                == .pkcs12(path: directory.path("rp.p12"), passphrase: RedactedSecret(Self.passphrase)))
        let hasher = try #require(try c.bankid.identityHasher())
        #expect(
            hasher.currentKey.id == "k2026" && hasher.keys.map(\.id) == ["k2026", "k2025"],
            "the current key first")
        // No secret is shown, and the shown form reads back to the same configuration.
        let shown = c.effectiveJSON()
        for secret in [Self.passphrase, Self.key, environment["PORTVAKT_BANKID_KEY_K2025"]!] {
            #expect(!shown.contains(secret))
            #expect(!"\(c)".contains(secret))
        }
        #expect(shown.contains(#""environment": "PORTVAKT_BANKID_KEY_K2025""#))
        #expect(try parse(shown, environment: environment) == c)
    }

    @Test("production and test require the CA, the certificate, its passphrase and an identity key")
    func required() {
        let found = issues(
            #"{"bankid": {"environment": "production"}, "methods": {"bankid": {"link": false, "recovery": false}}}"#
        )
        #expect(
            found.map(\.path) == ["bankid.caCertificate", "bankid.clientCertificate", "bankid.identityKeys"])
        #expect(found.allSatisfy { $0.code == .missingKey })
        let noPassphrase = issues(
            #"{"bankid": {"environment": "simulator", "clientCertificate": "/rp.p12"}}"#)
        #expect(noPassphrase.map(\.path) == ["bankid.passphraseFile"])
    }

    @Test("secrets are never taken from the file; a passphrase from both file and environment conflicts")
    func secrets() throws {
        let found = issues(#"{"bankid": {"passphrase": "\#(Self.passphrase)"}}"#)
        #expect(found.map(\.code) == [.secretInFile])
        #expect(!found.description.contains(Self.passphrase))
        let directory = try TemporaryDirectory()
        try Data("from-file\n".utf8).write(to: URL(fileURLWithPath: directory.path("pass")))
        let json =
            #"{"bankid": {"clientCertificate": "/rp.p12", "passphraseFile": "\#(directory.path("pass"))"}}"#
        #expect(try parse(json).bankid.passphrase?.value == "from-file", "one trailing newline is dropped")
        let both = issues(json, environment: ["PORTVAKT_BANKID_PASSPHRASE": "x"])
        #expect(both.map(\.code) == [.conflict])
        let missing = issues(#"{"bankid": {"passphraseFile": "\#(directory.path("none"))"}}"#)
        #expect(missing.map(\.code) == [.unreadableFile])
    }

    @Test("identity keys: well-formed ids, exactly one source, base64 of 32+ bytes, the current one present")
    func identityKeys() throws {
        let directory = try TemporaryDirectory()
        try Data("c2hvcnQ=".utf8).write(to: URL(fileURLWithPath: directory.path("short")))
        let cases: [(String, [String: String], String, ConfigurationIssue.Code)] = [
            (
                #""identityKeys": {"bad id": {"environment": "PORTVAKT_BANKID_K"}}"#, [:],
                "bankid.identityKeys.bad id", .invalidValue
            ),
            (#""identityKeys": {"k1": {}}"#, [:], "bankid.identityKeys.k1", .invalidValue),
            (
                #""identityKeys": {"k1": {"environment": "HOME"}}"#, [:],
                "bankid.identityKeys.k1.environment", .invalidValue
            ),
            (
                #""identityKeys": {"k1": {"environment": "PORTVAKT_BANKID_K1"}}"#, [:], "PORTVAKT_BANKID_K1",
                .invalidEnvironment
            ),
            (
                #""identityKeys": {"k1": {"file": "\#(directory.path("short"))"}}"#, [:],
                "bankid.identityKeys.k1", .invalidValue
            ),
            (
                #""identityKeys": {"k1": {"environment": "PORTVAKT_BANKID_K1"}}"#,
                ["PORTVAKT_BANKID_K1": Self.key], "bankid.currentIdentityKey", .missingKey
            ),
            (
                #""identityKeys": {"k1": {"environment": "PORTVAKT_BANKID_K1"}}, "currentIdentityKey": "k2""#,
                ["PORTVAKT_BANKID_K1": Self.key], "bankid.currentIdentityKey", .conflict
            ),
        ]
        for (members, environment, path, code) in cases {
            let found = issues(#"{"bankid": {\#(members)}}"#, environment: environment)
            #expect(found.map(\.path) == [path], "\(members)")
            #expect(found.map(\.code) == [code], "\(members)")
            #expect(!found.description.contains(Self.key))
        }
    }

    @Test("timeouts, threads and the warning window are range-checked; total timeout at least connect")
    func limits() {
        let found = issues(
            #"{"bankid": {"connectTimeoutSeconds": 0, "threads": 65, "certificateWarningDays": 400, "maxQueued": -1}}"#
        )
        #expect(
            found.map(\.path) == [
                "bankid.connectTimeoutSeconds", "bankid.threads", "bankid.maxQueued",
                "bankid.certificateWarningDays",
            ])
        let conflict = issues(#"{"bankid": {"connectTimeoutSeconds": 20, "requestTimeoutSeconds": 10}}"#)
        #expect(conflict.map(\.path) == ["bankid.requestTimeoutSeconds"])
        #expect(conflict.map(\.code) == [.conflict])
    }

    @Test("baseURL must be https; pem certificates need their key, pkcs12 ones must not have one")
    func urlsAndFormats() throws {
        #expect(
            issues(#"{"bankid": {"baseURL": "http://bankid.example"}}"#).map(\.path) == ["bankid.baseURL"])
        let simulator = try parse(#"{"bankid": {"baseURL": "https://127.0.0.1:8443/rp/v6.0/"}}"#)
        #expect(simulator.bankid.effectiveBaseURL == "https://127.0.0.1:8443/rp/v6.0/")
        #expect(
            issues(#"{"bankid": {"clientCertificate": "/rp.pem", "clientCertificateFormat": "pem"}}"#).map(
                \.path)
                == ["bankid.clientKey"])
        #expect(
            issues(#"{"bankid": {"clientKey": "/rp.key"}}"#, environment: ["PORTVAKT_BANKID_PASSPHRASE": "x"])
                .map(\.code) == [.conflict])
        let pem = try parse(
            #"{"bankid": {"clientCertificate": "/rp.pem", "clientCertificateFormat": "pem", "clientKey": "/rp.key", "caCertificate": "/ca.pem", "baseURL": "https://sim.example/rp/v6.0"}}"#
        )
        #expect(
            pem.bankid.transportConfiguration?.clientIdentity
                == .pem(certificatePath: "/rp.pem", keyPath: "/rp.key", keyPassphrase: nil))
        #expect(issues(#"{"bankid": {"enviroment": "test"}}"#).first?.message.contains("environment") == true)
    }
}
