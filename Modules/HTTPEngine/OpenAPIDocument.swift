import CryptoCore

/// Builds the OpenAPI 3.1 description of a listener's routes, so `/openapi.json` grows with every
/// route: each operation's parameters, request body and success bodies (their JSON Schemas read
/// from the types the handlers decode and encode, see `JSONSchema.describing`), every status it
/// can answer, and per problem status the codes it can carry, so a client (or a contract test)
/// can hold the server to them.
public enum OpenAPIDocument {
    /// Generates the document.
    /// - Parameters:
    ///   - title: the API's title.
    ///   - version: the API's version.
    ///   - routes: the routes to describe, usually `router.routes`; undocumented ones (no
    ///     success response in their contract) are left out.
    ///   - description: what the document says about the whole API (answers no operation owns).
    ///   - everyRoute: problems any documented route can answer besides its own (a database
    ///     outage), added to each.
    /// - Returns: the UTF-8 JSON document, the same bytes for the same routes.
    /// - Throws: `SchemaReadingError` when a body type's schema cannot be read.
    public static func generate(
        title: String, version: String, routes: [RouteDescription], description: String? = nil,
        everyRoute: [RouteContract.Problem] = []
    ) throws(SchemaReadingError) -> [UInt8] {
        let documented = routes.filter { !$0.contract.responses.isEmpty }
        var patterns: [String] = []
        var operations: [String: [Operation]] = [:]
        for route in documented {
            if operations[route.pattern] == nil { patterns.append(route.pattern) }
            operations[route.pattern, default: []].append(try Operation(route, everyRoute: everyRoute))
        }
        var writer = JSONWriter()
        writer.object { document in
            document.member("openapi", "3.1.0")
            document.key("info")
            document.object { info in
                info.member("title", title)
                info.member("version", version)
                if let description { info.member("description", description) }
            }
            document.key("paths")
            document.object { paths in
                for pattern in patterns {
                    paths.key(pattern)
                    paths.object { item in
                        for operation in operations[pattern] ?? [] {
                            item.key(operation.route.method.rawValue.lowercased())
                            write(operation, to: &item)
                        }
                    }
                }
            }
            document.key("components")
            document.object { components in
                components.key("schemas")
                components.object { schemas in
                    schemas.key("Problem")
                    problemSchema.write(to: &schemas)
                }
                components.key("securitySchemes")
                components.object { schemes in
                    for (name, scheme) in securitySchemes {
                        schemes.key(name)
                        schemes.object { object in
                            for (key, value) in scheme { object.member(key, value) }
                        }
                    }
                }
            }
        }
        return writer.bytes
    }

    /// The problems every documented route can answer, whatever it does: a fault (500), a
    /// request over the rate limit when its class has one (429), and the body checks when it
    /// reads a body (400, 413, 415).
    static func commonProblems(_ route: RouteDescription) -> [RouteContract.Problem] {
        var problems = [RouteContract.Problem(HTTPError.internal())]
        if route.rateClass != .unlimited {
            problems.append(RouteContract.Problem(HTTPError.rateLimited(retryAfterSeconds: 1)))
        }
        if route.contract.body != nil {
            problems += [
                RouteContract.Problem(HTTPError.malformedJSON()),
                RouteContract.Problem(HTTPError.bodyTooLarge(limit: 1)),
                RouteContract.Problem(HTTPError.unsupportedMediaType()),
            ]
        }
        if !route.parameters.isEmpty || !route.contract.query.isEmpty {
            problems.append(RouteContract.Problem(status: 414, code: "request.uri_too_long"))
        }
        return problems
    }

    /// A route with its schemas read, so that writing cannot fail halfway.
    private struct Operation {
        let route: RouteDescription
        let body: (RouteContract.Body, JSONSchema)?
        let responses: [(RouteContract.Response, JSONSchema?)]
        /// Each problem status with its codes, in the order first named.
        let problemCodes: [Int: [String]]

        init(_ route: RouteDescription, everyRoute: [RouteContract.Problem]) throws(SchemaReadingError) {
            self.route = route
            if let body = route.contract.body { self.body = (body, try body.schema()) } else { body = nil }
            var responses: [(RouteContract.Response, JSONSchema?)] = []
            for response in route.contract.responses {
                responses.append((response, try response.content?.schema?()))
            }
            self.responses = responses
            var problemCodes: [Int: [String]] = [:]
            for problem in OpenAPIDocument.commonProblems(route) + route.contract.problems + everyRoute
            where !(problemCodes[problem.status]?.contains(problem.code) ?? false) {
                problemCodes[problem.status, default: []].append(problem.code)
            }
            self.problemCodes = problemCodes
        }
    }

