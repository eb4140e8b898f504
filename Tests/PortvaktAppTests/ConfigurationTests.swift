import AuthOrchestrator
import CryptoCore
import Foundation
import HTTPEngine
import Kernel
import PasskeyCore
import PortvaktAPI
import TestSupport
import Testing

@testable import PortvaktApp

/// Parses `json`, expecting success.
private func parse(_ json: String, environment: [String: String] = [:]) throws -> PortvaktConfiguration {
    try PortvaktConfiguration.parse(json: Array(json.utf8), environment: environment)
}

/// Parses `json`, expecting failure, and returns the issues.
private func issues(_ json: String, environment: [String: String] = [:]) -> [ConfigurationIssue] {
    do {
        _ = try PortvaktConfiguration.parse(json: Array(json.utf8), environment: environment)
        Issue.record("expected \(json) to be refused")
        return []
    } catch {
        return error.issues
    }
}

/// Parses `json`, expecting exactly one issue, and returns it rendered as `path: message`.
private func singleIssue(_ json: String, environment: [String: String] = [:]) -> String {
    let found = issues(json, environment: environment)
    #expect(found.count == 1, "\(found)")
    return found.first?.description ?? ""
}

/// A token long enough to be accepted; never printed by the code under test.
private let adminToken = "s3cr3t-admin-token-0123456789abcdefghijkl"

/// The repository's root, from this file's place in Tests/PortvaktAppTests/.
private let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent()
    .deletingLastPathComponent()

@Suite("Configuration: defaults")
struct ConfigurationDefaultTests {
    @Test("an empty object gives exactly the embedded default")
    func emptyObjectIsEmbeddedDefault() throws {
        #expect(try parse("{}") == PortvaktConfiguration.embeddedDefault)
        #expect(try parse(" \n{ }\n") == PortvaktConfiguration.embeddedDefault)
    }

    @Test("no file at all gives the embedded default")
    func noFileIsEmbeddedDefault() throws {
        #expect(try PortvaktConfiguration.load(path: nil, environment: [:]) == .embeddedDefault)
    }

    @Test("the embedded default has the documented values")
    func embeddedDefaultValues() {
        let c = PortvaktConfiguration.embeddedDefault
        #expect(c.publicURL == "http://localhost:8080")
        #expect(c.dataDirectory == "./.portvakt")
        #expect(c.listen.public == .init(host: "127.0.0.1", port: 8080))
        #expect(c.listen.admin == .init(host: "127.0.0.1", port: 8081))
        #expect(
            c.http
                == .init(
                    threading: .pool, threads: PortvaktConfiguration.HTTPSettings.oneThreadPerCore,
                    connectionTimeoutSeconds: 30,
                    connectionLimit: 1024,
                    maxBodyBytes: 65536,
                    maxTrackedClients: 100_000, trustedProxies: [],
                    cors: .init(allowedOrigins: [], allowCredentials: true, maxAgeSeconds: 600)))
        #expect(c.rateLimits.default == .init(burst: 100, perSecond: 50))
        #expect(c.rateLimits[.auth] == .init(burst: 20, perSecond: 5))
        #expect(c.rateLimits[.admin] == .init(burst: 50, perSecond: 20))
        #expect(c.storagePath == "./.portvakt/portvakt.sqlite")
        #expect(
            c.storage.busyTimeoutMilliseconds == 5000 && c.storage.synchronous == .normal
                && c.storage.readers == 4)
        #expect(c.sessions.absoluteLifetimeSeconds == 2_592_000 && c.sessions.idleTimeoutSeconds == 604_800)
        #expect(c.sessions.rotationIntervalSeconds == 86_400)
        #expect(c.sessionCookieName == "portvakt_session")
        #expect(c.cookieSecure == false)
        #expect(c.admin.enabled && c.admin.token == nil)
        #expect(c.logging.level == .info && c.logging.accessLog)
    }

    @Test("an https publicURL makes cookies Secure and the default cookie name __Host-prefixed")
    func httpsDefaultsCookieToHostPrefix() throws {
        let c = try parse(#"{"publicURL": "https://login.example.com"}"#)
        #expect(c.cookieSecure)
        #expect(c.sessionCookieName == "__Host-portvakt_session")
    }

    @Test("storage.path defaults into the data directory, and a given path wins")
    func storagePathResolution() throws {
        #expect(try parse(#"{"dataDirectory": "/srv/pv/"}"#).storagePath == "/srv/pv/portvakt.sqlite")
        #expect(
            try parse(#"{"dataDirectory": "/srv/pv", "storage": {"path": "/db/x.sqlite"}}"#).storagePath
                == "/db/x.sqlite")
    }
}

