import Foundation
import HTTPEngine
import PortvaktApp
import TestSupport
import Testing

/// The two listeners' API documents as the server serves them: every route is in its listener's
/// document with a success answer, and every problem code a document names is one Docs/api.md or
/// Docs/admin-api.md explains. (That responses keep to these schemas is the contract step's
/// check: Tests/Contract/run.sh, schemathesis over both listeners.)
@Suite("OpenAPI documents of both listeners")
struct OpenAPIContractTests {
    let client = InProcessHTTPClient()

    /// The operations of a document, by "METHOD pattern".
    static func operations(_ document: [String: Any]) throws -> [String: [String: Any]] {
        let paths = try #require(document["paths"] as? [String: [String: [String: Any]]])
        var operations: [String: [String: Any]] = [:]
        for (pattern, item) in paths {
            for (method, operation) in item { operations[method.uppercased() + " " + pattern] = operation }
        }
        return operations
    }

    /// Every problem code an operation's problem responses allow.
    static func problemCodes(_ operation: [String: Any]) -> Set<String> {
        var codes: Set<String> = []
        for (_, response) in operation["responses"] as? [String: [String: Any]] ?? [:] {
            let content = response["content"] as? [String: [String: Any]]
            let schema = content?["application/problem+json"]?["schema"] as? [String: Any]
            let code = (schema?["properties"] as? [String: [String: Any]])?["code"]
            codes.formUnion(code?["enum"] as? [String] ?? [])
        }
        return codes
    }

    @Test("every route of both listeners is documented with a success answer; the simulator's are not")
    func everyRouteDocumented() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let publicDocument = try client.send(.GET, "\(server.publicURL)/openapi.json").jsonObject()
        #expect(
            try client.send(.GET, "\(server.adminURL)/openapi.json").status == 401,
            "the admin document needs an admin token")
        let adminDocument = try client.send(
            .GET, "\(server.adminURL)/openapi.json", headers: ["Authorization": "Bearer \(server.adminToken)"]
        ).jsonObject()
        for (document, routes) in [
            (publicDocument, server.server.httpServers.public.routes),
            (adminDocument, server.server.adminRoutes),
        ] {
            #expect(document["openapi"] as? String == "3.1.0")
            let operations = try Self.operations(document)
            for route in routes {
                let name = route.method.rawValue + " " + route.pattern
                if route.pattern.hasPrefix("/sim/") {
                    #expect(operations[name] == nil, "\(name): the development simulator is not the API")
                    continue
                }
                let operation = try #require(operations[name], "\(name) is not in its document")
                let statuses = (operation["responses"] as? [String: Any])?.keys.compactMap { Int($0) } ?? []
                #expect(statuses.contains { (200..<300).contains($0) }, "\(name) documents no success")
                #expect(statuses.contains(500), "\(name) documents no fault")
            }
        }
        let publicOperations = try Self.operations(publicDocument)
        #expect(publicOperations.keys.allSatisfy { !$0.contains("/admin/") })
        // A signed-in route names every reason a session cannot be used.
        let me = try #require(publicOperations["GET /v1/me"])
        #expect(
            Self.problemCodes(me).isSuperset(of: ["session.missing", "session.expired", "account.disabled"]))
        #expect(me["security"] != nil)
        // The body a handler decodes is the request body documented.
        let rename = try #require(publicOperations["PATCH /v1/me/passkeys/{id}"])
        let body = (rename["requestBody"] as? [String: Any])?["content"] as? [String: [String: [String: Any]]]
        let properties = body?["application/json"]?["schema"]?["properties"] as? [String: Any]
        #expect(properties?.keys.sorted() == ["name"])

        // Each admin route names the token scope it needs as its requirement's role; only
        // introspection, which every token may call, has no 403.
        let adminOperations = try Self.operations(adminDocument)
        func roles(_ name: String) throws -> [[String: [String]]]? {
            try #require(adminOperations[name], "\(name)")["security"] as? [[String: [String]]]
        }
        #expect(try roles("POST /admin/v1/sessions/introspect")?.first == ["adminToken": ["introspect"]])
        #expect(try roles("GET /admin/v1/users")?.first == ["adminToken": ["read"]])
        #expect(try roles("POST /admin/v1/users")?.first == ["adminToken": ["write"]])
        let introspect = try #require(adminOperations["POST /admin/v1/sessions/introspect"])
        #expect(Self.problemCodes(introspect).contains("admin.unauthorized"))
        #expect(!Self.problemCodes(introspect).contains("admin.forbidden"))
        #expect(
            Self.problemCodes(try #require(adminOperations["GET /admin/v1/users"])).contains(
                "admin.forbidden"))
    }

    @Test("every problem code a document names is explained in Docs/api.md or Docs/admin-api.md")
    func problemCodesDocumented() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let documented = try ErrorContractTests.documentedCodes("api.md")
            .union(ErrorContractTests.documentedCodes("admin-api.md"))
        for (url, headers) in [
            (server.publicURL, [String: String]()),
            (server.adminURL, ["Authorization": "Bearer \(server.adminToken)"]),
        ] {
            let document = try client.send(.GET, "\(url)/openapi.json", headers: headers).jsonObject()
            for (name, operation) in try Self.operations(document) {
                for code in Self.problemCodes(operation) {
                    #expect(ErrorContractTests.isDocumented(code, in: documented), "\(name): \(code)")
                }
            }
        }
    }
}
