import Foundation
import Synchronization

/// Severity of a log line.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case debug, info, warning, error

    /// The name used in configuration and in each line's "level" field.
    public var name: String {
        switch self {
        case .debug: "debug"
        case .info: "info"
        case .warning: "warning"
        case .error: "error"
        }
    }

    /// The level with this name, if any.
    public init?(name: String) {
        guard let level = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = level
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Writes one JSON object per line to standard error. Callers pass only non-secret fields:
/// never tokens, cookies, personal numbers or request bodies.
public final class Logger: Sendable {
    private let minimum: LogLevel
    private let output = Mutex(FileHandle.standardError)

    /// Creates a logger that drops lines below `minimum`.
    public init(minimum: LogLevel = .info) {
        self.minimum = minimum
    }

    /// Logs `message` with extra string fields.
    public func log(_ level: LogLevel, _ message: String, _ fields: [String: String] = [:]) {
        guard level >= minimum else { return }
        var object: [String: String] = fields
        object["ts"] = Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        object["level"] = level.name
        object["msg"] = message
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else {
            return
        }
        write(line: data)
    }

    /// Writes an already-encoded JSON line (the HTTP access log builds its own).
    public func write(line: some DataProtocol) {
        var bytes = Data(line)
        bytes.append(0x0a)
        output.withLock { $0.write(bytes) }
    }
}
