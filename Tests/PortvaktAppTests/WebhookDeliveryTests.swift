import AuthOrchestrator
import CryptoCore
import Foundation
import HTTPEngine
import Kernel
import Storage
import Synchronization
import TestSupport
import Testing
import WebhookCore

@testable import PortvaktApp

/// A receiver on a loopback port that records every request and answers with the statuses it is
/// given in turn (200 once they run out), after an optional delay.
final class WebhookReceiver: Sendable {
    struct Received: Sendable {
        let id: String
        let timestamp: String
        let signature: String
        let contentType: String
        let userAgent: String
        let body: [UInt8]
    }

    /// What the handler and the test share.
    final class Log: Sendable {
        let received = Mutex<[Received]>([])
        let statuses: Mutex<[Int]>
        init(_ statuses: [Int]) { self.statuses = Mutex(statuses) }
    }

    private let server: HTTPServer
    private let log: Log
    let port: Int

    init(statuses: [Int] = [], delay: Double = 0) throws {
        let log = Log(statuses)
        self.log = log
        var router = Router()
        router.add(.POST, "/hook", rateClass: .unlimited, summary: "a webhook receiver") { request in
            if delay > 0 { Thread.sleep(forTimeInterval: delay) }
            let header = { (name: String) in request.headers[name] ?? "" }
            log.received.withLock {
                $0.append(
                    Received(
                        id: header("webhook-id"), timestamp: header("webhook-timestamp"),
                        signature: header("webhook-signature"), contentType: header("content-type"),
                        userAgent: header("user-agent"), body: request.body))
            }
            let status = log.statuses.withLock { $0.isEmpty ? 200 : $0.removeFirst() }
            return .text("ok", status: status)
        }
        var configuration = HTTPServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        server = try HTTPServer(configuration: configuration, router: router, accessLog: { _ in })
        port = try server.start()
    }

    var requests: [Received] { log.received.withLock { $0 } }

    /// Waits up to `seconds` until `count` requests arrived.
    func wait(for count: Int, seconds: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if requests.count >= count { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return requests.count >= count
    }

    func stop() { server.shutdown(grace: 1) }
}

/// Webhooks end to end in one process: the server's dispatcher POSTs over real HTTP to a Swift
/// receiver, retries a 500 under the same webhook-id, and the admin API and metrics show it.
@Suite("Webhooks: delivery over HTTP", .serialized)
struct WebhookDeliveryTests {
    static let secret = "whsec_" + Data(repeating: 5, count: 32).base64EncodedString()

    static func server(_ receiver: WebhookReceiver, engine: TestEngine = .sqlite, timeout: Int = 2) throws
        -> TestServer
    {
        try TestServer(
            .live, engine: engine,
            configuration: [
                "webhooks": [
                    "endpoints": [
                        [
                            "name": "test", "url": "http://127.0.0.1:\(receiver.port)/hook", "events": ["*"],
                            "secretVariable": "PORTVAKT_WEBHOOK_TEST",
                        ]
                    ],
                    "timeoutSeconds": timeout, "retry": ["initialDelaySeconds": 1, "maxDelaySeconds": 8],
                ]
            ], environment: ["PORTVAKT_WEBHOOK_TEST": secret])
    }

    /// Writes events as a use case does: entries from the feed, one write, then `committed`.
    static func emit(_ server: TestServer, _ events: [ChangeEvent]) throws -> [OutboxEntry] {
        let entries = server.server.changeFeed.entries(events)
        try server.server.store.enqueue(entries)
        server.server.changeFeed.committed(entries)
        return entries
    }