    private static func write(_ prepared: Operation, to item: inout JSONWriter) {
        let route = prepared.route
        let contract = route.contract
        let (body, responses, problemCodes) = (prepared.body, prepared.responses, prepared.problemCodes)
        item.object { operation in
            operation.member("operationId", operationID(route))
            operation.member("summary", route.summary)
            operation.member("x-rate-class", route.rateClass.name)
            if !route.parameters.isEmpty || !contract.query.isEmpty {
                operation.key("parameters")
                operation.array { parameters in
                    for name in route.parameters {
                        parameters.object { parameter in
                            parameter.member("name", name)
                            parameter.member("in", "path")
                            parameter.key("required")
                            parameter.bool(true)
                            parameter.key("schema")
                            JSONSchema.string().write(to: &parameter)
                        }
                    }
                    for query in contract.query {
                        parameters.object { parameter in
                            parameter.member("name", query.name)
                            parameter.member("in", "query")
                            parameter.member("description", query.description)
                            parameter.key("schema")
                            query.schema.write(to: &parameter)
                        }
                    }
                }
            }
            if let (body, schema) = body {
                operation.key("requestBody")
                operation.object { requestBody in
                    requestBody.key("required")
                    requestBody.bool(body.required)
                    content("application/json", to: &requestBody) { schema.write(to: &$0) }
                }
            }
            operation.key("responses")
            operation.object { answers in
                for (response, schema) in responses {
                    answers.key(String(response.status))
                    answers.object { answer in
                        answer.member("description", response.description)
                        if !response.headers.isEmpty {
                            answer.key("headers")
                            answer.object { headers in
                                for header in response.headers {
                                    headers.key(header.name)
                                    headers.object { field in
                                        field.member("description", header.description)
                                        field.key("required")
                                        field.bool(header.required)
                                        field.key("schema")
                                        field.object { $0.member("type", "string") }
                                    }
                                }
                            }
                        }
                        if let (mediaType, _) = response.content {
                            content(
                                mediaType, to: &answer, schema.map { schema in { schema.write(to: &$0) } })
                        }
                    }
                }
                for status in problemCodes.keys.sorted() {
                    let codes = problemCodes[status] ?? []
                    answers.key(String(status))
                    answers.object { answer in
                        answer.member("description", "A problem (RFC 9457): " + codes.joined(separator: ", "))
                        content("application/problem+json", to: &answer) { problem(codes, to: &$0) }
                    }
                }
            }
            let security: [String]? =
                switch contract.security {
                case .none: nil
                case .session, .optionalSession: ["sessionToken", "sessionCookie"]
                case .adminToken: ["adminToken"]
                }
            if let security {
                operation.key("security")
                operation.array { requirements in
                    for scheme in security {
                        requirements.object { requirement in
                            requirement.key(scheme)
                            requirement.array { roles in
                                for role in contract.roles { roles.string(role) }
                            }
                        }
                    }
                    // An empty requirement: calling without any credential is allowed too.
                    if case .optionalSession = contract.security { requirements.object { _ in } }
                }
            }
        }
    }

    /// Writes `"content": {mediaType: {"schema": …}}`, the schema written by `schema` (none when nil).
    private static func content(
        _ mediaType: String, to object: inout JSONWriter, _ schema: ((inout JSONWriter) -> Void)?
    ) {
        object.key("content")
        object.object { content in
            content.key(mediaType)
            content.object { media in
                if let schema {
                    media.key("schema")
                    schema(&media)
                }
            }
        }
    }

    /// The shared problem shape, with `codes` as the only ones its `code` may carry.
    private static func problem(_ codes: [String], to writer: inout JSONWriter) {
        writer.object { schema in
            schema.key("allOf")
            schema.array { all in
                all.object { reference in reference.member("$ref", "#/components/schemas/Problem") }
            }
            schema.key("properties")
            schema.object { properties in
                properties.key("code")
                JSONSchema.string(values: codes).write(to: &properties)
            }
        }
    }

    /// `GET /v1/me/sessions/{id}` becomes `get_v1_me_sessions_id`: unique per method and pattern.
    private static func operationID(_ route: RouteDescription) -> String {
        var id = route.method.rawValue.lowercased()
        for character in route.pattern {
            let kept: Character = character.isLetter || character.isNumber ? character : "_"
            if kept == "_", id.hasSuffix("_") { continue }
            id.append(kept)
        }
        while id.hasSuffix("_") { id.removeLast() }
        return id
    }

    /// RFC 9457's members, the stable code, and the extension members the engine writes.
    private static let problemSchema = JSONSchema.object(
        [
            .init("type", .string(format: "uri-reference")),
            .init("title", .string()),
            .init("status", .integer),
            .init("code", .string().described("Stable machine-readable error code")),
            .init("detail", .string(), required: false),
            .init("instance", .string(format: "uri-reference"), required: false),
            .init(
                "retryAfter", JSONSchema.integer.described("429: seconds until a retry can pass"),
                required: false),
            .init(
                "limit", JSONSchema.integer.described("413, 414, 431: the limit in bytes"), required: false),
            .init(
                "signals",
                JSONSchema.object([]).described(
                    "What the client should tell the password manager (the WebAuthn Signal API's arguments, "
                        + "keyed by method name without `signal`), e.g. passkey.login_failed's unknownCredential"
                ),
                required: false),
        ], closed: true)

    private static let securitySchemes: [(String, [(String, String)])] = [
        (
            "sessionToken",
            [("type", "http"), ("scheme", "bearer"), ("description", "A session token, pvs_…")]
        ),
        (
            "sessionCookie",
            [
                ("type", "apiKey"), ("in", "cookie"), ("name", "portvakt_session"),
                ("description", "The session cookie (__Host-portvakt_session on https)"),
            ]
        ),
        ("adminToken", [("type", "http"), ("scheme", "bearer"), ("description", "An admin token, pva_…")]),
    ]
}
