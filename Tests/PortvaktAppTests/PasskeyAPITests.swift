import AuthOrchestrator
import CryptoCore
import Foundation
import HTTPEngine
import Kernel
import PasskeyCore
import PortvaktAPI
import PortvaktApp
import SessionCore
import Storage
import Synchronization
import TestSupport
import Testing

/// Drives a test server's passkey routes with the software authenticator, as a browser would:
/// in process, or over the socket when the server listens.
struct PasskeyClient {
    let server: TestServer
    let http: any HTTPTestTransport
    let authenticator = SoftwareAuthenticator()
    var origin = "http://localhost:8080"

    init(_ server: TestServer) {
        self.server = server
        http = InProcessHTTPClient.reaches(server.publicURL) ? InProcessHTTPClient() : HTTPTestClient()
    }

    func post(_ path: String, _ body: String, headers: [(String, String)] = []) throws -> TestResponse {
        try http.sendJSON(url: server.publicURL + path, json: body, headers: headers)
    }

    /// Starts a registration; returns the challenge id, the challenge bytes and the user handle.
    func startRegistration(_ body: String, headers: [(String, String)] = []) throws -> (
        id: String, challenge: [UInt8], userHandle: [UInt8], options: [String: Any]
    ) {
        let response = try post("/v1/passkeys/registration/initialize", body, headers: headers)
        #expect(response.status == 200, "\(response.text)")
        let object = try response.jsonObject()
        let options = try #require(object["publicKey"] as? [String: Any])
        let user = try #require(options["user"] as? [String: Any])
        let challenge = try #require(options["challenge"] as? String)
        let handle = try #require(user["id"] as? String)
        return (
            try #require(object["challengeId"] as? String), try #require(Base64URL.decode(challenge)),
            try #require(Base64URL.decode(handle)), options
        )
    }

    func finalizeRegistration(
        _ id: String, _ registration: SoftwareRegistration, extra: String = "",
        headers: [(String, String)] = []
    ) throws -> TestResponse {
        let credential = String(decoding: registration.json(), as: UTF8.self)
        return try post(
            "/v1/passkeys/registration/finalize",
            #"{"challengeId":"\#(id)","credential":\#(credential)\#(extra)}"#,
            headers: headers)
    }

