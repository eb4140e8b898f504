/// One decoded CBOR data item, limited to what WebAuthn and CTAP2 carry (RFC 8949 §3).
///
/// Integers are held as `Int64`: every integer WebAuthn uses (COSE labels and algorithm identifiers,
/// counters, lengths) fits, and the decoder rejects anything outside with `cbor.integer_overflow`
/// rather than silently widening. Floats, tags and `undefined` have no representation on purpose.
public enum CBORValue: Sendable, Hashable {
    /// An integer from major type 0 (unsigned) or 1 (negative).
    case integer(Int64)
    /// A definite-length byte string (major type 2).
    case bytes([UInt8])
    /// A definite-length, valid UTF-8 text string (major type 3).
    case text(String)
    /// A definite-length array (major type 4).
    case array([CBORValue])
    /// A definite-length map (major type 5), entries in the order they were decoded or inserted.
    case map(CBORMap)
    /// The simple values `false` and `true` (major type 7, values 20 and 21).
    case boolean(Bool)
    /// The simple value `null` (major type 7, value 22).
    case null

    /// The integer, when this is one.
    public var integerValue: Int64? {
        if case .integer(let value) = self { value } else { nil }
    }

    /// The byte string, when this is one.
    public var bytesValue: [UInt8]? {
        if case .bytes(let value) = self { value } else { nil }
    }

    /// The text string, when this is one.
    public var textValue: String? {
        if case .text(let value) = self { value } else { nil }
    }

    /// The array, when this is one.
    public var arrayValue: [CBORValue]? {
        if case .array(let value) = self { value } else { nil }
    }

    /// The map, when this is one.
    public var mapValue: CBORMap? {
        if case .map(let value) = self { value } else { nil }
    }

    /// The boolean, when this is one.
    public var booleanValue: Bool? {
        if case .boolean(let value) = self { value } else { nil }
    }

    /// A short name of the item's type for error messages, never its content.
    public var typeName: String {
        switch self {
        case .integer: "integer"
        case .bytes: "byte string"
        case .text: "text string"
        case .array: "array"
        case .map: "map"
        case .boolean: "boolean"
        case .null: "null"
        }
    }
}

extension CBORValue: ExpressibleByIntegerLiteral {
    /// An integer item, so test and authenticator code can write COSE maps as literals.
    public init(integerLiteral value: Int64) { self = .integer(value) }
}

extension CBORValue: ExpressibleByStringLiteral {
    /// A text string item.
    public init(stringLiteral value: String) { self = .text(value) }
}

extension CBORValue: ExpressibleByBooleanLiteral {
    /// A boolean item.
    public init(booleanLiteral value: Bool) { self = .boolean(value) }
}

extension CBORValue: ExpressibleByArrayLiteral {
    /// An array item.
    public init(arrayLiteral elements: CBORValue...) { self = .array(elements) }
}

extension CBORValue: ExpressibleByDictionaryLiteral {
    /// A map item; repeating a key is a programming error and traps, as it does for `Dictionary`.
    public init(dictionaryLiteral elements: (CBORValue, CBORValue)...) {
        self = .map(CBORMap(uniqueKeysWithValues: elements))
    }
}

/// A CBOR map as an ordered list of entries, which is how maps arrive on the wire.
///
/// WebAuthn maps are small (a COSE key has four or five entries), so lookups scan linearly instead
/// of hashing; order is kept so that a decoded map can be inspected exactly as it was sent.
/// Keys are unique: the decoder rejects duplicates and the mutating API replaces in place.
/// It is a `Sequence`, not a `Collection`, so that `map[1]` always means the key 1, never a position.
public struct CBORMap: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    /// One key/value pair.
    public struct Entry: Sendable, Hashable {
        /// The entry's key.
        public var key: CBORValue
        /// The entry's value.
        public var value: CBORValue

        /// Creates an entry.
        public init(key: CBORValue, value: CBORValue) {
            self.key = key
            self.value = value
        }
    }

    /// The entries in order.
    public private(set) var entries: [Entry]

    /// An empty map.
    public init() { entries = [] }

    /// A map of `pairs`, which must not repeat a key.
    ///
    /// - Precondition: the keys are unique; a repeat is a programming error (the decoder never
    ///   builds maps this way).
    public init(uniqueKeysWithValues pairs: some Sequence<(CBORValue, CBORValue)>) {
        entries = []
        for (key, value) in pairs {
            precondition(self[key] == nil, "duplicate key in a CBOR map literal")
            entries.append(Entry(key: key, value: value))
        }
    }

    /// A map literal; repeating a key traps.
    public init(dictionaryLiteral elements: (CBORValue, CBORValue)...) {
        self.init(uniqueKeysWithValues: elements)
    }

    /// Entries the decoder has already checked for uniqueness.
    init(checkedEntries: [Entry]) { entries = checkedEntries }

    /// The value for `key`, nil when absent; setting replaces in place or appends, setting nil removes.
    public subscript(key: CBORValue) -> CBORValue? {
        get { entries.first(where: { $0.key == key })?.value }
        set {
            let index = entries.firstIndex(where: { $0.key == key })
            switch (index, newValue) {
            case (let index?, let value?): entries[index].value = value
            case (let index?, nil): entries.remove(at: index)
            case (nil, let value?): entries.append(Entry(key: key, value: value))
            case (nil, nil): break
            }
        }
    }

    /// The value under an integer label, the way COSE and CTAP2 address their maps.
    public subscript(label label: Int64) -> CBORValue? { self[.integer(label)] }

    /// The value under a text key, the way attestation objects and extensions address theirs.
    public subscript(name name: String) -> CBORValue? { self[.text(name)] }

    /// The number of entries.
    public var count: Int { entries.count }

    /// True when the map has no entries.
    public var isEmpty: Bool { entries.isEmpty }

    /// Iterates the entries in order.
    public func makeIterator() -> IndexingIterator<[Entry]> { entries.makeIterator() }
}
