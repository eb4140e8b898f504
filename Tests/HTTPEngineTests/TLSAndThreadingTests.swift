import CryptoCore
import Foundation
import HTTPEngine
import Kernel
import Synchronization
import TestSupport
import Testing

/// A throwaway PKI as PEM files: a CA with a server certificate for 127.0.0.1 and a client
/// certificate, and a second CA with a client certificate of its own.
struct TLSFixture {
    let directory: String
    let serverKeyPEM: String
    let serverCertificatePEM: String
    let caPEM: String
    /// Files for curl: the CA to trust, and the two clients' certificates and keys.
    let caPath: String
    let client: (certificate: String, key: String)
    let foreignClient: (certificate: String, key: String)

    init() throws {
        directory = NSTemporaryDirectory() + "engine-tls-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let now = Date()
        let ca = TestCertificateAuthority.root(
            name: .init(commonName: "Engine test CA"), notBefore: now.addingTimeInterval(-60),
            notAfter: now.addingTimeInterval(86_400))
        let serverKey = SoftwareKey.generate(.ec(.p256))
        let serverDER = ca.issue(
            subject: .init(commonName: "127.0.0.1"), subjectPublicKeyInfo: serverKey.subjectPublicKeyInfo,
            extensions: [
                .subjectAltName(dnsNames: ["localhost"], ipAddresses: [[127, 0, 0, 1]]),
                .extendedKeyUsage([CertificateIssuer.Extension.serverAuth]),
            ])
        serverKeyPEM = serverKey.signingKey.pkcs8PEM
        serverCertificatePEM = PEM.encode(serverDER, label: "CERTIFICATE")
        caPEM = PEM.encode(ca.certificateDER, label: "CERTIFICATE")
        caPath = directory + "/ca.pem"
        try caPEM.write(toFile: caPath, atomically: true, encoding: .utf8)
        client = try Self.writeClient(issuedBy: ca, named: "client", in: directory)
        let other = TestCertificateAuthority.root(
            name: .init(commonName: "Some other CA"), notBefore: now.addingTimeInterval(-60),
            notAfter: now.addingTimeInterval(86_400))
        foreignClient = try Self.writeClient(issuedBy: other, named: "foreign", in: directory)
    }

    private static func writeClient(
        issuedBy ca: TestCertificateAuthority, named name: String, in directory: String
    )
        throws -> (certificate: String, key: String)
    {
        let key = SoftwareKey.generate(.ec(.p256))
        let der = ca.issue(
            subject: .init(commonName: "Engine test client"), subjectPublicKeyInfo: key.subjectPublicKeyInfo,
            extensions: [.extendedKeyUsage([CertificateIssuer.Extension.clientAuth])])
        let paths = (directory + "/\(name).pem", directory + "/\(name)-key.pem")
        try PEM.encode(der, label: "CERTIFICATE").write(toFile: paths.0, atomically: true, encoding: .utf8)
        try key.signingKey.pkcs8PEM.write(toFile: paths.1, atomically: true, encoding: .utf8)
        return paths
    }

    /// The server's TLS settings, requiring client certificates from the CA when `requireClient`.
    func serverTLS(requireClient: Bool) -> HTTPServerTLS {
        HTTPServerTLS(
            keyPEM: RedactedSecret(serverKeyPEM), certificatePEM: serverCertificatePEM,
            clientCAPEM: requireClient ? caPEM : nil)
    }

    /// A curl client that trusts the CA and presents `identity`, if any.
    func client(presenting identity: (certificate: String, key: String)?) -> HTTPTestClient {
        HTTPTestClient(
            timeout: 10,
            tls: .init(
                caPath: caPath, certificatePath: identity?.certificate, certificateType: "PEM",
                keyPath: identity?.key))
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

/// Counts the requests that reached a handler.
final class HitCounter: Sendable {
    private let count = Atomic<Int>(0)
    func hit() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}

@Suite("TLS, threading modes, dropped connections and the fallback")
struct TLSAndThreadingTests {
    /// A router whose one route counts the requests that got through to it.
    static func countingRouter(_ hits: HitCounter) -> Router {
        var router = Router()
        router.add(.GET, "/v1/hello", rateClass: .unlimited, summary: "Counts its callers") { _ in
            hits.hit()
            return .text("hello")
        }
        return router
    }

    @Test(
        "TLS with a client CA: no certificate or one from another CA gets no request through; one from the CA does",
        arguments: [HTTPServerConfiguration.Threading.workerPool, .threadPerConnection])
    func requiredClientCertificate(threading: HTTPServerConfiguration.Threading) throws {
        let pki = try TLSFixture()
        defer { pki.remove() }
        let hits = HitCounter()
        let log = LogSink()
        let server = try HTTPServer(
            configuration: HTTPServerConfiguration(
                threads: 2, threading: threading, tls: pki.serverTLS(requireClient: true)),
            router: Self.countingRouter(hits), accessLog: log.append)
        let port = try server.start()
        defer { server.shutdown(grace: 1) }
        let url = "https://127.0.0.1:\(port)/v1/hello"

        #expect(throws: HTTPTestClientError.self) { try pki.client(presenting: nil).send(url: url) }
        #expect(throws: HTTPTestClientError.self) {
            try pki.client(presenting: pki.foreignClient).send(url: url)
        }
        // Plain HTTP to the TLS port is no way around it either.
        #expect(throws: HTTPTestClientError.self) {
            try HTTPTestClient(timeout: 5).send(url: "http://127.0.0.1:\(port)/v1/hello")
        }
        #expect(hits.value == 0)
        #expect(log.all.isEmpty)

        let response = try pki.client(presenting: pki.client).send(url: url)
        #expect(response.status == 200 && response.text == "hello")
        #expect(hits.value == 1)
    }

