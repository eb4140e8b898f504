/// The identifier octets of a DER element: class, primitive or constructed, and tag number.
///
/// Tag numbers of 31 and above use the high-tag-number form, which Android's key description needs
/// (`[701] EXPLICIT INTEGER creationDateTime`).
public struct DERTag: Hashable, Sendable, CustomStringConvertible {
    /// The two class bits of the identifier octet.
    public enum TagClass: UInt8, Sendable {
        /// Types defined by X.680 itself (INTEGER, SEQUENCE, …).
        case universal = 0
        /// Application-wide types.
        case application = 1
        /// `[n]` tags inside one structure; the tagging WebAuthn's extensions use.
        case contextSpecific = 2
        /// Private-use tags.
        case `private` = 3
    }

    /// The tag's class.
    public let tagClass: TagClass
    /// True for constructed encodings (SEQUENCE, SET, EXPLICIT tags), false for primitive ones.
    public let isConstructed: Bool
    /// The tag number within its class.
    public let number: UInt32

    /// Creates a tag.
    public init(_ tagClass: TagClass, number: UInt32, constructed: Bool) {
        self.tagClass = tagClass
        self.number = number
        self.isConstructed = constructed
    }

    /// A context-specific tag `[number]`; explicit tags are constructed, implicit ones take the
    /// constructed bit of the type they replace.
    public static func contextSpecific(_ number: UInt32, constructed: Bool) -> DERTag {
        DERTag(.contextSpecific, number: number, constructed: constructed)
    }

    /// BOOLEAN.
    public static let boolean = DERTag(.universal, number: 1, constructed: false)
    /// INTEGER.
    public static let integer = DERTag(.universal, number: 2, constructed: false)
    /// BIT STRING (DER forbids the constructed form).
    public static let bitString = DERTag(.universal, number: 3, constructed: false)
    /// OCTET STRING (DER forbids the constructed form).
    public static let octetString = DERTag(.universal, number: 4, constructed: false)
    /// NULL.
    public static let null = DERTag(.universal, number: 5, constructed: false)
    /// OBJECT IDENTIFIER.
    public static let objectIdentifier = DERTag(.universal, number: 6, constructed: false)
    /// ENUMERATED.
    public static let enumerated = DERTag(.universal, number: 10, constructed: false)
    /// UTF8String.
    public static let utf8String = DERTag(.universal, number: 12, constructed: false)
    /// SEQUENCE and SEQUENCE OF.
    public static let sequence = DERTag(.universal, number: 16, constructed: true)
    /// SET and SET OF.
    public static let set = DERTag(.universal, number: 17, constructed: true)
    /// PrintableString.
    public static let printableString = DERTag(.universal, number: 19, constructed: false)
    /// IA5String (ASCII).
    public static let ia5String = DERTag(.universal, number: 22, constructed: false)

    /// X.680 notation: `[UNIVERSAL 2]`, `[701] constructed`.
    public var description: String {
        let prefix =
            switch tagClass {
            case .universal: "UNIVERSAL "
            case .application: "APPLICATION "
            case .contextSpecific: ""
            case .private: "PRIVATE "
            }
        return "[\(prefix)\(number)]\(isConstructed ? " constructed" : "")"
    }
}

/// One decoded tag-length-value element, with typed decoders for its contents.
///
/// Elements are values over the reader's storage: reading one copies nothing until `value` or
/// `encoded` is asked for. The typed decoders check the tag; for an IMPLICIT tag, re-tag the
/// element first with `retagged(as:)`.
public struct DERElement: Sendable {
    /// The element's tag.
    public let tag: DERTag
    /// The whole input the element was read from (shared storage, not a copy).
    let storage: [UInt8]
    /// Where the element's encoding (identifier, length, contents) lies in `storage`.
    let encodedRange: Range<Int>
    /// Where the contents lie in `storage`.
    let valueRange: Range<Int>
    /// The nesting depth of the reader this element came from; its children sit one deeper.
    let depth: Int
    /// The depth limit inherited from the reader.
    let maximumDepth: Int

