import Foundation

/// Builds the OpenAPI 3.1 description of the routes, so `/openapi.json` grows with every route.
public enum OpenAPIDocument {
    /// Generates the document as JSON bytes (sorted keys, so the output is stable).
    /// - Parameters:
    ///   - title: the API's title.
    ///   - version: the API's version.
    ///   - routes: the routes to describe, usually `router.routes`.
    /// - Returns: the UTF-8 JSON document.
    public static func generate(title: String, version: String, routes: [RouteDescription]) -> [UInt8] {
        var paths: [String: [String: Operation]] = [:]
        for route in routes {
            let parameters = route.parameters.map {
                Parameter(name: $0, in: "path", required: true, schema: ["type": "string"])
            }
            paths[route.pattern, default: [:]][route.method.rawValue.lowercased()] = Operation(
                summary: route.summary,
                operationId: operationID(route),
                parameters: parameters.isEmpty ? nil : parameters,
                rateClass: route.rateClass.name,
                responses: [
                    "2XX": Response(description: "Success", content: nil),
                    "default": Response(
                        description: "A problem (RFC 9457)",
                        content: [
                            "application/problem+json": MediaType(schema: [
                                "$ref": "#/components/schemas/Problem"
                            ])
                        ]),
                ])
        }
        let document = Document(
            openapi: "3.1.0", info: Info(title: title, version: version), paths: paths,
            components: Components(schemas: ["Problem": problemSchema]))
        // The document holds only strings and dictionaries of them: encoding cannot fail.
        return (try? JSONCoding.stableEncoder.encode(document)).map { [UInt8]($0) } ?? []
    }

    /// `GET /v1/me/sessions/{id}` becomes `get_v1_me_sessions_id`: unique per method and pattern.
    private static func operationID(_ route: RouteDescription) -> String {
        let path = route.pattern.map { $0.isLetter || $0.isNumber ? $0 : "_" }
        var id = route.method.rawValue.lowercased() + String(path)
        while id.contains("__") { id = id.replacingOccurrences(of: "__", with: "_") }
        while id.hasSuffix("_") { id.removeLast() }
        return id
    }

    private static let problemSchema = Schema(
        type: "object",
        required: ["type", "title", "status", "code"],
        properties: [
            "type": ["type": "string", "format": "uri-reference"],
            "title": ["type": "string"],
            "status": ["type": "integer"],
            "detail": ["type": "string"],
            "instance": ["type": "string", "format": "uri-reference"],
            "code": ["type": "string", "description": "Stable machine-readable error code"],
        ])

    private struct Document: Encodable {
        let openapi: String
        let info: Info
        let paths: [String: [String: Operation]]
        let components: Components
    }

    private struct Info: Encodable {
        let title: String
        let version: String
    }

    private struct Operation: Encodable {
        let summary: String
        let operationId: String
        let parameters: [Parameter]?
        let rateClass: String
        let responses: [String: Response]

        // `x-` members are OpenAPI's extension point: the rate-limit class tells clients which
        // requests share a budget.
        enum CodingKeys: String, CodingKey {
            case summary, operationId, parameters, responses
            case rateClass = "x-rate-class"
        }
    }

    private struct Parameter: Encodable {
        let name: String
        let `in`: String
        let required: Bool
        let schema: [String: String]
    }

    private struct Response: Encodable {
        let description: String
        let content: [String: MediaType]?
    }

    private struct MediaType: Encodable {
        let schema: [String: String]
    }

    private struct Components: Encodable {
        let schemas: [String: Schema]
    }

    private struct Schema: Encodable {
        let type: String
        let required: [String]
        let properties: [String: [String: String]]
    }
}
