public import Foundation

/// The built `portvakt` binary run as a child process, for what only a real process shows:
/// signals, exit codes, crash safety, the command line.
public final class PortvaktProcess: @unchecked Sendable {
    // @unchecked: the pipes' buffers are only touched under `lock`.
    private let process = Process()
    private let lock = NSLock()
    private var stdoutText = ""
    private var stderrText = ""
    /// Signalled once per pipe when it reaches end of file (the child closed it by exiting).
    private let drained = DispatchSemaphore(value: 0)
    /// Set once `wait` has seen both pipes drained, so a second `wait` does not wait again.
    private var outputComplete = false
    /// Whether either pipe has delivered a byte; `firstOutput` is signalled when it first does.
    private var sawOutput = false
    private let firstOutput = DispatchSemaphore(value: 0)

    /// The path of the built binary: $PORTVAKT_BIN, else .build/debug/portvakt beside Package.swift.
    public static var binaryPath: String {
        if let path = ProcessInfo.processInfo.environment["PORTVAKT_BIN"] { return path }
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
                return url.appendingPathComponent(".build/debug/portvakt").path
            }
        }
        return "portvakt"
    }

    /// Runs `portvakt arguments` to completion; returns its exit status and output.
    public static func run(
        _ arguments: [String], environment: [String: String] = [:], stdin: String? = nil
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        let child = try PortvaktProcess(arguments, environment: environment, stdin: stdin)
        let status = child.wait()
        return (status, child.stdout, child.stderr)
    }

    /// Starts `portvakt arguments` in the background.
    public init(_ arguments: [String], environment: [String: String] = [:], stdin: String? = nil) throws {
        process.executableURL = URL(fileURLWithPath: Self.binaryPath)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { _, new in new }
        process.environment = env
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let input = Pipe()
        process.standardInput = input
        // One reading thread per pipe, blocking until data or end of file: no dispatch source
        // (clearing a readability handler from inside itself crashes libdispatch on Linux).
        Thread { [self] in collect(out.fileHandleForReading) { $0.stdoutText += $1 } }.start()
        Thread { [self] in collect(err.fileHandleForReading) { $0.stderrText += $1 } }.start()
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try? input.fileHandleForWriting.close()
    }

    /// Appends what `handle` delivers until end of file (the child exited), then says so.
    private func collect(_ handle: FileHandle, into append: (PortvaktProcess, String) -> Void) {
        while case let data = handle.availableData, !data.isEmpty {
            let first = lock.withLock {
                append(self, String(decoding: data, as: UTF8.self))
                defer { sawOutput = true }
                return !sawOutput
            }
            if first { firstOutput.signal() }
        }
        drained.signal()
    }

    /// What the process wrote to standard output so far.
    public var stdout: String { lock.withLock { stdoutText } }
    /// What the process wrote to standard error so far.
    public var stderr: String { lock.withLock { stderrText } }
    /// The process id.
    public var pid: Int32 { process.processIdentifier }
    /// Whether it still runs.
    public var isRunning: Bool { process.isRunning }

    /// Sends `signal` to the process.
    public func send(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// Waits for exit and returns the status (for a signal death, 128 + the signal). A process
    /// still running after `timeout` seconds is killed (SIGKILL, so the status says so): a test
    /// fails on its status rather than hanging the run.
    @discardableResult
    public func wait(timeout: TimeInterval = 60) -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { send(SIGKILL) }
        process.waitUntilExit()
        // Every byte it wrote, not only what arrived by now: wait for both pipes' end of file
        // (bounded, in case a grandchild still holds one open).
        if !lock.withLock({ outputComplete }) {
            for _ in 0..<2 { _ = drained.wait(timeout: .now() + 5) }
            lock.withLock { outputComplete = true }
        }
        return process.terminationReason == .uncaughtSignal
            ? 128 + process.terminationStatus : process.terminationStatus
    }

    /// Waits until the process has written its first byte to standard output or standard error,
    /// and returns at once then (woken by the reading thread, not by polling), so a test can act
    /// at the moment the process first says anything; false after `timeout` seconds.
    public func waitForFirstOutput(timeout: TimeInterval = 10) -> Bool {
        guard firstOutput.wait(timeout: .now() + timeout) == .success else { return false }
        // Leave it signalled for any later caller.
        firstOutput.signal()
        return true
    }

    /// Waits until standard output contains `text` (the two pipes are read independently, so
    /// what it printed before a log line may arrive after it); false after `timeout` seconds.
    public func waitForStdout(containing text: String, timeout: TimeInterval = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !stdout.contains(text) {
            guard Date() < deadline else { return false }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return true
    }

    /// Waits until standard error has a JSON log line with "msg":"listening" for `listener`,
    /// and returns its port.
    public func waitForPort(listener: String, timeout: TimeInterval = 20) throws -> Int {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            for line in stderr.split(separator: "\n") {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    object["msg"] as? String == "listening", object["listener"] as? String == listener,
                    let address = object["address"] as? String,
                    let port = address.split(separator: ":").last.flatMap({ Int($0) })
                else { continue }
                return port
            }
            guard isRunning else { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw ProcessFailure(message: "portvakt did not report a \(listener) port; stderr:\n\(stderr)")
    }
}

/// A child process that did not behave.
public struct ProcessFailure: Error, CustomStringConvertible {
    /// What happened.
    public let message: String
    public var description: String { message }

    public init(message: String) { self.message = message }
}
