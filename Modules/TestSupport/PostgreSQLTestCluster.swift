import Foundation
import Glibc

/// A PostgreSQL cluster of a test's own (Tools/postgres-test-cluster.sh with a state file of its
/// own), for fault tests that stop the server: the shared cluster serves every other test at the
/// same time and must stay up. Durable (the shared one is not), since its outages are crashes.
/// Stopped and removed when the value goes.
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

    /// Runs the script's `command` and returns what it printed.
    ///
    /// posix_spawn and a blocking waitpid rather than Foundation's Process, which can miss the
    /// exit of a script whose child (the server) outlives it and then waits for ever; and output
    /// to files rather than pipes, which the server would hold open for as long as it runs.
    @discardableResult
    private static func run(_ script: String, _ command: String, state: String) throws -> String {
        let output = state + ".\(command).out"
        let errors = state + ".\(command).err"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var environment = ProcessInfo.processInfo.environment
        environment["PORTVAKT_TEST_POSTGRES_STATE"] = state
        // Durable, unlike the shared cluster: an outage here is a crash, and a crash must not
        // lose what the server acknowledged (fsync and synchronous_commit on).
        environment["PORTVAKT_TEST_POSTGRES_DURABLE"] = "1"
        let words: [String] = ["/bin/bash", script, command]
        let arguments: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        let variables: [UnsafeMutablePointer<CChar>?] =
            environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (arguments + variables).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/bash", &actions, nil, arguments, variables)
        guard spawned == 0 else {
            throw ProcessFailure(message: "could not run postgres-test-cluster.sh: errno \(spawned)")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1, errno == EINTR {}
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        // Exited normally with status 0 (WIFEXITED and WEXITSTATUS, which Swift does not import).
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            let problem = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            throw ProcessFailure(message: "postgres-test-cluster.sh \(command) failed: \(problem)")
        }
        return text
    }
}
