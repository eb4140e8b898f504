/// A type that states its own schema, where its `Decodable` conformance cannot say it: a body
/// another parser reads (the WebAuthn credential), or a value with rules beyond its JSON type.
public protocol JSONSchemaDescribed {
    /// The type's schema.
    static var jsonSchema: JSONSchema { get }
    /// A value `JSONSchema.describing` hands back where a decoded one of this type is expected,
    /// so the containing type's initializer can go on to its next member; nil for a type that is
    /// never a member of a `Decodable` one (a whole body read by another parser).
    static var schemaPlaceholder: Self? { get }
}

extension JSONSchemaDescribed {
    /// None: the type is a whole body.
    public static var schemaPlaceholder: Self? { nil }
}

/// Why a type's schema could not be read: its initializer refused the placeholder values or
/// asked for a shape the reader does not follow (a nested container, a super decoder).
public struct SchemaReadingError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, naming the type.
    public let description: String
}

extension JSONSchema {
    /// The schema of what `type` decodes: an object with a member per coding key the type asks
    /// for (required when it is read with `decode`, optional and nullable with
    /// `decodeIfPresent`), arrays, string maps and optionals of those, string enumerations
    /// (`CaseIterable` with `String` raw values: their values), the schemas `JSONSchemaDescribed`
    /// types state, and the JSON primitives.
    ///
    /// It runs the type's own `init(from:)` against a decoder that records each request and
    /// answers it with a placeholder, so the schema follows the conformance the handlers use.
    /// - Throws: `SchemaReadingError` when the initializer refuses the placeholders (a type
    ///   that validates while decoding states its schema through `JSONSchemaDescribed`).
    public static func describing<T: Decodable>(_ type: T.Type) throws(SchemaReadingError) -> JSONSchema {
        do {
            return try SchemaReader.read(type).schema
        } catch let error as SchemaReadingError {
            throw error
        } catch {
            throw SchemaReadingError(description: "\(T.self): \(error)")
        }
    }
}

/// Optionals, arrays and string maps: their element's schema, without decoding one.
private protocol SchemaContainer {
    static func readContainer() throws -> (schema: JSONSchema, placeholder: Any)
}

extension Optional: SchemaContainer where Wrapped: Decodable {
    fileprivate static func readContainer() throws -> (schema: JSONSchema, placeholder: Any) {
        (.nullable(try SchemaReader.read(Wrapped.self).schema), Wrapped?.none as Any)
    }
}

extension Array: SchemaContainer where Element: Decodable {
    fileprivate static func readContainer() throws -> (schema: JSONSchema, placeholder: Any) {
        (.array(try SchemaReader.read(Element.self).schema), [Element]())
    }
}

extension Dictionary: SchemaContainer where Key == String, Value: Decodable {
    fileprivate static func readContainer() throws -> (schema: JSONSchema, placeholder: Any) {
        (.map(try SchemaReader.read(Value.self).schema), [String: Value]())
    }
}

/// The recording decoder behind `JSONSchema.describing`.
private final class SchemaReader: Decoder {
    let codingPath: [any CodingKey] = []
    let userInfo: [CodingUserInfoKey: Any] = [:]
    /// What the type asked for: one value, or members of an object.
    var value: JSONSchema?
    var members: [JSONSchema.Property]?

    static func read<T: Decodable>(_ type: T.Type) throws -> (schema: JSONSchema, placeholder: T) {
        if let described = T.self as? any JSONSchemaDescribed.Type {
            guard let placeholder = described.schemaPlaceholder as? T else {
                throw unsupported(T.self, "a described type without a placeholder")
            }
            return (described.jsonSchema, placeholder)
        }
        if let container = T.self as? any SchemaContainer.Type {
            let (schema, placeholder) = try container.readContainer()
            guard let placeholder = placeholder as? T else { throw unsupported(T.self, "container") }
            return (schema, placeholder)
        }
        if let (schema, placeholder) = primitive(T.self) { return (schema, placeholder) }
        if let enumeration = T.self as? any CaseIterable.Type, let (values, first) = stringCases(enumeration),
            let placeholder = first as? T
        {
            return (.string(values: values), placeholder)
        }
        let reader = SchemaReader()
        let placeholder = try T(from: reader)
        if let members = reader.members { return (.object(members), placeholder) }
        if let value = reader.value { return (value, placeholder) }
        throw unsupported(T.self, "a type that decodes nothing")
    }