    /// The contents octets (without tag and length).
    public var value: [UInt8] { Array(storage[valueRange]) }
    /// The full encoding, tag and length included: what a signature covers, or a SubjectPublicKeyInfo.
    public var encoded: [UInt8] { Array(storage[encodedRange]) }
    /// Where the element starts in the outermost input, for error messages.
    public var offset: Int { encodedRange.lowerBound }

    /// The same contents under another tag, for IMPLICIT tagging: `[2] IMPLICIT IA5String` is read
    /// as `element.retagged(as: .ia5String).string()`. The constructed bit must agree.
    public func retagged(as newTag: DERTag) throws(CryptoError) -> DERElement {
        guard newTag.isConstructed == tag.isConstructed else {
            throw CryptoError(
                .derUnexpectedTag, "\(tag) at offset \(offset) cannot stand implicitly for \(newTag)")
        }
        return DERElement(
            tag: newTag, storage: storage, encodedRange: encodedRange, valueRange: valueRange,
            depth: depth, maximumDepth: maximumDepth)
    }

    /// Throws unless the element carries `expected`.
    public func expect(_ expected: DERTag) throws(CryptoError) {
        guard tag == expected else {
            throw CryptoError(.derUnexpectedTag, "expected \(expected), found \(tag) at offset \(offset)")
        }
    }

    /// A reader over a constructed element's contents (SEQUENCE, SET, an EXPLICIT tag), one level deeper.
    ///
    /// - Throws: `.derUnexpectedTag` for a primitive element, `.derTooDeep` past the depth limit.
    public func contents() throws(CryptoError) -> DERReader {
        guard tag.isConstructed else {
            throw CryptoError(.derUnexpectedTag, "\(tag) at offset \(offset) is primitive, not constructed")
        }
        guard depth < maximumDepth else {
            throw CryptoError(.derTooDeep, "nesting deeper than \(maximumDepth) at offset \(offset)")
        }
        return DERReader(storage: storage, range: valueRange, depth: depth + 1, maximumDepth: maximumDepth)
    }

    /// The contents of an INTEGER as big-endian two's complement, checked to be minimal.
    public func integerBytes() throws(CryptoError) -> [UInt8] {
        try expect(.integer)
        try checkMinimalInteger()
        return value
    }

    /// An INTEGER as `Int`.
    ///
    /// - Throws: `.derIntegerOverflow` when it needs more than 64 bits.
    public func integer() throws(CryptoError) -> Int {
        try expect(.integer)
        return try twosComplementInt()
    }

    /// An ENUMERATED as `Int` (encoded exactly like an INTEGER).
    public func enumerated() throws(CryptoError) -> Int {
        try expect(.enumerated)
        return try twosComplementInt()
    }

    /// A BOOLEAN; DER allows only 0x00 and 0xFF.
    public func boolean() throws(CryptoError) -> Bool {
        try expect(.boolean)
        guard valueRange.count == 1 else {
            throw CryptoError(.derMalformed, "a BOOLEAN at offset \(offset) must hold exactly one byte")
        }
        switch storage[valueRange.lowerBound] {
        case 0x00: return false
        case 0xFF: return true
        default: throw CryptoError(.derMalformed, "a DER BOOLEAN at offset \(offset) is 0x00 or 0xFF")
        }
    }

    /// Checks a NULL (empty contents).
    public func null() throws(CryptoError) {
        try expect(.null)
        guard valueRange.isEmpty else {
            throw CryptoError(.derMalformed, "a NULL at offset \(offset) must be empty")
        }
    }

    /// The contents of an OCTET STRING.
    public func octetString() throws(CryptoError) -> [UInt8] {
        try expect(.octetString)
        return value
    }

