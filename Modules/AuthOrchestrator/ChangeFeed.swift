import CryptoCore
public import FoundationEssentials
public import Kernel
public import Storage

/// Turns the use cases' change events into outbox entries for the endpoints that want them, and
/// wakes this instance's dispatcher once they are committed (Docs/webhooks.md).
///
/// A use case builds its events, asks `entries(_:)` for the rows before its one store call, hands
/// them to that call (so they commit with the change, or not at all), and calls `committed(_:)`
/// after the call returned. `ChangeFeed.off`, every service's default, wants nothing, so without
/// webhooks no row is ever written.
public struct ChangeFeed: Sendable {
    /// One configured endpoint and the types it wants.
    public struct Route: Sendable, Equatable {
        /// The endpoint's name (`webhooks.endpoints[].name`).
        public var endpoint: String
        /// The types it wants; nil means every type, `["*"]` in the configuration.
        public var types: Set<ChangeEventType>?

        /// Creates a route.
        public init(endpoint: String, types: Set<ChangeEventType>?) {
            self.endpoint = endpoint
            self.types = types
        }

        /// Whether this endpoint wants `type`.
        public func wants(_ type: ChangeEventType) -> Bool { types?.contains(type) ?? true }
    }

    /// The endpoints, in configuration order.
    public let routes: [Route]
    /// How long after an event its deliveries keep being retried before they fail.
    public let giveUpAfter: TimeInterval
    private let random: any RandomSource
    private let clock: any WallClock
    private let onEnqueued: @Sendable () -> Void

    /// The feed of a deployment without webhooks: it wants nothing and writes nothing.
    public static let off = ChangeFeed(
        routes: [], giveUpAfter: 86_400, random: SystemRandom(), clock: SystemClock(), onEnqueued: {})

    /// A feed for `routes`.
    /// - Parameters:
    ///   - routes: Which endpoint wants which types.
    ///   - giveUpAfter: Seconds from an event to its deliveries' `giveUpAt`.
    ///   - random: Draws the event and delivery ids.
    ///   - clock: Stamps each entry's creation (its first attempt is due then).
    ///   - onEnqueued: Called after a commit that wrote entries; wakes the local dispatcher.
    public init(
        routes: [Route], giveUpAfter: TimeInterval, random: any RandomSource, clock: any WallClock,
        onEnqueued: @escaping @Sendable () -> Void
    ) {
        self.routes = routes
        self.giveUpAfter = giveUpAfter
        self.random = random
        self.clock = clock
        self.onEnqueued = onEnqueued
    }

    /// Whether any endpoint wants `type`: a use case may skip building an event nobody wants.
    public func wants(_ type: ChangeEventType) -> Bool {
        routes.contains { $0.wants(type) }
    }

    /// The outbox entries for `events`: one per event some endpoint wants, with one delivery per
    /// such endpoint. An event nobody wants gives no entry at all, and `.off` always gives [].
    public func entries(_ events: [ChangeEvent]) -> [OutboxEntry] {
        guard !routes.isEmpty else { return [] }
        let now = clock.now()
        return events.compactMap { event -> OutboxEntry? in
            let endpoints = routes.filter { $0.wants(event.type) }.map(\.endpoint)
            guard !endpoints.isEmpty else { return nil }
            return OutboxEntry(
                id: "evt_" + identifier(), type: event.type, occurredAt: event.at,
                payload: Self.payload(event),
                deliveries: endpoints.map { .init(id: "whd_" + identifier(), endpoint: $0) },
                createdAt: now, giveUpAt: now.addingTimeInterval(giveUpAfter))
        }
    }

    /// Tells the local dispatcher that `entries` were committed; does nothing when empty.
    public func committed(_ entries: [OutboxEntry]) {
        if !entries.isEmpty { onEnqueued() }
    }

    /// 128 random bits as base64url. Ids need to be unique, not secret: should an injected source
    /// fail, the system's (which never returns bytes that are not random) stands in.
    private func identifier() -> String {
        let bytes = (try? random.bytes(16)) ?? SystemRandom().bytes(16)
        return Base64URL.encode(bytes)
    }

    /// The body `{"type","timestamp","data"}` of the Standard Webhooks format: the event's type,
    /// its time in RFC 3339 UTC with milliseconds, and its data members in order.
    static func payload(_ event: ChangeEvent) -> [UInt8] {
        var writer = JSONWriter()
        writer.object { json in
            json.member("type", event.type.rawValue)
            json.member("timestamp", timestamp(event.at))
            json.key("data")
            json.object { data in
                for (name, value) in event.data {
                    data.key(name)
                    switch value {
                    case .string(let text): data.string(text)
                    case .integer(let number): data.integer(number)
                    case .bytes(let bytes): data.string(Base64URL.encode(bytes))
                    }
                }
            }
        }
        return writer.bytes
    }

    /// `2026-01-01T00:00:00.000Z`.
    static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