    /// JSON's primitives and their placeholders: strings, booleans and Swift's number types.
    static func primitive<T>(_ type: T.Type) -> (JSONSchema, T)? {
        let answer: (JSONSchema, Any)? =
            switch type {
            case is String.Type: (.string(), "")
            case is Bool.Type: (.boolean, false)
            case is Double.Type: (.number, 0.0)
            case is Float.Type: (.number, Float(0))
            case is Int.Type: (.integer, 0)
            case is Int64.Type: (.integer, Int64(0))
            case is Int32.Type: (.integer, Int32(0))
            case is Int16.Type: (.integer, Int16(0))
            case is Int8.Type: (.integer, Int8(0))
            case is UInt.Type: (.integer, UInt(0))
            case is UInt64.Type: (.integer, UInt64(0))
            case is UInt32.Type: (.integer, UInt32(0))
            case is UInt16.Type: (.integer, UInt16(0))
            case is UInt8.Type: (.integer, UInt8(0))
            default: nil
            }
        guard let (schema, value) = answer, let placeholder = value as? T else { return nil }
        return (schema, placeholder)
    }

    /// A string enumeration's raw values and first case; nil when its cases are not strings.
    static func stringCases<E: CaseIterable>(_ type: E.Type) -> (values: [String], first: Any)? {
        let cases = Array(E.allCases)
        let values = cases.compactMap { ($0 as? any RawRepresentable)?.rawValue as? String }
        guard let first = cases.first, values.count == cases.count else { return nil }
        return (values, first)
    }

    static func unsupported(_ type: Any.Type, _ what: String) -> SchemaReadingError {
        SchemaReadingError(description: "\(type): the schema reader does not follow \(what)")
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        members = members ?? []
        return KeyedDecodingContainer(KeyedReader<Key>(reader: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw Self.unsupported(Self.self, "an unkeyed container outside an array")
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { ValueReader(reader: self) }

    /// Records a member and answers with its placeholder.
    func member<T: Decodable>(_ type: T.Type, _ key: some CodingKey, required: Bool) throws -> T {
        let (schema, placeholder) = try Self.read(type)
        members?.append(
            JSONSchema.Property(key.stringValue, required ? schema : .nullable(schema), required: required))
        return placeholder
    }
}

private struct KeyedReader<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let reader: SchemaReader
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }
    func decodeNil(forKey key: Key) throws -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try reader.member(type, key, required: true)
    }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try reader.member(type, key, required: true)
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try reader.member(type, key, required: true)
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try reader.member(type, key, required: true)
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        try reader.member(type, key, required: true)
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
        try reader.member(type, key, required: true)
    }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 {
        try reader.member(type, key, required: true)
    }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 {
        try reader.member(type, key, required: true)
    }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 {
        try reader.member(type, key, required: true)
    }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
        try reader.member(type, key, required: true)
    }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt {
        try reader.member(type, key, required: true)
    }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 {
        try reader.member(type, key, required: true)
    }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 {
        try reader.member(type, key, required: true)
    }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 {
        try reader.member(type, key, required: true)
    }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
        try reader.member(type, key, required: true)
    }

    // Each optional member is recorded as optional; the reader answers "absent".
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try optional(type, key)
    }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try optional(type, key) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try optional(type, key) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try optional(type, key) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try optional(type, key) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try optional(type, key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try optional(type, key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try optional(type, key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try optional(type, key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try optional(type, key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try optional(type, key) }

    private func optional<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T? {
        _ = try reader.member(type, key, required: false)
        return nil
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        throw SchemaReader.unsupported(Key.self, "a nested container")
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw SchemaReader.unsupported(Key.self, "a nested unkeyed container")
    }
    func superDecoder() throws -> any Decoder { throw SchemaReader.unsupported(Key.self, "a super decoder") }
    func superDecoder(forKey key: Key) throws -> any Decoder {
        throw SchemaReader.unsupported(Key.self, "a super decoder")
    }
}

/// A single value (a type that wraps one primitive): its schema is the value's.
private struct ValueReader: SingleValueDecodingContainer {
    let reader: SchemaReader
    var codingPath: [any CodingKey] { [] }

    func decodeNil() -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try record(type) }
    func decode(_ type: Bool.Type) throws -> Bool { try record(type) }
    func decode(_ type: String.Type) throws -> String { try record(type) }
    func decode(_ type: Double.Type) throws -> Double { try record(type) }
    func decode(_ type: Float.Type) throws -> Float { try record(type) }
    func decode(_ type: Int.Type) throws -> Int { try record(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try record(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try record(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try record(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try record(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try record(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try record(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try record(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try record(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try record(type) }

    private func record<T: Decodable>(_ type: T.Type) throws -> T {
        let (schema, placeholder) = try SchemaReader.read(type)
        reader.value = schema
        return placeholder
    }
}
