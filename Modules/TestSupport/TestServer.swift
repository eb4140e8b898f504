public import CryptoCore
public import Foundation
public import Kernel
public import PortvaktApp
public import SessionCore
public import Storage

/// A whole Portvakt server in the test process, on free ports, with its data in a fresh temporary
/// directory and a fixed clock. Stop it with `stop()`; the directory is removed then.
public final class TestServer: Sendable {
    /// The running server (its stores and services are there for arranging test data).
    public let server: PortvaktServer
    /// The fixed clock every service uses.
    public let clock: FixedClock
    /// The temporary data directory, removed when the server value goes away.
    public let directory: TemporaryDirectory
    /// http://127.0.0.1:PORT of the public listener.
    public let publicURL: String
    /// http://127.0.0.1:PORT of the admin listener.
    public let adminURL: String
    /// The admin token created on start.
    public let adminToken: String

    /// Starts a server. `configure` receives a JSON object of configuration keys to merge over the
    /// test defaults (ports 0, quiet logging).
    /// `certificateClock` judges certificate lifetimes (the real time unless a test moves it);
    /// `environment` adds variables (secrets such as `PORTVAKT_REVIEW_CODE`) to the data directory's.
    public init(
        configuration json: [String: Any] = [:], environment: [String: String] = [:],
        clock: FixedClock = FixedClock(), certificateClock: any WallClock = SystemClock()
    ) throws {
        directory = try TemporaryDirectory()
        self.clock = clock
        var object: [String: Any] = [
            "listen": ["public": ["port": 0], "admin": ["port": 0]],
            "logging": ["level": "error", "accessLog": false],
        ]
        object.merge(json) { _, new in new }
        let data = try JSONSerialization.data(withJSONObject: object)
        let configuration = try PortvaktConfiguration.parse(
            json: [UInt8](data), environment: environment.merging(["PORTVAKT_DATA": directory.path]) { $1 })
        server = try PortvaktServer(
            configuration: configuration, logger: Logger(minimum: .error), clock: clock,
            certificateClock: certificateClock)
        let ports = try server.start()
        publicURL = "http://127.0.0.1:\(ports.public)"
        adminURL = "http://127.0.0.1:\(ports.admin ?? 0)"
        adminToken = server.createdAdminToken ?? ""
    }

    /// Stops the server.
    public func stop() {
        server.shutdown(grace: 2)
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
