/// What the API document says about one route beyond its summary: the body it reads, its query
/// parameters, what it answers on success, the problems it can answer and who may call it.
///
/// Schemas are closures, read when the document is first asked for: a server nobody asks never
/// runs the schema reader.
public struct RouteContract: Sendable {
    /// A schema, read on demand.
    public typealias SchemaSource = @Sendable () throws(SchemaReadingError) -> JSONSchema

    /// The request body.
    public struct Body: Sendable {
        /// The JSON body's schema.
        public let schema: SchemaSource
        /// Whether a request without a body is refused (an optional body means `{}`).
        public let required: Bool

        /// The body `type` decodes.
        public static func json<T: Decodable>(_ type: T.Type, required: Bool = true) -> Body {
            Body(
                schema: { () throws(SchemaReadingError) in try JSONSchema.describing(type) },
                required: required)
        }

        /// A body read by another parser, with the schema its type states.
        public static func json<T: JSONSchemaDescribed>(described type: T.Type, required: Bool = true) -> Body
        {
            Body(schema: { T.jsonSchema }, required: required)
        }
    }

    /// A query parameter.
    public struct QueryParameter: Sendable {
        /// Its name.
        public let name: String
        /// Its value's schema (a string, or an integer).
        public let schema: JSONSchema
        /// What it does.
        public let description: String

        /// Creates a parameter.
        public init(_ name: String, _ schema: JSONSchema, _ description: String) {
            self.name = name
            self.schema = schema
            self.description = description
        }

        /// Creates a string parameter.
        public init(_ name: String, _ description: String) {
            self.init(name, .string(), description)
        }
    }

    /// A success answer.
    public struct Response: Sendable {
        /// Its status (2xx, or 3xx for a redirect).
        public let status: Int
        /// What it means.
        public let description: String
        /// Its media type and, for JSON, the body's schema; nil for no body.
        public let content: (mediaType: String, schema: SchemaSource?)?
        /// The header fields it carries that a client reads (string values).
        public var headers: [Header] = []

        /// A response header field the document names.
        public struct Header: Sendable {
            /// The field's name.
            public let name: String
            /// What it holds.
            public let description: String
            /// Whether every such answer carries it.
            public let required: Bool

            /// Creates a header entry.
            public init(_ name: String, _ description: String, required: Bool = true) {
                self.name = name
                self.description = description
                self.required = required
            }
        }

        /// A JSON body of `type` (a response view: its `Decodable` side is read for the schema,
        /// and every object in it is closed).
        public static func json<T: Decodable>(
            _ type: T.Type, status: Int = 200, _ description: String = "Success"
        ) -> Response {
            Response(
                status: status, description: description,
                content: (
                    "application/json",
                    { () throws(SchemaReadingError) in try JSONSchema.describing(type).closed }
                ))
        }

        /// A JSON body with the schema `type` states (a body written by hand).
        public static func json<T: JSONSchemaDescribed>(
            described type: T.Type, status: Int = 200, _ description: String = "Success"
        ) -> Response {
            Response(
                status: status, description: description, content: ("application/json", { T.jsonSchema }))
        }

        /// A body of another media type (a page, a script, metrics), not described further.
        public static func media(_ mediaType: String, _ description: String) -> Response {
            Response(status: 200, description: description, content: (mediaType, nil))
        }

        /// `204 No Content`.
        public static let noContent = Response(status: 204, description: "Done; no body", content: nil)

        /// `204 No Content` with its own description and the header fields it carries.
        public static func noContent(_ description: String, headers: [Header]) -> Response {
            Response(status: 204, description: description, content: nil, headers: headers)
        }
    }

    /// A problem the route can answer: its status and stable code.
    public struct Problem: Sendable, Hashable {
        /// The status it is answered with.
        public let status: Int
        /// The problem's `code`.
        public let code: String

        /// Creates a problem entry.
        public init(status: Int, code: String) {
            self.status = status
            self.code = code
        }

        /// The problem `error` is answered as, through its own mapping.
        public init(_ error: some HTTPResponseError) {
            self.init(status: error.problem.status, code: error.problem.code)
        }
    }

    /// Who may call the route.
    public enum Security: Sendable {
        /// Anyone.
        case none
        /// A signed-in user: a session token as bearer or cookie.
        case session
        /// Anyone; a session, when presented, is used.
        case optionalSession
        /// An admin token.
        case adminToken
    }

    /// The body, when the route reads one.
    public var body: Body?
    /// The query parameters it reads.
    public var query: [QueryParameter]
    /// Its success answers.
    public var responses: [Response]
    /// The problems it can answer beyond the ones every route can (see `OpenAPIDocument`).
    public var problems: [Problem]
    /// Who may call it.
    public var security: Security
    /// What the credential must allow (an admin token's scope), written as the roles of the
    /// OpenAPI 3.1 security requirement; empty when any valid credential will do.
    public var roles: [String]

    /// Creates a contract.
    public init(
        body: Body? = nil, query: [QueryParameter] = [], responses: [Response], problems: [Problem] = [],
        security: Security = .none, roles: [String] = []
    ) {
        self.body = body
        self.query = query
        self.responses = responses
        self.problems = problems
        self.security = security
        self.roles = roles
    }

    /// The contract of a route not in any API document (the BankID simulator's own listener).
    public static let undocumented = RouteContract(responses: [])
}
