import CryptoCore
public import Foundation
public import Kernel
public import PortvaktApp
public import SessionCore
import Storage

/// A whole Portvakt server in the test process, with its data in a fresh temporary directory and a
/// fixed clock: listening on free ports (`.live`), or answering `InProcessHTTPClient` through the
/// same pipelines without a socket (`.inProcess`). On SQLite (the default) or on a PostgreSQL
/// database of its own on the test server (`engine: .postgresql`). Stop it with `stop()`; the
/// database is closed and the directory (and PostgreSQL database) removed when the value goes away.
public final class TestServer: Sendable {
    /// How a test's requests reach the server (HummingbirdTesting's `.live` and `.router`).
    public enum Transport: Sendable {
        /// Listening on loopback ports, for `HTTPTestClient` (libcurl) and other processes: what
        /// tests of connections, the browser or the `portvakt` binary need.
        case live
        /// Never listening: `InProcessHTTPClient` requests go through the listeners' pipelines in
        /// process. What API tests need; no ports, no MHD threads.
        case inProcess
    }

    /// The server (its stores and services are there for arranging test data).
    public let server: PortvaktServer
    /// How requests reach it.
    public let transport: Transport
    /// The fixed clock every service uses.
    public let clock: FixedClock
    /// The temporary data directory, removed when the server value goes away.
    public let directory: TemporaryDirectory
    /// The public listener: http://127.0.0.1:PORT, or an `InProcessEndpoint`'s URL in process.
    public let publicURL: String
    /// The admin listener: http://127.0.0.1:PORT, or an `InProcessEndpoint`'s URL in process.
    public let adminURL: String
    /// The admin token created on start.
    public let adminToken: String
    /// The engine the server's data is on.
    public let engine: TestEngine
    /// The in-process endpoints, closed by `stop()`; empty when live.
    private let endpoints: [InProcessEndpoint]
    /// The PostgreSQL database on `.postgresql`, dropped after the server's pool is closed.
    private let postgres: PostgreSQLTestDatabase?

    /// The app identifier test servers list in `bankid.appIdentifiers`.
    public static let appIdentifier = "se.example.portvakt"

    /// The members a native BankID start sends about its app and device (JSON, no braces).
    public static let nativeAppMembers =
        #""appIdentifier":"se.example.portvakt","deviceOS":"iOS 18.1","deviceModelName":"Apple iPhone16,2","deviceIdentifier":"test-device-1""#

    /// Builds a server and, when live, starts it.
    /// - Parameters:
    ///   - transport: `.live` (sockets) or `.inProcess` (no socket; use `InProcessHTTPClient`).
    ///   - engine: where the data is: SQLite in the data directory, or a fresh PostgreSQL
    ///     database on the test server (`TestEngine.tested` says which this run tests).
    ///   - json: configuration keys to merge over the test defaults (ports 0, quiet logging; on
    ///     PostgreSQL the `storage` section naming the test database, whose keys a `storage`
    ///     given here overrides one by one).
    ///   - environment: variables (secrets such as `PORTVAKT_REVIEW_CODE`) added to the data
    ///     directory's (and on PostgreSQL the database password's).
    ///   - clock: the clock every service uses.
    ///   - certificateClock: judges certificate lifetimes (the real time unless a test moves it).
    public init(
        _ transport: Transport = .live, engine: TestEngine = .sqlite, configuration json: [String: Any] = [:],
        environment: [String: String] = [:], clock: FixedClock = FixedClock(),
        certificateClock: any WallClock = SystemClock()
    ) throws {
        self.transport = transport
        self.engine = engine
        directory = try TemporaryDirectory()
        self.clock = clock
        var object: [String: Any] = [
            "listen": ["public": ["port": 0], "admin": ["port": 0]],
            "logging": ["level": "error", "accessLog": false],
            "bankid": ["appIdentifiers": [Self.appIdentifier]],
        ]
        // A `bankid` section given here keeps the test app identifier unless it names its own.
        var json = json
        if var bankid = json["bankid"] as? [String: Any], bankid["appIdentifiers"] == nil {
            bankid["appIdentifiers"] = [Self.appIdentifier]
            json["bankid"] = bankid
        }
        object.merge(json) { _, new in new }
        var environment = environment.merging(["PORTVAKT_DATA": directory.path]) { $1 }
        switch engine {
        case .sqlite:
            postgres = nil
        case .postgresql:
            let postgres = try PostgreSQLTestDatabase()
            self.postgres = postgres
            object["storage"] = Self.storage(postgres, over: json["storage"])
            environment.merge(postgres.passwordEnvironment) { $1 }
        }
        let data = try JSONSerialization.data(withJSONObject: object)
        let configuration = try PortvaktConfiguration.parse(json: [UInt8](data), environment: environment)
        server = try PortvaktServer(
            configuration: configuration, logger: Logger(minimum: .error), clock: clock,
            certificateClock: certificateClock)
        switch transport {
        case .live:
            let ports = try server.start()
            publicURL = "http://127.0.0.1:\(ports.public)"
            adminURL = "http://127.0.0.1:\(ports.admin ?? 0)"
            endpoints = []
        case .inProcess:
            let listeners = server.httpServers
            let publicEndpoint = InProcessEndpoint(listeners.public)
            let adminEndpoint = listeners.admin.map { InProcessEndpoint($0) }
            publicURL = publicEndpoint.url
            // With the admin listener off nothing answers there, as nothing listens on port 0.
            adminURL = adminEndpoint?.url ?? "http://in-process-none.invalid"
            endpoints = [publicEndpoint] + (adminEndpoint.map { [$0] } ?? [])
        }
        adminToken = server.createdAdminToken ?? ""
    }

