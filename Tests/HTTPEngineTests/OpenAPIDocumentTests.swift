import CryptoCore
import Foundation
import HTTPEngine
import Testing

/// The API document generator and the schema reader behind it: schemas follow the types'
/// own `Decodable` conformances, and each operation lists exactly the statuses and codes its
/// contract and the engine can answer.
@Suite("OpenAPI document and JSON Schema reading")
struct OpenAPIDocumentTests {
    enum Colour: String, Codable, CaseIterable { case red, green }

    struct Inner: Codable {
        let count: Int
    }

    struct Body: Codable {
        let name: String
        let nickname: String?
        let colour: Colour
        let tags: [String]
        let inner: Inner
        let labels: [String: String]
        let ratio: Double?

        enum CodingKeys: String, CodingKey {
            case name, nickname, colour, tags, inner, labels
            case ratio = "ratio_value"
        }
    }

    /// Refuses what it decodes: its schema cannot be read from the conformance.
    struct Validating: Decodable {
        let name: String
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            guard !name.isEmpty else {
                throw DecodingError.dataCorruptedError(
                    forKey: .name, in: container, debugDescription: "empty")
            }
        }
        enum CodingKeys: String, CodingKey { case name }
    }

    static func json(_ schema: JSONSchema) throws -> [String: Any] {
        var writer = JSONWriter()
        schema.write(to: &writer)
        return try #require(try JSONSerialization.jsonObject(with: Data(writer.bytes)) as? [String: Any])
    }

    @Test("a type's schema follows its coding keys: required, optional and nullable, nested, enum, map")
    func readsSchema() throws {
        let schema = try Self.json(try JSONSchema.describing(Body.self).closed)
        #expect(schema["type"] as? String == "object")
        #expect(schema["additionalProperties"] as? Bool == false)
        #expect(Set(schema["required"] as? [String] ?? []) == ["name", "colour", "tags", "inner", "labels"])
        let properties = try #require(schema["properties"] as? [String: [String: Any]])
        #expect(
            Set(properties.keys) == ["name", "nickname", "colour", "tags", "inner", "labels", "ratio_value"])
        #expect(properties["name"]?["type"] as? String == "string")
        #expect(properties["colour"]?["enum"] as? [String] == ["red", "green"])
        #expect((properties["tags"]?["items"] as? [String: Any])?["type"] as? String == "string")
        #expect(
            (properties["labels"]?["additionalProperties"] as? [String: Any])?["type"] as? String == "string")
        let inner = try #require(properties["inner"])
        #expect((inner["properties"] as? [String: [String: Any]])?["count"]?["type"] as? String == "integer")
        #expect(inner["additionalProperties"] as? Bool == false)
        // Optional members are absent or null.
        let nickname = try #require(properties["nickname"]?["oneOf"] as? [[String: Any]])
        #expect(nickname.compactMap { $0["type"] as? String } == ["string", "null"])
        let ratio = try #require(properties["ratio_value"]?["oneOf"] as? [[String: Any]])
        #expect(ratio.compactMap { $0["type"] as? String } == ["number", "null"])
    }

    @Test("a type whose initializer refuses the placeholders is an error naming it, not a wrong schema")
    func refusesValidatingType() {
        #expect(throws: SchemaReadingError.self) { try JSONSchema.describing(Validating.self) }
    }

    static func router() -> Router {
        var router = Router()
        router.add(
            .PATCH, "/v1/items/{id}", rateClass: RateClass("standard"), summary: "Change an item",
            contract: RouteContract(
                body: .json(Body.self), query: [.init("dry", "Only check")],
                responses: [.json(Body.self, "The item")],
                problems: [
                    .init(status: 404, code: "item.not_found"), .init(status: 409, code: "item.locked"),
                ],
                security: .session)
        ) { _ in .noContent }
        router.add(
            .GET, "/health", rateClass: .unlimited, summary: "Alive",
            contract: RouteContract(responses: [.media("text/plain", "ok")])
        ) { _ in .noContent }
        router.add(.GET, "/internal", rateClass: .unlimited, summary: "Not documented") { _ in .noContent }
        return router
    }

    static func document(everyRoute: [RouteContract.Problem] = []) throws -> [String: Any] {
        let bytes = try OpenAPIDocument.generate(
            title: "Test", version: "1", routes: router().routes, everyRoute: everyRoute)
        return try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    @Test("an operation has its parameters, body, success and problem statuses with their codes")
    func operation() throws {
        let document = try Self.document(everyRoute: [.init(status: 503, code: "storage.busy")])
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: [String: Any]]])
        #expect(paths["/internal"] == nil, "a route without a contract is not in the document")
        let patch = try #require(paths["/v1/items/{id}"]?["patch"])
        #expect(patch["operationId"] as? String == "patch_v1_items_id")
        let parameters = try #require(patch["parameters"] as? [[String: Any]])
        #expect(parameters.map { "\($0["in"] ?? "")/\($0["name"] ?? "")" } == ["path/id", "query/dry"])
        let requestBody = try #require(patch["requestBody"] as? [String: Any])
        #expect(requestBody["required"] as? Bool == true)
        let requestSchema = try #require(
            ((requestBody["content"] as? [String: Any])?["application/json"] as? [String: Any])?["schema"]
                as? [String: Any])
        #expect(requestSchema["additionalProperties"] == nil, "a request body is open to unknown members")
        let responses = try #require(patch["responses"] as? [String: [String: Any]])
        #expect(
            Set(responses.keys) == ["200", "400", "404", "409", "413", "414", "415", "429", "500", "503"])
        func codes(_ status: String) -> [String] {
            let content = responses[status]?["content"] as? [String: [String: Any]]
            let schema = content?["application/problem+json"]?["schema"] as? [String: Any]
            let code = (schema?["properties"] as? [String: [String: Any]])?["code"]
            return code?["enum"] as? [String] ?? []
        }
        #expect(codes("400") == ["request.malformed_json"])
        #expect(codes("404") == ["item.not_found"])
        #expect(codes("429") == ["rate_limited"])
        #expect(codes("503") == ["storage.busy"])
        #expect(codes("500") == ["internal"])
        let security = try #require(patch["security"] as? [[String: [String]]])
        #expect(security.map { Array($0.keys) } == [["sessionToken"], ["sessionCookie"]])
        // An unlimited route without body or parameters answers only faults beside its success.
        let health = try #require(paths["/health"]?["get"])
        #expect(Set((health["responses"] as? [String: Any])?.keys.map { $0 } ?? []) == ["200", "500", "503"])
        #expect(health["security"] == nil)
    }

    @Test("the document is the same bytes every time")
    func stable() throws {
        let first = try OpenAPIDocument.generate(title: "T", version: "1", routes: Self.router().routes)
        let second = try OpenAPIDocument.generate(title: "T", version: "1", routes: Self.router().routes)
        #expect(first == second)
    }
}
