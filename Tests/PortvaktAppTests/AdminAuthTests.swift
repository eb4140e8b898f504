import AuthOrchestrator
import Foundation
import HTTPEngine
import Kernel
import PortvaktAPI
import PortvaktApp
import Storage
import TestSupport
import Testing

/// Tokens with every property the route-enumeration test needs.
struct AdminTokenSet {
    let write: String
    let read: String
    let introspect: String
    let revoked: String
    let expired: String

    /// Creates the tokens on `server`; the expired one is made to lapse by moving the clock.
    init(_ server: TestServer) throws {
        let tokens = server.server.adminTokens
        write = try tokens.create(name: "t-write", scope: .write, lifetime: nil, actor: .cli).token
        read = try tokens.create(name: "t-read", scope: .read, lifetime: nil, actor: .cli).token
        introspect = try tokens.create(name: "t-introspect", scope: .introspect, lifetime: nil, actor: .cli)
            .token
        revoked = try tokens.create(name: "t-revoked", scope: .write, lifetime: nil, actor: .cli).token
        try tokens.revoke("t-revoked", actor: .cli)
        expired = try tokens.create(name: "t-expired", scope: .write, lifetime: 60, actor: .cli).token
        server.clock.advance(by: 61)
    }
}

/// Every route on the admin listener behind its bearer token, through the listener's pipeline in
/// process.
@Suite("Admin API authentication", .serialized)
struct AdminAuthTests {
    let client = InProcessHTTPClient()

    /// A concrete path for a route pattern: every `{name}` becomes a harmless value.
    static func path(_ pattern: String) -> String {
        pattern.split(separator: "/", omittingEmptySubsequences: false).map {
            $0.hasPrefix("{") ? "x0" : String($0)
        }.joined(separator: "/")
    }

    func send(_ route: RouteDescription, _ base: String, token: String?) throws -> TestResponse {
        var headers: [(String, String)] = [("Content-Type", "application/json")]
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        let body: [UInt8]? = route.method == .GET ? nil : Array("{}".utf8)
        return try client.send(
            method: route.method.rawValue, url: base + Self.path(route.pattern), headers: headers, body: body)
    }

    @Test(
        "every admin route refuses missing, invalid, revoked and expired tokens, and tokens whose scope does not reach it",
        arguments: TestEngine.tested)
    func everyRouteNeedsAToken(engine: TestEngine) throws {
        // Seven requests per route would run into the admin listener's default burst of 50.
        let server = try TestServer.inProcess(
            engine: engine,
            configuration: [
                "rateLimits": ["admin": ["burst": 10_000, "perSecond": 10_000]]
            ])
        defer { server.stop() }
        let tokens = try AdminTokenSet(server)
        let routes = server.server.adminRoutes
        #expect(routes.count >= 15)
        for route in routes {
            let name = "\(route.method.rawValue) \(route.pattern)"
            for (label, token) in [
                ("missing", nil), ("invalid", "pva_" + String(repeating: "A", count: 43)),
                ("not bearer-shaped", ""), ("revoked", tokens.revoked), ("expired", tokens.expired),
            ] as [(String, String?)] {
                let response = try send(route, server.adminURL, token: token)
                #expect(response.status == 401, "\(name) with a \(label) token")
                #expect(try response.problemCode() == "admin.unauthorized", "\(name) with a \(label) token")
                #expect(response.headers["www-authenticate"] == "Bearer", "\(name)")
            }
            // The scope the route states it needs; without a statement, the method's.
            let needed = try #require(
                route.contract.roles.first.flatMap(AdminScope.init(rawValue:)), "\(name)")
            #expect(route.contract.roles.count == 1, "\(name)")
            #expect(
                needed == .introspect || needed == AdminAuthenticator.scope(for: route.method),
                "\(name): only introspection departs from the method's scope")
            for (scope, token) in [(AdminScope.introspect, tokens.introspect), (.read, tokens.read)] {
                let response = try send(route, server.adminURL, token: token)
                if scope.allows(needed) {
                    #expect(
                        response.status != 401 && response.status != 403,
                        "\(name) must let a \(scope) token in")
                } else {
                    #expect(response.status == 403, "\(name) must refuse a \(scope) token")
                    #expect(try response.problemCode() == "admin.forbidden", "\(name)")
                }
            }
            let asWriter = try send(route, server.adminURL, token: tokens.write)
            #expect(asWriter.status != 401 && asWriter.status != 403, "\(name) must accept a write token")
        }
    }

    @Test("the public listener answers 404 for every admin path")
    func publicListenerHasNoAdminRoutes() throws {
        let server = try TestServer.inProcess(configuration: [
            "rateLimits": ["default": ["burst": 10_000, "perSecond": 10_000]]
        ])
        defer { server.stop() }
        let adminOnly = server.server.adminRoutes.filter {
            !["/health/alive", "/openapi.json"].contains($0.pattern)
        }
        #expect(!adminOnly.isEmpty)
        for route in adminOnly {
            let response = try send(route, server.publicURL, token: server.adminToken)
            #expect(
                response.status == 404, "\(route.method.rawValue) \(route.pattern) on the public listener")
        }
        for path in ["/admin", "/admin/", "/admin/v1", "/admin/v1/users", "/admin/v1/nothing", "/metrics"] {
            #expect(try client.send(.GET, server.publicURL + path).status == 404, "\(path)")
        }
    }

    @Test(
        "the first-start token is the write token 'bootstrap' and is the only token created",
        arguments: TestEngine.tested)
    func bootstrapToken(engine: TestEngine) throws {
        let server = try TestServer.inProcess(engine: engine)
        defer { server.stop() }
        #expect(server.adminToken.hasPrefix("pva_"))
        let listed = try server.server.adminTokens.list()
        #expect(listed.map(\.name) == ["bootstrap"] && listed.map(\.scope) == [.write])
        let config = try client.send(
            .GET, "\(server.adminURL)/admin/v1/config",
            headers: ["Authorization": "Bearer \(server.adminToken)"])
        #expect(config.status == 200)
    }
}