@Suite("Configuration: accepted values")
struct ConfigurationAcceptanceTests {
    /// Every documented key with a valid value that differs from its default.
    static let everyKey = """
        {
          "publicURL": "https://login.example.com:8443",
          "dataDirectory": "/var/lib/portvakt",
          "listen": {
            "public": { "host": "::", "port": 9000 },
            "admin": { "host": "::1", "port": 9001 }
          },
          "http": {
            "threading": "pool", "threads": 16, "connectionTimeoutSeconds": 60, "connectionLimit": 5000, "maxBodyBytes": 1048576,
            "maxURIBytes": 4096, "maxHeaderBytes": 32768, "perAddressConnectionLimit": 8, "requestDeadlineSeconds": 5,
            "maxTrackedClients": 5000, "trustedProxies": ["10.0.0.0/8", "192.168.1.7", "fd00::/8", "::1"],
            "cors": { "allowedOrigins": ["https://app.example.com", "http://localhost:5173", "https://[::1]:3000"],
                      "allowCredentials": false, "maxAgeSeconds": 0 }
          },
          "rateLimits": {
            "default": { "burst": 10, "perSecond": 2.5 },
            "auth": { "burst": 3, "perSecond": 0.5 },
            "admin": { "burst": 100000, "perSecond": 100000 }
          },
          "storage": { "path": "/data/auth.sqlite", "busyTimeoutMilliseconds": 0, "synchronous": "full", "readers": 64 },
          "sessions": { "absoluteLifetimeSeconds": 600, "idleTimeoutSeconds": 600, "rotationIntervalSeconds": 60,
                        "cookieName": "pv_sid" },
          "admin": { "enabled": false },
          "logging": { "level": "warning", "accessLog": false },
          "relyingParty": {
            "id": "example.com", "name": "Example Login",
            "origins": ["https://login.example.com:8443", "https://example.com"],
            "androidOrigins": ["android:apk-key-hash:bJRsQ5g8ywqUDXm7ljxn1k7s3LtkTq1zs7DHbXk8hu8"],
            "topOrigins": ["https://shop.example.net"],
            "userVerification": "preferred", "attestation": "direct",
            "attestationPolicy": "requireTrusted", "counterPolicy": "flag", "challengeLifetimeSeconds": 120
          },
          "methods": { "passkey": { "enabled": true, "signup": false } },
          "wellKnown": {
            "appleAppIDs": ["ABCDE12345.com.example.app"],
            "androidApps": [{ "package": "com.example.app",
                              "sha256Fingerprints": ["6C:94:6C:43:98:3C:CB:0A:94:0D:79:BB:96:3C:67:D6:4E:EC:DC:BB:64:4E:AD:73:B3:B0:C3:6D:79:3C:86:EF"] }],
            "relatedOrigins": ["https://example.se"]
          }
        }
        """

