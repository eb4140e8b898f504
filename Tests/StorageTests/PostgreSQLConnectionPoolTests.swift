import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Storage

/// The PostgreSQL pool against a real server: the wait bound, broken connections, reconnecting.
@Suite(
    "PostgreSQL connection pool",
    .enabled(if: PostgreSQLTestServer.isEnabled, PostgreSQLTestServer.disabledReason))
struct PostgreSQLConnectionPoolTests {
    @Test("a caller that gets no connection within the wait timeout gets storage.timeout, not a hang")
    func waitTimeout() throws {
        let pool = try PostgreSQLConnectionPool(
            configuration: PostgreSQLTestServer.configuration(), size: 1, waitTimeout: .milliseconds(200))
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            _ = try? pool.withConnection { _ in
                holding.signal()
                _ = release.wait(timeout: .now() + 10)
            }
            done.signal()
        }
        #expect(holding.wait(timeout: .now() + 5) == .success)
        let started = ContinuousClock.now
        let error = PostgreSQLTestServer.failure { try pool.withConnection { _ in } }
        #expect(error?.code == .timeout)
        #expect(error?.message.contains("200 ms") == true)
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(200) && waited < .seconds(3))
        release.signal()
        #expect(done.wait(timeout: .now() + 5) == .success)
        let one = try pool.withConnection { try $0.queryFirst("SELECT 1::int8") { try $0.int64(0) } }
        #expect(one == 1, "the slot is free again once its holder returns it")
    }

    @Test("a backend killed while its connection sits idle is noticed at check-out and replaced")
    func killedWhileIdle() throws {
        let pool = try PostgreSQLConnectionPool(
            configuration: PostgreSQLTestServer.configuration(), size: 1, waitTimeout: .seconds(2))
        let before = try pool.withConnection { $0.backendPID }
        try PostgreSQLTestServer.terminate(before)
        let after = try pool.withConnection { connection in
            try connection.queryFirst("SELECT pg_backend_pid()") { try $0.int64(0) }
        }
        #expect(after != nil && after != Int64(before))
        #expect(pool.connectCount == 2)
    }

    @Test(
        "a backend killed mid-use fails that call with storage.unavailable; the next call gets a new connection"
    )
    func killedWhileInUse() throws {
        let pool = try PostgreSQLConnectionPool(
            configuration: PostgreSQLTestServer.configuration(), size: 1, waitTimeout: .seconds(2))
        let before = try pool.withConnection { connection -> Int32 in
            try PostgreSQLTestServer.terminate(connection.backendPID)
            let error = PostgreSQLTestServer.failure { try connection.execute("SELECT 1") }
            #expect(error?.code == .unavailable)
            #expect(
                error?.message.contains(pool.configuration.endpoint) == true, "\(String(describing: error))")
            #expect(connection.isBroken)
            return connection.backendPID
        }
        let after = try pool.withConnection { connection in
            try connection.queryFirst("SELECT pg_backend_pid()") { try $0.int64(0) }
        }
        #expect(after != nil && after != Int64(before))
        #expect(pool.connectCount == 2)
    }

    @Test("a failing reconnect is repeated to callers for the reconnect delay, then tried again")
    func reconnectBackoff() throws {
        let configuration = try PostgreSQLTestServer.configuration()
        let refusing = Mutex(false)
        let attempts = AttemptCounter()
        let pool = try PostgreSQLConnectionPool(
            configuration: configuration, size: 1, waitTimeout: .seconds(2),
            reconnectDelay: .milliseconds(300)
        ) { configuration throws(StorageError) in
            attempts.increment()
            if refusing.withLock({ $0 }) { throw StorageError(.unavailable, "the server is down (test)") }
            return try PostgreSQLConnection(configuration: configuration)
        }
        #expect(attempts.value == 1)
        refusing.withLock { $0 = true }
        try PostgreSQLTestServer.terminate(try pool.withConnection { $0.backendPID })
        for _ in 0..<3 {
            #expect(throws: StorageError(.unavailable, "")) { try pool.withConnection { _ in } }
        }
        #expect(attempts.value == 2, "one reconnect; the callers after it got its failure without trying")
        Thread.sleep(forTimeInterval: 0.35)
        refusing.withLock { $0 = false }
        let one = try pool.withConnection { try $0.queryFirst("SELECT 1::int8") { try $0.int64(0) } }
        #expect(one == 1, "once the delay has passed the pool reconnects by itself")
        #expect(attempts.value == 3)
    }

    @Test("pool transactions retry serialization failures and hand the connection back clean")
    func poolTransaction() throws {
        let pool = try PostgreSQLConnectionPool(
            configuration: PostgreSQLTestServer.configuration(), size: 2, waitTimeout: .seconds(2))
        let attempts = AttemptCounter()
        let value = try pool.transaction(.serializable) { connection -> Int64 in
            if attempts.increment() == 1 {
                try connection.exec(
                    "DO $$ BEGIN RAISE EXCEPTION 'forced' USING ERRCODE = 'serialization_failure'; END $$")
            }
            return try connection.queryFirst("SELECT current_setting('transaction_isolation')") {
                try $0.string(0) == "serializable" ? 1 : 0
            } ?? 0
        }
        #expect(value == 1 && attempts.value == 2)
        // A body that leaves a transaction open gets it rolled back on check-in.
        try pool.withConnection { connection in _ = try connection.exec("BEGIN") }
        for _ in 0..<2 {
            let open = try pool.withConnection { connection in connection.isInTransaction }
            #expect(!open)
        }
    }

    @Test("opening a pool against a closed port fails at once, naming host and port; bad sizes are refused")
    func openFailures() throws {
        var configuration = try PostgreSQLTestServer.configuration()
        configuration.host = "127.0.0.1"
        configuration.port = try LoopbackPorts.unused()
        do {
            _ = try PostgreSQLConnectionPool(configuration: configuration, size: 2, waitTimeout: .seconds(1))
            Issue.record("a pool opened against a closed port")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.message.contains("127.0.0.1:\(configuration.port)"))
        }
        #expect(throws: StorageError(.invalidArgument, "")) {
            try PostgreSQLConnectionPool(
                configuration: PostgreSQLTestServer.configuration(), size: 0, waitTimeout: .seconds(1))
        }
    }

    @Test("a closed pool refuses callers with storage.closed")
    func closed() throws {
        let pool = try PostgreSQLConnectionPool(
            configuration: PostgreSQLTestServer.configuration(), size: 1, waitTimeout: .seconds(1))
        pool.close()
        #expect(throws: StorageError(.closed, "")) { try pool.withConnection { _ in } }
        #expect(throws: StorageError(.closed, "")) { try pool.withConnection { _ in } }
    }
}