    /// A BIT STRING, checked against DER's rules for the unused-bits count and padding.
    public func bitString() throws(CryptoError) -> DERBitString {
        try expect(.bitString)
        guard let unused = valueRange.first.map({ storage[$0] }) else {
            throw CryptoError(.derMalformed, "a BIT STRING at offset \(offset) lacks its unused-bits byte")
        }
        let bytes = Array(storage[(valueRange.lowerBound + 1)..<valueRange.upperBound])
        guard unused < 8, !(bytes.isEmpty && unused != 0) else {
            throw CryptoError(.derMalformed, "a BIT STRING at offset \(offset) has a bad unused-bits count")
        }
        // DER pads with zero bits, so a set padding bit means a second encoding of the same value.
        if let last = bytes.last, last & UInt8((1 << Int(unused)) - 1) != 0 {
            throw CryptoError(.derMalformed, "a BIT STRING at offset \(offset) has non-zero padding bits")
        }
        return DERBitString(bytes: bytes, unusedBits: Int(unused))
    }

    /// An OBJECT IDENTIFIER in dotted form ("1.3.6.1.4.1.45724.1.1.4").
    public func objectIdentifier() throws(CryptoError) -> String {
        try expect(.objectIdentifier)
        guard !valueRange.isEmpty else {
            throw CryptoError(.derMalformed, "an OBJECT IDENTIFIER at offset \(offset) is empty")
        }
        var arcs: [UInt64] = []
        var current: UInt64 = 0
        var startsArc = true
        for index in valueRange {
            let byte = storage[index]
            // A leading 0x80 would pad an arc with zero bits: not the minimal encoding.
            if startsArc && byte == 0x80 {
                throw CryptoError(.derMalformed, "an OID arc at offset \(index) is not minimally encoded")
            }
            // Arcs past 64 bits appear in no real OID; refusing them keeps the shift below exact.
            guard current >> 57 == 0 else {
                throw CryptoError(.derMalformed, "an OID arc at offset \(index) exceeds 64 bits")
            }
            current = current << 7 | UInt64(byte & 0x7F)
            startsArc = byte & 0x80 == 0
            if startsArc {
                arcs.append(current)
                current = 0
            }
        }
        guard startsArc else {
            throw CryptoError(.derMalformed, "an OBJECT IDENTIFIER at offset \(offset) ends inside an arc")
        }
        // The first subidentifier packs the first two arcs as 40·X + Y, with X at most 2.
        let first = arcs[0]
        let head: [UInt64] = first < 80 ? [first / 40, first % 40] : [2, first - 80]
        return (head + arcs.dropFirst()).map(String.init).joined(separator: ".")
    }

    /// The text of a UTF8String, PrintableString or IA5String, checked against its character set.
    public func string() throws(CryptoError) -> String {
        let bytes = storage[valueRange]
        switch tag {
        case .utf8String:
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw CryptoError(.derMalformed, "a UTF8String at offset \(offset) is not valid UTF-8")
            }
            return text
        case .printableString:
            guard bytes.allSatisfy(Self.isPrintable) else {
                throw CryptoError(.derMalformed, "a PrintableString at offset \(offset) has a bad character")
            }
            return String(decoding: bytes, as: UTF8.self)
        case .ia5String:
            guard bytes.allSatisfy({ $0 < 0x80 }) else {
                throw CryptoError(.derMalformed, "an IA5String at offset \(offset) is not ASCII")
            }
            return String(decoding: bytes, as: UTF8.self)
        default:
            throw CryptoError(.derUnexpectedTag, "expected a string type, found \(tag) at offset \(offset)")
        }
    }

    /// X.680's PrintableString alphabet: letters, digits, space and `'()+,-./:=?`.
    private static func isPrintable(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default: Array(" '()+,-./:=?".utf8).contains(c)
        }
    }

    /// Throws unless INTEGER/ENUMERATED contents are non-empty and without redundant sign bytes.
    private func checkMinimalInteger() throws(CryptoError) {
        guard let first = valueRange.first.map({ storage[$0] }) else {
            throw CryptoError(.derMalformed, "an INTEGER at offset \(offset) is empty")
        }
        if valueRange.count > 1 {
            let second = storage[valueRange.lowerBound + 1]
            // 0x00 before a clear top bit, or 0xFF before a set one, repeats the sign: not minimal.
            if (first == 0x00 && second & 0x80 == 0) || (first == 0xFF && second & 0x80 != 0) {
                throw CryptoError(.derMalformed, "an INTEGER at offset \(offset) is not minimally encoded")
            }
        }
    }

    /// Decodes minimal two's-complement contents into an `Int`.
    private func twosComplementInt() throws(CryptoError) -> Int {
        try checkMinimalInteger()
        guard valueRange.count <= 8 else {
            throw CryptoError(.derIntegerOverflow, "an integer at offset \(offset) does not fit 64 bits")
        }
        // Sign-extend from the first byte, then shift the rest in.
        var result = Int(Int8(bitPattern: storage[valueRange.lowerBound]))
        for index in valueRange.dropFirst() {
            result = result << 8 | Int(storage[index])
        }
        return result
    }
}

