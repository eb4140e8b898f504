/// Encodes `CBORValue`s in CTAP2 canonical form (CTAP2.1 §8, "CTAP2 canonical CBOR encoding form").
///
/// Integers, lengths and counts take their shortest form, every item has a definite length, and map
/// entries are written in canonical key order. Because `CBORValue` has no floats, tags or indefinite
/// items, every value has exactly one encoding, and `decode(encode(v)) == v` with keys reordered.
/// Used by tests and the software authenticator; the relying party itself only decodes.
public enum CBOREncoder {
    /// The canonical encoding of `value`.
    public static func encode(_ value: CBORValue) -> [UInt8] {
        // One growing buffer for the whole tree; only map keys get their own small buffers, for sorting.
        var out: [UInt8] = []
        append(value, to: &out)
        return out
    }

    /// True when the encoded key `a` sorts before the encoded key `b` in CTAP2 canonical order.
    ///
    /// CTAP2 orders keys by major type, then by encoded length (shorter first), then bytewise. For the
    /// keys WebAuthn uses (small integers and short text) this coincides with RFC 8949 §4.2.1 bytewise
    /// order; the two differ only for keys whose lengths need different header sizes, such as 24 and -1.
    public static func canonicalOrder(
        _ a: some Collection<UInt8>, _ b: some Collection<UInt8>
    ) -> Bool {
        // Encoded keys are never empty; the guard only keeps the comparison total.
        guard let firstA = a.first, let firstB = b.first else { return a.isEmpty && !b.isEmpty }
        let (majorA, majorB) = (firstA >> 5, firstB >> 5)
        if majorA != majorB { return majorA < majorB }
        if a.count != b.count { return a.count < b.count }
        return a.lexicographicallyPrecedes(b)
    }

    /// Appends the encoding of `value` to `out`.
    static func append(_ value: CBORValue, to out: inout [UInt8]) {
        switch value {
        case .integer(let number):
            // A negative n is encoded as major type 1 with argument -1 - n, which is ~n in two's complement.
            if number >= 0 {
                appendHeader(major: 0, argument: UInt64(number), to: &out)
            } else {
                appendHeader(major: 1, argument: UInt64(bitPattern: ~number), to: &out)
            }
        case .bytes(let bytes):
            appendHeader(major: 2, argument: UInt64(bytes.count), to: &out)
            out.append(contentsOf: bytes)
        case .text(let text):
            // The header counts UTF-8 bytes, not characters or UTF-16 units.
            let utf8 = text.utf8
            appendHeader(major: 3, argument: UInt64(utf8.count), to: &out)
            out.append(contentsOf: utf8)
        case .array(let elements):
            appendHeader(major: 4, argument: UInt64(elements.count), to: &out)
            for element in elements { append(element, to: &out) }
        case .map(let map):
            appendHeader(major: 5, argument: UInt64(map.count), to: &out)
            // Keys are sorted by their encodings, so each entry is encoded once and then ordered.
            let encoded = map.map { entry in (key: encode(entry.key), value: entry.value) }
            for entry in encoded.sorted(by: { canonicalOrder($0.key, $1.key) }) {
                out.append(contentsOf: entry.key)
                append(entry.value, to: &out)
            }
        case .boolean(let flag):
            // Simple values 20 and 21 fit the initial byte: major type 7 is 0xe0.
            out.append(flag ? 0xf5 : 0xf4)
        case .null:
            // Simple value 22.
            out.append(0xf6)
        }
    }

    /// Appends an initial byte and its argument in the shortest form that holds it.
    static func appendHeader(major: UInt8, argument: UInt64, to out: inout [UInt8]) {
        let type = major << 5
        // Each range is exactly what the next smaller width cannot hold, so the form is always minimal.
        switch argument {
        case 0..<24:
            out.append(type | UInt8(argument))
        case 24...0xff:
            out.append(contentsOf: [type | 24, UInt8(argument)])
        case 0x100...0xffff:
            out.append(type | 25)
            appendBigEndian(argument, width: 2, to: &out)
        case 0x1_0000...0xffff_ffff:
            out.append(type | 26)
            appendBigEndian(argument, width: 4, to: &out)
        default:
            out.append(type | 27)
            appendBigEndian(argument, width: 8, to: &out)
        }
    }

    /// Appends the low `width` bytes of `value`, most significant first.
    private static func appendBigEndian(_ value: UInt64, width: Int, to out: inout [UInt8]) {
        for shift in stride(from: (width - 1) * 8, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }
}
