import CryptoCore
import Foundation
import HTTPEngine
import Kernel
import PortvaktApp
import SessionCore
import Storage
import TestSupport
import Testing

/// Signed access tokens over real HTTP, on every engine: the routes exist only when switched on,
/// a token says who and which session and never outlives it, the key set is cacheable, and a
/// key this instance cannot open is a clear 503. (An independent JWT library checks the tokens
/// in Tests/Backends/jwt_test.py.)
@Suite("Access tokens", .serialized)
struct AccessTokenTests {
    let client = HTTPTestClient()

    static let kek = Base64.encode([UInt8](repeating: 0x5A, count: 32))
    static let environment = ["PORTVAKT_ACCESS_TOKEN_KEY": kek]
    static var settings: [String: Any] { ["enabled": true, "audience": "https://api.example.se"] }

    func token(_ server: TestServer, bearer: String?) throws -> TestResponse {
        try client.send(
            method: "POST", url: "\(server.publicURL)/v1/session/access-token",
            headers: bearer.map { [("Authorization", "Bearer \($0)")] } ?? [])
    }

    static func decodePart(_ part: Substring) throws -> [String: Any] {
        let bytes = try #require(Base64URL.decode(part))
        return try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    @Test("Off by default: neither route exists, nor is either in the API document")
    func absentWhenOff() throws {
        let server = try TestServer()
        defer { server.stop() }
        let user = try server.makeUser(username: "ada")
        let session = try server.signIn(user)
        let refused = try token(server, bearer: session.token)
        #expect(refused.status == 404)
        #expect(try refused.problemCode() == "route.not_found")
        let jwks = try client.send(url: "\(server.publicURL)/.well-known/jwks.json")
        #expect(jwks.status == 404)
        let document = try client.send(url: "\(server.publicURL)/openapi.json").text
        #expect(!document.contains("/v1/session/access-token") && !document.contains("jwks.json"))
    }

    @Test(
        "A signed-in request gets an ES256 token for its session, verifiable against the key set",
        arguments: TestEngine.tested)
    func issued(engine: TestEngine) throws {
        let server = try TestServer(
            engine: engine, configuration: ["accessTokens": Self.settings], environment: Self.environment)
        defer { server.stop() }
        let user = try server.makeUser(username: "ada")
        let session = try server.signIn(user)
        let response = try token(server, bearer: session.token)
        #expect(response.status == 200, "\(response.text)")
        #expect(response.headers["cache-control"] == "no-store")
        let body = try response.jsonObject()
        let jwt = try #require(body["accessToken"] as? String)
        let parts = jwt.split(separator: ".")
        #expect(parts.count == 3)
        let header = try Self.decodePart(parts[0])
        let claims = try Self.decodePart(parts[1])
        #expect(header["alg"] as? String == "ES256" && header["typ"] as? String == "JWT")
        #expect(claims["iss"] as? String == server.server.configuration.publicURL)
        #expect(claims["sub"] as? String == user.id)
        #expect(claims["sid"] as? String == session.session.id)
        #expect(claims["aud"] as? String == "https://api.example.se")
        #expect(claims["amr"] as? [String] == ["passkey"])
        let now = Int(server.clock.now().timeIntervalSince1970)
        #expect(claims["iat"] as? Int == now && claims["exp"] as? Int == now + 300)
        let expiresAt = try #require(body["expiresAt"] as? String)
        #expect(expiresAt == UTCTimestamp.string(Date(timeIntervalSince1970: TimeInterval(now + 300))))

        // The key set names the token's key and verifies its signature.
        let jwks = try client.send(url: "\(server.publicURL)/.well-known/jwks.json")
        #expect(jwks.status == 200)
        #expect(jwks.headers["cache-control"] == "public, max-age=300")
        #expect(jwks.headers["content-type"] == "application/json")
        let keys = try #require(try jwks.jsonObject()["keys"] as? [[String: Any]])
        let key = try #require(keys.first { $0["kid"] as? String == header["kid"] as? String })
        #expect(key["kty"] as? String == "EC" && key["crv"] as? String == "P-256")
        #expect(key["alg"] as? String == "ES256" && key["use"] as? String == "sig")
        let x = try #require(key["x"] as? String)
        let y = try #require(key["y"] as? String)
        let publicKey = try PublicKey(
            curve: .p256, x: try #require(Base64URL.decode(x)), y: try #require(Base64URL.decode(y)))
        let signature = try #require(Base64URL.decode(parts[2]))
        #expect(
            publicKey.verify(
                signature: try ECDSASignature.der(fromRaw: signature, curve: .p256),
                data: Array("\(parts[0]).\(parts[1])".utf8), algorithm: .ecdsaSHA256))
        // A changed payload does not.
        var forged = claims
        forged["sub"] = "usr_someone_else"
        let forgedPayload = Base64URL.encode(Array(try JSONSerialization.data(withJSONObject: forged)))
        #expect(
            !publicKey.verify(
                signature: try ECDSASignature.der(fromRaw: signature, curve: .p256),
                data: Array("\(parts[0]).\(forgedPayload)".utf8), algorithm: .ecdsaSHA256))
    }

