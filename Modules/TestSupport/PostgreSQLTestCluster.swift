public import Foundation

/// A PostgreSQL cluster of a test's own (Tools/postgres-test-cluster.sh with a state file of its
/// own), for fault tests that stop the server: the shared cluster serves every other test at the
/// same time and must stay up. Stopped and removed when the value goes.
public final class PostgreSQLTestCluster: @unchecked Sendable {
    /// Its URL (with the password; never print it).
    public let url: String
    private let folder: TemporaryDirectory
    private let script: String

    /// Starts a new cluster (a few seconds: initdb, certificates, a role and a database).
    public init() throws {
        folder = try TemporaryDirectory(prefix: "portvakt-cluster-state")
        var root = URL(fileURLWithPath: #filePath)
        while root.path != "/",
            !FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path)
        {
            root.deleteLastPathComponent()
        }
        script = root.appendingPathComponent("Tools/postgres-test-cluster.sh").path
        try Self.run(script, "start", state: folder.path("state"))
        url = try Self.run(script, "url", state: folder.path("state")).trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    /// Stops the server at once, as a crash would; the data stays for `resume`.
    public func pause() throws { try Self.run(script, "pause", state: folder.path("state")) }

    /// Starts the server again on the same port.
    public func resume() throws { try Self.run(script, "resume", state: folder.path("state")) }

    deinit { _ = try? Self.run(script, "stop", state: folder.path("state")) }

    @discardableResult
    private static func run(_ script: String, _ command: String, state: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [script, command]
        var environment = ProcessInfo.processInfo.environment
        environment["PORTVAKT_TEST_POSTGRES_STATE"] = state
        process.environment = environment
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let problem = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ProcessFailure(message: "postgres-test-cluster.sh \(command) failed: \(problem)")
        }
        return text
    }
}