/// A decoded BIT STRING: the bytes and how many bits of the last one are padding.
public struct DERBitString: Hashable, Sendable {
    /// The bit string's bytes, most significant bit first.
    public let bytes: [UInt8]
    /// Padding bits at the end of the last byte (0...7).
    public let unusedBits: Int

    /// Creates a bit string.
    public init(bytes: [UInt8], unusedBits: Int) {
        self.bytes = bytes
        self.unusedBits = unusedBits
    }

    /// True when named bit `index` (0 = most significant bit of the first byte) is set, as X.509
    /// numbers KeyUsage bits (digitalSignature = 0, keyCertSign = 5).
    public func isSet(_ index: Int) -> Bool {
        guard index >= 0, index < bytes.count * 8 - unusedBits else { return false }
        return bytes[index / 8] & (0x80 >> UInt8(index % 8)) != 0
    }
}

/// A strict, non-recursive DER reader: reads one element at a time from a byte range.
///
/// Strict means DER, not BER: definite lengths only, in the minimal form; tag numbers in the minimal
/// form; BOOLEAN only 0x00/0xFF; minimal INTEGERs; zero BIT STRING padding. Every malformed input is a
/// `CryptoError` with a `crypto.der_*` code, never a trap. Nesting is bounded by `maximumDepth`
/// (counted in `contents()` calls), and no length is trusted before it is compared with the input.
///
/// ```swift
/// var outer = DERReader(extensionValue)          // Apple nonce: SEQUENCE { [1] EXPLICIT OCTET STRING }
/// var sequence = try outer.readSequence()
/// var tagged = try sequence.readExplicit(1)
/// let nonce = try tagged.readOctetString()
/// try tagged.finish(); try sequence.finish(); try outer.finish()
/// ```
public struct DERReader: Sendable {
    /// The default nesting limit: X.509 and every attestation extension stay far below it.
    public static let defaultMaximumDepth = 32
    /// The ceiling on any configured limit.
    public static let hardMaximumDepth = 128
    /// The longest length field accepted: four bytes, 4 GiB, far beyond any certificate.
    private static let maximumLengthBytes = 4

    private let storage: [UInt8]
    private var position: Int
    private let end: Int
    /// How many constructed values enclose this reader (the outermost reader is depth 0).
    public let depth: Int
    /// How deep `contents()` may go before `.derTooDeep`.
    public let maximumDepth: Int

    /// A reader over all of `bytes`.
    ///
    /// - Parameter maximumDepth: The nesting limit, clamped to `1...hardMaximumDepth`.
    public init(_ bytes: [UInt8], maximumDepth: Int = DERReader.defaultMaximumDepth) {
        self.init(
            storage: bytes, range: bytes.indices, depth: 0,
            maximumDepth: min(max(maximumDepth, 1), Self.hardMaximumDepth))
    }

    init(storage: [UInt8], range: Range<Int>, depth: Int, maximumDepth: Int) {
        self.storage = storage
        self.position = range.lowerBound
        self.end = range.upperBound
        self.depth = depth
        self.maximumDepth = maximumDepth
    }

    /// True when every byte in the reader's range has been read.
    public var isAtEnd: Bool { position == end }

