/// HTTP header fields in arrival order: names compare case-insensitively, a name may repeat.
///
/// Stored as a flat array because requests carry a handful of fields: a linear scan with an
/// allocation-free ASCII case fold beats hashing lowercased copies.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    /// One header field.
    public typealias Field = (name: String, value: String)

    private var fields: [Field]

    /// Creates an empty set of headers.
    public init() {
        fields = []
        fields.reserveCapacity(8)
    }

    /// Creates headers from name/value pairs, keeping their order.
    /// - Parameter pairs: the fields; names may repeat.
    public init(_ pairs: [(String, String)]) {
        fields = pairs.map { (name: $0.0, value: $0.1) }
    }

    /// Creates headers from a literal such as `["Content-Type": "application/json"]`.
    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// The number of fields, counting repeats.
    public var count: Int { fields.count }

    /// Whether there are no fields.
    public var isEmpty: Bool { fields.isEmpty }

    /// The first value for `name`, or nil.
    public subscript(_ name: String) -> String? {
        for field in fields where Self.equalIgnoringCase(field.name, name) { return field.value }
        return nil
    }

    /// Every value for `name`, in arrival order.
    public func values(for name: String) -> [String] {
        fields.compactMap { Self.equalIgnoringCase($0.name, name) ? $0.value : nil }
    }

    /// Whether at least one field is named `name`.
    public func contains(_ name: String) -> Bool {
        fields.contains { Self.equalIgnoringCase($0.name, name) }
    }

    /// Appends a field, keeping any earlier field with the same name.
    public mutating func add(_ name: String, _ value: String) {
        fields.append((name: name, value: value))
    }

    /// Replaces every field named `name` with one field.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        fields.append((name: name, value: value))
    }

    /// Removes every field named `name`.
    public mutating func remove(_ name: String) {
        fields.removeAll { Self.equalIgnoringCase($0.name, name) }
    }

    /// Iterates the fields in order.
    public func makeIterator() -> IndexingIterator<[Field]> {
        fields.makeIterator()
    }

    /// ASCII case-insensitive equality: header names are tokens, so no Unicode folding is needed.
    static func equalIgnoringCase(_ lhs: String, _ rhs: String) -> Bool {
        // Lengths first: almost every comparison in a header scan fails there, at O(1).
        guard lhs.utf8.count == rhs.utf8.count else { return false }
        // Native strings (all of ours) have contiguous UTF-8: compare the bytes directly, which
        // costs a fraction of two UTF8View iterators (this runs for every field of every request).
        let contiguous = lhs.utf8.withContiguousStorageIfAvailable { left in
            rhs.utf8.withContiguousStorageIfAvailable { right in
                for index in 0..<left.count where left[index] != right[index] {
                    if lowercase(left[index]) != lowercase(right[index]) { return false }
                }
                return true
            }
        }
        if let contiguous, let equal = contiguous { return equal }
        var left = lhs.utf8.makeIterator()
        var right = rhs.utf8.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return true
            case (let a?, let b?):
                if a != b && lowercase(a) != lowercase(b) { return false }
            default: return false
            }
        }
    }

    @inline(__always)
    static func lowercase(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }
}
