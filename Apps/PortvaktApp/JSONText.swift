import Kernel

/// JSON null in the `[String: Any]` trees the CLI builds and parses (Foundation's `NSNull`).
struct JSONNull: Sendable, Equatable {}

/// The CLI's JSON for `Any` trees, written and read as Foundation's JSONSerialization did on
/// Linux, so the commands' output stays byte-for-byte the same without linking Foundation (and
/// ICU's data) into the binary.
///
/// Values: `[String: Any]`, `[Any]`, `String`, `Bool`, `Int` (and the other fixed-width
/// integers), `Double`, `JSONNull`. Parsing gives the same types: a number is an `Int` when it is
/// integral and fits, else a `Double`.
enum JSONText {
    struct WriteError: Error {
        let message: String
    }

    /// JSONSerialization's `.prettyPrinted` (two-space indent, `"key" : value`, empty containers
    /// as an open and a close line) and `.sortedKeys`; slashes escaped as `\/` like its default.
    static func data(_ value: Any, pretty: Bool = false, sortedKeys: Bool = false) throws(WriteError)
        -> [UInt8]
    {
        var out: [UInt8] = []
        try write(value, pretty: pretty, sortedKeys: sortedKeys, indent: 0, to: &out)
        return out
    }

    private static func write(
        _ value: Any, pretty: Bool, sortedKeys: Bool, indent: Int, to out: inout [UInt8]
    )
        throws(WriteError)
    {
        func newline(_ level: Int) {
            out.append(UInt8(ascii: "\n"))
            out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * level))
        }
        switch value {
        case let object as [String: Any]:
            out.append(UInt8(ascii: "{"))
            let keys = sortedKeys ? object.keys.sorted() : Array(object.keys)
            if pretty { newline(indent + 1) }
            for (index, key) in keys.enumerated() {
                if index > 0 {
                    out.append(UInt8(ascii: ","))
                    if pretty { newline(indent + 1) }
                }
                quote(key, to: &out)
                out.append(contentsOf: pretty ? Array(" : ".utf8) : [UInt8(ascii: ":")])
                try write(object[key]!, pretty: pretty, sortedKeys: sortedKeys, indent: indent + 1, to: &out)
            }
            if pretty {
                if keys.isEmpty { out.removeLast(2 * (indent + 1)) }
                newline(indent)
            }
            out.append(UInt8(ascii: "}"))
        case let array as [Any]:
            out.append(UInt8(ascii: "["))
            if pretty { newline(indent + 1) }
            for (index, element) in array.enumerated() {
                if index > 0 {
                    out.append(UInt8(ascii: ","))
                    if pretty { newline(indent + 1) }
                }
                try write(element, pretty: pretty, sortedKeys: sortedKeys, indent: indent + 1, to: &out)
            }
            if pretty {
                if array.isEmpty { out.removeLast(2 * (indent + 1)) }
                newline(indent)
            }
            out.append(UInt8(ascii: "]"))
        case let text as String: quote(text, to: &out)
        case let flag as Bool: out.append(contentsOf: (flag ? "true" : "false").utf8)
        case is JSONNull: out.append(contentsOf: "null".utf8)
        case let number as Int: out.append(contentsOf: String(number).utf8)
        case let number as Int64: out.append(contentsOf: String(number).utf8)
        case let number as Int32: out.append(contentsOf: String(number).utf8)
        case let number as UInt64: out.append(contentsOf: String(number).utf8)
        case let number as UInt32: out.append(contentsOf: String(number).utf8)
        case let number as UInt8: out.append(contentsOf: String(number).utf8)
        case let number as Double:
            guard number.isFinite else { throw WriteError(message: "JSON has no \(number)") }
            if number == number.rounded(), abs(number) < 1e15 {
                out.append(contentsOf: String(Int64(number)).utf8)
            } else {
                out.append(contentsOf: "\(number)".utf8)
            }
        default:
            throw WriteError(message: "\(type(of: value)) is not a JSON value")
        }
    }

    /// A JSON string as JSONSerialization writes it: `"`, `\` and `/` escaped, \b \f \n \r \t
    /// by name, the other control characters as \u00xx, everything else as it is.
    private static func quote(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: Array("\\\"".utf8))
            case UInt8(ascii: "\\"): out.append(contentsOf: Array("\\\\".utf8))
            case UInt8(ascii: "/"): out.append(contentsOf: Array("\\/".utf8))
            case 0x08: out.append(contentsOf: Array("\\b".utf8))
            case 0x0C: out.append(contentsOf: Array("\\f".utf8))
            case UInt8(ascii: "\n"): out.append(contentsOf: Array("\\n".utf8))
            case UInt8(ascii: "\r"): out.append(contentsOf: Array("\\r".utf8))
            case UInt8(ascii: "\t"): out.append(contentsOf: Array("\\t".utf8))
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: Array("\\u00".utf8))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Parses one JSON text into an `Any` tree, by the same strict parser as every request body
    /// (`StrictJSON`, with its limits for whole documents): duplicate member names, invalid UTF-8
    /// and anything else RFC 8259 does not allow are refused, with the reason and its offset.
    static func parse(_ bytes: [UInt8]) throws(StrictJSON.SyntaxError) -> Any {
        tree(try StrictJSON.parse(bytes, limits: .document), in: bytes)
    }

    private static func tree(_ value: StrictJSON.Value, in bytes: [UInt8]) -> Any {
        switch value {
        case .object(let object):
            var tree: [String: Any] = [:]
            for member in object.members { tree[member.name] = self.tree(member.value, in: bytes) }
            return tree
        case .array(let elements): return elements.map { tree($0, in: bytes) }
        case .string(let text): return text
        case .integer(let number):
            return Int(number)
        case .otherNumber(let range):
            // Well-formed by the parser, so Double reads it (an exponent past its range as infinity).
            let number = Double(String(decoding: bytes[range], as: UTF8.self)) ?? .nan
            // A whole number in Int's range stays an Int ("1.0", "1e3"), as JSONSerialization read it.
            return number == number.rounded() && abs(number) < 9.2e18 ? Int(number) : number
        case .bool(let flag): return flag
        case .null: return JSONNull()
        }
    }
}
