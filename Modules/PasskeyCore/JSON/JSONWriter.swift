/// Writes compact JSON in the order members are written, so options serialize deterministically.
///
/// Only what options need: objects, arrays, strings, integers and booleans. Commas are tracked per
/// open container, so callers write members in sequence and never think about separators.
struct JSONWriter {
    /// The UTF-8 output so far.
    private(set) var bytes: [UInt8] = []
    /// For each open container: whether it already holds an entry (so the next needs a comma).
    private var hasEntry: [Bool] = []

    init() { bytes.reserveCapacity(512) }

    /// Writes `{`, runs `body` for the members, then `}`.
    mutating func object(_ body: (inout JSONWriter) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "{"))
        hasEntry.append(false)
        body(&self)
        hasEntry.removeLast()
        bytes.append(UInt8(ascii: "}"))
    }

    /// Writes `[`, runs `body` for the elements, then `]`.
    mutating func array(_ body: (inout JSONWriter) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "["))
        hasEntry.append(false)
        body(&self)
        hasEntry.removeLast()
        bytes.append(UInt8(ascii: "]"))
    }

    /// Writes a member name; the value written next belongs to it.
    mutating func key(_ name: String) {
        separate()
        appendString(name)
        bytes.append(UInt8(ascii: ":"))
        // The value after a key must not get its own comma.
        hasEntry[hasEntry.count - 1] = false
    }

    /// Writes a string value.
    mutating func string(_ value: String) {
        separate()
        appendString(value)
    }

    /// Writes an integer value.
    mutating func integer(_ value: Int64) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
    }

    /// Writes a boolean value.
    mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// Writes `"name": "value"`.
    mutating func member(_ name: String, _ value: String) {
        key(name)
        string(value)
    }

    /// Writes the comma an entry needs when it is not the first in its container.
    private mutating func separate() {
        guard let last = hasEntry.last else { return }
        if last { bytes.append(UInt8(ascii: ",")) }
        hasEntry[hasEntry.count - 1] = true
    }

    /// Appends a quoted string, escaping what RFC 8259 requires.
    private mutating func appendString(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: Array("\\u00".utf8))
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0x0f)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
