import CryptoCore
import Glibc

/// A JSON log line under construction, as bytes: what the access log and the server's lifecycle
/// log both write. Built by hand rather than with JSONSerialization and a date formatter: it runs
/// for every request, and the Foundation formatters alone keep megabytes of the binary resident.
public struct LogLine: Sendable {
    /// The bytes so far.
    public private(set) var bytes: [UInt8] = []

    /// An empty line (the access log's hot path appends its fixed parts itself).
    init() { bytes.reserveCapacity(256) }

    /// A line `{"ts":"<now>","level":"<level>","msg":"<message>"`, ready for `add` and `finish`.
    public init(level: String, message: String) {
        self.init()
        append("{\"ts\":\"")
        appendTimestamp()
        append("\",\"level\":")
        appendJSONString(level)
        append(",\"msg\":")
        appendJSONString(message)
    }

    /// Adds a string member. Callers pass no secrets: tokens, cookies and personal numbers never
    /// reach a log.
    public mutating func add(_ key: String, _ value: String) {
        append(",")
        appendJSONString(key)
        append(":")
        appendJSONString(value)
    }

    /// Closes the object and returns the line (without a newline).
    public mutating func finish() -> [UInt8] {
        append("}")
        return bytes
    }

    /// Appends literal text.
    mutating func append(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends `value` in decimal, zero-padded to `width` digits.
    mutating func appendDecimal(_ value: UInt64, width: Int = 1) {
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var remaining = value
        withUnsafeMutableBytes(of: &digits) { raw in
            repeat {
                raw[count] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
                count += 1
            } while remaining > 0 || count < width
            for index in stride(from: count - 1, through: 0, by: -1) { bytes.append(raw[index]) }
        }
    }

    /// Appends `text` as a JSON string literal with quotes, backslashes and control characters
    /// escaped.
    mutating func appendJSONString(_ text: String) {
        JSONWriter.appendQuoted(text, to: &bytes)
    }

    /// Appends the current UTC time as `YYYY-MM-DDTHH:MM:SS.mmmZ`, formatted by hand: a
    /// DateFormatter per request is slow and a shared one is not thread-safe.
    mutating func appendTimestamp() {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        appendTimestamp(seconds: Int(now.tv_sec), milliseconds: now.tv_nsec / 1_000_000)
    }

    /// Appends the UTC time `seconds` after the epoch (plus `milliseconds`).
    mutating func appendTimestamp(seconds: Int, milliseconds: Int) {
        UTCTimestamp.append(seconds: seconds, milliseconds: milliseconds, to: &bytes)
    }
}