    /// Signs up `username` natively; returns the credential and the bearer token.
    func signUp(_ username: String) throws -> (credential: SoftwareCredential, token: String) {
        let started = try startRegistration(#"{"username":"\#(username)","displayName":"Test \#(username)"}"#)
        let credential = authenticator.makeCredential(
            algorithm: .es256, rpID: "localhost", userHandle: started.userHandle)
        let response = try finalizeRegistration(
            started.id, authenticator.register(credential, challenge: started.challenge, origin: origin),
            extra: #","client":"native""#)
        #expect(response.status == 201, "\(response.text)")
        let session = try #require(try response.jsonObject()["session"] as? [String: Any])
        return (credential, try #require(session["token"] as? String))
    }

    func startLogin(_ body: String = "{}") throws -> (id: String, challenge: [UInt8], options: [String: Any])
    {
        let response = try post("/v1/passkeys/login/initialize", body)
        #expect(response.status == 200, "\(response.text)")
        let object = try response.jsonObject()
        let options = try #require(object["publicKey"] as? [String: Any])
        let challenge = try #require(options["challenge"] as? String)
        return (
            try #require(object["challengeId"] as? String), try #require(Base64URL.decode(challenge)), options
        )
    }

    func finalizeLogin(_ id: String, _ assertion: SoftwareAssertion, client: String = "native") throws
        -> TestResponse
    {
        let credential = String(decoding: assertion.json(), as: UTF8.self)
        return try post(
            "/v1/passkeys/login/finalize",
            #"{"challengeId":"\#(id)","credential":\#(credential),"client":"\#(client)"}"#)
    }

    /// A complete login with `credential`; returns the finalize response.
    func login(
        _ credential: SoftwareCredential, username: String? = nil,
        behaviour: SoftwareAuthenticator.Behaviour = .init()
    ) throws -> TestResponse {
        let started = try startLogin(username.map { #"{"username":"\#($0)"}"# } ?? "{}")
        return try finalizeLogin(
            started.id,
            authenticator.authenticate(
                credential, challenge: started.challenge, origin: origin, behaviour: behaviour))
    }

    func me(_ token: String) throws -> TestResponse {
        try http.send(.GET, server.publicURL + "/v1/me", headers: ["Authorization": "Bearer \(token)"])
    }
}

private func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }

@Suite("Passkey API", .serialized)
struct PasskeyAPITests {
    @Test(
        "sign-up with a web client sets the session cookie; GET /v1/me works with it",
        arguments: TestEngine.tested)
    func signUpWeb(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let c = PasskeyClient(server)
        let started = try c.startRegistration(#"{"username":"  Ada ","displayName":"Ada Lovelace"}"#)
        #expect(started.options["rp"] as? [String: String] == ["id": "localhost", "name": "Portvakt"])
        #expect(
            (started.options["authenticatorSelection"] as? [String: Any])?["residentKey"] as? String
                == "required")
        #expect((started.options["user"] as? [String: Any])?["name"] as? String == "ada")
        let credential = c.authenticator.makeCredential(
            algorithm: .es256, rpID: "localhost", userHandle: started.userHandle)
        let response = try c.finalizeRegistration(
            started.id, c.authenticator.register(credential, challenge: started.challenge, origin: c.origin),
            extra: #","name":"My laptop""#)
        #expect(response.status == 201, "\(response.text)")
        let body = try response.jsonObject()
        let user = try #require(body["user"] as? [String: Any])
        #expect(user["username"] as? String == "ada")
        let passkey = try #require(body["passkey"] as? [String: Any])
        #expect(passkey["id"] as? String == Base64URL.encode(credential.id))
        #expect(passkey["name"] as? String == "My laptop")
        #expect(passkey["aaguid"] as? String == SoftwareAuthenticator.testAAGUID.uuidString.lowercased())
        #expect(passkey["backupEligible"] as? Bool == true && passkey["backedUp"] as? Bool == true)
        #expect(passkey["lastUsedAt"] is NSNull && passkey["attestationFormat"] as? String == "none")
        let session = try #require(body["session"] as? [String: Any])
        #expect(session["token"] == nil && session["id"] is String && session["expiresAt"] is String)
        let setCookie = try #require(response.headers["set-cookie"])
        #expect(setCookie.hasPrefix("portvakt_session=pvs_") && setCookie.contains("HttpOnly"))
        let cookie = String(setCookie.prefix { $0 != ";" })
        let me = try c.http.send(.GET, server.publicURL + "/v1/me", headers: ["Cookie": cookie])
        #expect(me.status == 200)
        let events = try server.server.store.auditEvents(
            userID: user["id"] as? String, beforeID: nil, limit: 10)
        #expect(events.map(\.action.rawValue) == ["passkey.registered"])
    }

    @Test(
        "sign-up with a native client returns a bearer token that opens GET /v1/me",
        arguments: TestEngine.tested)
    func signUpNative(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let c = PasskeyClient(server)
        let (_, token) = try c.signUp("grace")
        let me = try c.me(token)
        #expect(me.status == 200)
        #expect((try me.jsonObject()["session"] as? [String: Any])?["authMethod"] as? String == "passkey")
    }

    @Test(
        "sign-in by username and discoverable; the counter and last use are recorded",
        arguments: TestEngine.tested)
    func signIn(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let c = PasskeyClient(server)
        let (credential, _) = try c.signUp("ada")
        let started = try c.startLogin(#"{"username":"ADA"}"#)
        let allowed = try #require(started.options["allowCredentials"] as? [[String: Any]])
        #expect(allowed.map { $0["id"] as? String } == [Base64URL.encode(credential.id)])
        var behaviour = SoftwareAuthenticator.Behaviour()
        behaviour.signCount = 5
        let byName = try c.finalizeLogin(
            started.id,
            c.authenticator.authenticate(
                credential, challenge: started.challenge, origin: c.origin, behaviour: behaviour))
        #expect(byName.status == 200, "\(byName.text)")
        let token = try #require((try byName.jsonObject()["session"] as? [String: Any])?["token"] as? String)
        #expect(try c.me(token).status == 200)
        behaviour.signCount = 6
        let discoverable = try c.login(credential, behaviour: behaviour)
        #expect(discoverable.status == 200, "\(discoverable.text)")
        let stored = try #require(try server.server.store.passkey(credentialID: credential.id))
        #expect(stored.signCount == 6 && stored.lastUsedAt != nil)
        let list = try c.http.send(
            .GET, server.publicURL + "/v1/me/passkeys", headers: ["Authorization": "Bearer \(token)"])
        let passkeys = try #require(try list.jsonObject()["passkeys"] as? [[String: Any]])
        #expect(passkeys.count == 1 && passkeys[0]["lastUsedAt"] is String)
    }

    @Test("a login with a session replaces it (rotation on sign-in)", arguments: TestEngine.tested)
    func loginReplacesSession(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let c = PasskeyClient(server)
        let (credential, oldToken) = try c.signUp("ada")
        let started = try c.startLogin()
        let assertion = c.authenticator.authenticate(
            credential, challenge: started.challenge, origin: c.origin)
        let response = try c.post(
            "/v1/passkeys/login/finalize",
            #"{"challengeId":"\#(started.id)","credential":\#(String(decoding: assertion.json(), as: UTF8.self)),"client":"native"}"#,
            headers: bearer(oldToken))
        #expect(response.status == 200)
        #expect(try c.me(oldToken).problemCode() == "session.revoked")
    }

    @Test("§7.2: a replayed response is refused, its challenge is spent", arguments: TestEngine.tested)
    func replay(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let c = PasskeyClient(server)
        let (credential, _) = try c.signUp("ada")
        let started = try c.startLogin()
        let assertion = c.authenticator.authenticate(
            credential, challenge: started.challenge, origin: c.origin)
        #expect(try c.finalizeLogin(started.id, assertion).status == 200)
        let again = try c.finalizeLogin(started.id, assertion)
        #expect(again.status == 400)
        #expect(try again.problemCode() == "passkey.challenge_invalid")
    }

    @Test(
        "§7.2 steps 13 and 15: wrong origin and wrong RP ID are refused with the verifier's code",
        arguments: TestEngine.tested)
    func wrongOriginAndRPID(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        var c = PasskeyClient(server)
        let (credential, _) = try c.signUp("ada")
        var wrongRP = SoftwareAuthenticator.Behaviour()
        wrongRP.rpID = "evil.example"
        #expect(try c.login(credential, behaviour: wrongRP).problemCode() == "ceremony.rp_id_hash_mismatch")
        c.origin = "http://localhost:9999"
        let wrongOrigin = try c.login(credential)
        #expect(wrongOrigin.status == 400)
        #expect(try wrongOrigin.problemCode() == "ceremony.origin_not_allowed")
        // A sign-up from the wrong origin creates nothing.
        let started = try c.startRegistration(#"{"username":"eve"}"#)
        let key = c.authenticator.makeCredential(
            algorithm: .es256, rpID: "localhost", userHandle: started.userHandle)
        let response = try c.finalizeRegistration(
            started.id, c.authenticator.register(key, challenge: started.challenge, origin: c.origin))
        #expect(try response.problemCode() == "ceremony.origin_not_allowed")
        #expect(try server.server.store.user(username: "eve") == nil)
    }

    @Test("an expired challenge is refused (fixed clock past the lifetime)", arguments: TestEngine.tested)
    func expiredChallenge(engine: TestEngine) throws {
        let server = try TestServer.inProcess(
            engine: engine,
            configuration: [
                "relyingParty": ["challengeLifetimeSeconds": 60]
            ])
        defer { server.stop() }
        let c = PasskeyClient(server)
        let (credential, _) = try c.signUp("ada")
        let started = try c.startLogin()
        server.clock.advance(by: 60)
        let response = try c.finalizeLogin(
            started.id,
            c.authenticator.authenticate(credential, challenge: started.challenge, origin: c.origin))
        #expect(try response.problemCode() == "passkey.challenge_invalid")
        // Login challenges are sealed, not stored (schema 7): neither the expired one nor one
        // never answered leaves anything behind for the hourly purge.
        _ = try c.startLogin()
        server.clock.advance(by: 61)
        #expect(try server.server.passkeys.purgeExpiredChallenges() == 0)
        #expect(try server.server.store.challengeCount() == 0)
    }

    @Test("a challenge issued for the other ceremony is refused", arguments: TestEngine.tested)
    func otherPurpose(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let c = PasskeyClient(server)
        let (credential, _) = try c.signUp("ada")
        let registration = try c.startRegistration(#"{"username":"bob"}"#)
        let response = try c.finalizeLogin(
            registration.id,
            c.authenticator.authenticate(credential, challenge: registration.challenge, origin: c.origin))
        #expect(try response.problemCode() == "passkey.challenge_invalid")
    }

    @Test(
        "§7.2 step 22: a counter regression is refused under the reject policy", arguments: TestEngine.tested)
    func counterRegression(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let c = PasskeyClient(server)
        let (credential, _) = try c.signUp("ada")
        var behaviour = SoftwareAuthenticator.Behaviour()
        behaviour.signCount = 10
        #expect(try c.login(credential, behaviour: behaviour).status == 200)
        behaviour.signCount = 9
        let regressed = try c.login(credential, behaviour: behaviour)
        #expect(try regressed.problemCode() == "ceremony.counter_regression")
        // On a fresh challenge the regression is real: the audit log keeps the clone signal.
        let user = try #require(try server.server.store.user(username: "ada"))
        let failure = try #require(
            try server.server.store.auditEvents(userID: user.id, beforeID: nil, limit: 1).first)
        #expect(failure.action == .passkeyLoginFailed)
        #expect(failure.details["code"] == "ceremony.counter_regression")
    }

    @Test(
        "an unknown username gets options like a user without passkeys, and fails like a bad credential",
        arguments: TestEngine.tested)
    func unknownUsernameLeaksNothing(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let c = PasskeyClient(server)
        let (credential, _) = try c.signUp("ada")
        let unknown = try c.startLogin(#"{"username":"nobody"}"#)
        #expect((unknown.options["allowCredentials"] as? [Any])?.isEmpty == true)
        let response = try c.finalizeLogin(
            unknown.id,
            c.authenticator.authenticate(credential, challenge: unknown.challenge, origin: c.origin))
        #expect(try response.problemCode() == "passkey.login_failed")
        let stranger = c.authenticator.makeCredential(
            algorithm: .es256, rpID: "localhost", userHandle: [1, 2, 3])
        #expect(try c.login(stranger).problemCode() == "passkey.login_failed")
        let failures = try server.server.store.auditEvents(userID: nil, beforeID: nil, limit: 20)
            .filter { $0.action.rawValue == "passkey.login_failed" }
        #expect(failures.count == 2)
        #expect(failures.allSatisfy { !$0.details.values.contains("nobody") })
    }

    @Test(
        "the last passkey cannot be deleted (409); add a second, delete the first (200), rename",
        arguments: TestEngine.tested)
    func manage(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let c = PasskeyClient(server)
        let (first, token) = try c.signUp("ada")
        let firstID = Base64URL.encode(first.id)
        let last = try c.http.send(
            .DELETE, server.publicURL + "/v1/me/passkeys/\(firstID)",
            headers: ["Authorization": "Bearer \(token)"])
        #expect(last.status == 409)
        #expect(try last.problemCode() == "passkey.last_passkey")

        let started = try c.startRegistration("{}", headers: bearer(token))
        let excluded = try #require(started.options["excludeCredentials"] as? [[String: Any]])
        #expect(excluded.map { $0["id"] as? String } == [firstID])
        let second = c.authenticator.makeCredential(
            algorithm: .es256, rpID: "localhost", userHandle: started.userHandle)
        let added = try c.finalizeRegistration(
            started.id, c.authenticator.register(second, challenge: started.challenge, origin: c.origin),
            headers: bearer(token))
        #expect(added.status == 201, "\(added.text)")
        #expect(try added.jsonObject()["session"] == nil)
        // The same credential again is refused (§7.1 step 26).
        let again = try c.startRegistration("{}", headers: bearer(token))
        let duplicate = try c.finalizeRegistration(
            again.id, c.authenticator.register(second, challenge: again.challenge, origin: c.origin),
            headers: bearer(token))
        #expect(duplicate.status == 409)
        #expect(try duplicate.problemCode() == "passkey.credential_exists")

        let renamed = try c.http.sendJSON(
            method: "PATCH", url: server.publicURL + "/v1/me/passkeys/\(Base64URL.encode(second.id))",
            json: #"{"name":"Phone"}"#, headers: bearer(token))
        #expect(renamed.status == 200)
        #expect(try renamed.jsonObject()["name"] as? String == "Phone")
        let deleted = try c.http.send(
            .DELETE, server.publicURL + "/v1/me/passkeys/\(firstID)",
            headers: ["Authorization": "Bearer \(token)"])
        #expect(deleted.status == 200)
        let list = try c.http.send(
            .GET, server.publicURL + "/v1/me/passkeys", headers: ["Authorization": "Bearer \(token)"])
        let names = try #require(try list.jsonObject()["passkeys"] as? [[String: Any]]).map {
            $0["name"] as? String
        }
        #expect(names == ["Phone"])
        #expect(try c.login(first).problemCode() == "passkey.login_failed")
        let actions = try server.server.store.auditEvents(userID: nil, beforeID: nil, limit: 20).map(
            \.action.rawValue)
        #expect(actions.contains("passkey.renamed") && actions.contains("passkey.deleted"))
    }

    @Test(
        "on a pool of one HTTP worker, concurrent sign-ins, renames and logouts commit off the worker and are answered in full, on either engine",
        arguments: TestEngine.tested)
    func signInsOnOneWorker(engine: TestEngine) throws {
        // On a socket, with MHD's suspend and resume: SQLite's writer thread commits each batch of
        // sign-ins and builds the answers (PostgreSQL's commit runs on the worker itself); sign-up,
        // rename and logout run on the http-blocking threads while their connections are parked.
        let server = try TestServer(
            .live, engine: engine,
            configuration: [
                "http": ["threading": "pool", "threads": 1],
                "rateLimits": [
                    "auth": ["burst": 10_000, "perSecond": 10_000],
                    "default": ["burst": 10_000, "perSecond": 10_000],
                ],
            ])
        defer { server.stop() }
        let c = PasskeyClient(server)
        let credentials = try (0..<6).map { try c.signUp("user\($0)").credential }
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: credentials.count) { index in
            let c = PasskeyClient(server)
            for _ in 0..<5 {
                do {
                    let login = try c.login(credentials[index])
                    let token = (try login.jsonObject()["session"] as? [String: Any])?["token"] as? String
                    guard login.status == 200, let token, try c.me(token).status == 200 else {
                        failures.withLock { $0.append("\(login.status) \(login.text)") }
                        continue
                    }
                    let bearer = [("Authorization", "Bearer \(token)")]
                    let renamed = try c.http.sendJSON(
                        method: "PATCH", url: server.publicURL + "/v1/me",
                        json: #"{"displayName":"Renamed \#(index)"}"#, headers: bearer)
                    let loggedOut = try c.http.send(
                        method: "POST", url: server.publicURL + "/v1/logout", headers: bearer, body: nil)
                    let after = try c.me(token)
                    if renamed.status != 200 || loggedOut.status != 204 || after.status != 401 {
                        failures.withLock {
                            $0.append(
                                "rename \(renamed.status), logout \(loggedOut.status), then \(after.status)")
                        }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        // A refusal before the commit is answered by the task the worker ran inline (the
        // connection resumed while the worker was still inside MHD's handler); one after it comes
        // from the writer thread. Both keep their codes, and the connection stays usable.
        let bogus = try c.post(
            "/v1/passkeys/login/finalize",
            #"{"challengeId":"not-a-challenge","credential":\#(String(decoding: c.authenticator.authenticate(credentials[0], challenge: [1, 2, 3], origin: c.origin).json(), as: UTF8.self)),"client":"native"}"#
        )
        #expect(try bogus.problemCode() == "passkey.challenge_invalid", "\(bogus.text)")
        let started = try c.startLogin()
        let assertion = c.authenticator.authenticate(
            credentials[0], challenge: started.challenge, origin: c.origin)
        #expect(try c.finalizeLogin(started.id, assertion).status == 200)
        #expect(try c.finalizeLogin(started.id, assertion).problemCode() == "passkey.challenge_invalid")
    }

    @Test(
        "stopping a pool server amid sign-ins answers every finalize (200 or 503, never a hang), and every 200 left its session"
    )
    func stopDuringSuspendedSignIns() throws {
        let server = try TestServer(
            .live,
            configuration: [
                "http": ["threading": "pool", "threads": 2],
                "rateLimits": ["auth": ["burst": 100_000, "perSecond": 100_000]],
            ])
        let c = PasskeyClient(server)
        let credentials = try (0..<8).map { try c.signUp("user\($0)").credential }
        let stopping = Atomic(false)
        let ok = Atomic(0)
        let unavailable = Atomic(0)
        let unexpected = Mutex<[String]>([])
        let clients = DispatchGroup()
        for credential in credentials {
            clients.enter()
            Thread {
                defer { clients.leave() }
                let c = PasskeyClient(server)
                // Bounded: at most 2,000 sign-ins per client, and none once the stop has begun.
                for _ in 0..<2_000 where !stopping.load(ordering: .relaxed) {
                    do {
                        let status = try c.login(credential).status
                        if status == 200 {
                            ok.add(1, ordering: .relaxed)
                        } else if status == 503 {
                            unavailable.add(1, ordering: .relaxed)
                        } else {
                            unexpected.withLock { $0.append("status \(status)") }
                        }
                    } catch let error as HTTPTestClientError where !error.isTimeout {
                        // Refused or reset once the listener is gone: the request was never taken.
                        break
                    } catch {
                        unexpected.withLock { $0.append("\(error)") }
                        break
                    }
                }
            }.start()
        }
        #expect(Threads.wait(atMost: 10) { ok.load(ordering: .relaxed) >= 50 }, "sign-ins under way")
        stopping.store(true, ordering: .relaxed)
        server.stop()
        #expect(clients.wait(timeout: .now() + 15) == .success, "a sign-in never got its answer")
        #expect(unexpected.withLock { $0 }.isEmpty)
        // Every answered sign-in was committed: its session is in the file (8 are the sign-ups').
        let database = try SQLiteDatabase(path: server.directory.path("portvakt.sqlite"))
        defer { database.close() }
        let sessions = try SQLStore(database: database).liveSessionCount(at: server.clock.now())
        #expect(sessions >= 8 + ok.load(ordering: .relaxed))
        #expect(try database.integrityCheck() == "ok")
    }

    @Test(
        "two finalizes racing with one response on two threads: exactly one session",
        arguments: TestEngine.tested)
    func race(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let c = PasskeyClient(server)
        let (credential, _) = try c.signUp("ada")
        let user = try #require(try server.server.store.user(username: "ada"))
        let sessionsBefore = try server.server.sessions.list(userID: user.id).count
        let started = try c.startLogin()
        let body =
            #"{"challengeId":"\#(started.id)","credential":\#(String(decoding: c.authenticator.authenticate(credential, challenge: started.challenge, origin: c.origin).json(), as: UTF8.self)),"client":"native"}"#
        let url = server.publicURL + "/v1/passkeys/login/finalize"
        let statuses = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            let status = (try? InProcessHTTPClient().sendJSON(url: url, json: body).status) ?? -1
            statuses.withLock { $0.append(status) }
        }
        #expect(statuses.withLock { $0.sorted() } == [200, 400])
        let sessionsAfter = try server.server.sessions.list(userID: user.id).count
        #expect(sessionsAfter == sessionsBefore + 1)
    }

    @Test(
        "eight finalizes racing with one counting assertion: one 200, seven passkey.challenge_invalid, no clone in the audit log",
        arguments: TestEngine.tested)
    func raceIsNoClone(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let c = PasskeyClient(server)
        let (credential, _) = try c.signUp("ada")
        let user = try #require(try server.server.store.user(username: "ada"))
        let started = try c.startLogin()
        var counted = SoftwareAuthenticator.Behaviour()
        counted.signCount = 3
        let assertion = c.authenticator.authenticate(
            credential, challenge: started.challenge, origin: c.origin, behaviour: counted)
        let body =
            #"{"challengeId":"\#(started.id)","credential":\#(String(decoding: assertion.json(), as: UTF8.self)),"client":"native"}"#
        let url = server.publicURL + "/v1/passkeys/login/finalize"
        // Threads, not a pool: all eight are in flight at once on a two-core machine too.
        let answers = Mutex<[String]>([])
        let group = DispatchGroup()
        for _ in 0..<8 {
            group.enter()
            Thread {
                defer { group.leave() }
                let answer: String
                if let response = try? InProcessHTTPClient().sendJSON(url: url, json: body) {
                    answer =
                        response.status == 200
                        ? "200" : "\(response.status) \((try? response.problemCode()) ?? "?")"
                } else {
                    answer = "no response"
                }
                answers.withLock { $0.append(answer) }
            }.start()
        }
        group.wait()
        #expect(
            answers.withLock { $0.sorted() }
                == ["200"] + Array(repeating: "400 passkey.challenge_invalid", count: 7))
        // Late, after the race: still a used challenge, never a clone.
        #expect(try c.finalizeLogin(started.id, assertion).problemCode() == "passkey.challenge_invalid")
        let events = try server.server.store.auditEvents(userID: user.id, beforeID: nil, limit: 100)
        #expect(events.filter { $0.action == .passkeyLogin }.count == 1)
        let failures = events.filter { $0.action == .passkeyLoginFailed }
        #expect(
            failures.map { $0.details["code"] ?? "" }
                == Array(repeating: "passkey.challenge_invalid", count: 8))
        #expect(events.allSatisfy { $0.details["counterRegressed"] == nil })
    }

    @Test("usernames are unique after normalisation; invalid ones are refused", arguments: TestEngine.tested)
    func usernames(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        let c = PasskeyClient(server)
        _ = try c.signUp("ada")
        let taken = try c.post("/v1/passkeys/registration/initialize", #"{"username":" ADA "}"#)
        #expect(taken.status == 409)
        #expect(try taken.problemCode() == "user.username_taken")
        for bad in ["ab", "a b c", "semi;colon", String(repeating: "x", count: 65)] {
            let response = try c.post("/v1/passkeys/registration/initialize", #"{"username":"\#(bad)"}"#)
            #expect(try response.problemCode() == "user.invalid_username", "\(bad)")
        }
        // Without a username and without a session there is nobody to add a passkey for.
        #expect(try c.post("/v1/passkeys/registration/initialize", "{}").status == 401)
    }

    @Test("sign-up can be switched off; /v1/methods says so")
    func signupDisabled() throws {
        let server = try TestServer.inProcess(configuration: ["methods": ["passkey": ["signup": false]]])
        defer { server.stop() }
        let c = PasskeyClient(server)
        let response = try c.post("/v1/passkeys/registration/initialize", #"{"username":"ada"}"#)
        #expect(response.status == 403)
        #expect(try response.problemCode() == "passkey.signup_disabled")
        let methods = try c.http.send(.GET, server.publicURL + "/v1/methods").jsonObject()
        #expect(methods["passkey"] as? [String: Bool] == ["enabled": true, "signup": false])
    }

    @Test("well-known documents come from configuration and are 404 when empty")
    func wellKnown() throws {
        let fingerprint = Array(repeating: "AB", count: 32).joined(separator: ":")
        let server = try TestServer.inProcess(configuration: [
            "wellKnown": [
                "appleAppIDs": ["ABCDE12345.com.example.app"],
                "androidApps": [["package": "com.example.app", "sha256Fingerprints": [fingerprint]]],
            ]
        ])
        defer { server.stop() }
        let http = InProcessHTTPClient()
        let apple = try http.send(.GET, server.publicURL + "/.well-known/apple-app-site-association")
        #expect(apple.status == 200 && apple.headers["content-type"] == "application/json")
        #expect(apple.text == #"{"webcredentials":{"apps":["ABCDE12345.com.example.app"]}}"#)
        let links =
            try JSONSerialization.jsonObject(
                with: Data(try http.send(.GET, server.publicURL + "/.well-known/assetlinks.json").body))
            as? [[String: Any]]
        let link = try #require(links?.first)
        #expect(link["relation"] as? [String] == ["delegate_permission/common.get_login_creds"])
        let target = try #require(link["target"] as? [String: Any])
        #expect(target["namespace"] as? String == "android_app")
        #expect(target["package_name"] as? String == "com.example.app")
        #expect(target["sha256_cert_fingerprints"] as? [String] == [fingerprint])
        let webauthn = try http.send(.GET, server.publicURL + "/.well-known/webauthn")
        #expect(webauthn.status == 404)
    }

    @Test("the OpenAPI document lists the passkey routes")
    func openAPI() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let document = try InProcessHTTPClient().send(.GET, "\(server.publicURL)/openapi.json").jsonObject()
        let paths = try #require(document["paths"] as? [String: Any])
        for path in [
            "/v1/passkeys/registration/initialize", "/v1/passkeys/registration/finalize",
            "/v1/passkeys/login/initialize", "/v1/passkeys/login/finalize", "/v1/me/passkeys",
            "/v1/me/passkeys/{id}", "/v1/methods", "/.well-known/apple-app-site-association",
            "/.well-known/assetlinks.json", "/.well-known/webauthn",
        ] {
            #expect(paths[path] != nil, "missing \(path)")
        }
    }

    @Test("issuing challenges is rate-limited per client in the auth class (429)")
    func rateLimit() throws {
        let server = try TestServer.inProcess(configuration: [
            "rateLimits": ["auth": ["burst": 3, "perSecond": 0.01]]
        ])
        defer { server.stop() }
        let c = PasskeyClient(server)
        for _ in 0..<3 { #expect(try c.post("/v1/passkeys/login/initialize", "{}").status == 200) }
        let limited = try c.post("/v1/passkeys/login/initialize", "{}")
        #expect(limited.status == 429)
        #expect(try limited.problemCode() == "rate_limited")
    }
}