    @Test("TLS without a client CA serves clients that present no certificate")
    func tlsWithoutClientCertificates() throws {
        let pki = try TLSFixture()
        defer { pki.remove() }
        let hits = HitCounter()
        let server = try HTTPServer(
            configuration: HTTPServerConfiguration(threads: 2, tls: pki.serverTLS(requireClient: false)),
            router: Self.countingRouter(hits), accessLog: { _ in })
        let port = try server.start()
        defer { server.shutdown(grace: 1) }
        let response = try pki.client(presenting: nil).send(url: "https://127.0.0.1:\(port)/v1/hello")
        #expect(response.status == 200 && hits.value == 1)
    }

    @Test("TLS material MHD cannot load stops the server from starting, without the key in the message")
    func badTLSMaterial() throws {
        let tls = HTTPServerTLS(
            keyPEM: RedactedSecret("not a key: s3cr3t"), certificatePEM: "not a certificate")
        let server = try HTTPServer(
            configuration: HTTPServerConfiguration(tls: tls), router: Router(), accessLog: { _ in })
        do {
            try server.start()
            Issue.record("the server started with unusable TLS material")
        } catch {
            #expect(error.code == .startFailed)
            #expect(!error.message.contains("s3cr3t"))
        }
        #expect("\(tls)".contains("s3cr3t") == false)
    }

    /// Runs `/slow` (blocked until released) on one connection, then asks `/fast` on another.
    /// - Parameter blocking: `/slow` is an `addBlocking` route (else an `add` one).
    /// - Returns: the fast answer (or the client's error), the slow one once released (its body
    ///   the name of the thread its handler ran on).
    static func slowBesideFast(threading: HTTPServerConfiguration.Threading, blocking: Bool = false) throws
        -> (
            fast: Result<TestResponse, any Error>, slow: Result<TestResponse, any Error>
        )
    {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        var router = Router()
        let slowHandler: HTTPHandler = { _ in
            entered.signal()
            _ = release.wait(timeout: .now() + 20)
            return .text(Threads.currentName)
        }
        let summary = "Blocks until the test releases it"
        if blocking {
            router.addBlocking(.GET, "/slow", rateClass: .unlimited, summary: summary, handler: slowHandler)
        } else {
            router.add(.GET, "/slow", rateClass: .unlimited, summary: summary, handler: slowHandler)
        }
        router.add(.GET, "/fast", rateClass: .unlimited, summary: "Answers at once") { _ in .text("fast") }
        // One worker: in the pool mode the slow handler then holds every thread there is.
        let server = try HTTPServer(
            configuration: HTTPServerConfiguration(threads: 1, threading: threading), router: router,
            accessLog: { _ in })
        let port = try server.start()
        defer { server.shutdown(grace: 2) }
        let slow = ResultBox()
        Thread {
            slow.set(Result { try HTTPTestClient(timeout: 30).send(url: "http://127.0.0.1:\(port)/slow") })
        }
        .start()
        guard entered.wait(timeout: .now() + 10) == .success else {
            release.signal()
            throw HarnessFailure("the slow handler never started")
        }
        let fast: Result<TestResponse, any Error> = Result {
            try HTTPTestClient(timeout: 2).send(url: "http://127.0.0.1:\(port)/fast")
        }
        release.signal()
        return (fast, slow.wait())
    }

    @Test("thread per connection: a handler that blocks does not stall another connection")
    func threadPerConnection() throws {
        let (fast, slow) = try Self.slowBesideFast(threading: .threadPerConnection)
        // The fast answer came while the slow handler was still blocked (it is released after).
        #expect(try fast.get().text == "fast")
        #expect(try slow.get().status == 200)
    }