    /// The bytes not yet read.
    public var remainingCount: Int { end - position }

    /// Throws `.derTrailingData` unless the range has been read completely.
    public func finish() throws(CryptoError) {
        guard isAtEnd else {
            throw CryptoError(.derTrailingData, "\(end - position) unread bytes at offset \(position)")
        }
    }

    /// The next element's tag without consuming it; nil at the end.
    public func peekTag() throws(CryptoError) -> DERTag? {
        guard !isAtEnd else { return nil }
        var copy = self
        return try copy.readIdentifier()
    }

    /// Reads the next element of any tag.
    ///
    /// - Throws: `.derTruncated` at the end of input or when the length runs past it, `.derMalformed`
    ///   for a non-DER identifier or length.
    public mutating func readElement() throws(CryptoError) -> DERElement {
        let start = position
        guard !isAtEnd else { throw CryptoError(.derTruncated, "expected an element at offset \(start)") }
        // Work on a copy so a failed read leaves the reader where it was.
        var cursor = self
        let tag = try cursor.readIdentifier()
        let length = try cursor.readLength()
        guard length <= cursor.end - cursor.position else {
            throw CryptoError(
                .derTruncated,
                "\(tag) at offset \(start) announces \(length) bytes, \(cursor.end - cursor.position) remain")
        }
        let valueStart = cursor.position
        position = valueStart + length
        return DERElement(
            tag: tag, storage: storage, encodedRange: start..<position,
            valueRange: valueStart..<position, depth: depth, maximumDepth: maximumDepth)
    }

    /// Reads the next element and checks it carries `tag`.
    public mutating func readElement(_ tag: DERTag) throws(CryptoError) -> DERElement {
        var cursor = self
        let element = try cursor.readElement()
        try element.expect(tag)
        self = cursor
        return element
    }

    /// Reads the next element only when it carries `tag`, for OPTIONAL and DEFAULT fields.
    public mutating func readOptionalElement(_ tag: DERTag) throws(CryptoError) -> DERElement? {
        guard try peekTag() == tag else { return nil }
        return try readElement()
    }

    /// Reads a SEQUENCE and returns a reader over its contents.
    public mutating func readSequence() throws(CryptoError) -> DERReader {
        try readElement(.sequence).contents()
    }

    /// Reads a SET and returns a reader over its contents.
    public mutating func readSet() throws(CryptoError) -> DERReader {
        try readElement(.set).contents()
    }

    /// Reads `[number] EXPLICIT` and returns a reader over the wrapped element.
    public mutating func readExplicit(_ number: UInt32) throws(CryptoError) -> DERReader {
        try readElement(.contextSpecific(number, constructed: true)).contents()
    }

    /// Reads an optional `[number] EXPLICIT`; nil when the next element has another tag.
    public mutating func readOptionalExplicit(_ number: UInt32) throws(CryptoError) -> DERReader? {
        try readOptionalElement(.contextSpecific(number, constructed: true))?.contents()
    }

    /// Reads `[number] IMPLICIT` standing for `type`, returned re-tagged as `type` for its decoder.
    public mutating func readImplicit(_ number: UInt32, as type: DERTag) throws(CryptoError) -> DERElement {
        try readElement(.contextSpecific(number, constructed: type.isConstructed)).retagged(as: type)
    }

    /// Reads an INTEGER as two's-complement bytes.
    public mutating func readIntegerBytes() throws(CryptoError) -> [UInt8] {
        try readElement(.integer).integerBytes()
    }

    /// Reads an INTEGER that must fit an `Int`.
    public mutating func readInteger() throws(CryptoError) -> Int {
        try readElement(.integer).integer()
    }

    /// Reads an ENUMERATED as `Int`.
    public mutating func readEnumerated() throws(CryptoError) -> Int {
        try readElement(.enumerated).enumerated()
    }

    /// Reads a BOOLEAN.
    public mutating func readBoolean() throws(CryptoError) -> Bool {
        try readElement(.boolean).boolean()
    }

    /// Reads a NULL.
    public mutating func readNull() throws(CryptoError) {
        try readElement(.null).null()
    }

