/// A strict JSON (RFC 8259) parser: the one every layer uses for JSON that arrives from outside.
///
/// Strict where leniency would let two parsers disagree about the same bytes: duplicate member names
/// are refused at any depth (so the member a handler reads is the only one there is), as are invalid
/// UTF-8, lone surrogates in escapes, control characters in strings, leading zeros and trailing
/// content. Depth and member counts are bounded so that no input makes the work grow faster than its
/// length. WebAuthn's client data and responses (PasskeyCore) and every API request body (HTTPEngine)
/// go through it; it lives in the kernel so that neither has to import the other. The CLI reads
/// whole documents (an API's answer, a file) through it too, with `Limits.document`.
public enum StrictJSON {
    /// How deep containers may nest and how many entries each may hold.
    public struct Limits: Sendable {
        public let depth: Int
        /// Members of one object. Each name is compared with the ones before it (the duplicate
        /// check), so the work grows with the square of this bound.
        public let members: Int
        /// Elements of one array.
        public let elements: Int

        /// For JSON from outside: WebAuthn's client data and responses, API request bodies.
        /// WebAuthn responses nest four deep (extension outputs included), API bodies less, and
        /// none of their objects or arrays has more than a few dozen entries.
        public static let input = Limits(depth: 12, members: 256, elements: 256)
        /// For a whole document a command reads (an API's answer, a file the operator names): room
        /// for long lists and deep trees, still bounded.
        public static let document = Limits(depth: 512, members: 4_096, elements: 1_000_000)
    }

    /// A JSON value. Numbers keep only an integer that fits `Int64`, or where some other number's
    /// text was: no floating point is ever computed from input here.
    public enum Value: Sendable {
        case object(Object)
        case array([Value])
        case string(String)
        case integer(Int64)
        /// A number with a fraction, an exponent, or beyond `Int64`: well-formed, but not an
        /// integer; the range of its text in the input.
        case otherNumber(Range<Int>)
        case bool(Bool)
        case null

