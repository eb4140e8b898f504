import AuthOrchestrator
import FoundationEssentials
import Kernel
import Storage
import Synchronization
import WebhookCore

/// Webhooks as `portvakt serve` runs them: the change feed the use cases write the outbox
/// through, and this instance's dispatcher that delivers it (Docs/webhooks.md).
///
/// Without endpoints the feed is `ChangeFeed.off` and nothing of webhooks runs: no rows, no
/// threads, no polls.
final class WebhookRuntime: Sendable {
    /// The feed every use case that changes users, passkeys or sessions writes through.
    let feed: ChangeFeed
    /// What the feed calls after a commit that wrote entries; set once the dispatcher exists.
    let wakeup = Wakeup()

    /// Builds the feed from `configuration.webhooks`.
    init(configuration: PortvaktConfiguration, clock: any WallClock, random: any RandomSource) {
        let settings = configuration.webhooks
        guard !settings.endpoints.isEmpty else {
            feed = .off
            return
        }
        let wakeup = wakeup
        feed = ChangeFeed(
            routes: settings.endpoints.map { endpoint in
                ChangeFeed.Route(endpoint: endpoint.name, types: endpoint.events.map(Set.init))
            },
            giveUpAfter: TimeInterval(settings.retry.giveUpAfterSeconds), random: random, clock: clock,
            onEnqueued: { wakeup.fire() })
    }

    /// The hook the feed calls after a commit; the dispatcher sets it when it exists.
    final class Wakeup: Sendable {
        private let hook = Mutex<(@Sendable () -> Void)?>(nil)

        func set(_ body: @escaping @Sendable () -> Void) { hook.withLock { $0 = body } }

        func fire() { hook.withLock { $0 }?() }
    }
}
