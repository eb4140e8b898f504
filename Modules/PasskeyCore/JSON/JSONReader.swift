/// A JSON value, limited to what WebAuthn's JSON forms and collected client data carry.
///
/// Numbers keep only what the ceremonies need: an integer that fits `Int64` (publicKeyAlgorithm), or
/// the fact that some other number was there. No floating point is ever computed from input.
enum JSONValue: Sendable {
    case object(JSONObject)
    case array([JSONValue])
    case string(String)
    case integer(Int64)
    /// A number with a fraction, an exponent, or beyond `Int64`: well-formed, but never a WebAuthn value.
    case otherNumber
    case bool(Bool)
    case null

    /// A short name of the type for error messages, never the content.
    var typeName: String {
        switch self {
        case .object: "object"
        case .array: "array"
        case .string: "string"
        case .integer, .otherNumber: "number"
        case .bool: "boolean"
        case .null: "null"
        }
    }
}

/// A JSON object's members in the order they arrived; names are unique (the reader refuses repeats).
struct JSONObject: Sendable {
    /// The members with the byte range each value had in the input.
    var members: [(name: String, value: JSONValue, range: Range<Int>)]

    /// The member called `name`; objects are small, so a scan beats hashing.
    subscript(name: String) -> JSONValue? {
        for member in members where member.name == name { return member.value }
        return nil
    }
}

/// A strict RFC 8259 parser over UTF-8 bytes, written for hostile input on the login hot path.
///
/// Strict where leniency would let two parsers disagree about the same bytes: duplicate member names
/// are refused (the browser's client data and ours must mean the same thing), as are invalid UTF-8,
/// lone surrogates in escapes, control characters in strings, leading zeros and trailing content.
/// Depth and member counts are bounded so that no input makes the work grow faster than its length.
/// Every failure throws `PasskeyError` with the code the caller chose, and a message with the offset.
struct JSONReader {
    /// Containers may nest this deep; WebAuthn responses need four (extension outputs included).
    static let maximumDepth = 12
    /// No object or array in a WebAuthn response has more than a few dozen entries.
    static let maximumEntries = 256

    private let bytes: UnsafeBufferPointer<UInt8>
    private var offset = 0
    private let code: PasskeyError.Code
    private let what: String

    private init(bytes: UnsafeBufferPointer<UInt8>, code: PasskeyError.Code, what: String) {
        self.bytes = bytes
        self.code = code
        self.what = what
    }

