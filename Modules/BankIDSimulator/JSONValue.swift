import FoundationEssentials

/// A JSON value that keeps booleans, numbers and strings apart, so request validation can be as
/// strict about types as BankID is (`"pinCode": 1` is not a boolean).
enum JSONValue: Sendable, Equatable, Codable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // Bool first: Foundation's decoder refuses a number as Bool, so true/false stay booleans.
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            if value == value.rounded(), abs(value) < 1e15 {
                try container.encode(Int(value))
            } else {
                try container.encode(value)
            }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// Parses a JSON document; nil when it is not JSON.
    static func parse(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    /// The document's bytes, keys sorted so output is stable.
    var serialized: [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding a JSONValue cannot fail: every case maps to a JSON value.
        return (try? [UInt8](encoder.encode(self))) ?? Array("{}".utf8)
    }

    /// The object's members, or nil.
    var object: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The string, or nil.
    var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The boolean, or nil.
    var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The number as an Int when it is a whole number, or nil.
    var int: Int? {
        if case .number(let value) = self, value == value.rounded(), abs(value) < 1e15 { return Int(value) }
        return nil
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByDictionaryLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByIntegerLiteral
{
    init(stringLiteral value: String) { self = .string(value) }
    init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { $1 }))
    }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(integerLiteral value: Int) { self = .number(Double(value)) }
}
