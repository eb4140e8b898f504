import Dispatch
import Glibc
import HTTPEngine
import Kernel
import PortvaktAPI

/// Severity of a log line: the configuration's `logging.level` values, in order.
public typealias LogLevel = PortvaktConfiguration.LogLevel

extension PortvaktConfiguration.LogLevel: Comparable {
    private var rank: Int { Self.allCases.firstIndex(of: self) ?? 0 }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rank < rhs.rank }
}

/// Writes one JSON object per line to standard error. Callers pass only non-secret fields:
/// never tokens, cookies, personal numbers or request bodies.
///
/// Lines are gathered in memory and written in batches (every 100 ms, or at once past 64 KiB):
/// with one write(2) per request, the request threads queued on the log and a quarter of the
/// throughput went to that. Lifecycle lines (`log`) are written through at once, so an operator
/// or a script watching for "listening" sees them immediately. A hard kill can lose at most the
/// last 100 ms of access-log lines, never a lifecycle line.
public final class Logger: Sendable {
    private let minimum: LogLevel
    private let buffer = LogBuffer()
    private let flusher: Locked<any DispatchSourceTimer>

    /// Creates a logger that drops lines below `minimum`.
    public init(minimum: LogLevel = .info) {
        self.minimum = minimum
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "portvakt.log"))
        timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
        timer.setEventHandler { [buffer] in buffer.flush() }
        timer.resume()
        flusher = Locked(timer)
    }

    deinit {
        flusher.withLock { $0.cancel() }
        buffer.flush()
    }

    /// Logs `message` with extra string fields (in key order), and writes it out at once.
    public func log(_ level: LogLevel, _ message: String, _ fields: [String: String] = [:]) {
        guard level >= minimum else { return }
        var line = LogLine(level: level.rawValue, message: message)
        for key in fields.keys.sorted() { line.add(key, fields[key] ?? "") }
        buffer.append(line.finish())
        buffer.flush()
    }

    /// Queues an already-encoded JSON line (the HTTP access log builds its own).
    public func write(line: some Collection<UInt8>) {
        buffer.append(line)
    }

    /// Writes everything queued so far.
    public func flush() {
        buffer.flush()
    }
}

/// Lines waiting for standard error, written in order by whoever flushes.
private final class LogBuffer: Sendable {
    private let pending = Locked<[UInt8]>([])
    /// Held while a batch is taken and written, so batches reach the file in order.
    private let output = Locked<Int32>(STDERR_FILENO)
    private static let batchBytes = 64 * 1024

    func append(_ line: some Collection<UInt8>) {
        let full = pending.withLock { buffer in
            buffer.append(contentsOf: line)
            buffer.append(0x0a)
            return buffer.count >= Self.batchBytes
        }
        if full { flush() }
    }

    func flush() {
        output.withLock { descriptor in
            let batch = pending.withLock { buffer in
                defer { buffer.removeAll(keepingCapacity: true) }
                return buffer
            }
            var offset = 0
            batch.withUnsafeBytes { raw in
                while offset < raw.count {
                    let written = Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                    // EINTR: try again; any other failure (a closed stderr): drop the batch rather
                    // than block request threads on a log that cannot be written.
                    if written < 0 && errno == EINTR { continue }
                    if written <= 0 { return }
                    offset += written
                }
            }
        }
    }
}
