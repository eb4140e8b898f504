/// Writes compact JSON in the order members are written: WebAuthn options, API responses and
/// stored documents serialize deterministically, without Foundation's encoder on the hot path.
///
/// Objects, arrays, strings, integers, booleans and null. Commas are tracked per open container,
/// so callers write members in sequence and never think about separators.
public struct JSONWriter: Sendable {
    /// The UTF-8 output so far.
    public private(set) var bytes: [UInt8] = []
    /// For each open container: whether it already holds an entry (so the next needs a comma).
    private var hasEntry: [Bool] = []

    /// An empty writer.
    public init() { bytes.reserveCapacity(512) }

    /// Writes `{`, runs `body` for the members, then `}`.
    public mutating func object(_ body: (inout JSONWriter) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "{"))
        hasEntry.append(false)
        body(&self)
        hasEntry.removeLast()
        bytes.append(UInt8(ascii: "}"))
    }

    /// Writes `[`, runs `body` for the elements, then `]`.
    public mutating func array(_ body: (inout JSONWriter) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "["))
        hasEntry.append(false)
        body(&self)
        hasEntry.removeLast()
        bytes.append(UInt8(ascii: "]"))
    }

    /// Writes a member name; the value written next belongs to it.
    public mutating func key(_ name: String) {
        separate()
        Self.appendQuoted(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        // The value after a key must not get its own comma.
        hasEntry[hasEntry.count - 1] = false
    }

    /// Writes a string value.
    public mutating func string(_ value: String) {
        separate()
        Self.appendQuoted(value, to: &bytes)
    }

    /// Writes an integer value.
    public mutating func integer(_ value: Int64) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
    }

    /// Writes a boolean value.
    public mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// Writes `null`.
    public mutating func null() {
        separate()
        bytes.append(contentsOf: "null".utf8)
    }

    /// Writes `"name": "value"`.
    public mutating func member(_ name: String, _ value: String) {
        key(name)
        string(value)
    }

    /// Writes `"name": "value"`, or `"name": null` when `value` is nil.
    public mutating func member(_ name: String, _ value: String?) {
        key(name)
        if let value { string(value) } else { null() }
    }

    /// Writes `"name": value` for an integer.
    public mutating func member(_ name: String, _ value: Int64) {
        key(name)
        integer(value)
    }

    /// Writes the comma an entry needs when it is not the first in its container.
    private mutating func separate() {
        guard let last = hasEntry.last else { return }
        if last { bytes.append(UInt8(ascii: ",")) }
        hasEntry[hasEntry.count - 1] = true
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Appends `text` as a quoted JSON string, escaping what RFC 8259 requires (quote, backslash,
    /// control characters) and DEL, so the output is safe in a log line too.
    public static func appendQuoted(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        // Ids, names and addresses rarely need escaping: one scan, then one copy.
        let copied = text.utf8.withContiguousStorageIfAvailable { utf8 -> Bool in
            guard !anyNeedsEscape(utf8) else { return false }
            bytes.append(contentsOf: utf8)
            return true
        }
        if copied != true {
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
                case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
                case UInt8(ascii: "\n"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
                case UInt8(ascii: "\r"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
                case UInt8(ascii: "\t"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
                case 0..<0x20, 0x7f:
                    bytes.append(contentsOf: Array("\\u00".utf8))
                    bytes.append(hexDigits[Int(byte >> 4)])
                    bytes.append(hexDigits[Int(byte & 0x0f)])
                default:
                    // Bytes of multi-byte sequences pass through: a Swift String is valid UTF-8.
                    bytes.append(byte)
                }
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == 0x7f || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    /// Whether any byte of `utf8` `needsEscape`: eight bytes at a time, then the rest one by one
    /// (every member name and value of a response and every access-log field passes here).
    static func anyNeedsEscape(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = utf8.baseAddress else { return false }
        let raw = UnsafeRawPointer(base)
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        var position = 0
        while utf8.count - position >= 8 {
            let word = raw.loadUnaligned(fromByteOffset: position, as: UInt64.self)
            // `(x - ones) & ~x` has a byte's high bit set for some byte exactly when some byte of x
            // is zero, so x = word ^ 0x22… finds a quote, ^ 0x5c… a backslash and ^ 0x7f… DEL;
            // `(word - 0x20…) & ~word` finds a byte below 0x20 (exact for any subtrahend up to
            // 0x80). Bytes of 0x80 and up (UTF-8 sequences) flag none of the four by themselves.
            let quote = word ^ (ones &* 0x22)
            let backslash = word ^ (ones &* 0x5c)
            let delete = word ^ (ones &* 0x7f)
            let flagged =
                ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
                | ((delete &- ones) & ~delete) | ((word &- ones &* 0x20) & ~word)
            if flagged & highs != 0 { return true }
            position += 8
        }
        while position < utf8.count {
            if needsEscape(utf8[position]) { return true }
            position += 1
        }
        return false
    }
}
