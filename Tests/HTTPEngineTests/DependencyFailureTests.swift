import Foundation
import HTTPEngine
import Kernel
import TestSupport
import Testing

/// A dependency's failure reaches HTTP without the layers above knowing the dependency: the
/// engine answers a temporary one 503 with its code and Retry-After, any other 500 `internal`.
@Suite("HTTPEngine: dependency failures")
struct DependencyFailureTests {
    struct Outage: DependencyFailure {
        let failureCode: String
        let isTemporary: Bool
    }

    /// A use case's own error that had to carry the store's failure inside it (typed throws).
    struct Wrapped: HTTPResponseError {
        let underlying: Outage
        var status: Int { 502 }
        var problem: ProblemDetails {
            ProblemDetails(status: 502, code: "journey.failed", title: "Failed", detail: nil)
        }
        var dependencyFailure: (any DependencyFailure)? { underlying }
    }

    private func router() -> Router {
        var router = Router()
        router.add(
            .GET, "/wrapped", rateClass: .unlimited, summary: "A store failure inside a use case's error"
        ) { _ in
            throw Wrapped(underlying: Outage(failureCode: "storage.unavailable", isTemporary: true))
        }
        router.add(.GET, "/down", rateClass: .unlimited, summary: "A database that does not answer") { _ in
            throw Outage(failureCode: "storage.unavailable", isTemporary: true)
        }
        router.add(.GET, "/broken", rateClass: .unlimited, summary: "A database that is corrupt") { _ in
            throw Outage(failureCode: "storage.corrupt", isTemporary: false)
        }
        router.addAsync(.GET, "/down-async", rateClass: .unlimited, summary: "The same, awaited") { _ in
            throw Outage(failureCode: "storage.timeout", isTemporary: true)
        }
        return router
    }

    @Test(
        "a temporary failure is 503 with its own code and Retry-After, also inside a use case's error; any other is a bare 500"
    )
    func mapping() throws {
        try withInProcessServer(router: router()) { base, _ in
            let client = InProcessHTTPClient()
            let down = try client.send(.GET, base + "/down")
            #expect(down.status == 503 && down.headers["retry-after"] == "1")
            #expect(try down.problemCode() == "storage.unavailable")
            let awaited = try client.send(.GET, base + "/down-async")
            #expect(awaited.status == 503)
            #expect(try awaited.problemCode() == "storage.timeout")
            let broken = try client.send(.GET, base + "/broken")
            #expect(broken.status == 500 && broken.headers["retry-after"] == nil)
            #expect(try broken.problemCode() == "internal")
            #expect(!broken.text.contains("corrupt"))
            let wrapped = try client.send(.GET, base + "/wrapped")
            #expect(
                wrapped.status == 503 && wrapped.headers["retry-after"] == "1",
                "answered as the store's failure")
            #expect(try wrapped.problemCode() == "storage.unavailable")
        }
    }
}

/// Every answered request is counted by route and status, the async routes' too (they are
/// answered after the request was first seen, on another path through the pipeline).
@Suite("HTTPEngine: metrics")
struct MetricsCountTests {
    @Test("a sync and an async route are both counted by status")
    func asyncRoutesCounted() async throws {
        var router = Router()
        router.add(.GET, "/sync", rateClass: .unlimited, summary: "A sync route") { _ in .noContent }
        router.addAsync(.GET, "/async", rateClass: .unlimited, summary: "An async route") { _ in .noContent }
        let metrics = HTTPMetrics(listener: "test", routes: router.routes)
        let server = try HTTPServer(
            configuration: HTTPServerConfiguration(), router: router, accessLog: { _ in }, metrics: metrics)
        _ = await server.respond(to: try InProcessRequest(method: "GET", target: "/sync"))
        _ = await server.respond(to: try InProcessRequest(method: "GET", target: "/async"))
        _ = await server.respond(to: try InProcessRequest(method: "GET", target: "/async"))
        #expect(metrics.counts(route: "/sync") == ["204": 1])
        #expect(metrics.counts(route: "/async") == ["204": 2])
    }
}
