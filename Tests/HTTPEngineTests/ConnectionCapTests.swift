import Foundation
import HTTPEngine
import TestSupport
import Testing

/// Issue 15 item 2: one client address must not be able to take every connection, and a client
/// trickling a request must not hold its connection past the request deadline.
@Suite("Connection caps and the request deadline")
struct ConnectionCapTests {
    /// A request line and one header, with the block left open so the server keeps waiting.
    static let openHead = "GET /v1/items/1 HTTP/1.1\r\nHost: x\r\n"

    /// A complete request from `source`, answered and closed; returns the response text.
    static func ordinaryRequest(port: Int, from source: String) throws -> String {
        let client = try RawSocketClient(port: port, source: source)
        try client.send("GET /v1/items/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        return client.readResponse(timeout: 5)
    }

    @Test(
        "one address holding its cap with trickling requests: others are served, its extra connections are closed, the deadline ends the trickles",
        arguments: [HTTPServerConfiguration.Threading.workerPool, .threadPerConnection]
    )
    func capAndDeadline(threading: HTTPServerConfiguration.Threading) throws {
        let configuration = HTTPServerConfiguration(
            threads: 2, connectionTimeoutSeconds: 30, connectionLimit: 64, threading: threading,
            perAddressConnectionLimit: 16, requestDeadlineSeconds: 3)
        try withServer(configuration) { _, _, server in
            let start = Date()
            let tricklers = try (0..<16).map { _ in
                let client = try RawSocketClient(port: server.port, source: "127.0.0.2")
                try client.send(Self.openHead)
                return client
            }
            // The 17th from the same address is accepted by the kernel, then closed by MHD unanswered.
            let extra = try RawSocketClient(port: server.port, source: "127.0.0.2")
            try? extra.send("GET /v1/items/1 HTTP/1.1\r\nHost: x\r\n\r\n")
            let refused = extra.readUntilClosed(timeout: 2)
            #expect(refused.closed)
            #expect(refused.bytes.isEmpty)
            // A byte a second from every trickler (each restarts MHD's idle timeout), with ordinary
            // requests from two other addresses between: at most 8 rounds.
            var closedAfter: [Int: TimeInterval] = [:]
            var served = 0
            for round in 0..<8 {
                for (index, client) in tricklers.enumerated() where closedAfter[index] == nil {
                    try? client.send("X")
                }
                if Date().timeIntervalSince(start) < 2.5 {
                    for source in ["127.0.0.3", "127.0.0.4"] {
                        let response = try Self.ordinaryRequest(port: server.port, from: source)
                        #expect(response.hasPrefix("HTTP/1.1 200"), "round \(round) from \(source)")
                        if response.hasPrefix("HTTP/1.1 200") { served += 1 }
                    }
                }
                // Wait out the rest of this second, checking every trickler about every 20 ms
                // (at most 100 sweeps) and noting when the server closed it.
                let roundEnd = start.addingTimeInterval(Double(round + 1))
                for _ in 0..<100 where roundEnd.timeIntervalSinceNow > 0 {
                    for (index, client) in tricklers.enumerated() where closedAfter[index] == nil {
                        let result = client.readUntilClosed(timeout: 0.001)
                        #expect(result.bytes.isEmpty, "a trickled request is never answered")
                        if result.closed { closedAfter[index] = Date().timeIntervalSince(start) }
                    }
                    Thread.sleep(forTimeInterval: 0.02)
                }
                if closedAfter.count == tricklers.count { break }
            }
            print(
                refused.bytes.count)
            #expect(served >= 4)
            #expect(closedAfter.count == tricklers.count)
            // Closed by the 3 s deadline, which arriving bytes did not restart: not before it, and
            // within the watchdog's 250 ms period after it (1 s of slack for a loaded machine).
            for (_, after) in closedAfter {
                #expect(after >= 2.9 && after < 4.5, "closed after \(after) s")
            }
            // The address's connections are counted down again: it is served once more.
            #expect(try Self.ordinaryRequest(port: server.port, from: "127.0.0.2").hasPrefix("HTTP/1.1 200"))
        }
    }

    @Test("without a short deadline, a byte a second outlives a 2 s idle timeout (what MHD's timeout bounds)")
    func idleTimeoutAloneDoesNotBoundATrickle() throws {
        let configuration = HTTPServerConfiguration(
            threads: 2, connectionTimeoutSeconds: 2, requestDeadlineSeconds: 3600)
        try withServer(configuration) { _, _, server in
            let client = try RawSocketClient(port: server.port, source: "127.0.0.2")
            try client.send(Self.openHead)
            // Five seconds of a byte a second: more than twice the idle timeout, still open.
            for _ in 0..<5 {
                try client.send("X")
                let result = client.readUntilClosed(timeout: 1)
                #expect(!result.closed)
            }
            // Silent, the idle timeout does close it.
            #expect(client.readUntilClosed(timeout: 5).closed)
        }
    }

    @Test("the deadline is per request: a keep-alive connection outlives it when each request is in time")
    func deadlineRestartsAfterEachResponse() throws {
        let configuration = HTTPServerConfiguration(threads: 2, requestDeadlineSeconds: 2)
        try withServer(configuration) { _, _, server in
            let client = try RawSocketClient(port: server.port, source: "127.0.0.3")
            // Four requests 0.8 s apart on one connection: 3.2 s in all, each well within 2 s.
            for index in 0..<4 {
                if index > 0 { Thread.sleep(forTimeInterval: 0.8) }
                try client.send("GET /v1/items/\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(client.readResponse(timeout: 5).hasPrefix("HTTP/1.1 200"), "request \(index)")
            }
            // Left idle, the connection is closed by the deadline, not the 30 s idle timeout.
            let idleStart = Date()
            #expect(client.readUntilClosed(timeout: 4).closed)
            #expect(Date().timeIntervalSince(idleStart) < 3)
        }
    }
}