    /// Builds a server that never listens, as `TestServer(.inProcess, ...)` does. A factory so the
    /// configuration literal stays the only argument: swift-format then leaves it where it was, and
    /// moving a test in process changes one line. `engine` comes first, so a test on every engine
    /// names it before the literal.
    public static func inProcess(
        engine: TestEngine = .sqlite, configuration json: [String: Any] = [:],
        environment: [String: String] = [:], clock: FixedClock = FixedClock(),
        certificateClock: any WallClock = SystemClock()
    ) throws -> TestServer {
        try TestServer(
            .inProcess, engine: engine, configuration: json, environment: environment, clock: clock,
            certificateClock: certificateClock)
    }

    // The pool is closed here, before the stored properties go: the PostgreSQL database is then
    // dropped with no connection of ours to terminate, and the SQLite file closed before its
    // directory is removed. Closing again after `stop()` does nothing.
    deinit { server.engine.close() }

    /// The `storage` section for `postgres`: its server and database, a small pool (tests run in
    /// parallel against one server), then whatever the test's own `storage` section says.
    private static func storage(_ postgres: PostgreSQLTestDatabase, over given: Any?) -> [String: Any] {
        var section = postgres.storageJSON
        var connection = section["postgresql"] as? [String: Any] ?? [:]
        connection["poolSize"] = 4
        connection["applicationName"] = "portvakt-tests"
        let given = given as? [String: Any] ?? [:]
        connection.merge(given["postgresql"] as? [String: Any] ?? [:]) { $1 }
        section.merge(given) { $1 }
        section["postgresql"] = connection
        return section
    }

    /// Stops the server: in process, its endpoints stop answering first, as a listener closes.
    public func stop() {
        for endpoint in endpoints { endpoint.close() }
        server.shutdown(grace: 2)
    }

    /// A client that reaches this server: `HTTPTestClient` when live, `InProcessHTTPClient` in
    /// process. For helpers shared by suites of both kinds; one per thread, as with curl.
    public func makeClient() -> any HTTPTestTransport {
        switch transport {
        case .live: HTTPTestClient()
        case .inProcess: InProcessHTTPClient()
        }
    }

    /// Creates a user directly in storage, as later login methods will.
    @discardableResult
    public func makeUser(username: String, displayName: String? = nil) throws -> User {
        let user = User(
            id: try SystemRandom().token(byteCount: 16), username: username,
            displayName: displayName ?? username, createdAt: clock.now())
        try server.store.insertUser(user)
        return user
    }

    /// Opens a session for `user` through the library API; returns its token.
    public func signIn(_ user: User, as kind: ClientKind = .native) throws -> IssuedSession {
        try server.sessions.issue(userID: user.id, clientKind: kind, authMethod: .passkey)
    }
}

/// A fresh directory under the system temporary directory, removed with its contents when the
/// value goes away.
public final class TemporaryDirectory: Sendable {
    /// Where the directory is.
    public let url: URL

    /// Creates a new empty directory.
    public init(prefix: String = "portvakt-test") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "\(prefix)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// The directory's path.
    public var path: String { url.path }

    /// The path of `name` inside the directory (not created).
    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }
}
