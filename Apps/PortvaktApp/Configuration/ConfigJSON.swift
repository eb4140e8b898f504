/// A JSON value as written in a configuration file, keeping what JSONSerialization loses: whether a
/// number was written as an integer, the number's text (for messages), duplicate keys and positions.
enum ConfigJSON {
    case null
    case bool(Bool)
    /// A number written without fraction or exponent that fits in `Int`.
    case integer(Int)
    /// Any other number; `text` is how it was written, so messages can quote it exactly.
    case number(Double, text: String)
    case string(String)
    case array([ConfigJSON])
    case object(ConfigJSONObject)

    /// How a value reads in a message after "got": quoted strings, numbers as written, kinds otherwise.
    var shortDescription: String {
        switch self {
        case .null: return "null"
        case .bool(let value): return value ? "true" : "false"
        case .integer(let value): return String(value)
        case .number(_, let text): return text
        case .string(let value):
            // Long strings are cut so one bad value cannot flood the report.
            let shown = value.count > 60 ? String(value.prefix(57)) + "..." : value
            return ConfigJSONWriter.quoted(shown)
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

/// An object's members in file order; duplicates are kept so the reader can report them.
struct ConfigJSONObject {
    /// One member and the line its key starts on.
    struct Member {
        var key: String
        var value: ConfigJSON
        var line: Int
    }

    var members: [Member] = []

    /// The first member named `key`.
    func member(_ key: String) -> Member? { members.first { $0.key == key } }
}

/// A syntax error with its 1-based position (columns count Unicode scalars).
struct ConfigJSONSyntaxError: Error {
    var line: Int
    var column: Int
    var message: String
}

/// A strict RFC 8259 parser: no comments, no trailing commas, no NaN, UTF-8 only, bounded nesting.
struct ConfigJSONParser {
    /// Deeper nesting than any configuration needs is refused rather than risking the stack.
    static let maximumDepth = 64

    private let bytes: [UInt8]
    private var index = 0

    /// Parses a whole document; a UTF-8 byte order mark is skipped, anything after the value is an error.
    static func parse(_ bytes: [UInt8]) throws(ConfigJSONSyntaxError) -> ConfigJSON {
        var parser = ConfigJSONParser(bytes: bytes)
        try parser.checkUTF8()
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.index = 3 }
        parser.skipWhitespace()
        if parser.index == bytes.count {
            throw parser.error("the document is empty; write {} for all defaults")
        }
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        if parser.index < bytes.count { throw parser.error("unexpected text after the top-level value") }
        return value
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    // MARK: Values

    private mutating func parseValue(depth: Int) throws(ConfigJSONSyntaxError) -> ConfigJSON {
        guard depth < Self.maximumDepth else {
            throw error("nesting deeper than \(Self.maximumDepth) levels")
        }
        guard let byte = peek() else { throw error("unexpected end of input, expected a value") }
        switch byte {
        case UInt8(ascii: "{"): return .object(try parseObject(depth: depth))
        case UInt8(ascii: "["): return .array(try parseArray(depth: depth))
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectWord("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectWord("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectWord("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        case UInt8(ascii: "/"): throw error("comments are not allowed in JSON (see Docs/configuration.md)")
        case UInt8(ascii: "'"): throw error("strings must use double quotes")
        default: throw error("unexpected character \(describe(byte)), expected a value")
        }
    }

    private mutating func parseObject(depth: Int) throws(ConfigJSONSyntaxError) -> ConfigJSONObject {
        index += 1  // "{"
        var object = ConfigJSONObject()
        skipWhitespace()
        if peek() == UInt8(ascii: "}") { index += 1; return object }
        while true {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else {
                if peek() == UInt8(ascii: "}") { throw error("trailing comma before '}'") }
                throw error("expected a key in double quotes")
            }
            let line = position(of: index).line
            let key = try parseString()
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else { throw error("expected ':' after the key \"\(key)\"") }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth + 1)
            object.members.append(.init(key: key, value: value, line: line))
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return object
            case nil: throw error("unexpected end of input, expected ',' or '}'")
            default: throw error("expected ',' or '}' after the value of \"\(key)\"")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(ConfigJSONSyntaxError) -> [ConfigJSON] {
        index += 1  // "["
        var elements: [ConfigJSON] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "]") { index += 1; return elements }
        while true {
            skipWhitespace()
            if peek() == UInt8(ascii: "]") { throw error("trailing comma before ']'") }
            elements.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return elements
            case nil: throw error("unexpected end of input, expected ',' or ']'")
            default: throw error("expected ',' or ']' after an array element")
            }
        }
    }

    private mutating func parseString() throws(ConfigJSONSyntaxError) -> String {
        index += 1  // opening quote
        var scalars = String.UnicodeScalarView()
        var runStart = index
        // Unescaped runs are copied in one go; the input was already checked to be UTF-8.
        func flush(_ end: Int) {
            scalars.append(contentsOf: String(decoding: bytes[runStart..<end], as: UTF8.self).unicodeScalars)
        }
        while true {
            guard let byte = peek() else { throw error("unterminated string") }
            switch byte {
            case UInt8(ascii: "\""):
                flush(index)
                index += 1
                return String(scalars)
            case UInt8(ascii: "\\"):
                flush(index)
                index += 1
                scalars.append(try parseEscape())
                runStart = index
            case 0..<0x20:
                throw error("control character \(describe(byte)) in a string; escape it")
            default:
                index += 1
            }
        }
    }

    private mutating func parseEscape() throws(ConfigJSONSyntaxError) -> Unicode.Scalar {
        guard let byte = peek() else { throw error("unterminated escape") }
        index += 1
        switch byte {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            let first = try parseHex4()
            if (0xD800...0xDBFF).contains(first) {
                // A high surrogate must be followed by an escaped low surrogate.
                guard peek() == UInt8(ascii: "\\"), peek(1) == UInt8(ascii: "u") else {
                    throw error("unpaired surrogate \\u\(String(first, radix: 16))")
                }
                index += 2
                let second = try parseHex4()
                guard (0xDC00...0xDFFF).contains(second) else { throw error("invalid low surrogate") }
                let combined = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                return Unicode.Scalar(combined)!
            }
            guard let scalar = Unicode.Scalar(first) else {
                throw error("unpaired surrogate \\u\(String(first, radix: 16))")
            }
            return scalar
        default:
            index -= 1
            throw error("invalid escape \\\(describe(byte))")
        }
    }

    private mutating func parseHex4() throws(ConfigJSONSyntaxError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = peek(), let digit = hexValue(byte) else {
                throw error("expected four hex digits after \\u")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private mutating func parseNumber() throws(ConfigJSONSyntaxError) -> ConfigJSON {
        let start = index
        var isInteger = true
        if peek() == UInt8(ascii: "-") { index += 1 }
        // Integer part: a single 0, or a non-zero digit followed by digits.
        guard let first = peek(), isDigit(first) else { throw error("expected a digit") }
        if first == UInt8(ascii: "0") {
            index += 1
            if let next = peek(), isDigit(next) { throw error("numbers must not have leading zeros") }
        } else {
            while let byte = peek(), isDigit(byte) { index += 1 }
        }
        if peek() == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard let byte = peek(), isDigit(byte) else { throw error("expected a digit after '.'") }
            while let byte = peek(), isDigit(byte) { index += 1 }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
            guard let byte = peek(), isDigit(byte) else { throw error("expected a digit in the exponent") }
            while let byte = peek(), isDigit(byte) { index += 1 }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let value = Int(text) { return .integer(value) }
        // Too large for Int, or fractional: kept as a double with its text for messages.
        return .number(Double(text) ?? .infinity, text: text)
    }

    private mutating func expectWord(_ word: String) throws(ConfigJSONSyntaxError) {
        let start = index
        for expected in word.utf8 {
            guard peek() == expected else {
                // Point at the literal's start: that is where the reader's eye should go.
                index = start
                throw error("invalid literal, expected \(word)")
            }
            index += 1
        }
    }

    // MARK: Bytes and positions

    private func peek(_ offset: Int = 0) -> UInt8? {
        index + offset < bytes.count ? bytes[index + offset] : nil
    }

    private mutating func skipWhitespace() {
        while let byte = peek(), byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    private func describe(_ byte: UInt8) -> String {
        (0x21...0x7E).contains(byte)
            ? "'\(Character(Unicode.Scalar(byte)))'" : "0x" + String(byte, radix: 16, uppercase: true)
    }

    /// Refuses input that is not UTF-8, pointing at the first bad byte.
    private mutating func checkUTF8() throws(ConfigJSONSyntaxError) {
        var decoder = UTF8()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): offset += UTF8.width(scalar)
            case .emptyInput: return
            case .error:
                index = offset
                throw error("the file is not valid UTF-8")
            }
        }
    }

    /// The 1-based line and column of a byte offset; continuation bytes do not count as columns.
    private func position(of offset: Int) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        for byte in bytes[..<min(offset, bytes.count)] {
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return (line, column)
    }

    private func error(_ message: String) -> ConfigJSONSyntaxError {
        let (line, column) = position(of: index)
        return ConfigJSONSyntaxError(line: line, column: column, message: message)
    }
}

/// Writes configuration JSON: keys sorted, two-space indent, non-ASCII kept, stable number forms.
enum ConfigJSONWriter {
    /// Renders `value` as a pretty document ending in a newline.
    static func render(_ value: ConfigJSON) -> String {
        var output = ""
        write(value, indent: 0, into: &output)
        output += "\n"
        return output
    }

    private static func write(_ value: ConfigJSON, indent: Int, into output: inout String) {
        let pad = String(repeating: "  ", count: indent + 1)
        switch value {
        case .null: output += "null"
        case .bool(let flag): output += flag ? "true" : "false"
        case .integer(let number): output += String(number)
        // Swift prints the shortest text that reads back as the same Double, always valid JSON.
        case .number(let number, _): output += number.description
        case .string(let text): output += quoted(text)
        case .array(let elements):
            if elements.isEmpty { output += "[]"; return }
            output += "[\n"
            for (offset, element) in elements.enumerated() {
                output += pad
                write(element, indent: indent + 1, into: &output)
                output += offset == elements.count - 1 ? "\n" : ",\n"
            }
            output += String(repeating: "  ", count: indent) + "]"
        case .object(let object):
            if object.members.isEmpty { output += "{}"; return }
            output += "{\n"
            let members = object.members.sorted { $0.key < $1.key }
            for (offset, member) in members.enumerated() {
                output += pad + quoted(member.key) + ": "
                write(member.value, indent: indent + 1, into: &output)
                output += offset == members.count - 1 ? "\n" : ",\n"
            }
            output += String(repeating: "  ", count: indent) + "}"
        }
    }

    /// A JSON string literal for `text`.
    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case "\u{00}"..."\u{1F}", "\u{7F}":
                let hex = String(scalar.value, radix: 16, uppercase: true)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