    /// Reads an OCTET STRING's contents.
    public mutating func readOctetString() throws(CryptoError) -> [UInt8] {
        try readElement(.octetString).octetString()
    }

    /// Reads a BIT STRING.
    public mutating func readBitString() throws(CryptoError) -> DERBitString {
        try readElement(.bitString).bitString()
    }

    /// Reads an OBJECT IDENTIFIER in dotted form.
    public mutating func readObjectIdentifier() throws(CryptoError) -> String {
        try readElement(.objectIdentifier).objectIdentifier()
    }

    /// Reads a UTF8String, PrintableString or IA5String.
    public mutating func readString() throws(CryptoError) -> String {
        var cursor = self
        let text = try cursor.readElement().string()
        self = cursor
        return text
    }

    /// Decodes exactly one element spanning all of `bytes`, as extension values are.
    public static func single(_ bytes: [UInt8], maximumDepth: Int = defaultMaximumDepth) throws(CryptoError)
        -> DERElement
    {
        var reader = DERReader(bytes, maximumDepth: maximumDepth)
        let element = try reader.readElement()
        try reader.finish()
        return element
    }

    // MARK: Identifier and length octets

    /// Reads one byte or throws `.derTruncated`.
    private mutating func readByte() throws(CryptoError) -> UInt8 {
        guard position < end else { throw CryptoError(.derTruncated, "input ends at offset \(position)") }
        defer { position += 1 }
        return storage[position]
    }

    /// Reads identifier octets, low and high tag-number forms.
    private mutating func readIdentifier() throws(CryptoError) -> DERTag {
        let start = position
        let first = try readByte()
        let tagClass = DERTag.TagClass(rawValue: first >> 6)!
        let constructed = first & 0x20 != 0
        guard first & 0x1F == 0x1F else {
            return DERTag(tagClass, number: UInt32(first & 0x1F), constructed: constructed)
        }
        // High form: base-128 digits, most significant first, the last with bit 8 clear.
        var number: UInt32 = 0
        var digits = 0
        while true {
            let byte = try readByte()
            // A leading 0x80 would be a zero digit: the number has a shorter encoding.
            if digits == 0 && byte == 0x80 {
                throw CryptoError(.derMalformed, "tag number at offset \(start) is not minimally encoded")
            }
            digits += 1
            // Four digits give 28 bits, more than any real tag ([709] needs two).
            guard digits <= 4 else {
                throw CryptoError(.derMalformed, "tag number at offset \(start) is too large")
            }
            number = number << 7 | UInt32(byte & 0x7F)
            if byte & 0x80 == 0 { break }
        }
        // Numbers below 31 must use the one-byte form.
        guard number >= 31 else {
            throw CryptoError(
                .derMalformed, "tag number \(number) at offset \(start) must use the short form")
        }
        return DERTag(tagClass, number: number, constructed: constructed)
    }

    /// Reads a definite, minimally encoded length.
    private mutating func readLength() throws(CryptoError) -> Int {
        let start = position
        let first = try readByte()
        if first < 0x80 { return Int(first) }
        // 0x80 is BER's indefinite length; DER needs every length up front.
        guard first != 0x80 else {
            throw CryptoError(.derMalformed, "indefinite length at offset \(start) is not DER")
        }
        let count = Int(first & 0x7F)
        guard count <= Self.maximumLengthBytes else {
            throw CryptoError(.derMalformed, "length at offset \(start) uses \(count) bytes")
        }
        var length = 0
        for index in 0..<count {
            let byte = try readByte()
            // A leading zero byte pads the length: not minimal.
            if index == 0 && byte == 0 {
                throw CryptoError(.derMalformed, "length at offset \(start) has a leading zero byte")
            }
            length = length << 8 | Int(byte)
        }
        // Lengths below 128 have a one-byte form, which DER requires.
        guard length >= 0x80 else {
            throw CryptoError(.derMalformed, "length \(length) at offset \(start) must use the short form")
        }
        return length
    }
}