    @Test("the control: with a single poll() worker the same fast request waits behind the blocked one")
    func singleWorkerStalls() throws {
        let (fast, slow) = try Self.slowBesideFast(threading: .workerPool)
        #expect((try? fast.get()) == nil)
        #expect(((fast.failure as? HTTPTestClientError)?.isTimeout) == true)
        #expect(try slow.get().status == 200)
    }

    @Test(
        "a blocking route waits off a pool's worker, which serves other connections meanwhile; with a thread per connection it runs on that thread",
        arguments: [HTTPServerConfiguration.Threading.workerPool, .threadPerConnection])
    func blockingRoute(threading: HTTPServerConfiguration.Threading) throws {
        let (fast, slow) = try Self.slowBesideFast(threading: threading, blocking: true)
        #expect(try fast.get().text == "fast")
        let ranOn = try slow.get().text
        if threading == .workerPool {
            #expect(ranOn.hasPrefix("http-blocking-"), "\(ranOn)")
        } else {
            #expect(!ranOn.hasPrefix("http-blocking-"), "\(ranOn)")
        }
    }

    @Test(
        "a handler, sync or async, that throws WouldBlock on a pool's worker runs again from a thread that may wait; elsewhere it never throws it",
        arguments: [HTTPServerConfiguration.Threading.workerPool, .threadPerConnection], [false, true])
    func wouldBlockRunsAgainElsewhere(threading: HTTPServerConfiguration.Threading, async: Bool) throws {
        let calls = Atomic(0)
        let handler: HTTPHandler = { _ in
            calls.add(1, ordering: .relaxed)
            guard InlineExecutor.currentThreadMayBlock else { throw InlineExecutor.WouldBlock() }
            return .text(Threads.currentName)
        }
        var router = Router()
        let summary = "Waits only off the worker"
        if async {
            router.addAsync(.POST, "/rarely-waits", rateClass: .unlimited, summary: summary) {
                try handler($0)
            }
        } else {
            router.add(.POST, "/rarely-waits", rateClass: .unlimited, summary: summary, handler: handler)
        }
        let server = try HTTPServer(
            configuration: HTTPServerConfiguration(threads: 1, threading: threading), router: router,
            accessLog: { _ in })
        let port = try server.start()
        defer { server.shutdown(grace: 1) }
        let answer = try HTTPTestClient(timeout: 5).send(
            method: "POST", url: "http://127.0.0.1:\(port)/rarely-waits", body: [])
        #expect(answer.status == 200)
        if threading == .workerPool {
            #expect(answer.text.hasPrefix("http-blocking-"), "\(answer.text)")
            #expect(calls.load(ordering: .relaxed) == 2)
        } else {
            #expect(calls.load(ordering: .relaxed) == 1)
        }
    }