    @Test("every documented key is accepted with a valid value")
    func everyDocumentedKeyAccepted() throws {
        let c = try parse(Self.everyKey)
        #expect(c.publicURL == "https://login.example.com:8443")
        #expect(c.dataDirectory == "/var/lib/portvakt")
        #expect(c.listen.public == .init(host: "::", port: 9000))
        #expect(c.listen.admin == .init(host: "::1", port: 9001))
        #expect(
            c.http.threading == .pool && c.http.threads == 16 && c.http.connectionTimeoutSeconds == 60
                && c.http.connectionLimit == 5000)
        #expect(c.http.maxBodyBytes == 1_048_576 && c.http.maxTrackedClients == 5000)
        #expect(c.http.maxURIBytes == 4096 && c.http.maxHeaderBytes == 32768)
        #expect(c.http.perAddressConnectionLimit == 8 && c.http.requestDeadlineSeconds == 5)
        #expect(c.http.trustedProxies == ["10.0.0.0/8", "192.168.1.7", "fd00::/8", "::1"])
        #expect(
            c.http.cors
                == .init(
                    allowedOrigins: [
                        "https://app.example.com", "http://localhost:5173", "https://[::1]:3000",
                    ],
                    allowCredentials: false, maxAgeSeconds: 0))
        #expect(
            c.rateLimits
                == .init(
                    default: .init(burst: 10, perSecond: 2.5), auth: .init(burst: 3, perSecond: 0.5),
                    admin: .init(burst: 100_000, perSecond: 100_000)))
        #expect(
            c.storage
                == .init(
                    path: "/data/auth.sqlite", busyTimeoutMilliseconds: 0, synchronous: .full, readers: 64))
        #expect(
            c.sessions
                == .init(
                    absoluteLifetimeSeconds: 600, idleTimeoutSeconds: 600, rotationIntervalSeconds: 60,
                    cookieName: "pv_sid"))
        #expect(c.admin == .init(enabled: false, token: nil))
        #expect(c.logging == .init(level: .warning, accessLog: false))
        #expect(
            c.relyingParty
                == .init(
                    id: "example.com", name: "Example Login",
                    origins: ["https://login.example.com:8443", "https://example.com"],
                    androidOrigins: ["android:apk-key-hash:bJRsQ5g8ywqUDXm7ljxn1k7s3LtkTq1zs7DHbXk8hu8"],
                    topOrigins: ["https://shop.example.net"], userVerification: .preferred,
                    attestation: .direct, attestationPolicy: .requireTrusted, counterPolicy: .flag,
                    challengeLifetimeSeconds: 120))
        #expect(c.methods.passkey == .init(enabled: true, signup: false))
        #expect(c.wellKnown.appleAppIDs == ["ABCDE12345.com.example.app"])
        #expect(c.wellKnown.androidApps.map(\.package) == ["com.example.app"])
        #expect(c.wellKnown.relatedOrigins == ["https://example.se"])
    }

    @Test("the derived values main's server wiring uses: origin, token, rate limits by class name")
    func derivedValuesForWiring() throws {
        let c = try parse(
            #"{"publicURL": "https://login.example.com"}"#, environment: ["PORTVAKT_ADMIN_TOKEN": adminToken])
        #expect(c.publicOrigin == "https://login.example.com")
        #expect(c.adminToken == adminToken)
        #expect(PortvaktConfiguration.embeddedDefault.adminToken == nil)
        let bursts = Dictionary(
            uniqueKeysWithValues: c.rateLimits.mapValues(\.burst).map { ($0.key.name, $0.value) })
        #expect(
            bursts == ["default": 100, "auth": 20, "admin": 50, "bankid": 10, "backend": 2000, "export": 3])
    }

    @Test("a rate limit class given alone replaces only that class")
    func rateLimitClassReplacesItsDefault() throws {
        let c = try parse(#"{"rateLimits": {"auth": {"burst": 7, "perSecond": 1}}}"#)
        #expect(c.rateLimits.auth == .init(burst: 7, perSecond: 1))
        #expect(c.rateLimits.default == PortvaktConfiguration.embeddedDefault.rateLimits.default)
    }

    @Test("port 0 on both listeners is allowed (the system picks free ports)")
    func portZeroTwiceAllowed() throws {
        let c = try parse(#"{"listen": {"public": {"port": 0}, "admin": {"port": 0}}}"#)
        #expect(c.listen.public.port == 0 && c.listen.admin.port == 0)
    }

    @Test("a UTF-8 byte order mark before the document is ignored")
    func byteOrderMarkIgnored() throws {
        let bytes: [UInt8] = [0xEF, 0xBB, 0xBF] + Array("{}".utf8)
        #expect(try PortvaktConfiguration.parse(json: bytes, environment: [:]) == .embeddedDefault)
    }
}

@Suite("Configuration: unknown keys")
struct ConfigurationUnknownKeyTests {
    @Test("a misspelt nested key is refused with the nearest known key suggested")
    func nestedTypoSuggestsKey() {
        #expect(
            singleIssue(#"{"listen": {"public": {"prot": 8080}}}"#)
                == #"listen.public.prot: unknown key (did you mean "port"?)"#)
    }

    @Test("a misspelt top-level key is refused; letter case alone counts as a typo")
    func topLevelTypoSuggestsKey() {
        #expect(
            singleIssue(#"{"publicUrl": "http://localhost:8080"}"#)
                == #"publicURL: unknown key (did you mean "publicURL"?)"#.replacingOccurrences(
                    of: "publicURL:", with: "publicUrl:"))
        #expect(singleIssue(#"{"sesions": {}}"#) == #"sesions: unknown key (did you mean "sessions"?)"#)
    }

    @Test("an unknown key with no near match lists the known keys")
    func unknownKeyListsKnownKeys() {
        let issue = singleIssue(#"{"logging": {"format": "json"}}"#)
        #expect(issue == "logging.format: unknown key (known: accessLog, level)")
    }

    @Test("sections not supported yet (methods.totp) are unknown keys")
    func futureSectionsAreUnknownForNow() {
        let found = issues(#"{"methods": {"bankid": {}, "totp": {}}, "bankid": {}}"#)
        #expect(found.map(\.path) == ["methods.totp"])
        #expect(found.allSatisfy { $0.code == .unknownKey })
    }

    @Test("an unknown rate limit class is refused, and maxTrackedClients points to http")
    func unknownRouteClass() {
        let found = issues(
            #"{"rateLimits": {"auht": {"burst": 1, "perSecond": 1}, "maxTrackedClients": 500}}"#)
        #expect(
            found.map(\.description) == [
                #"rateLimits.auht: unknown route class (did you mean "auth"?)"#,
                "rateLimits.maxTrackedClients: not a route class: the number of tracked clients is set at http.maxTrackedClients",
            ])
    }

    @Test("a duplicate key is refused with both lines")
    func duplicateKeyRefused() {
        let issue = singleIssue(
            "{\n  \"logging\": {\n    \"level\": \"info\",\n    \"level\": \"debug\"\n  }\n}")
        #expect(issue == "logging.level: duplicate key (first on line 3, again on line 4)")
    }
}

@Suite("Configuration: wrong types")
struct ConfigurationTypeTests {
    @Test("a string where an integer belongs names the key, the range and the value")
    func stringForInteger() {
        #expect(
            singleIssue(#"{"http": {"maxBodyBytes": "64k"}}"#)
                == #"http.maxBodyBytes: expected an integer from 1024 to 16777216, got "64k""#)
    }

    @Test("a fractional number, 1.0 and an exponent are not integers")
    func floatForInteger() {
        #expect(
            singleIssue(#"{"http": {"threading": "pool", "threads": 1.5}}"#)
                == "http.threads: expected an integer from 1 to 256, got 1.5")
        #expect(
            singleIssue(#"{"http": {"threading": "pool", "threads": 4.0}}"#)
                == "http.threads: expected an integer from 1 to 256, got 4.0")
        #expect(
            singleIssue(#"{"http": {"threading": "pool", "threads": 4e0}}"#)
                == "http.threads: expected an integer from 1 to 256, got 4e0")
        #expect(issues(#"{"http": {"threading": "pool", "threads": 1.5}}"#).first?.code == .wrongType)
    }

    @Test("a boolean is not an integer, and an integer is not a boolean")
    func boolAndIntegerDistinguished() {
        #expect(
            singleIssue(#"{"listen": {"admin": {"port": true}}}"#)
                == "listen.admin.port: expected an integer from 0 to 65535, got true")
        #expect(singleIssue(#"{"admin": {"enabled": 1}}"#) == "admin.enabled: expected true or false, got 1")
    }

    @Test("an object where an array belongs, and a non-string element")
    func objectForArray() {
        #expect(
            singleIssue(#"{"http": {"trustedProxies": {"a": "10.0.0.1"}}}"#)
                == "http.trustedProxies: expected an array of strings, got an object")
        #expect(
            singleIssue(#"{"http": {"trustedProxies": ["10.0.0.1", 10]}}"#)
                == "http.trustedProxies[1]: expected an IP address or CIDR network, got 10")
    }

    @Test("a section that is not an object, and null, are wrong types")
    func sectionAndNullWrongTypes() {
        #expect(singleIssue(#"{"http": []}"#) == "http: expected an object, got an array")
        #expect(
            singleIssue(#"{"storage": {"path": null}}"#) == "storage.path: expected a file path, got null")
    }

    @Test("a document that is not an object is refused")
    func rootMustBeObject() {
        #expect(singleIssue("[]") == "(document): expected a JSON object, got an array")
    }

    @Test("a choice outside its values lists them")
    func invalidChoice() {
        #expect(
            singleIssue(#"{"storage": {"synchronous": "off"}}"#)
                == #"storage.synchronous: expected one of "normal", "full", got "off""#)
        #expect(
            singleIssue(#"{"logging": {"level": "INFO"}}"#)
                == #"logging.level: expected one of "debug", "info", "warning", "error", got "INFO""#)
    }
}

@Suite("Configuration: ranges and formats")
struct ConfigurationValueTests {
    @Test("integers outside their range are refused with the range")
    func integerOutOfRange() {
        #expect(
            singleIssue(#"{"http": {"threading": "pool", "threads": 0}}"#)
                == "http.threads: expected an integer from 1 to 256, got 0")
        #expect(
            singleIssue(#"{"listen": {"public": {"port": 65536}}}"#)
                == "listen.public.port: expected an integer from 0 to 65535, got 65536")
        #expect(
            singleIssue(#"{"http": {"maxTrackedClients": 99}}"#)
                == "http.maxTrackedClients: expected an integer from 100 to 10000000, got 99")
        #expect(
            singleIssue(#"{"sessions": {"rotationIntervalSeconds": 59}}"#).hasPrefix(
                "sessions.rotationIntervalSeconds: expected an integer from 60"))
        #expect(
            singleIssue(#"{"http": {"connectionLimit": 99999999999999999999}}"#)
                == "http.connectionLimit: expected an integer from 1 to 100000, got 99999999999999999999")
        #expect(
            singleIssue(#"{"http": {"perAddressConnectionLimit": 0}}"#)
                == "http.perAddressConnectionLimit: expected an integer from 1 to 100000, got 0")
        #expect(
            singleIssue(#"{"http": {"requestDeadlineSeconds": 3601}}"#)
                == "http.requestDeadlineSeconds: expected an integer from 1 to 3600, got 3601")
        #expect(issues(#"{"http": {"threading": "pool", "threads": 0}}"#).first?.code == .invalidValue)
    }

    @Test("rate limits need both keys, a positive rate and a burst of at least 1")
    func rateLimitValues() {
        #expect(
            singleIssue(#"{"rateLimits": {"auth": {"burst": 10}}}"#)
                == "rateLimits.auth.perSecond: missing, expected a number above 0 and at most 100000")
        #expect(
            singleIssue(#"{"rateLimits": {"auth": {"burst": 10, "perSecond": 0}}}"#)
                == "rateLimits.auth.perSecond: expected a number above 0 and at most 100000, got 0")
        #expect(
            singleIssue(#"{"rateLimits": {"default": {"burst": 0, "perSecond": 1}}}"#)
                == "rateLimits.default.burst: expected an integer from 1 to 100000, got 0")
        #expect(issues(#"{"rateLimits": {"auth": {}}}"#).map(\.code) == [.missingKey, .missingKey])
        #expect(singleIssue(#"{"rateLimits": {"auth": 5}}"#) == "rateLimits.auth: expected an object, got 5")
    }

    @Test("an idle timeout longer than the absolute lifetime is a conflict")
    func idleBeyondAbsolute() {
        let found = issues(#"{"sessions": {"absoluteLifetimeSeconds": 3600, "idleTimeoutSeconds": 7200}}"#)
        #expect(
            found.map(\.description) == [
                "sessions.idleTimeoutSeconds: must not exceed sessions.absoluteLifetimeSeconds (3600), got 7200"
            ])
        #expect(found.first?.code == .conflict)
    }

    @Test("http.threading: a pool of one worker per core on SQLite, a thread per connection on PostgreSQL")
    func threadingFollowsTheEngine() throws {
        let sqlite = try parse("{}")
        #expect(sqlite.http.threading == .pool)
        #expect(sqlite.http.threads == ProcessInfo.processInfo.activeProcessorCount)
        #expect(try parse(#"{"http": {"threads": 8}}"#).http.threads == 8)
        let postgresql = try parse(
            #"{"storage": {"engine": "postgresql", "postgresql": {"host": "db.internal", "database": "portvakt", "user": "portvakt"}}}"#
        )
        #expect(postgresql.http.threading == .perConnection)
        // Written, either choice holds on either engine.
        #expect(try parse(#"{"http": {"threading": "perConnection"}}"#).http.threading == .perConnection)
        let pooled = try parse(
            #"{"http": {"threading": "pool", "threads": 3}, "storage": {"engine": "postgresql", "postgresql": {"host": "db.internal", "database": "portvakt", "user": "portvakt"}}}"#
        )
        #expect(pooled.http.threading == .pool && pooled.http.threads == 3)
    }

    @Test("http.threads sizes only a pool: with a thread per connection it is a conflict, not ignored")
    func threadsWithoutPool() throws {
        let onPostgreSQL =
            #""storage": {"engine": "postgresql", "postgresql": {"host": "db.internal", "database": "portvakt", "user": "portvakt"}}"#
        for document in [
            #"{"http": {"threads": 8}, \#(onPostgreSQL)}"#,
            #"{"http": {"threading": "perConnection", "threads": 8}}"#,
        ] {
            let found = issues(document)
            #expect(found.map(\.path) == ["http.threads"], "\(document)")
            #expect(found.first?.code == .conflict)
            #expect(found.first?.description.contains(#"set threading to "pool""#) == true)
        }
        #expect(
            issues(#"{"http": {"threads": 8}, \#(onPostgreSQL)}"#).first?.description.contains(
                "the default with PostgreSQL storage") == true)
        let pool = try parse(#"{"http": {"threading": "pool", "threads": 8}}"#)
        #expect(pool.http.threads == 8)
        // The effective configuration shows threads only where it applies, and reads back as is.
        let perConnection = try parse(#"{"http": {"threading": "perConnection"}}"#)
        let shown = try #require(
            JSONSerialization.jsonObject(with: Data(perConnection.effectiveJSON().utf8)) as? [String: Any])
        let http = try #require(shown["http"] as? [String: Any])
        #expect(http["threading"] as? String == "perConnection" && http["threads"] == nil)
        #expect(try parse(perConnection.effectiveJSON()) == perConnection)
        #expect(try parse(pool.effectiveJSON()) == pool)
        #expect(try parse(parse("{}").effectiveJSON()) == parse("{}"))
        #expect(
            singleIssue(#"{"http": {"threading": "threadPool"}}"#)
                == #"http.threading: expected one of "perConnection", "pool", got "threadPool""#)
        // A misspelt threading is the one issue; threads beside it is not called a conflict too.
        #expect(issues(#"{"http": {"threading": "Pool", "threads": 8}}"#).map(\.path) == ["http.threading"])
    }

    @Test("invalid trusted proxies: bad address, prefix too long, host bits set")
    func invalidCIDR() {
        let found = issues(
            #"{"http": {"trustedProxies": ["10.0.0.0/8", "10.0.0.300", "10.0.0.0/33", "::/129", "10.1.2.3/8", "10.0.0.0/", "10.0.0.0/+8"]}}"#
        )
        #expect(found.map(\.path) == (1...6).map { "http.trustedProxies[\($0)]" })
        #expect(
            found[0].message
                == #"expected an IP address or CIDR network such as "10.0.0.0/8", got "10.0.0.300""#)
        #expect(found[1].message == #"invalid prefix length in "10.0.0.0/33": expected 0 to 32"#)
        #expect(found[2].message == #"invalid prefix length in "::/129": expected 0 to 128"#)
        #expect(found[3].message == #""10.1.2.3/8" has host bits set (did you mean "10.0.0.0/8"?)"#)
    }

    @Test("listen hosts must be IP literals, IPv6 without brackets")
    func invalidHost() {
        let found = issues(#"{"listen": {"public": {"host": "localhost"}, "admin": {"host": "[::1]"}}}"#)
        #expect(found.map(\.path) == ["listen.public.host", "listen.admin.host"])
        #expect(found[1].message == #"write the IPv6 address without brackets, e.g. "::1""#)
        #expect(
            singleIssue(#"{"listen": {"public": {"host": "256.0.0.1"}}}"#).hasPrefix(
                "listen.public.host: expected an IPv4 or IPv6 address literal"))
    }

    @Test("public and admin on the same address and port conflict, including through a wildcard")
    func listenerConflict() {
        #expect(
            issues(#"{"listen": {"admin": {"port": 8080}}}"#).map(\.description)
                == [
                    "listen.admin: the admin listener 127.0.0.1 port 8080 overlaps the public listener 127.0.0.1 port 8080; use another port"
                ])
        #expect(
            issues(#"{"listen": {"public": {"host": "0.0.0.0"}, "admin": {"port": 8080}}}"#).map(\.code) == [
                .conflict
            ])
        #expect(
            issues(
                #"{"listen": {"public": {"host": "::1"}, "admin": {"host": "0:0:0:0:0:0:0:1", "port": 8080}}}"#
            ).map(\.code) == [.conflict])
    }

    @Test("CORS origins: no wildcard, no path, no default port, lowercase host")
    func invalidOrigins() {
        let found = issues(
            #"{"http": {"cors": {"allowedOrigins": ["*", "https://app.example.com/", "https://app.example.com:443", "https://App.example.com", "app.example.com", "ftp://x.example"]}}}"#
        )
        #expect(found.map(\.path) == (0...5).map { "http.cors.allowedOrigins[\($0)]" })
        #expect(found[1].message == #"an origin "https://app.example.com/": remove the trailing "/""#)
        #expect(found[2].message == #"an origin "https://app.example.com:443": omit the default port 443"#)
    }

    @Test("publicURL: http is refused except for localhost, and paths, queries and other schemes are refused")
    func invalidPublicURL() {
        #expect(
            singleIssue(#"{"publicURL": "http://login.example.com"}"#)
                == #"publicURL: http is allowed only for localhost, 127.0.0.1 and [::1]; use https for "http://login.example.com""#
        )
        for url in [
            "https://login.example.com/auth", "https://login.example.com?x=1",
            "https://login.example.com#top",
            "ftp://login.example.com", "login.example.com", "https://", "https://user@login.example.com",
            "https://login.example.com:0", "https://login.example.com:99999", "https://-bad-.example.com",
        ] {
            let found = issues(#"{"publicURL": "\#(url)"}"#)
            #expect(found.map(\.path) == ["publicURL"], "\(url)")
        }
        for url in [
            "http://localhost:8080", "http://127.0.0.1", "http://[::1]:9000", "https://[2001:db8::1]",
            "https://a.example:8443",
        ] {
            #expect(throws: Never.self, "\(url)") { try parse(#"{"publicURL": "\#(url)"}"#) }
        }
    }

    @Test("cookie names must be tokens; __Host- on plain http is refused")
    func cookieNames() {
        #expect(
            singleIssue(#"{"sessions": {"cookieName": "my session"}}"#).hasPrefix(
                "sessions.cookieName: expected a cookie name"))
        #expect(
            singleIssue(#"{"sessions": {"cookieName": "__Host-pv"}}"#)
                == "sessions.cookieName: the __Host- and __Secure- prefixes need an https publicURL; browsers refuse them on http"
        )
    }
}

@Suite("Configuration: reporting")
struct ConfigurationReportingTests {
    @Test("several problems are reported together, in file order, one line each")
    func severalProblemsAtOnce() {
        let json = """
            {
              "publicURL": "http://auth.example.com",
              "listen": { "public": { "prot": 8080 } },
              "http": { "maxBodyBytes": "64k", "trustedProxies": ["10.0.0.0/8", "1.2.3.4/40"] },
              "rateLimits": { "auth": { "burst": 1.5, "perSecond": 5 } },
              "logging": { "level": "verbose" },
              "colour": true
            }
            """
        do {
            _ = try parse(json)
            Issue.record("expected failure")
        } catch let error as ConfigurationError {
            #expect(
                error.issues.map(\.path) == [
                    "publicURL", "listen.public.prot", "http.maxBodyBytes", "http.trustedProxies[1]",
                    "rateLimits.auth.burst", "logging.level", "colour",
                ])
            #expect(error.description.split(separator: "\n").count == 7)
            #expect(
                error.description.contains(
                    #"http.maxBodyBytes: expected an integer from 1024 to 16777216, got "64k""#))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("invalid JSON reports the line and column")
    func invalidJSONHasPosition() {
        #expect(
            singleIssue("{\n  \"http\": {\n    \"threads\": tru\n  }\n}")
                == "line 3, column 16: invalid JSON: invalid literal, expected true")
        #expect(
            singleIssue("{\n  \"a\": 1,\n}") == "line 3, column 1: invalid JSON: trailing comma before '}'")
        #expect(
            singleIssue("{\"http\": {\"threads\": 4}")
                == "line 1, column 24: invalid JSON: unexpected end of input, expected ',' or '}'")
        #expect(
            singleIssue("// dev\n{}")
                == "line 1, column 1: invalid JSON: comments are not allowed in JSON (see Docs/configuration.md)"
        )
        #expect(
            singleIssue("")
                == "line 1, column 1: invalid JSON: the document is empty; write {} for all defaults")
        #expect(issues("{} {}").first?.code == .invalidJSON)
        #expect(issues("{\"a\": 01}").first?.code == .invalidJSON)
        #expect(issues("{\"a\": \"\u{01}\"}").first?.code == .invalidJSON)
    }

    @Test(
        "account.reauthenticationSeconds and audit.retentionDays: defaults, values taken, ranges refused by key"
    )
    func accountAndAudit() throws {
        let defaults = try parse("{}")
        #expect(defaults.account.reauthenticationSeconds == 300 && defaults.audit.retentionDays == 365)
        let given = try parse(#"{"account": {"reauthenticationSeconds": 60}, "audit": {"retentionDays": 0}}"#)
        #expect(given.account.reauthenticationSeconds == 60 && given.audit.retentionDays == 0)
        #expect(
            singleIssue(#"{"account": {"reauthenticationSeconds": 10}}"#)
                .hasPrefix("account.reauthenticationSeconds: "))
        #expect(singleIssue(#"{"audit": {"retentionDays": -1}}"#).hasPrefix("audit.retentionDays: "))
        #expect(singleIssue(#"{"account": {"reauthSeconds": 60}}"#).hasPrefix("account.reauthSeconds: "))
    }

    @Test("invalid UTF-8 is refused with its position")
    func invalidUTF8() {
        let bytes = Array("{\"publicURL\": \"".utf8) + [0xC3, 0x28] + Array("\"}".utf8)
        do {
            _ = try PortvaktConfiguration.parse(json: bytes, environment: [:])
            Issue.record("expected failure")
        } catch {
            #expect(
                error.issues.map(\.description) == [
                    "line 1, column 16: invalid JSON: the file is not valid UTF-8"
                ])
        }
    }

    @Test("JSON escapes in strings are decoded, including surrogate pairs")
    func stringEscapes() throws {
        let c = try parse(#"{"dataDirectory": "/srv/\u00e5\ud83d\ude00\/x\tz"}"#)
        #expect(c.dataDirectory == "/srv/å😀/x\tz")
    }

    @Test("a missing file is reported with its path and the system's reason")
    func missingFile() {
        do {
            _ = try PortvaktConfiguration.load(path: "/nonexistent/portvakt.json", environment: [:])
            Issue.record("expected failure")
        } catch {
            #expect(
                error.issues.map(\.description) == [
                    "/nonexistent/portvakt.json: cannot open the file: No such file or directory"
                ])
            #expect(error.issues.first?.code == .unreadableFile)
        }
    }

    @Test("edit distance counts a swap of neighbours as one edit")
    func editDistance() {
        #expect(KeySuggestion.editDistance(Array("prot"), Array("port")) == 1)
        #expect(KeySuggestion.nearest(to: "threds", among: ["threads", "maxBodyBytes"]) == "threads")
        #expect(KeySuggestion.nearest(to: "xyz", among: ["threads", "port"]) == nil)
    }
}

@Suite("Configuration: environment and secrets")
struct ConfigurationEnvironmentTests {
    @Test("PORTVAKT_DATA overrides dataDirectory, and the default database follows it")
    func dataDirectoryFromEnvironment() throws {
        let c = try parse(#"{"dataDirectory": "/from/file"}"#, environment: ["PORTVAKT_DATA": "/from/env"])
        #expect(c.dataDirectory == "/from/env")
        #expect(c.storagePath == "/from/env/portvakt.sqlite")
        #expect(
            singleIssue("{}", environment: ["PORTVAKT_DATA": ""])
                == "PORTVAKT_DATA: expected a non-empty path")
    }

    @Test("PORTVAKT_ADMIN_TOKEN supplies the admin token")
    func adminTokenFromEnvironment() throws {
        let c = try parse("{}", environment: ["PORTVAKT_ADMIN_TOKEN": adminToken, "PATH": "/usr/bin"])
        #expect(c.admin.token?.value == adminToken)
        #expect(c != .embeddedDefault)
    }

    @Test("the admin token never appears in effectiveJSON, description or dump")
    func adminTokenNeverShown() throws {
        let c = try parse("{}", environment: ["PORTVAKT_ADMIN_TOKEN": adminToken])
        let shown = c.effectiveJSON()
        #expect(!shown.contains(adminToken))
        #expect(shown.contains(#""tokenFromEnvironment": true"#))
        var dumped = ""
        dump(c, to: &dumped)
        #expect(!dumped.contains(adminToken))
        #expect(!String(describing: c).contains(adminToken))
        #expect(!String(reflecting: c).contains(adminToken))
    }

    @Test("a short admin token is refused without echoing it")
    func shortAdminTokenRefused() {
        let found = issues("{}", environment: ["PORTVAKT_ADMIN_TOKEN": "tooShortSecret"])
        #expect(found.map(\.description) == ["PORTVAKT_ADMIN_TOKEN: must be at least 32 characters, got 14"])
        #expect(found.first?.code == .invalidEnvironment)
        #expect(
            issues("{}", environment: ["PORTVAKT_ADMIN_TOKEN": String(repeating: "a b", count: 20)]).map(
                \.code) == [.invalidEnvironment])
    }

    @Test("an admin token in the file is refused, pointing to the environment variable, without echoing it")
    func adminTokenInFileRefused() {
        let found = issues(#"{"admin": {"token": "file-secret-file-secret-file-secret"}}"#)
        #expect(found.map(\.path) == ["admin.token"])
        #expect(found.first?.code == .secretInFile)
        #expect(found.first?.message.contains("PORTVAKT_ADMIN_TOKEN") == true)
        #expect(found.first?.message.contains("file-secret") == false)
    }

    @Test("admin.tokenFromEnvironment asserts whether the environment supplies the token")
    func tokenFromEnvironmentAssertion() throws {
        #expect(
            singleIssue(#"{"admin": {"tokenFromEnvironment": true}}"#)
                == "admin.tokenFromEnvironment: is true but PORTVAKT_ADMIN_TOKEN is not set")
        #expect(
            issues(
                #"{"admin": {"tokenFromEnvironment": false}}"#,
                environment: ["PORTVAKT_ADMIN_TOKEN": adminToken]
            ).map(\.code) == [.conflict])
        _ = try parse(
            #"{"admin": {"tokenFromEnvironment": true}}"#, environment: ["PORTVAKT_ADMIN_TOKEN": adminToken])
    }

    @Test("a misspelt Portvakt environment variable is reported, unrelated ones are ignored")
    func misspeltEnvironmentVariable() {
        let found = issues(
            "{}",
            environment: [
                "PORTVAKT_ADMIN_TOKNE": adminToken, "PORTVAKT_CONFIG": "/etc/x.json", "HOME": "/root",
            ])
        #expect(
            found.map(\.description) == [
                "PORTVAKT_ADMIN_TOKNE: unknown environment variable (did you mean PORTVAKT_ADMIN_TOKEN?)"
            ])
    }
}

@Suite("Configuration: effective JSON and example files")
struct ConfigurationEffectiveTests {
    @Test("effectiveJSON round-trips through parse to an equal configuration")
    func effectiveJSONRoundTrips() throws {
        let environments: [[String: String]] = [
            [:], ["PORTVAKT_ADMIN_TOKEN": adminToken, "PORTVAKT_DATA": "/env/data"],
        ]
        for environment in environments {
            for json in ["{}", ConfigurationAcceptanceTests.everyKey, #"{"publicURL": "https://a.example"}"#]
            {
                let original = try parse(json, environment: environment)
                let shown = original.effectiveJSON()
                let reparsed = try parse(shown, environment: environment)
                #expect(reparsed == original)
                #expect(reparsed.effectiveJSON() == shown)
            }
        }
    }

    @Test("effectiveJSON shows every key with sorted keys and resolved defaults")
    func effectiveJSONShape() throws {
        let shown = PortvaktConfiguration.embeddedDefault.effectiveJSON()
        #expect(shown.hasPrefix("{\n  \"accessTokens\": {\n    \"audience\": [],\n"))
        #expect(
            shown.contains(
                "\n  \"admin\": {\n    \"enabled\": true\n  },\n  \"audit\": {\n    \"retentionDays\": 365\n  },\n  \"bankid\": {\n"
            ))
        #expect(shown.contains("\n  \"account\": {\n    \"reauthenticationSeconds\": 300\n  },\n"))
        #expect(shown.contains("\n  \"dataDirectory\": \"./.portvakt\",\n"))
        for key in [
            "\"path\": \"./.portvakt/portvakt.sqlite\"", "\"cookieName\": \"portvakt_session\"",
            "\"perSecond\": 50.0",
            "\"maxTrackedClients\": 100000", "\"trustedProxies\": []", "\"perAddressConnectionLimit\": 64",
            "\"requestDeadlineSeconds\": 20", "\"allowedOrigins\": []",
            "\"accessLog\": true",
        ] {
            #expect(shown.contains(key), "\(key)")
        }
        #expect(shown.hasSuffix("}\n"))
    }

    @Test("Config/development.json passes the checker")
    func developmentExamplePasses() throws {
        let path = repositoryRoot.appendingPathComponent("Config/development.json").path
        let c = try PortvaktConfiguration.load(path: path, environment: [:])
        #expect(c.publicURL == "http://localhost:8080")
        #expect(c.cookieSecure == false)
    }

    @Test(
        "Config/production.json passes the checker given the admin token, BankID's, the access tokens' and the webhook's secrets from the environment"
    )
    func productionExamplePasses() throws {
        let path = repositoryRoot.appendingPathComponent("Config/production.json").path
        let secrets = [
            "PORTVAKT_ADMIN_TOKEN": adminToken, "PORTVAKT_BANKID_PASSPHRASE": "correct horse",
            "PORTVAKT_BANKID_IDENTITY_KEY_2026": Base64URL.encode(Array(repeating: 7, count: 32)),
            "PORTVAKT_ACCESS_TOKEN_KEY": Data(repeating: 9, count: 32).base64EncodedString(),
            "PORTVAKT_WEBHOOK_APP": "whsec_" + Data(repeating: 5, count: 32).base64EncodedString(),
        ]
        let c = try PortvaktConfiguration.load(path: path, environment: secrets)
        #expect(c.bankid.environment == .production)
        #expect(c.accessTokens.enabled && c.webhooks.endpoints.map(\.name) == ["app"])
        #expect(c.cookieSecure && c.sessionCookieName == "__Host-portvakt_session")
        #expect(c.storage.synchronous == .full)
        #expect(
            c.http.trustedProxies.isEmpty == false
                && c.http.cors.allowedOrigins == ["https://app.example.com"])
        #expect(c.storagePath == "/var/lib/portvakt/portvakt.sqlite")
        // Without the token, production refuses to start rather than fall back to a stored one.
        var withoutToken = secrets
        withoutToken["PORTVAKT_ADMIN_TOKEN"] = nil
        #expect(throws: ConfigurationError.self) {
            try PortvaktConfiguration.load(path: path, environment: withoutToken)
        }
    }
}