        /// A short name of the type for error messages, never the content.
        public var typeName: String {
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

    /// One object member and the byte range its value had in the input.
    public typealias Member = (name: String, value: Value, range: Range<Int>)

    /// A JSON object's members in the order they arrived; names are unique (the parser refuses repeats).
    public struct Object: Sendable {
        /// The members with the byte range each value had in the input.
        public var members: [Member]

        /// Creates an object from members whose names are unique.
        public init(members: [Member]) { self.members = members }

        /// The member called `name`; objects are small, so a scan beats hashing.
        public subscript(name: String) -> Value? {
            for member in members where member.name == name { return member.value }
            return nil
        }
    }

    /// Where the member that `parseMembers(_:checkingOnly:)` checked without building was.
    public struct CheckedMember: Sendable {
        /// Its place among all of the object's members, 0 for the first.
        public var position: Int
        /// The type of its value, as `Value.typeName` names it.
        public var typeName: String
        /// The byte range its value had in the input.
        public var range: Range<Int>
    }

    /// Why bytes are not strict JSON: a short reason (never input content) and where.
    public struct SyntaxError: Error, Sendable {
        /// What is wrong, e.g. "duplicate member name".
        public var reason: String
        /// The byte offset at which the parser stopped.
        public var offset: Int

        /// Creates an error.
        public init(reason: String, offset: Int) {
            self.reason = reason
            self.offset = offset
        }
    }

    /// Parses exactly one JSON value from `input`, allowing only whitespace around it.
    /// - Parameter input: UTF-8 bytes.
    /// - Returns: the value.
    /// - Throws: `SyntaxError` for anything that is not strict JSON, duplicate member names included.
    public static func parse(_ input: [UInt8], limits: Limits = .input) throws(SyntaxError) -> Value {
        // The closure cannot carry a typed throw out of withUnsafeBufferPointer, so it returns one.
        let outcome: Swift.Result<Value, SyntaxError> = input.withUnsafeBufferPointer { buffer in
            var reader = StrictJSONReader(bytes: buffer, limits: limits)
            do throws(SyntaxError) {
                return .success(try reader.readDocument())
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    /// Parses `input` as one JSON object and returns its members with the exact byte range of each
    /// value, so an envelope can hand one member's bytes, untouched, to another strict parser.
    /// Same rules as `parse`: duplicates, trailing content and excess depth are refused.
    /// - Parameter input: UTF-8 bytes.
    /// - Returns: the top-level object's members in input order.
    /// - Throws: `SyntaxError`, also when the value is not an object.
    public static func parseMembers(_ input: [UInt8]) throws(SyntaxError) -> [Member] {
        let outcome: Swift.Result<[Member], SyntaxError> = input.withUnsafeBufferPointer { buffer in
            var reader = StrictJSONReader(bytes: buffer, limits: .input)
            do throws(SyntaxError) {
                return .success(try reader.readTopLevelMembers())
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    /// `parseMembers(_:)`, except that the value of the member called `name` is checked by every
    /// rule (syntax, duplicates, depth, counts: it is refused exactly where `parseMembers` would
    /// refuse it, with the same error) but not built: for an envelope that hands that member's
    /// bytes on to another strict parse, so that strings and containers are not built twice.
    /// - Parameters:
    ///   - input: UTF-8 bytes.
    ///   - name: the member to check without building.
    /// - Returns: the other members in input order, and where the checked one was (nil if absent).
    /// - Throws: `SyntaxError`, also when the value is not an object.
    public static func parseMembers(_ input: [UInt8], checkingOnly name: String) throws(SyntaxError) -> (
        members: [Member], checked: CheckedMember?
    ) {
        let outcome: Swift.Result<([Member], CheckedMember?), SyntaxError> = input.withUnsafeBufferPointer {
            buffer in
            var reader = StrictJSONReader(bytes: buffer, limits: .input)
            do throws(SyntaxError) {
                return .success(try reader.readTopLevelMembers(checkingOnly: name))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }
}

/// The parser's state over one input: a cursor into borrowed bytes.
private struct StrictJSONReader {
    private typealias JSONValue = StrictJSON.Value
    private typealias JSONObject = StrictJSON.Object

    private let bytes: UnsafeBufferPointer<UInt8>
    private let limits: StrictJSON.Limits
    private var offset = 0

    init(bytes: UnsafeBufferPointer<UInt8>, limits: StrictJSON.Limits) {
        self.bytes = bytes
        self.limits = limits
    }

    mutating func readDocument() throws(StrictJSON.SyntaxError) -> StrictJSON.Value {
        skipWhitespace()
        let value = try readValue(depth: 1)
        skipWhitespace()
        guard offset == bytes.count else { throw error("content after the value") }
        return value
    }

    mutating func readTopLevelMembers() throws(StrictJSON.SyntaxError) -> [StrictJSON.Member] {
        try readTopLevelMembers(checkingOnly: nil).members
    }

    mutating func readTopLevelMembers(checkingOnly name: String?) throws(StrictJSON.SyntaxError) -> (
        members: [StrictJSON.Member], checked: StrictJSON.CheckedMember?
    ) {
        skipWhitespace()
        guard offset < bytes.count, bytes[offset] == UInt8(ascii: "{") else {
            throw error("expected an object")
        }
        var checked: StrictJSON.CheckedMember?
        let members = try readMembers(depth: 1, checkingOnly: name, checked: &checked)
        skipWhitespace()
        guard offset == bytes.count else { throw error("content after the value") }
        return (members, checked)
    }

    private func error(_ reason: String) -> StrictJSON.SyntaxError {
        StrictJSON.SyntaxError(reason: reason, offset: offset)
    }

    private mutating func skipWhitespace() {
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x20, 0x09, 0x0a, 0x0d: offset += 1
            default: return
            }
        }
    }

    private mutating func readValue(depth: Int) throws(StrictJSON.SyntaxError) -> JSONValue {
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

    private mutating func expectLiteral(_ literal: StaticString) throws(StrictJSON.SyntaxError) {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - offset >= count else { throw error("truncated literal") }
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: count)
        for index in 0..<count where bytes[offset + index] != expected[index] {
            throw error("unknown literal")
        }
        offset += count
    }

    private mutating func readObject(depth: Int) throws(StrictJSON.SyntaxError) -> JSONObject {
        var unused: StrictJSON.CheckedMember?
        return JSONObject(members: try readMembers(depth: depth, checkingOnly: nil, checked: &unused))
    }

    /// An object's framing, every check in its order: the depth, `{`, an empty object, each
    /// member's name (a string), the `,` between members and the closing `}`. `member` gets the
    /// name just read and reads the rest of the member (its own checks of the name, `:`, value).
    /// The reader that builds objects and the one that only checks them share it, so both refuse
    /// the same input at the same offset.
    private mutating func forEachMember(
        depth: Int, _ member: (inout Self, String) throws(StrictJSON.SyntaxError) -> Void
    ) throws(StrictJSON.SyntaxError) {
        guard depth <= limits.depth else { throw error("nested too deeply") }
        offset += 1
        skipWhitespace()
        if offset < bytes.count && bytes[offset] == UInt8(ascii: "}") {
            offset += 1
            return
        }
        while true {
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else {
                throw error("a member name must be a string")
            }
            let name = try readString()
            try member(&self, name)
            skipWhitespace()
            guard offset < bytes.count else { throw error("input ends inside an object") }
            if bytes[offset] == UInt8(ascii: ",") {
                offset += 1
                continue
            }
            guard bytes[offset] == UInt8(ascii: "}") else { throw error("expected ',' or '}'") }
            offset += 1
            return
        }
    }

    /// The `:` after a member's name, with the whitespace on both sides.
    private mutating func readColon() throws(StrictJSON.SyntaxError) {
        skipWhitespace()
        guard offset < bytes.count, bytes[offset] == UInt8(ascii: ":") else { throw error("expected ':'") }
        offset += 1
        skipWhitespace()
    }

    /// An array's framing, as `forEachMember` is an object's; `element` reads one element.
    private mutating func forEachElement(
        depth: Int, _ element: (inout Self) throws(StrictJSON.SyntaxError) -> Void
    ) throws(StrictJSON.SyntaxError) {
        guard depth <= limits.depth else { throw error("nested too deeply") }
        offset += 1
        skipWhitespace()
        if offset < bytes.count && bytes[offset] == UInt8(ascii: "]") {
            offset += 1
            return
        }
        while true {
            skipWhitespace()
            try element(&self)
            skipWhitespace()
            guard offset < bytes.count else { throw error("input ends inside an array") }
            if bytes[offset] == UInt8(ascii: ",") {
                offset += 1
                continue
            }
            guard bytes[offset] == UInt8(ascii: "]") else { throw error("expected ',' or ']'") }
            offset += 1
            return
        }
    }

    /// Reads an object's members (the reader is at its `{`), each with the byte range of its value;
    /// the member called `checkingOnly`, if any, is checked (`skipValue`) and left out of the
    /// result, its place in `checked`.
    private mutating func readMembers(
        depth: Int, checkingOnly checkedName: String?, checked: inout StrictJSON.CheckedMember?
    ) throws(StrictJSON.SyntaxError) -> [(
        name: String, value: JSONValue, range: Range<Int>
    )] {
        var members: [(name: String, value: JSONValue, range: Range<Int>)] = []
        try forEachMember(depth: depth) { reader, name throws(StrictJSON.SyntaxError) in
            // Room for the members of every WebAuthn object at once: growing from empty
            // reallocates the array three times on the way to a response's six.
            if members.isEmpty { members.reserveCapacity(8) }
            // Two parsers that keep different duplicates would see different client data.
            for member in members where member.name == name { throw reader.error("duplicate member name") }
            let isChecked = checkedName != nil && name == checkedName
            if isChecked && checked != nil { throw reader.error("duplicate member name") }
            try reader.readColon()
            let start = reader.offset
            if isChecked {
                let typeName = try reader.skipValue(depth: depth + 1)
                checked = StrictJSON.CheckedMember(
                    position: members.count, typeName: typeName, range: start..<reader.offset)
            } else {
                let value = try reader.readValue(depth: depth + 1)
                members.append((name, value, start..<reader.offset))
            }
            guard members.count + (checked == nil ? 0 : 1) <= reader.limits.members else {
                throw reader.error("too many members")
            }
        }
        return members
    }

    /// Checks one value by exactly the rules `readValue` applies, with the same errors at the same
    /// offsets, without building it (only member names are, for the duplicate check). Returns the
    /// value's type name.
    private mutating func skipValue(depth: Int) throws(StrictJSON.SyntaxError) -> String {
        guard offset < bytes.count else { throw error("input ends where a value belongs") }
        switch bytes[offset] {
        case UInt8(ascii: "{"): try skipMembers(depth: depth); return "object"
        case UInt8(ascii: "["): try skipArray(depth: depth); return "array"
        case UInt8(ascii: "\""): try skipString(); return "string"
        case UInt8(ascii: "t"): try expectLiteral("true"); return "boolean"
        case UInt8(ascii: "f"): try expectLiteral("false"); return "boolean"
        case UInt8(ascii: "n"): try expectLiteral("null"); return "null"
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): _ = try readNumber(); return "number"
        default: throw error("unexpected byte")
        }
    }

    /// `readMembers`' checks, keeping only the names (for the duplicate check).
    private mutating func skipMembers(depth: Int) throws(StrictJSON.SyntaxError) {
        var names: [String] = []
        try forEachMember(depth: depth) { reader, name throws(StrictJSON.SyntaxError) in
            if names.isEmpty { names.reserveCapacity(8) }
            for other in names where other == name { throw reader.error("duplicate member name") }
            try reader.readColon()
            _ = try reader.skipValue(depth: depth + 1)
            names.append(name)
            guard names.count <= reader.limits.members else { throw reader.error("too many members") }
        }
    }

    /// `readArray`'s checks.
    private mutating func skipArray(depth: Int) throws(StrictJSON.SyntaxError) {
        var count = 0
        try forEachElement(depth: depth) { reader throws(StrictJSON.SyntaxError) in
            _ = try reader.skipValue(depth: depth + 1)
            count += 1
            guard count <= reader.limits.elements else { throw reader.error("too many elements") }
        }
    }

    /// A plain ASCII string without escapes is only scanned; any other (an escape, non-ASCII, a
    /// control character, no end) is read again from its quote by `readString`, which decides.
    private mutating func skipString() throws(StrictJSON.SyntaxError) {
        let quote = offset
        offset = Self.plainASCIIRun(in: bytes, from: offset + 1)
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") {
                offset += 1
                return
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { break }
            offset += 1
        }
        offset = quote
        _ = try readString()
    }

    private mutating func readArray(depth: Int) throws(StrictJSON.SyntaxError) -> [JSONValue] {
        var elements: [JSONValue] = []
        try forEachElement(depth: depth) { reader throws(StrictJSON.SyntaxError) in
            elements.append(try reader.readValue(depth: depth + 1))
            guard elements.count <= reader.limits.elements else { throw reader.error("too many elements") }
        }
        return elements
    }

    /// Reads a string; the common case (ASCII, no escapes) becomes a String with one copy.
    private mutating func readString() throws(StrictJSON.SyntaxError) -> String {
        offset += 1
        let start = offset
        var ascii = true
        // Fast scan: stop at the closing quote or at the first escape. Eight bytes at a time while
        // none of them is a quote, a backslash, a control character or non-ASCII (the base64url
        // members of a WebAuthn response are hundreds of such bytes); then byte by byte, with the
        // same checks in the same order, so errors and offsets are those of a byte-wise scan.
        offset = Self.plainASCIIRun(in: bytes, from: offset)
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

    /// The offset of the first 8-byte word from `start` that holds a byte a string scan must look
    /// at (`"`, `\\`, below 0x20, or 0x80 and above), or of the last partial word: every byte
    /// before it is plain ASCII inside a string.
    private static func plainASCIIRun(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        guard let base = bytes.baseAddress else { return start }
        let raw = UnsafeRawPointer(base)
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        var position = start
        while bytes.count - position >= 8 {
            let word = raw.loadUnaligned(fromByteOffset: position, as: UInt64.self)
            // A byte's high bit in `(x - ones) & ~x` is set where x's byte is zero (exact for
            // whether any is), so x = word ^ 0x22… finds a quote and word ^ 0x5c… a backslash;
            // `(word - 0x20…) & ~word` finds a byte below 0x20, and `word` itself one at 0x80 and up.
            let quote = word ^ (ones &* 0x22)
            let backslash = word ^ (ones &* 0x5c)
            let flagged =
                ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
                | ((word &- ones &* 0x20) & ~word) | word
            if flagged & highs != 0 { break }
            position += 8
        }
        return position
    }

    /// Reads the XXXX of \uXXXX (offset is past the u), joining a surrogate pair; lone surrogates fail.
    private mutating func readUnicodeEscape() throws(StrictJSON.SyntaxError) -> Unicode.Scalar {
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

    private mutating func readHex4() throws(StrictJSON.SyntaxError) -> UInt32 {
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
    private mutating func readNumber() throws(StrictJSON.SyntaxError) -> JSONValue {
        let start = offset
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
        guard integral, !overflow else { return .otherNumber(start..<offset) }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return .otherNumber(start..<offset) }
            return .integer(magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude))
        }
        guard magnitude <= UInt64(Int64.max) else { return .otherNumber(start..<offset) }
        return .integer(Int64(magnitude))
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
}