    @Test(
        "an async route is answered while every thread of Swift's global executor is blocked",
        arguments: [HTTPServerConfiguration.Threading.workerPool, .threadPerConnection])
    func asyncRouteOffTheGlobalExecutor(threading: HTTPServerConfiguration.Threading) throws {
        var router = Router()
        router.addAsync(.GET, "/later", rateClass: .unlimited, summary: "Answers after a wait") { _ in
            // Resumed from a thread of its own, as a BankID call is (Task.sleep's timer would
            // enqueue on the global executor first).
            await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    Thread.sleep(forTimeInterval: 0.02)
                    continuation.resume()
                }
            }
            return .text("later")
        }
        let server = try HTTPServer(
            configuration: HTTPServerConfiguration(threads: 2, threading: threading), router: router,
            accessLog: { _ in })
        let port = try server.start()
        defer { server.shutdown(grace: 1) }
        // This test's thread blocks on the request as well.
        let answer = whileGlobalExecutorBlocked {
            Result { try HTTPTestClient(timeout: 3).send(url: "http://127.0.0.1:\(port)/later") }
        }
        #expect(try answer.get().text == "later")
    }

    @Test(
        "dropConnection closes the connection with nothing sent, sync or async; the server keeps serving (async routes too)",
        arguments: [HTTPServerConfiguration.Threading.workerPool, .threadPerConnection])
    func droppedConnection(threading: HTTPServerConfiguration.Threading) throws {
        var router = Router()
        router.add(.GET, "/drop", rateClass: .unlimited, summary: "Drops the connection") { _ in
            .dropConnection
        }
        router.addAsync(.GET, "/drop-later", rateClass: .unlimited, summary: "Drops it after a wait") { _ in
            try await Task.sleep(for: .milliseconds(50))
            return .dropConnection
        }
        router.addAsync(.GET, "/later", rateClass: .unlimited, summary: "Answers after a wait") { _ in
            try await Task.sleep(for: .milliseconds(50))
            return .text("later")
        }
        router.add(.GET, "/ok", rateClass: .unlimited, summary: "Answers") { _ in .text("ok") }
        let log = LogSink()
        let server = try HTTPServer(
            configuration: HTTPServerConfiguration(threads: 2, threading: threading), router: router,
            accessLog: log.append)
        let port = try server.start()
        defer { server.shutdown(grace: 1) }
        for path in ["/drop", "/drop-later"] {
            let socket = try RawSocketClient(port: port)
            try socket.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            let (bytes, closed) = socket.readUntilClosed(timeout: 5)
            #expect(closed, "\(path)")
            #expect(bytes.isEmpty, "\(path): \(String(decoding: bytes, as: UTF8.self))")
            #expect(throws: HTTPTestClientError.self) {
                try HTTPTestClient(timeout: 5).send(url: "http://127.0.0.1:\(port)\(path)")
            }
        }
        #expect(try HTTPTestClient().send(url: "http://127.0.0.1:\(port)/ok").text == "ok")
        #expect(try HTTPTestClient().send(url: "http://127.0.0.1:\(port)/later").text == "later")
        let dropped = log.all.filter { $0.contains("\"route\":\"/drop") }
        #expect(dropped.count == 4 && dropped.allSatisfy { $0.contains("\"status\":0,") })
    }

    /// A router with one route and a fallback that answers in its own format, naming the reason.
    static func fallbackRouter() -> Router {
        var router = Router()
        router.add(.POST, "/v1/thing", rateClass: .unlimited, summary: "A POST route") { _ in .text("posted")
        }
        router.fallback(rateClass: .unlimited) { request, reason in
            let name: String
            switch reason {
            case .notFound: name = "notFound"
            case .methodNotAllowed(let allowed):
                name = "methodNotAllowed " + allowed.map(\.rawValue).joined(separator: ",")
            case .bodyTooLarge(let limit): name = "bodyTooLarge \(limit) \(request.body.count)"
            }
            return HTTPResponse(
                status: 418, headers: ["Content-Type": "text/plain"],
                body: Array("\(name) \(request.method.rawValue) \(request.route)".utf8))
        }
        return router
    }

    @Test("a fallback answers unknown paths, wrong methods and oversized bodies in its own format")
    func fallbackAnswers() throws {
        let log = LogSink()
        let server = try HTTPServer(
            configuration: HTTPServerConfiguration(threads: 2, maxBodyBytes: 16),
            router: Self.fallbackRouter(),
            accessLog: log.append)
        let port = try server.start()
        defer { server.shutdown(grace: 1) }
        let base = "http://127.0.0.1:\(port)"
        let client = HTTPTestClient()
        let missing = try client.send(url: base + "/v1/nowhere")
        #expect(missing.status == 418 && missing.text == "notFound GET *")
        #expect(missing.headers["X-Request-Id"] != nil && missing.headers["Cache-Control"] == "no-store")
        #expect(missing.headers["X-Content-Type-Options"] == "nosniff")
        let wrongMethod = try client.send(method: "DELETE", url: base + "/v1/thing")
        #expect(wrongMethod.text == "methodNotAllowed POST,OPTIONS DELETE *")
        let large = try client.send(
            method: "POST", url: base + "/v1/thing", body: Array(repeating: 65, count: 64))
        #expect(large.text == "bodyTooLarge 16 0 POST *")
        #expect(try client.send(method: "POST", url: base + "/v1/thing", body: [65]).text == "posted")
        // What the fallback cannot be told stays the engine's: an unknown method token.
        #expect(try client.send(method: "BREW", url: base + "/v1/nowhere").status == 501)
        // The access log never holds the raw path of what the fallback answered.
        #expect(!log.all.contains { $0.contains("nowhere") })
    }

    @Test("a fallback whose rate class has no limit stops the server from being built")
    func fallbackRateClassNeedsALimit() throws {
        var router = Router()
        router.fallback(rateClass: RateClass("forgotten")) { _, _ in .noContent }
        #expect(throws: HTTPServerError(.invalidConfiguration, "")) {
            _ = try HTTPServer(configuration: HTTPServerConfiguration(), router: router, accessLog: { _ in })
        }
        let limited = HTTPServerConfiguration(rateLimits: [
            RateClass("forgotten"): RateLimit(burst: 1, perSecond: 0.01)
        ])
        let server = try HTTPServer(configuration: limited, router: router, accessLog: { _ in })
        let port = try server.start()
        defer { server.shutdown(grace: 1) }
        let client = HTTPTestClient()
        #expect(try client.send(url: "http://127.0.0.1:\(port)/anything").status == 204)
        #expect(try client.send(url: "http://127.0.0.1:\(port)/anything").status == 429)
    }
}

struct HarnessFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension Result {
    /// The error, or nil on success.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
