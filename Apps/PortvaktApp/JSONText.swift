import CryptoCore

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

    struct ParseError: Error {}

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

    /// Parses one JSON text (RFC 8259; surrounding white space allowed) into an `Any` tree.
    static func parse(_ bytes: [UInt8]) throws(ParseError) -> Any {
        var parser = Parser(bytes: bytes)
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.index == bytes.count else { throw ParseError() }
        return value
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func expect(_ literal: String) throws(ParseError) {
            let expected = Array(literal.utf8)
            guard index + expected.count <= bytes.count,
                bytes[index..<index + expected.count].elementsEqual(expected)
            else { throw ParseError() }
            index += expected.count
        }

        mutating func value(depth: Int) throws(ParseError) -> Any {
            guard depth < 512, index < bytes.count else { throw ParseError() }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                var object: [String: Any] = [:]
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return object
                }
                while true {
                    skipSpace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw ParseError() }
                    let key = try string()
                    skipSpace()
                    try expect(":")
                    skipSpace()
                    object[key] = try value(depth: depth + 1)
                    skipSpace()
                    guard index < bytes.count else { throw ParseError() }
                    if bytes[index] == UInt8(ascii: ",") {
                        index += 1
                        continue
                    }
                    try expect("}")
                    return object
                }
            case UInt8(ascii: "["):
                index += 1
                var array: [Any] = []
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return array
                }
                while true {
                    skipSpace()
                    array.append(try value(depth: depth + 1))
                    skipSpace()
                    guard index < bytes.count else { throw ParseError() }
                    if bytes[index] == UInt8(ascii: ",") {
                        index += 1
                        continue
                    }
                    try expect("]")
                    return array
                }
            case UInt8(ascii: "\""): return try string()
            case UInt8(ascii: "t"):
                try expect("true")
                return true
            case UInt8(ascii: "f"):
                try expect("false")
                return false
            case UInt8(ascii: "n"):
                try expect("null")
                return JSONNull()
            default: return try number()
            }
        }

        mutating func number() throws(ParseError) -> Any {
            let start = index
            var integral = true
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            let digitsStart = index
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
            guard index > digitsStart, bytes[digitsStart] != 0x30 || index == digitsStart + 1 else {
                throw ParseError()
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                integral = false
                index += 1
                let fraction = index
                while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
                guard index > fraction else { throw ParseError() }
            }
            if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
                integral = false
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")
                {
                    index += 1
                }
                let exponent = index
                while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
                guard index > exponent else { throw ParseError() }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            if integral, let number = Int(text) { return number }
            guard let number = Double(text) else { throw ParseError() }
            if number == number.rounded(), abs(number) < 9.2e18 { return Int(number) }
            return number
        }

        mutating func string() throws(ParseError) -> String {
            index += 1  // the opening quote
            var out: [UInt8] = []
            while true {
                guard index < bytes.count else { throw ParseError() }
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard let text = String(validating: out, as: UTF8.self) else { throw ParseError() }
                    return text
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { throw ParseError() }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800...0xDBFF).contains(scalar) {
                            try expect("\\u")
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw ParseError() }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw ParseError() }
                        out.append(contentsOf: String(Character(unicode)).utf8)
                    default: throw ParseError()
                    }
                case 0..<0x20: throw ParseError()
                default: out.append(byte)
                }
            }
        }

        mutating func hex4() throws(ParseError) -> UInt32 {
            guard index + 4 <= bytes.count,
                let pair = Hex.decode(String(decoding: bytes[index..<index + 4], as: UTF8.self))
            else { throw ParseError() }
            index += 4
            return UInt32(pair[0]) << 8 | UInt32(pair[1])
        }
    }
}