    @Test("A token never outlives its session: exp is the session's end when that comes first")
    func cappedAtSessionEnd() throws {
        let server = try TestServer(
            configuration: [
                "accessTokens": Self.settings.merging(["lifetimeSeconds": 3600]) { $1 },
                "sessions": [
                    "absoluteLifetimeSeconds": 7200, "idleTimeoutSeconds": 7200,
                    "rotationIntervalSeconds": 7200,
                ],
            ], environment: Self.environment)
        defer { server.stop() }
        let session = try server.signIn(try server.makeUser(username: "ada"))
        // 100 s of the session are left.
        server.clock.advance(by: 7100)
        let response = try token(server, bearer: session.token)
        #expect(response.status == 200, "\(response.text)")
        let claims = try Self.decodePart(
            try #require((try response.jsonObject()["accessToken"] as? String)?.split(separator: ".")[1]))
        #expect(claims["exp"] as? Int == Int(session.session.expiresAt.timeIntervalSince1970))
        #expect(claims["exp"] as? Int == Int(server.clock.now().timeIntervalSince1970) + 100)
    }

    @Test("No token without a live session: missing, unknown or revoked is 401")
    func signedInOnly() throws {
        let server = try TestServer(
            configuration: ["accessTokens": Self.settings], environment: Self.environment)
        defer { server.stop() }
        let missing = try token(server, bearer: nil)
        #expect(missing.status == 401)
        #expect(try missing.problemCode() == "session.missing")
        let unknown = try token(server, bearer: "pvs_" + String(repeating: "A", count: 43))
        #expect(unknown.status == 401)
        let session = try server.signIn(try server.makeUser(username: "ada"))
        try server.server.store.endSession(
            session.session.id, ofUser: session.session.userID, at: server.clock.now())
        let revoked = try token(server, bearer: session.token)
        #expect(revoked.status == 401)
        #expect(try revoked.problemCode() == "session.revoked")
    }

    @Test(
        "A current key sealed under another key-encryption key is a clear 503, and the key set still serves")
    func wrongKEK() throws {
        let server = try TestServer(
            configuration: ["accessTokens": Self.settings], environment: Self.environment)
        defer { server.stop() }
        let session = try server.signIn(try server.makeUser(username: "ada"))
        #expect(try token(server, bearer: session.token).status == 200)
        // Another instance, started with another PORTVAKT_ACCESS_TOKEN_KEY, rotates at once.
        let other = try #require(SigningKeyEncryptionKey(bytes: [UInt8](repeating: 0x01, count: 32)))
        let now = server.clock.now()
        let foreign = try SigningKeyRecord.generate(
            kek: other, at: now, activatesAt: now, random: SystemRandom())
        _ = try server.server.store.rotateSigningKey(
            to: foreign, retiredUntil: now.addingTimeInterval(3660), unpublishingAt: nil,
            onlyIfCurrentActivatedBefore: nil)
        // This instance picks the rotation up at its next reload.
        server.clock.advance(by: SigningKeyRing.refreshInterval)
        let refused = try token(server, bearer: session.token)
        #expect(refused.status == 503)
        #expect(refused.headers["content-type"] == "application/problem+json")
        #expect(try refused.problemCode() == "access_token.key_unavailable")
        #expect(refused.text.contains("PORTVAKT_ACCESS_TOKEN_KEY") && !refused.text.contains(Self.kek))
        let jwks = try client.send(url: "\(server.publicURL)/.well-known/jwks.json")
        #expect(jwks.status == 200)
        #expect((try jwks.jsonObject()["keys"] as? [[String: Any]])?.count == 2)
    }

    @Test("A rotation made elsewhere is picked up at the next reload: the new kid signs, both are published")
    func rotationPickedUp() throws {
        let server = try TestServer(
            configuration: ["accessTokens": Self.settings], environment: Self.environment)
        defer { server.stop() }
        let session = try server.signIn(try server.makeUser(username: "ada"))
        func kid() throws -> String? {
            let jwt = try #require(
                try token(server, bearer: session.token).jsonObject()["accessToken"] as? String)
            return try Self.decodePart(jwt.split(separator: ".")[0])["kid"] as? String
        }
        let before = try kid()
        let kek = try #require(SigningKeyEncryptionKey(base64: Self.kek))
        let now = server.clock.now()
        let next = try SigningKeyRecord.generate(
            kek: kek, at: now, activatesAt: now.addingTimeInterval(10), random: SystemRandom())
        _ = try server.server.store.rotateSigningKey(
            to: next, retiredUntil: next.activatesAt.addingTimeInterval(3660), unpublishingAt: nil,
            onlyIfCurrentActivatedBefore: nil)
        server.clock.advance(by: 5)
        #expect(try kid() == before)
        server.clock.advance(by: 5)
        #expect(try kid() == next.kid)
        let jwks = try client.send(url: "\(server.publicURL)/.well-known/jwks.json")
        let kids = (try jwks.jsonObject()["keys"] as? [[String: Any]])?.compactMap { $0["kid"] as? String }
        #expect(kids == [before, next.kid].compactMap { $0 })
    }

