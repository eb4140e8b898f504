public import Foundation
import Synchronization

/// Severity of a log line: the configuration's `logging.level` values, in order.
public typealias LogLevel = PortvaktConfiguration.LogLevel

extension PortvaktConfiguration.LogLevel: Comparable {
    private var rank: Int { Self.allCases.firstIndex(of: self) ?? 0 }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rank < rhs.rank }
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
        object["level"] = level.rawValue
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
