import Foundation
import HTTPEngine
import Kernel
import Synchronization
import TestSupport
import Testing

/// A listener whose address another socket holds must not start: with SO_REUSEPORT both bound and
/// the kernel split connections between two servers (issue 15, item 1).
@Suite("A taken address stops the start")
struct AddressInUseTests {
    /// A router whose one route says which server answered.
    static func named(_ name: String) -> Router {
        var router = Router()
        router.add(.GET, "/v1/who", rateClass: .unlimited, summary: "Which server answered") { _ in
            .text(name)
        }
        return router
    }

    @Test(
        "a second server on a taken port throws http.address_in_use naming host:port; the first gets every connection",
        arguments: [HTTPServerConfiguration.Threading.workerPool, .threadPerConnection])
    func secondServerRefused(threading: HTTPServerConfiguration.Threading) throws {
        let first = try HTTPServer(
            configuration: HTTPServerConfiguration(threads: 2, threading: threading),
            router: Self.named("first"),
            accessLog: { _ in })
        let port = try first.start()
        defer { first.shutdown(grace: 1) }
        let second = try HTTPServer(
            configuration: HTTPServerConfiguration(port: port, threads: 2, threading: threading),
            router: Self.named("second"), accessLog: { _ in })
        defer { second.shutdown(grace: 1) }
        do {
            try second.start()
            Issue.record("a second server started on 127.0.0.1:\(port), which the first holds")
        } catch {
            #expect(error.code == .addressInUse)
            #expect(error.message.contains("127.0.0.1:\(port)"))
            #expect(error.message.contains("already in use"))
        }
        // With both bound, the kernel spread new connections over the two: across 40 fresh
        // connections (a client each: one client keeps its connection alive) the second would have
        // answered some.
        var answers: [String: Int] = [:]
        for _ in 0..<40 {
            let response = try HTTPTestClient(timeout: 10).send(
                method: "GET", url: "http://127.0.0.1:\(port)/v1/who")
            answers[response.text, default: 0] += 1
        }
        #expect(answers == ["first": 40])
    }

    @Test("over TLS too: the second listener on a taken port throws http.address_in_use")
    func secondTLSServerRefused() throws {
        let pki = try TLSFixture()
        defer { pki.remove() }
        let first = try HTTPServer(
            configuration: HTTPServerConfiguration(threads: 2, tls: pki.serverTLS(requireClient: false)),
            router: Self.named("first"), accessLog: { _ in })
        let port = try first.start()
        defer { first.shutdown(grace: 1) }
        let second = try HTTPServer(
            configuration: HTTPServerConfiguration(
                port: port, threads: 2, tls: pki.serverTLS(requireClient: false)),
            router: Self.named("second"), accessLog: { _ in })
        defer { second.shutdown(grace: 1) }
        #expect {
            try second.start()
        } throws: { error in
            (error as? HTTPServerError)?.code == .addressInUse
                && (error as? HTTPServerError)?.message.contains("127.0.0.1:\(port)") == true
        }
    }

    @Test("a port freed by a stopped server binds again at once (SO_REUSEADDR is kept)")
    func restartOnSamePort() throws {
        let first = try HTTPServer(
            configuration: HTTPServerConfiguration(threads: 1), router: Self.named("first"),
            accessLog: { _ in })
        let port = try first.start()
        // A served connection leaves the server's side in TIME_WAIT after the server closes it.
        _ = try HTTPTestClient(timeout: 10).send(method: "GET", url: "http://127.0.0.1:\(port)/v1/who")
        first.shutdown(grace: 1)
        let again = try HTTPServer(
            configuration: HTTPServerConfiguration(port: port, threads: 1), router: Self.named("again"),
            accessLog: { _ in })
        defer { again.shutdown(grace: 1) }
        #expect(try again.start() == port)
        let response = try HTTPTestClient(timeout: 10).send(
            method: "GET", url: "http://127.0.0.1:\(port)/v1/who")
        #expect(response.text == "again")
    }
}
