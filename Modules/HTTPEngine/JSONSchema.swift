public import CryptoCore

/// A JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1) as the API document writes it.
///
/// Bodies are not described by hand: `JSONSchema.describing(_:)` reads a `Decodable` type's own
/// conformance (its coding keys, which members are optional, their types), so a request body's
/// schema is the type its handler decodes and a response's the type its handler encodes (response
/// views are `Codable` for this; the compiler derives both directions from one set of keys).
/// Only what a type cannot say about itself (the WebAuthn JSON the ceremony parser reads,
/// a string's allowed values) is declared, through `JSONSchemaDescribed`.
public indirect enum JSONSchema: Sendable, Hashable {
    /// A string; `values` lists the allowed ones when it is an enumeration.
    case string(format: String? = nil, values: [String]? = nil, pattern: String? = nil)
    /// A whole number.
    case integer
    /// Any number.
    case number
    /// `true` or `false`.
    case boolean
    /// An array of `items`.
    case array(JSONSchema)
    /// An object with these members; `closed` refuses members it does not name.
    case object([Property], closed: Bool)
    /// An object whose every member is `values` (a string map).
    case map(JSONSchema)
    /// The schema or `null`.
    case nullable(JSONSchema)
    /// The schema with a description for readers.
    case described(JSONSchema, String)

    /// One member of an object schema.
    public struct Property: Sendable, Hashable {
        /// The member's name.
        public let name: String
        /// Its value's schema.
        public let schema: JSONSchema
        /// Whether an object without it is refused.
        public let required: Bool

        /// Creates a member.
        public init(_ name: String, _ schema: JSONSchema, required: Bool = true) {
            self.name = name
            self.schema = schema
            self.required = required
        }
    }

    /// An object with `properties`, open to members it does not name (a request body: the
    /// decoder ignores unknown members).
    public static func object(_ properties: [Property]) -> JSONSchema { .object(properties, closed: false) }

    /// The schema with its description.
    public func described(_ text: String) -> JSONSchema { .described(self, text) }

    /// The same schema with every object in it closed (response bodies: the server writes no
    /// member its types do not name, so a client or a contract test can hold it to that).
    public var closed: JSONSchema {
        switch self {
        case .object(let properties, _):
            .object(
                properties.map { Property($0.name, $0.schema.closed, required: $0.required) }, closed: true)
        case .array(let items): .array(items.closed)
        case .map(let values): .map(values.closed)
        case .nullable(let schema): .nullable(schema.closed)
        case .described(let schema, let text): .described(schema.closed, text)
        case .string, .integer, .number, .boolean: self
        }
    }

    /// Writes the schema as a JSON value.
    public func write(to writer: inout JSONWriter) {
        writer.object { object in write(members: &object) }
    }

    private func write(members object: inout JSONWriter) {
        switch self {
        case .string(let format, let values, let pattern):
            object.member("type", "string")
            if let format { object.member("format", format) }
            if let pattern { object.member("pattern", pattern) }
            if let values {
                object.key("enum")
                object.array { array in for value in values { array.string(value) } }
            }
        case .integer: object.member("type", "integer")
        case .number: object.member("type", "number")
        case .boolean: object.member("type", "boolean")
        case .array(let items):
            object.member("type", "array")
            object.key("items")
            items.write(to: &object)
        case .object(let properties, let closed):
            object.member("type", "object")
            object.key("properties")
            object.object { members in
                for property in properties {
                    members.key(property.name)
                    property.schema.write(to: &members)
                }
            }
            let required = properties.filter(\.required).map(\.name)
            if !required.isEmpty {
                object.key("required")
                object.array { array in for name in required { array.string(name) } }
            }
            if closed {
                object.key("additionalProperties")
                object.bool(false)
            }
        case .map(let values):
            object.member("type", "object")
            object.key("additionalProperties")
            values.write(to: &object)
        case .nullable(let schema):
            // `oneOf` with null: 3.1 has no `nullable`, and a `type` list cannot carry an enum's
            // values or an object's members beside null as plainly.
            object.key("oneOf")
            object.array { array in
                schema.write(to: &array)
                array.object { null in null.member("type", "null") }
            }
        case .described(let schema, let text):
            schema.write(members: &object)
            object.member("description", text)
        }
    }
}
