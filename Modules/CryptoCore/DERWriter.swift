/// A small DER encoder: the certificate extensions issuance writes itself (the rest is OpenSSL's),
/// and in tests the extension values attestation certificates carry (FIDO AAGUID, Apple nonce,
/// Android key description, TPM SAN) and crafted inputs for `DERReader`.
///
/// Each function returns one complete element. No validation, so tests can build broken inputs;
/// callers pass well-formed values.
public enum DERWriter {
    /// An element with a low-form identifier byte (tag numbers below 31) and `contents`.
    public static func element(_ identifier: UInt8, _ contents: [UInt8]) -> [UInt8] {
        [identifier] + length(contents.count) + contents
    }

    /// The DER length octets for `count`: short form below 128, else the minimal long form.
    public static func length(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var rest = count
        while rest > 0 {
            bytes.insert(UInt8(rest & 0xFF), at: 0)
            rest >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    /// SEQUENCE of the given encoded elements.
    public static func sequence(_ elements: [[UInt8]]) -> [UInt8] { element(0x30, elements.flatMap { $0 }) }

    /// SET of the given encoded elements, in the order given (DER sorts SET OF; callers choose).
    public static func set(_ elements: [[UInt8]]) -> [UInt8] { element(0x31, elements.flatMap { $0 }) }

    /// INTEGER holding `value` in minimal two's complement.
    public static func integer(_ value: Int) -> [UInt8] {
        var bytes = withUnsafeBytes(of: value.bigEndian) { Array($0) }
        // Drop sign bytes that the next byte's top bit repeats.
        while bytes.count > 1
            && ((bytes[0] == 0x00 && bytes[1] & 0x80 == 0) || (bytes[0] == 0xFF && bytes[1] & 0x80 != 0))
        {
            bytes.removeFirst()
        }
        return element(0x02, bytes)
    }

    /// ENUMERATED holding `value`.
    public static func enumerated(_ value: Int) -> [UInt8] { [0x0A] + integer(value).dropFirst() }

    /// BOOLEAN (0xFF for true, as DER requires).
    public static func boolean(_ value: Bool) -> [UInt8] { element(0x01, [value ? 0xFF : 0x00]) }

    /// NULL.
    public static let null: [UInt8] = [0x05, 0x00]

    /// OCTET STRING.
    public static func octetString(_ bytes: [UInt8]) -> [UInt8] { element(0x04, bytes) }

    /// BIT STRING with `unusedBits` padding bits in the last byte.
    public static func bitString(_ bytes: [UInt8], unusedBits: UInt8 = 0) -> [UInt8] {
        element(0x03, [unusedBits] + bytes)
    }

    /// UTF8String.
    public static func utf8String(_ text: String) -> [UInt8] { element(0x0C, Array(text.utf8)) }

    /// PrintableString.
    public static func printableString(_ text: String) -> [UInt8] { element(0x13, Array(text.utf8)) }

    /// IA5String.
    public static func ia5String(_ text: String) -> [UInt8] { element(0x16, Array(text.utf8)) }

    /// OBJECT IDENTIFIER from dotted form; text that is not an OID (fewer than two numeric arcs)
    /// gives an empty OBJECT IDENTIFIER, which every parser refuses.
    public static func objectIdentifier(_ dotted: String) -> [UInt8] {
        let arcs = dotted.split(separator: ".").compactMap { UInt64($0) }
        guard arcs.count >= 2, arcs[0] <= 2 else { return element(0x06, []) }
        var contents: [UInt8] = []
        for arc in [arcs[0] * 40 + arcs[1]] + arcs.dropFirst(2) {
            // Base 128, most significant digit first, continuation bit on all but the last.
            var digits: [UInt8] = [UInt8(arc & 0x7F)]
            var rest = arc >> 7
            while rest > 0 {
                digits.insert(UInt8(rest & 0x7F) | 0x80, at: 0)
                rest >>= 7
            }
            contents += digits
        }
        return element(0x06, contents)
    }

    /// A context-specific tag `[number]` around `contents`, in the high-tag form from 31 up.
    ///
    /// - Parameters:
    ///   - number: The tag number.
    ///   - constructed: True for EXPLICIT tags (and implicit ones replacing a constructed type).
    ///   - contents: The contents octets: a whole element for EXPLICIT, the bare contents for IMPLICIT.
    public static func contextSpecific(_ number: UInt32, constructed: Bool, _ contents: [UInt8]) -> [UInt8] {
        let first: UInt8 = 0x80 | (constructed ? 0x20 : 0)
        var identifier: [UInt8]
        if number < 31 {
            identifier = [first | UInt8(number)]
        } else {
            var digits: [UInt8] = [UInt8(number & 0x7F)]
            var rest = number >> 7
            while rest > 0 {
                digits.insert(UInt8(rest & 0x7F) | 0x80, at: 0)
                rest >>= 7
            }
            identifier = [first | 0x1F] + digits
        }
        return identifier + length(contents.count) + contents
    }

    /// `[number] EXPLICIT` around one encoded element.
    public static func explicit(_ number: UInt32, _ inner: [UInt8]) -> [UInt8] {
        contextSpecific(number, constructed: true, inner)
    }
}
