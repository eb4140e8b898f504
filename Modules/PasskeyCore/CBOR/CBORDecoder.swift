public import FoundationEssentials

/// A strict RFC 8949 decoder for the CTAP2 canonical subset WebAuthn uses.
///
/// What it accepts, and why (CTAP2.1 §8 "Message Encoding", WebAuthn L3 §5.8.5 and §6.5):
/// - integers (major types 0 and 1) within `Int64`; larger ones are `cbor.integer_overflow`;
/// - byte and text strings, arrays and maps of definite length only (`cbor.indefinite_length`);
/// - the simple values `false`, `true` and `null`.
///
/// What it rejects:
/// - any integer, length or count not in its shortest form (`cbor.non_minimal`), as CTAP2 requires;
///   this also makes every accepted value's encoding unique, so signatures over re-encoded data hold;
/// - tags, floats, `undefined` and other simple values (`cbor.unsupported_type`): CTAP2 forbids tags,
///   and no WebAuthn structure carries a float or `undefined`, so accepting them would only widen the
///   attack surface;
/// - text that is not valid UTF-8 (`cbor.invalid_utf8`) and duplicate map keys (`cbor.duplicate_key`);
/// - nesting deeper than `Limits.maxDepth` and input longer than `Limits.maxInputBytes`.
///
/// Map key order is *not* enforced by default: CTAP2 requires canonical order, but WebAuthn relying
/// parties in the field accept the attestation objects of authenticators that get it wrong, and order
/// carries no meaning once duplicates are refused. `Limits.requireCanonicalMapOrder` turns it on.
///
/// Declared lengths are checked against the bytes actually present before anything is allocated, so a
/// header announcing 2^63 bytes costs nothing. Decoding never traps on any input.
public struct CBORDecoder: Sendable {
    /// Bounds on what one decode may consume.
    public struct Limits: Sendable, Hashable {
        /// The deepest nesting of arrays and maps allowed; the top-level container is depth 1.
        /// Values above `Limits.depthCeiling` are treated as the ceiling, to keep recursion bounded.
        public var maxDepth: Int
        /// The longest input accepted, in bytes.
        public var maxInputBytes: Int
        /// Whether map keys must appear in CTAP2 canonical order (`cbor.unsorted_keys` otherwise).
        public var requireCanonicalMapOrder: Bool

        /// The hard upper bound on `maxDepth`, far above anything WebAuthn nests (at most 4 levels).
        public static let depthCeiling = 64

        /// Strict defaults: depth 16, 64 KiB, map order not enforced.
        ///
        /// 64 KiB is well above the largest attestation object in practice (an android-safetynet JWS
        /// or a TPM x5c chain is a few kilobytes) while keeping the decoded tree small.
        public init(
            maxDepth: Int = 16, maxInputBytes: Int = 64 * 1024, requireCanonicalMapOrder: Bool = false
        ) {
            self.maxDepth = maxDepth
            self.maxInputBytes = maxInputBytes
            self.requireCanonicalMapOrder = requireCanonicalMapOrder
        }
    }

    /// The limits this decoder enforces.
    public let limits: Limits

    /// Creates a decoder with `limits` (strict defaults when omitted).
    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Decodes exactly one item that must fill `bytes` completely.
    ///
    /// - Parameter bytes: The encoded item.
    /// - Returns: The decoded value.
    /// - Throws: `PasskeyError` with a `cbor.*` code; `cbor.trailing_bytes` when bytes follow the item.
    public func decode(_ bytes: some ContiguousBytes) throws(PasskeyError) -> CBORValue {
        let (value, consumed, total) = try decodeFirst(bytes)
        guard consumed == total else {
            throw PasskeyError(
                .cborTrailingBytes, "\(total - consumed) bytes follow the CBOR item at byte \(consumed)")
        }
        return value
    }

    /// Decodes the one item at the start of `bytes` and reports how many bytes it took.
    ///
    /// This is how authenticator data is split: the credential public key is a CBOR item followed,
    /// without any length prefix, by the extensions map.
    /// - Parameter bytes: Input that starts with an encoded item and may continue after it.
    /// - Returns: The value and the number of bytes it occupied.
    /// - Throws: `PasskeyError` with a `cbor.*` code.
    public func decodePrefix(_ bytes: some ContiguousBytes) throws(PasskeyError) -> (
        value: CBORValue, consumed: Int
    ) {
        let (value, consumed, _) = try decodeFirst(bytes)
        return (value, consumed)
    }