    /// Parses exactly one JSON value from `input`, allowing only whitespace around it.
    ///
    /// - Parameters:
    ///   - input: UTF-8 bytes.
    ///   - code: The error code every syntax error gets (`response.malformed_json`, `clientdata.malformed`).
    ///   - what: Names the document in messages ("clientDataJSON").
    static func parse(_ input: [UInt8], code: PasskeyError.Code, what: String) throws(PasskeyError)
        -> JSONValue
    {
        // The closure cannot carry a typed throw out of withUnsafeBufferPointer, so it returns one.
        let outcome: Swift.Result<JSONValue, PasskeyError> = input.withUnsafeBufferPointer { buffer in
            var reader = JSONReader(bytes: buffer, code: code, what: what)
            do throws(PasskeyError) {
                reader.skipWhitespace()
                let value = try reader.readValue(depth: 1)
                reader.skipWhitespace()
                guard reader.offset == buffer.count else { throw reader.error("content after the value") }
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    /// Parses `input` as one JSON object and returns its members with the exact byte range of each
    /// value, so an envelope can hand one member's bytes, untouched, to another strict parser.
    /// Same rules as `parse`: duplicates, trailing content and excess depth are refused.
    static func parseMembers(_ input: [UInt8], code: PasskeyError.Code, what: String) throws(PasskeyError)
        -> [(name: String, value: JSONValue, range: Range<Int>)]
    {
        let outcome: Swift.Result<[(name: String, value: JSONValue, range: Range<Int>)], PasskeyError> =
            input.withUnsafeBufferPointer { buffer in
                var reader = JSONReader(bytes: buffer, code: code, what: what)
                do throws(PasskeyError) {
                    return .success(try reader.readTopLevelMembers())
                } catch {
                    return .failure(error)
                }
            }
        return try outcome.get()
    }

    private mutating func readTopLevelMembers() throws(PasskeyError) -> [(
        name: String, value: JSONValue, range: Range<Int>
    )] {
        skipWhitespace()
        guard offset < bytes.count, bytes[offset] == UInt8(ascii: "{") else {
            throw error("expected an object")
        }
        let members = try readMembers(depth: 1)
        skipWhitespace()
        guard offset == bytes.count else { throw error("content after the value") }
        return members
    }

    private func error(_ message: String) -> PasskeyError {
        PasskeyError(code, "\(what) is not strict JSON: \(message) at byte \(offset)")
    }

    private mutating func skipWhitespace() {
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x20, 0x09, 0x0a, 0x0d: offset += 1
            default: return
            }
        }
    }

    private mutating func readValue(depth: Int) throws(PasskeyError) -> JSONValue {
        guard offset < bytes.count else { throw error("input ends where a value belongs") }
        switch bytes[offset] {
        case UInt8(ascii: "{"): return .object(try readObject(depth: depth))
        case UInt8(ascii: "["): return .array(try readArray(depth: depth))
        case UInt8(ascii: "\""): return .string(try readString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try readNumber()
        default: throw error("unexpected byte")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(PasskeyError) {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - offset >= count else { throw error("truncated literal") }
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: count)
        for index in 0..<count where bytes[offset + index] != expected[index] {
            throw error("unknown literal")
        }
        offset += count
    }

    private mutating func readObject(depth: Int) throws(PasskeyError) -> JSONObject {
        JSONObject(members: try readMembers(depth: depth))
    }

    /// Reads an object's members (the reader is at its `{`), each with the byte range of its value.
    private mutating func readMembers(depth: Int) throws(PasskeyError) -> [(
        name: String, value: JSONValue, range: Range<Int>
    )] {
        guard depth <= Self.maximumDepth else { throw error("nested too deeply") }
        offset += 1
        var members: [(name: String, value: JSONValue, range: Range<Int>)] = []
        skipWhitespace()
        if offset < bytes.count && bytes[offset] == UInt8(ascii: "}") {
            offset += 1
            return members
        }
        while true {
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else {
                throw error("a member name must be a string")
            }
            let name = try readString()
            // Two parsers that keep different duplicates would see different client data.
            for member in members where member.name == name { throw error("duplicate member name") }
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: ":") else {
                throw error("expected ':'")
            }
            offset += 1
            skipWhitespace()
            let start = offset
            let value = try readValue(depth: depth + 1)
            members.append((name, value, start..<offset))
            guard members.count <= Self.maximumEntries else { throw error("too many members") }
            skipWhitespace()
            guard offset < bytes.count else { throw error("input ends inside an object") }
            if bytes[offset] == UInt8(ascii: ",") {
                offset += 1
                continue
            }
            guard bytes[offset] == UInt8(ascii: "}") else { throw error("expected ',' or '}'") }
            offset += 1
            return members
        }
    }

    private mutating func readArray(depth: Int) throws(PasskeyError) -> [JSONValue] {
        guard depth <= Self.maximumDepth else { throw error("nested too deeply") }
        offset += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if offset < bytes.count && bytes[offset] == UInt8(ascii: "]") {
            offset += 1
            return elements
        }
        while true {
            skipWhitespace()
            elements.append(try readValue(depth: depth + 1))
            guard elements.count <= Self.maximumEntries else { throw error("too many elements") }
            skipWhitespace()
            guard offset < bytes.count else { throw error("input ends inside an array") }
            if bytes[offset] == UInt8(ascii: ",") {
                offset += 1
                continue
            }
            guard bytes[offset] == UInt8(ascii: "]") else { throw error("expected ',' or ']'") }
            offset += 1
            return elements
        }
    }

    /// Reads a string; the common case (ASCII, no escapes) becomes a String with one copy.
    private mutating func readString() throws(PasskeyError) -> String {
        offset += 1
        let start = offset
        var ascii = true
        // Fast scan: stop at the closing quote or at the first escape.
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") {
                let span = UnsafeBufferPointer(rebasing: bytes[start..<offset])
                offset += 1
                if ascii { return String(decoding: span, as: UTF8.self) }
                guard let text = String(validating: span, as: UTF8.self) else { throw error("invalid UTF-8") }
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw error("control character in a string") }
            if byte >= 0x80 { ascii = false }
            offset += 1
        }
        guard offset < bytes.count else { throw error("unterminated string") }
        // Slow path: escapes present. Collect UTF-8 bytes, then validate once.
        var out = Array(UnsafeBufferPointer(rebasing: bytes[start..<offset]))
        while offset < bytes.count {
            let byte = bytes[offset]
            switch byte {
            case UInt8(ascii: "\""):
                offset += 1
                guard let text = String(validating: out, as: UTF8.self) else { throw error("invalid UTF-8") }
                return text
            case UInt8(ascii: "\\"):
                offset += 1
                guard offset < bytes.count else { throw error("unterminated escape") }
                let escape = bytes[offset]
                offset += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0c)
                case UInt8(ascii: "n"): out.append(0x0a)
                case UInt8(ascii: "r"): out.append(0x0d)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"): appendUTF8(try readUnicodeEscape(), to: &out)
                default: throw error("unknown escape")
                }
            default:
                guard byte >= 0x20 else { throw error("control character in a string") }
                out.append(byte)
                offset += 1
            }
        }
        throw error("unterminated string")
    }

    /// Reads the XXXX of \uXXXX (offset is past the u), joining a surrogate pair; lone surrogates fail.
    private mutating func readUnicodeEscape() throws(PasskeyError) -> Unicode.Scalar {
        let high = try readHex4()
        if (0xdc00...0xdfff).contains(high) { throw error("lone low surrogate") }
        if (0xd800...0xdbff).contains(high) {
            guard bytes.count - offset >= 6, bytes[offset] == UInt8(ascii: "\\"),
                bytes[offset + 1] == UInt8(ascii: "u")
            else { throw error("lone high surrogate") }
            offset += 2
            let low = try readHex4()
            guard (0xdc00...0xdfff).contains(low) else { throw error("lone high surrogate") }
            let value = 0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00)
            // In range by construction; the guard keeps the force-free style.
            guard let scalar = Unicode.Scalar(value) else { throw error("invalid code point") }
            return scalar
        }
        guard let scalar = Unicode.Scalar(high) else { throw error("invalid code point") }
        return scalar
    }

    private mutating func readHex4() throws(PasskeyError) -> UInt32 {
        guard bytes.count - offset >= 4 else { throw error("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("bad hex digit in \\u escape")
            }
            value = value << 4 | UInt32(digit)
            offset += 1
        }
        return value
    }

    private func appendUTF8(_ scalar: Unicode.Scalar, to out: inout [UInt8]) {
        UTF8.encode(scalar) { out.append($0) }
    }

    /// Reads a number by the RFC 8259 grammar; integers that fit Int64 keep their value.
    private mutating func readNumber() throws(PasskeyError) -> JSONValue {
        var negative = false
        if bytes[offset] == UInt8(ascii: "-") {
            negative = true
            offset += 1
        }
        guard offset < bytes.count, isDigit(bytes[offset]) else { throw error("a number needs digits") }
        // RFC 8259: no leading zeros ("01" is not a number).
        if bytes[offset] == UInt8(ascii: "0"), offset + 1 < bytes.count, isDigit(bytes[offset + 1]) {
            throw error("leading zero")
        }
        var magnitude: UInt64 = 0
        var overflow = false
        while offset < bytes.count, isDigit(bytes[offset]) {
            let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(bytes[offset] - UInt8(ascii: "0")))
            overflow = overflow || o1 || o2
            magnitude = sum
            offset += 1
        }
        var integral = true
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            integral = false
            offset += 1
            guard offset < bytes.count, isDigit(bytes[offset]) else { throw error("a fraction needs digits") }
            while offset < bytes.count, isDigit(bytes[offset]) { offset += 1 }
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E") {
            integral = false
            offset += 1
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-")
            {
                offset += 1
            }
            guard offset < bytes.count, isDigit(bytes[offset]) else {
                throw error("an exponent needs digits")
            }
            while offset < bytes.count, isDigit(bytes[offset]) { offset += 1 }
        }
        guard integral, !overflow else { return .otherNumber }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return .otherNumber }
            return .integer(magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude))
        }
        guard magnitude <= UInt64(Int64.max) else { return .otherNumber }
        return .integer(Int64(magnitude))
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
}