    @Test(
        "accessTokens: off by default; when on, config check needs the audience and a valid key; ranges are strict; effect never shows the key"
    )
    func configuration() throws {
        func parse(_ json: String, _ environment: [String: String] = [:]) throws(ConfigurationError)
            -> PortvaktConfiguration
        {
            try PortvaktConfiguration.parse(json: Array(json.utf8), environment: environment)
        }
        func refused(_ json: String, _ environment: [String: String] = [:]) -> [String] {
            do {
                _ = try parse(json, environment)
                return []
            } catch { return error.issues.map(\.path) }
        }
        let defaults = try parse("{}").accessTokens
        #expect(!defaults.enabled && defaults.lifetimeSeconds == 300 && defaults.rotationDays == 30)
        #expect(
            refused(#"{"accessTokens": {"enabled": true}}"#) == [
                "accessTokens.audience", "PORTVAKT_ACCESS_TOKEN_KEY",
            ])
        #expect(
            refused(
                #"{"accessTokens": {"enabled": true, "audience": "api"}}"#,
                ["PORTVAKT_ACCESS_TOKEN_KEY": "c2hvcnQ="])
                == ["PORTVAKT_ACCESS_TOKEN_KEY"])
        #expect(refused(#"{"accessTokens": {"lifetimeSeconds": 59}}"#) == ["accessTokens.lifetimeSeconds"])
        #expect(refused(#"{"accessTokens": {"lifetimeSeconds": 3601}}"#) == ["accessTokens.lifetimeSeconds"])
        #expect(refused(#"{"accessTokens": {"rotationDays": 0}}"#) == ["accessTokens.rotationDays"])
        #expect(refused(#"{"accessTokens": {"audience": ["api", 3]}}"#) == ["accessTokens.audience"])
        #expect(refused(#"{"accessTokens": {"audience": ""}}"#) == ["accessTokens.audience"])
        #expect(refused(#"{"accessTokens": {"key": "x"}}"#) == ["accessTokens.key"])
        #expect(refused(#"{"accessTokens": {"audiences": "api"}}"#) == ["accessTokens.audiences"])
        let on = try parse(
            #"{"accessTokens": {"enabled": true, "audience": ["api", "web"], "lifetimeSeconds": 60}}"#,
            Self.environment)
        #expect(on.accessTokens.audience == ["api", "web"] && on.accessTokens.keyEncryptionKey != nil)
        let shown = on.effectiveJSON()
        #expect(!shown.contains(Self.kek))
        let section = try #require(
            (try JSONSerialization.jsonObject(with: Data(shown.utf8)) as? [String: Any])?["accessTokens"]
                as? [String: Any])
        #expect(
            section["keyFromEnvironment"] as? Bool == true
                && section["audience"] as? [String] == ["api", "web"])
        #expect(try parse(shown, Self.environment).accessTokens == on.accessTokens)
        #expect(Set(refused(shown)) == ["accessTokens.keyFromEnvironment", "PORTVAKT_ACCESS_TOKEN_KEY"])
    }

    @Test(
        "storage copy carries the signing keys: on the PostgreSQL copy the same key signs and is published",
        .enabled(if: TestPostgreSQL.isEnabled, Comment(rawValue: TestPostgreSQL.disabledReason)))
    func storageCopy() throws {
        let source = try TestServer.inProcess(
            configuration: ["accessTokens": Self.settings], environment: Self.environment)
        let keys = try source.server.store.signingKeys(publishedAt: nil)
        #expect(keys.count == 1)
        source.stop()
        let database = try PostgreSQLTestDatabase()
        let directory = try TemporaryDirectory()
        let config = try database.writeConfiguration(in: directory.url)
        let copy = try PortvaktProcess.run(
            ["storage", "copy", "--from", source.directory.path("portvakt.sqlite"), "--to-config", config],
            environment: database.passwordEnvironment)
        #expect(copy.status == 0, "\(copy.stderr)")
        #expect(copy.stdout.contains("signing_keys"))
        let target = try TestServer.inProcess(
            configuration: ["storage": database.storageJSON, "accessTokens": Self.settings],
            environment: database.passwordEnvironment.merging(Self.environment) { $1 })
        defer { target.stop() }
        #expect(try target.server.store.signingKeys(publishedAt: nil) == keys)
        let session = try target.signIn(try target.makeUser(username: "ada"))
        let response = try target.makeClient().send(
            method: "POST", url: "\(target.publicURL)/v1/session/access-token",
            headers: [("Authorization", "Bearer \(session.token)")], body: nil)
        #expect(response.status == 200, "\(response.text)")
        let jwt = try #require(try response.jsonObject()["accessToken"] as? String)
        let header = try Self.decodePart(try #require(jwt.split(separator: ".").first))
        #expect(header["kid"] as? String == keys.first?.kid)
    }
}