@Suite("Configuration: relying party, methods and well-known documents")
struct ConfigurationPasskeyTests {
    @Test("defaults: RP ID and origin follow the public URL; UV required, attestation none, 300 s challenges")
    func defaults() throws {
        let c = PortvaktConfiguration.embeddedDefault
        #expect(c.relyingParty.id == "localhost" && c.relyingParty.name == "Portvakt")
        #expect(c.relyingParty.origins == ["http://localhost:8080"])
        #expect(c.relyingParty.userVerification == .required && c.relyingParty.attestation == .none)
        #expect(
            c.relyingParty.attestationPolicy == .acceptUntrusted && c.relyingParty.counterPolicy == .reject)
        #expect(c.relyingParty.challengeLifetimeSeconds == 300)
        #expect(c.methods.passkey.enabled && c.methods.passkey.signup)
        #expect(c.wellKnown == .init())
        let https = try parse(#"{"publicURL": "https://login.example.com"}"#)
        #expect(https.relyingParty.id == "login.example.com")
        #expect(https.relyingParty.origins == ["https://login.example.com"])
        // An IP-literal public URL cannot be an RP ID; the default falls back without a conflict.
        #expect(try parse(#"{"publicURL": "http://127.0.0.1:8080"}"#).relyingParty.id == "localhost")
    }