    @Test(
        "a 500 is retried under the same webhook-id; every attempt verifies; admin API and metrics show it",
        arguments: TestEngine.tested)
    func retryThenDeliver(engine: TestEngine) throws {
        let receiver = try WebhookReceiver(statuses: [500])
        defer { receiver.stop() }
        let server = try Self.server(receiver, engine: engine)
        defer { server.stop() }
        let admin = AdminClient(server)
        let entries = try Self.emit(server, [.userDeleted(userID: "usr_1", at: server.clock.now())])
        let entry = try #require(entries.first)
        #expect(receiver.wait(for: 1), "the first attempt arrives")
        // The retry is due a second or so later on the server's (fixed) clock. The sender records
        // the attempt after the receiver has answered it, so the listing may lag the receiver.
        var pending: [String: Any] = [:]
        for _ in 0..<100 {
            pending = try admin.object("GET", "/admin/v1/webhooks/deliveries?state=pending")
            if (pending["deliveries"] as? [[String: Any]])?.first?["attempts"] as? Int == 1 { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let listed = try #require((pending["deliveries"] as? [[String: Any]])?.first)
        #expect(listed["attempts"] as? Int == 1 && listed["lastStatus"] as? Int == 500)
        #expect(listed["lastError"] as? String == "status_5xx" && listed["eventId"] as? String == entry.id)
        server.clock.advance(by: 2)
        #expect(receiver.wait(for: 2), "the retry arrives")

        let secret = try #require(WebhookSecret(RedactedSecret(Self.secret)))
        for request in receiver.requests {
            #expect(request.id == entry.id, "one webhook-id across attempts")
            #expect(request.body == entry.payload)
            let timestamp = try #require(Int64(request.timestamp))
            #expect(
                request.signature
                    == WebhookSignature.sign(
                        id: request.id, timestamp: timestamp, body: request.body, secret: secret))
            #expect(request.contentType == "application/json" && request.userAgent.hasPrefix("Portvakt/"))
        }
        let id = try #require(listed["id"] as? String)
        var detail: [String: Any] = [:]
        for _ in 0..<100 {
            detail = try admin.object("GET", "/admin/v1/webhooks/deliveries/\(id)")
            if (detail["delivery"] as? [String: Any])?["state"] as? String == "delivered" { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let shown = try #require(detail["delivery"] as? [String: Any])
        #expect(
            shown["state"] as? String == "delivered" && shown["attempts"] as? Int == 2
                && shown["lastStatus"] as? Int == 200)
        #expect(detail["payload"] as? String == String(decoding: entry.payload, as: UTF8.self))

        let metrics = try admin.send("GET", "/metrics").text
        #expect(metrics.contains(#"portvakt_webhook_attempts_total{endpoint="test",result="5xx"} 1"#))
        #expect(metrics.contains(#"portvakt_webhook_attempts_total{endpoint="test",result="2xx"} 1"#))
        #expect(
            metrics.contains(#"portvakt_webhook_deliveries_total{endpoint="test",outcome="delivered"} 1"#))
        #expect(metrics.contains("portvakt_webhook_pending 0"))

        // Redelivery: 202, the same id again, audited.
        let again = try admin.send("POST", "/admin/v1/webhooks/deliveries/\(id)/redeliver")
        #expect(again.status == 202)
        #expect(receiver.wait(for: 3))
        #expect(receiver.requests.last?.id == entry.id)
        let audit = try server.server.store.auditEvents(userID: nil, beforeID: nil, limit: 10)
        #expect(audit.contains { $0.action == .adminWebhookRedelivered && $0.details["deliveryId"] == id })
        try expectProblem(
            try admin.send("GET", "/admin/v1/webhooks/deliveries/whd_nope"), 404, "admin.delivery_not_found")
        try expectProblem(
            try admin.send("POST", "/admin/v1/webhooks/deliveries/whd_nope/redeliver"), 404,
            "admin.delivery_not_found")
        try expectProblem(
            try admin.send("GET", "/admin/v1/webhooks/deliveries?state=lost"), 400, "admin.invalid_parameter")
        try expectProblem(
            try admin.send("GET", "/admin/v1/webhooks/deliveries?cursor=bogus"), 400, "admin.invalid_cursor")
    }

    @Test("listing pages newest first and filters by type and endpoint")
    func listing() throws {
        let receiver = try WebhookReceiver(statuses: Array(repeating: 503, count: 50))
        defer { receiver.stop() }
        let server = try Self.server(receiver)
        defer { server.stop() }
        let admin = AdminClient(server)
        for n in 0..<3 {
            _ = try Self.emit(server, [.userEnabled(userID: "usr_\(n)", at: server.clock.now())])
            server.clock.advance(by: 0.01)
        }
        _ = try Self.emit(server, [.bankIDLinked(userID: "usr_9", at: server.clock.now())])
        let first = try admin.object("GET", "/admin/v1/webhooks/deliveries?limit=2")
        let page = try #require(first["deliveries"] as? [[String: Any]])
        #expect(page.map { $0["type"] as? String } == ["bankid.linked", "user.enabled"])
        let cursor = try #require(first["nextCursor"] as? String)
        let second = try admin.object("GET", "/admin/v1/webhooks/deliveries?limit=2&cursor=\(cursor)")
        #expect((second["deliveries"] as? [[String: Any]])?.count == 2 && second["nextCursor"] == nil)
        let enabled = try admin.object("GET", "/admin/v1/webhooks/deliveries?type=user.enabled&endpoint=test")
        #expect((enabled["deliveries"] as? [[String: Any]])?.count == 3)
        let none = try admin.object("GET", "/admin/v1/webhooks/deliveries?endpoint=other")
        #expect((none["deliveries"] as? [[String: Any]])?.isEmpty == true)
    }

    @Test("shutdown waits for the attempt in flight, records it, and leaves no lease behind")
    func shutdownReleasesLeases() throws {
        let receiver = try WebhookReceiver(delay: 0.5)
        defer { receiver.stop() }
        let server = try Self.server(receiver)
        let path = server.server.configuration.storage.path
        let owner = try #require(server.server.webhooks.dispatcher?.instanceID)
        _ = try Self.emit(
            server, (0..<3).map { .userDeleted(userID: "usr_\($0)", at: server.clock.now()) })
        #expect(receiver.wait(for: 1))
        server.stop()
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let store = SQLStore(database: database)
        let rows = try store.webhookDeliveries(.init(), after: nil, limit: 10)
        #expect(rows.count == 3)
        #expect(rows.contains { $0.state == .delivered }, "the attempt in flight was recorded")
        // The instance's own leases were released: none is left to drop.
        #expect(try store.releaseDeliveries(owner: owner) == 0)
    }
}
