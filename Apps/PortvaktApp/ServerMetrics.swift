import BankIDCore
import CryptoCore
import HTTPEngine
import Kernel
import PortvaktAPI
import Storage

/// Everything `GET /metrics` reports, gathered at scrape time from counters that the request
/// path keeps with atomics: requests and latencies per listener, passkey logins and
/// registrations (read off their routes' counters), live sessions (one indexed count) and the
/// database's write latency.
final class ServerMetrics: Sendable {
    let publicRequests: HTTPMetrics
    /// Set once the admin router is complete (its routes include /metrics itself).
    private let adminRequests = Locked<HTTPMetrics?>(nil)
    let engine: StorageEngine
    let store: any AdministrationStore
    let clock: any WallClock
    /// BankID's upstream calls and client threads (nil while BankID is off).
    let bankID: BankIDRuntime?
    /// BankID journeys' results by code, as they are delivered.
    let bankIDResults: Tally<BankIDOutcome>
    /// Webhook attempts, outcomes and the outbox gauges (nothing without endpoints).
    let webhooks: WebhookRuntime?
    let outbox: SQLStore?

    init(
        publicRequests: HTTPMetrics, engine: StorageEngine, store: any AdministrationStore,
        clock: any WallClock, bankID: BankIDRuntime?, bankIDResults: Tally<BankIDOutcome>,
        webhooks: WebhookRuntime? = nil, outbox: SQLStore? = nil
    ) {
        self.bankID = bankID
        self.webhooks = webhooks
        self.outbox = outbox
        self.bankIDResults = bankIDResults
        self.publicRequests = publicRequests
        self.engine = engine
        self.store = store
        self.clock = clock
    }

    func setAdminRequests(_ metrics: HTTPMetrics) {
        adminRequests.withLock { $0 = metrics }
    }

    /// The exposition in Prometheus text format 0.0.4.
    func render() throws -> String {
        var requests = ""
        var durations = ""
        publicRequests.render(requests: &requests, durations: &durations)
        adminRequests.withLock { $0 }?.render(requests: &requests, durations: &durations)
        var text = """
            # HELP portvakt_http_requests_total HTTP requests answered, by listener, route pattern and status.
            # TYPE portvakt_http_requests_total counter

            """
        text += requests
        text += """
            # HELP portvakt_http_request_duration_seconds Time from request read to response ready, by listener and route pattern.
            # TYPE portvakt_http_request_duration_seconds histogram

            """
        text += durations
        for (name, route, help) in [
            (
                "portvakt_passkey_logins_total", "/v1/passkeys/login/finalize",
                "Passkey login finalizations by outcome: success, refused (4xx), error (5xx)."
            ),
            (
                "portvakt_passkey_registrations_total", "/v1/passkeys/registration/finalize",
                "Passkey registrations (sign-ups, added passkeys, enrollments) by outcome: success, refused, error."
            ),
        ] {
            var outcomes: [String: UInt64] = ["success": 0, "refused": 0, "error": 0]
            for (status, count) in publicRequests.counts(route: route) {
                let outcome = status.hasPrefix("2") ? "success" : status.hasPrefix("5") ? "error" : "refused"
                outcomes[outcome, default: 0] += count
            }
            text += "# HELP \(name) \(help)\n# TYPE \(name) counter\n"
            for outcome in ["success", "refused", "error"] {
                text += "\(name){outcome=\"\(outcome)\"} \(outcomes[outcome] ?? 0)\n"
            }
        }
        text += """
            # HELP portvakt_sessions_active Sessions neither revoked nor past their absolute expiry.
            # TYPE portvakt_sessions_active gauge
            portvakt_sessions_active \(try store.liveSessionCount(at: clock.now()))
            # HELP portvakt_storage_write_duration_seconds Write transactions, from call to commit (waiting for the writer or a connection, and retries, included), by engine.
            # TYPE portvakt_storage_write_duration_seconds histogram

            """
        PrometheusText.histogram(
            "portvakt_storage_write_duration_seconds", labels: "engine=\"\(engine.name)\"",
            engine.writeLatency,
            into: &text)
        if case .sqlite = engine {
            // The name before PostgreSQL came, kept for existing dashboards; deprecated.
            text += """
                # HELP portvakt_sqlite_write_duration_seconds Deprecated: portvakt_storage_write_duration_seconds{engine="sqlite"}.
                # TYPE portvakt_sqlite_write_duration_seconds histogram

                """
            PrometheusText.histogram(
                "portvakt_sqlite_write_duration_seconds", labels: "", engine.writeLatency, into: &text)
        }
        text += """
            # HELP portvakt_bankid_results_total BankID journeys by result: bankid.signed_in (a login), bankid.no_account, bankid.account_created (a sign-up), bankid.linked, bankid.signed, bankid.risk_refused, failures.
            # TYPE portvakt_bankid_results_total counter

            """
        for (code, count) in bankIDResults.snapshot.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            text += "portvakt_bankid_results_total{code=\"\(code.rawValue)\"} \(count)\n"
        }
        text += """
            # HELP portvakt_bankid_upstream_calls_total Calls to BankID by endpoint and outcome (ok, BankID's error code, or the transport's).
            # TYPE portvakt_bankid_upstream_calls_total counter

            """
        let calls = (bankID?.calls.snapshot ?? [:]).sorted {
            ($0.key.endpoint, $0.key.outcome) < ($1.key.endpoint, $1.key.outcome)
        }
        for (call, count) in calls {
            text +=
                "portvakt_bankid_upstream_calls_total{endpoint=\"\(call.endpoint)\",outcome=\"\(call.outcome)\"} \(count)\n"
        }
        text += """
            # HELP portvakt_executor_jobs_queued Work waiting for a thread of its own executor: http-async (async handlers resumed off the request's thread, 4 threads), http-blocking (handlers that commit, handed over by a pool worker, 4 threads), bankid-poll (background collects, 2 threads).
            # TYPE portvakt_executor_jobs_queued gauge
            portvakt_executor_jobs_queued{executor="http-async"} \(HTTPServer.asyncHandlerJobsQueued)
            portvakt_executor_jobs_queued{executor="http-blocking"} \(HTTPServer.blockingHandlersQueued)
            portvakt_executor_jobs_queued{executor="bankid-poll"} \(BankIDCollectCoordinator.collectJobsQueued)

            """
        if let transport = bankID?.transport {
            text += """
                # HELP portvakt_bankid_calls_queued Calls to BankID waiting for one of the client's threads (bankid.threads); beyond bankid.maxQueued a call is refused as overloaded.
                # TYPE portvakt_bankid_calls_queued gauge
                portvakt_bankid_calls_queued \(transport.queuedCount)

                """
        }
        if let webhooks, let outbox { try webhooks.render(store: outbox, now: clock.now(), into: &text) }
        return text
    }
}

/// Events counted by key, for /metrics: BankID calls and journey results are few next to HTTP
/// requests, so a lock is cheap here.
final class Tally<Key: Hashable & Sendable>: Sendable {
    private let counts = Locked<[Key: UInt64]>([:])

    func record(_ key: Key) {
        counts.withLock { $0[key, default: 0] += 1 }
    }

    var snapshot: [Key: UInt64] { counts.withLock { $0 } }
}
