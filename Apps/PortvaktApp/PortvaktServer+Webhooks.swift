import AuthOrchestrator
import FoundationEssentials
import HTTPEngine
import Kernel
import Storage
import Synchronization
import WebhookCore

/// Webhooks as `portvakt serve` runs them: the change feed the use cases write the outbox
/// through, this instance's dispatcher that delivers it, and its counters (Docs/webhooks.md).
///
/// Without endpoints the feed is `ChangeFeed.off` and nothing of webhooks runs: no rows, no
/// threads, no polls.
final class WebhookRuntime: Sendable {
    /// The feed every use case that changes users, passkeys or sessions writes through.
    let feed: ChangeFeed
    /// This instance's dispatcher; nil without endpoints.
    let dispatcher: WebhookDispatcher?
    private let sender: CurlWebhookSender?
    private let settings: PortvaktConfiguration.WebhookSettings
    /// Attempts by endpoint and result class.
    let attempts = Tally<EndpointLabel>()
    /// Deliveries that ended, by endpoint and outcome.
    let outcomes = Tally<EndpointLabel>()
    /// How long attempts took.
    let attemptDurations = LatencyHistogram()

    /// An endpoint and one label value, as the counters key them.
    struct EndpointLabel: Hashable, Sendable {
        let endpoint: String
        let value: String
    }

    /// Builds the feed and, with endpoints, the sender threads and the dispatcher (not started).
    /// - Throws: `WebhookError` for an endpoint whose URL or secret the loader would have refused
    ///   (a configuration built in code), or a sender that cannot start.
    init(
        configuration: PortvaktConfiguration, outbox: SQLStore, clock: any WallClock,
        random: any RandomSource,
        logger: Logger
    ) throws {
        settings = configuration.webhooks
        guard !settings.endpoints.isEmpty else {
            feed = .off
            dispatcher = nil
            sender = nil
            return
        }
        let endpoints = try settings.endpoints.map { endpoint throws(WebhookError) in
            guard let secret = WebhookSecret(endpoint.secret) else {
                throw WebhookError(.configuration, "\(endpoint.secretVariable) is not a whsec_ secret")
            }
            return WebhookEndpoint(name: endpoint.name, url: try WebhookURL(endpoint.url), secret: secret)
        }
        let sender = try CurlWebhookSender(
            threads: settings.threads, timeout: Double(settings.timeoutSeconds))
        self.sender = sender
        let attempts = attempts
        let outcomes = outcomes
        let durations = attemptDurations
        let dispatcher = WebhookDispatcher(
            outbox: outbox, sender: sender, endpoints: endpoints,
            schedule: RetrySchedule(
                initialDelay: TimeInterval(settings.retry.initialDelaySeconds),
                maximumDelay: TimeInterval(settings.retry.maxDelaySeconds)),
            settings: .init(
                timeout: TimeInterval(settings.timeoutSeconds),
                maxInFlightPerEndpoint: settings.maxInFlightPerEndpoint,
                userAgent: "Portvakt/\(PortvaktVersion.current)"),
            clock: clock, random: random,
            report: { report in
                attempts.record(EndpointLabel(endpoint: report.endpoint, value: report.result.rawValue))
                if let outcome = report.finalOutcome {
                    outcomes.record(EndpointLabel(endpoint: report.endpoint, value: outcome))
                }
                durations.record(nanoseconds: UInt64(max(0, report.duration) * 1e9))
            },
            log: { [logger] message, fields in logger.log(.error, message, fields) })
        self.dispatcher = dispatcher
        feed = ChangeFeed(
            routes: settings.endpoints.map { endpoint in
                ChangeFeed.Route(endpoint: endpoint.name, types: endpoint.events.map(Set.init))
            },
            giveUpAfter: TimeInterval(settings.retry.giveUpAfterSeconds), random: random, clock: clock,
            onEnqueued: { dispatcher.nudge() })
    }

    /// The admin use case over `store`: a redelivery wakes this instance's dispatcher.
    func administration(store: SQLStore, clock: any WallClock) -> WebhookAdministration {
        let dispatcher = dispatcher
        return WebhookAdministration(
            store: store, clock: clock, giveUpAfter: TimeInterval(settings.retry.giveUpAfterSeconds),
            onRedelivered: { dispatcher?.nudge() })
    }

    /// Starts delivering.
    func start() { dispatcher?.start() }

    /// Stops delivering: attempts in flight get up to the timeout to end and be recorded, then
    /// this instance's leases are released. Call before the database closes.
    func stop() {
        guard let dispatcher else { return }
        let grace = Double(settings.timeoutSeconds) + 1
        dispatcher.stop(grace: grace)
        sender?.stop(grace: 1)
    }

    /// The hourly upkeep: fail deliveries past their give-up time that no instance sends (their
    /// endpoint left every configuration), and delete ended events after the retention.
    func maintain(store: SQLStore, now: Date) throws -> (failed: Int, purged: Int) {
        let failed = try store.failExpiredWebhookDeliveries(at: now)
        let purged = try store.purgeWebhookEvents(
            createdBefore: now.addingTimeInterval(-Double(settings.retentionDays) * 86_400))
        return (failed, purged)
    }

    /// One counter family by endpoint and `label`, in a stable order.
    private static func renderCounter(
        _ name: String, help: String, label: String, _ tally: Tally<EndpointLabel>, into text: inout String
    ) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) counter\n"
        for (key, count) in tally.snapshot.sorted(by: {
            ($0.key.endpoint, $0.key.value) < ($1.key.endpoint, $1.key.value)
        }) {
            text += "\(name){endpoint=\"\(key.endpoint)\",\(label)=\"\(key.value)\"} \(count)\n"
        }
    }

    /// The webhook families of `/metrics`; nothing without endpoints.
    func render(store: SQLStore, now: Date, into text: inout String) throws {
        guard dispatcher != nil else { return }
        Self.renderCounter(
            "portvakt_webhook_attempts_total",
            help:
                "Webhook POSTs by endpoint and result (2xx, 3xx, 4xx, 5xx, timeout, connection, tls, error), counted by this instance.",
            label: "result", attempts, into: &text)
        Self.renderCounter(
            "portvakt_webhook_deliveries_total",
            help: "Webhook deliveries this instance ended, by endpoint and outcome (delivered, failed).",
            label: "outcome", outcomes, into: &text)
        text += """
            # HELP portvakt_webhook_attempt_duration_seconds How long webhook POSTs took, connect included.
            # TYPE portvakt_webhook_attempt_duration_seconds histogram

            """
        PrometheusText.histogram(
            "portvakt_webhook_attempt_duration_seconds", labels: "", attemptDurations, into: &text)
        let pending = try store.pendingWebhookDeliveries()
        let oldest = pending.oldest.map { max(0, now.timeIntervalSince($0)) } ?? 0
        text += """
            # HELP portvakt_webhook_pending Webhook deliveries not yet delivered or failed, in the whole database (do not sum across instances).
            # TYPE portvakt_webhook_pending gauge
            portvakt_webhook_pending \(pending.count)
            # HELP portvakt_webhook_oldest_pending_seconds Age of the oldest pending webhook delivery, in the whole database.
            # TYPE portvakt_webhook_oldest_pending_seconds gauge
            portvakt_webhook_oldest_pending_seconds \(oldest)

            """
    }
}