    /// Decodes the first item, returning it with the bytes consumed and the input length.
    private func decodeFirst(_ bytes: some ContiguousBytes) throws(PasskeyError) -> (CBORValue, Int, Int) {
        // ContiguousBytes.withUnsafeBytes is untyped-rethrows, so the typed error travels in a Result.
        let outcome = bytes.withUnsafeBytes { raw -> Swift.Result<(CBORValue, Int, Int), PasskeyError> in
            guard raw.count <= limits.maxInputBytes else {
                return .failure(
                    PasskeyError(
                        .cborTooLarge, "CBOR input of \(raw.count) bytes exceeds \(limits.maxInputBytes)"))
            }
            var reader = CBORReader(
                bytes: raw, maxDepth: min(limits.maxDepth, Limits.depthCeiling),
                requireCanonicalMapOrder: limits.requireCanonicalMapOrder)
            do throws(PasskeyError) {
                let value = try reader.readItem(depth: 0)
                return .success((value, reader.offset, raw.count))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }
}

/// The cursor that does the decoding; lives only inside `withUnsafeBytes`, so it never escapes.
private struct CBORReader {
    let bytes: UnsafeRawBufferPointer
    let maxDepth: Int
    let requireCanonicalMapOrder: Bool
    /// The index of the next unread byte.
    var offset = 0

    init(bytes: UnsafeRawBufferPointer, maxDepth: Int, requireCanonicalMapOrder: Bool) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        self.requireCanonicalMapOrder = requireCanonicalMapOrder
    }

    /// Bytes not yet read.
    var remaining: Int { bytes.count - offset }

    /// Reads one item; `depth` counts the containers around it.
    mutating func readItem(depth: Int) throws(PasskeyError) -> CBORValue {
        let start = offset
        guard remaining > 0 else {
            throw PasskeyError(.cborTruncated, "input ends where an item should start")
        }
        let initial = bytes[offset]
        offset += 1
        let major = initial >> 5
        let info = initial & 0x1f

        // Major type 7 reuses the argument bits for simple values and floats, so it is decoded apart.
        if major == 7 { return try readSimple(info: info, at: start) }
        // Tags are refused before their argument is read: CTAP2 forbids them outright.
        if major == 6 {
            throw PasskeyError(.cborUnsupportedType, "CBOR tags are not allowed (byte \(start))")
        }
        if info == 31 {
            // Only strings and containers have an indefinite form; on integers 31 is not well formed.
            if major >= 2 {
                throw PasskeyError(.cborIndefiniteLength, "indefinite-length item at byte \(start)")
            }
            throw PasskeyError(.cborMalformed, "additional information 31 on an integer at byte \(start)")
        }
        let argument = try readArgument(info: info, at: start)

        switch major {
        case 0:
            guard argument <= UInt64(Int64.max) else {
                throw PasskeyError(.cborIntegerOverflow, "unsigned integer above Int64.max at byte \(start)")
            }
            return .integer(Int64(argument))
        case 1:
            // The value is -1 - argument, which fits Int64 exactly when argument ≤ Int64.max.
            guard argument <= UInt64(Int64.max) else {
                throw PasskeyError(.cborIntegerOverflow, "negative integer below Int64.min at byte \(start)")
            }
            return .integer(-1 - Int64(argument))
        case 2:
            return .bytes(Array(try readSpan(length: argument, at: start)))
        case 3:
            let span = try readSpan(length: argument, at: start)
            // String(validating:) refuses overlong forms, surrogates and truncated sequences.
            guard let text = String(validating: span, as: UTF8.self) else {
                throw PasskeyError(.cborInvalidUTF8, "text string at byte \(start) is not valid UTF-8")
            }
            return .text(text)
        case 4:
            return .array(try readArray(count: argument, depth: depth + 1, at: start))
        default:
            return .map(try readMap(count: argument, depth: depth + 1, at: start))
        }
    }

    /// Reads the argument that follows the initial byte, insisting on the shortest encoding.
    mutating func readArgument(info: UInt8, at start: Int) throws(PasskeyError) -> UInt64 {
        switch info {
        case 0..<24:
            return UInt64(info)
        case 24, 25, 26, 27:
            let width = 1 << Int(info - 24)
            guard remaining >= width else {
                throw PasskeyError(
                    .cborTruncated, "input ends inside the argument of the item at byte \(start)")
            }
            var value: UInt64 = 0
            for index in 0..<width { value = value << 8 | UInt64(bytes[offset + index]) }
            offset += width
            // Each width must be needed: the value must not fit the next smaller form.
            let smallest: UInt64 =
                switch width {
                case 1: 24
                case 2: 0x100
                case 4: 0x1_0000
                default: 0x1_0000_0000
                }
            guard value >= smallest else {
                throw PasskeyError(
                    .cborNonMinimal, "argument of the item at byte \(start) is not in shortest form")
            }
            return value
        default:
            // 28, 29 and 30 are reserved by RFC 8949 §3 and make the item not well formed.
            throw PasskeyError(.cborMalformed, "reserved additional information \(info) at byte \(start)")
        }
    }

    /// Returns the next `length` bytes, failing before any allocation when they are not all present.
    mutating func readSpan(length: UInt64, at start: Int) throws(PasskeyError) -> UnsafeRawBufferPointer {
        guard length <= UInt64(remaining) else {
            throw PasskeyError(.cborTruncated, "string at byte \(start) declares more bytes than remain")
        }
        let span = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + Int(length))])
        offset += Int(length)
        return span
    }

    /// Reads `count` array elements.
    mutating func readArray(count: UInt64, depth: Int, at start: Int) throws(PasskeyError) -> [CBORValue] {
        try checkContainer(count: count, bytesPerEntry: 1, depth: depth, at: start)
        var elements: [CBORValue] = []
        // Safe to reserve: the count is already bounded by the bytes that remain.
        elements.reserveCapacity(Int(count))
        for _ in 0..<count { elements.append(try readItem(depth: depth)) }
        return elements
    }

    /// Reads `count` map entries, refusing duplicate keys (and, if asked, keys out of canonical order).
    mutating func readMap(count: UInt64, depth: Int, at start: Int) throws(PasskeyError) -> CBORMap {
        try checkContainer(count: count, bytesPerEntry: 2, depth: depth, at: start)
        var entries: [CBORMap.Entry] = []
        entries.reserveCapacity(Int(count))
        // Large maps use a set so that duplicate detection stays linear; WebAuthn maps are small.
        var seen: Set<CBORValue>? = count > 16 ? Set(minimumCapacity: Int(count)) : nil
        var previousKey: Range<Int>? = nil
        for _ in 0..<count {
            let keyStart = offset
            let key = try readItem(depth: depth)
            let keyRange = keyStart..<offset
            if seen != nil {
                guard seen!.insert(key).inserted else { throw duplicate(at: keyStart) }
            } else if entries.contains(where: { $0.key == key }) {
                throw duplicate(at: keyStart)
            }
            if requireCanonicalMapOrder, let previousKey {
                guard CBOREncoder.canonicalOrder(bytes[previousKey], bytes[keyRange]) else {
                    throw PasskeyError(
                        .cborUnsortedKeys, "map key at byte \(keyStart) is out of canonical order")
                }
            }
            previousKey = keyRange
            let value = try readItem(depth: depth)
            entries.append(CBORMap.Entry(key: key, value: value))
        }
        return CBORMap(checkedEntries: entries)
    }

    /// The error for a repeated map key; the key itself is not echoed, it may be attacker data.
    func duplicate(at keyStart: Int) -> PasskeyError {
        PasskeyError(.cborDuplicateKey, "map key at byte \(keyStart) repeats an earlier key")
    }

    /// Checks depth, and that `count` entries could possibly fit in what remains.
    func checkContainer(count: UInt64, bytesPerEntry: UInt64, depth: Int, at start: Int) throws(PasskeyError)
    {
        guard depth <= maxDepth else {
            throw PasskeyError(.cborDepth, "nesting deeper than \(maxDepth) at byte \(start)")
        }
        // Every element takes at least one byte (a map entry two); division avoids overflow.
        guard count <= UInt64(remaining) / bytesPerEntry else {
            throw PasskeyError(
                .cborTruncated, "container at byte \(start) declares more items than bytes remain")
        }
    }

    /// Decodes major type 7: only false, true and null are accepted.
    mutating func readSimple(info: UInt8, at start: Int) throws(PasskeyError) -> CBORValue {
        switch info {
        case 20: return .boolean(false)
        case 21: return .boolean(true)
        case 22: return .null
        case 23: throw PasskeyError(.cborUnsupportedType, "undefined is not allowed (byte \(start))")
        case 25, 26, 27:
            throw PasskeyError(.cborUnsupportedType, "floating-point values are not allowed (byte \(start))")
        case 31:
            throw PasskeyError(
                .cborIndefiniteLength, "break byte outside an indefinite-length item at byte \(start)")
        case 28, 29, 30:
            throw PasskeyError(.cborMalformed, "reserved additional information \(info) at byte \(start)")
        default: throw PasskeyError(.cborUnsupportedType, "unassigned simple value at byte \(start)")
        }
    }
}
