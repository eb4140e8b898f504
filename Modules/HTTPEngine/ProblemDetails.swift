/// A value of a problem's extension member: JSON scalars, string lists, and objects of those for
/// machine-readable hints (the Signal API's arguments) without letting arbitrary `Encodable`
/// values (and the data they hold) leak into errors: every member is named by the code that
/// builds it.
public enum ProblemValue: Sendable, Hashable, Encodable {
    /// A JSON string.
    case string(String)
    /// A JSON integer.
    case int(Int)
    /// A JSON number.
    case double(Double)
    /// A JSON boolean.
    case bool(Bool)
    /// A JSON array of strings.
    case strings([String])
    /// A JSON object of those values.
    case object([String: ProblemValue])

    /// Encodes the bare JSON value.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .string(let value): try Self.encode(value, to: encoder)
        case .int(let value): try Self.encode(value, to: encoder)
        case .double(let value): try Self.encode(value, to: encoder)
        case .bool(let value): try Self.encode(value, to: encoder)
        case .strings(let value): try Self.encode(value, to: encoder)
        case .object(let members):
            var object = encoder.container(keyedBy: ProblemDetails.Key.self)
            for (name, value) in members { try object.encode(value, forKey: ProblemDetails.Key(name)) }
        }
    }

    private static func encode(_ value: some Encodable, to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

/// An RFC 9457 problem document with Portvakt's stable `code`, served as `application/problem+json`.
public struct ProblemDetails: Sendable, Hashable, Encodable {
    /// A URI naming the problem type; derived from `code` unless given.
    public var type: String
    /// A short human-readable summary that does not change between occurrences.
    public var title: String
    /// The HTTP status code, repeated in the body for clients that lose the status line.
    public var status: Int
    /// A human-readable explanation of this occurrence; never secrets or personal data.
    public var detail: String?
    /// A URI reference for this occurrence, if one is useful.
    public var instance: String?
    /// The stable machine-readable code clients switch on, e.g. `route.not_found`.
    public var code: String
    /// Extra members (RFC 9457 §3.2), encoded beside the standard ones.
    public var extensions: [String: ProblemValue]

    /// Creates a problem document.
    /// - Parameters:
    ///   - status: the HTTP status code.
    ///   - code: the stable code; the default `type` is `urn:portvakt:problem:<code>`.
    ///   - title: the summary for this kind of problem.
    ///   - detail: an explanation of this occurrence.
    ///   - type: overrides the type URI.
    ///   - instance: a URI reference for this occurrence.
    ///   - extensions: extra members; standard member names are ignored here.
    public init(
        status: Int, code: String, title: String, detail: String? = nil, type: String? = nil,
        instance: String? = nil, extensions: [String: ProblemValue] = [:]
    ) {
        self.type = type ?? "urn:portvakt:problem:\(code)"
        self.title = title
        self.status = status
        self.detail = detail
        self.instance = instance
        self.code = code
        self.extensions = extensions
    }

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    private static let standardMembers: Set<String> = [
        "type", "title", "status", "detail", "instance", "code",
    ]

    /// Encodes the standard members, then the extensions (which may not shadow them).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(type, forKey: Key("type"))
        try container.encode(title, forKey: Key("title"))
        try container.encode(status, forKey: Key("status"))
        try container.encodeIfPresent(detail, forKey: Key("detail"))
        try container.encodeIfPresent(instance, forKey: Key("instance"))
        try container.encode(code, forKey: Key("code"))
        for (name, value) in extensions where !Self.standardMembers.contains(name) {
            try container.encode(value, forKey: Key(name))
        }
    }
}