    @Test("every passkey key is checked with its exact key path")
    func invalidValues() {
        let found = issues(
            #"""
            {"relyingParty": {"id": "https://example.com", "name": "", "origins": ["https://example.com/"],
              "androidOrigins": ["android:apk-key-hash:short", "https://x.example"], "topOrigins": [1],
              "userVerification": "always", "attestation": "enterprise", "attestationPolicy": "trust",
              "counterPolicy": "ignore", "challengeLifetimeSeconds": 5, "origin": []},
             "methods": {"passkey": {"enabled": "yes", "signUp": true}},
             "wellKnown": {"appleAppIDs": ["com.example.app"], "relatedOrigins": ["*"],
               "androidApps": [{"package": "app", "sha256Fingerprints": ["aa:bb"]}, {"sha256Fingerprints": []}, 3]}}
            """#)
        #expect(
            found.map(\.path) == [
                "relyingParty.id", "relyingParty.name", "relyingParty.origins[0]",
                "relyingParty.androidOrigins[0]", "relyingParty.androidOrigins[1]",
                "relyingParty.topOrigins[0]",
                "relyingParty.userVerification", "relyingParty.attestation", "relyingParty.attestationPolicy",
                "relyingParty.counterPolicy", "relyingParty.challengeLifetimeSeconds", "relyingParty.origin",
                "methods.passkey.enabled", "methods.passkey.signUp", "wellKnown.appleAppIDs[0]",
                "wellKnown.relatedOrigins[0]", "wellKnown.androidApps[0].package",
                "wellKnown.androidApps[0].sha256Fingerprints[0]", "wellKnown.androidApps[1].package",
                "wellKnown.androidApps[1].sha256Fingerprints", "wellKnown.androidApps[2]",
            ], "\(found)")
        let unknown = found.first { $0.path == "methods.passkey.signUp" }
        #expect(unknown?.description.contains("did you mean \"signup\"") == true)
        let choice = found.first { $0.path == "relyingParty.attestation" }
        #expect(choice?.description.contains("\"none\", \"direct\"") == true)
    }

    @Test("relyingParty.algorithms: ML-DSA is off by default and offered, in the order given, when listed")
    func algorithms() throws {
        #expect(
            PortvaktConfiguration.embeddedDefault.relyingParty.algorithms == RelyingParty.defaultAlgorithms)
        #expect(!RelyingParty.defaultAlgorithms.contains { $0.mlDSAParameterSet != nil })
        let c = try parse(#"{"relyingParty": {"algorithms": ["ML-DSA-65", "ES256", "ML-DSA-44", "EdDSA"]}}"#)
        #expect(c.relyingParty.algorithms == [.mlDSA65, .es256, .mlDSA44, .edDSA])
        // What pubKeyCredParams offers and registration accepts.
        #expect(
            try PortvaktServer.passkeyPolicy(c).relyingParty.allowedAlgorithms == [
                .mlDSA65, .es256, .mlDSA44, .edDSA,
            ])
        // `config show` prints what is in force.
        let effective = try JSONSerialization.jsonObject(with: Data(c.effectiveJSON().utf8)) as? [String: Any]
        let shown = (effective?["relyingParty"] as? [String: Any])?["algorithms"] as? [String]
        #expect(shown == ["ML-DSA-65", "ES256", "ML-DSA-44", "EdDSA"])
    }

    @Test("relyingParty.algorithms: unknown names, repeats, an empty list and non-strings are refused")
    func invalidAlgorithms() {
        let unknown = singleIssue(#"{"relyingParty": {"algorithms": ["ES256", "ML-DSA-66"]}}"#)
        #expect(unknown.hasPrefix("relyingParty.algorithms[1]: expected one of \"ES256\""), "\(unknown)")
        #expect(unknown.contains(#""ML-DSA-87""#) && unknown.contains(#"got "ML-DSA-66""#))
        #expect(
            singleIssue(#"{"relyingParty": {"algorithms": ["ES256", "ML-DSA-65", "ES256"]}}"#)
                == #"relyingParty.algorithms[2]: "ES256" is listed twice"#)
        #expect(
            singleIssue(#"{"relyingParty": {"algorithms": []}}"#).hasPrefix(
                "relyingParty.algorithms: expected at least one"))
        #expect(
            singleIssue(#"{"relyingParty": {"algorithms": [-49]}}"#).hasPrefix("relyingParty.algorithms[0]:"))
    }

    @Test("an origin outside the RP ID is a conflict naming the origin")
    func originOutsideRPID() {
        let issue = singleIssue(
            #"{"publicURL": "https://login.example.com", "relyingParty": {"id": "example.org"}}"#)
        #expect(
            issue.hasPrefix("relyingParty.id: the origin \"https://login.example.com\" is not on the RP ID"))
        let listed = singleIssue(
            #"{"relyingParty": {"id": "example.com", "origins": ["https://example.com", "https://evil.com"]}}"#
        )
        #expect(listed.hasPrefix("relyingParty.origins[1]:"))
        // A subdomain of the RP ID is fine.
        #expect(
            (try? parse(#"{"publicURL": "https://login.example.com", "relyingParty": {"id": "example.com"}}"#))
                != nil)
    }
}
