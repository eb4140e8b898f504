public import FoundationEssentials
public import Kernel
public import Storage

/// The administrators' view of webhook deliveries: list them, read one, and send one again
/// (Docs/webhooks.md, Docs/admin-api.md).
public struct WebhookAdministration: Sendable {
    private let store: any WebhookDeliveryStore
    private let clock: any WallClock
    /// How long a redelivered delivery is retried, from the redelivery.
    private let giveUpAfter: TimeInterval
    /// Called after a redelivery (wakes the local dispatcher).
    private let onRedelivered: @Sendable () -> Void

    /// Creates the use case.
    public init(
        store: any WebhookDeliveryStore, clock: any WallClock, giveUpAfter: TimeInterval,
        onRedelivered: @escaping @Sendable () -> Void = {}
    ) {
        self.store = store
        self.clock = clock
        self.giveUpAfter = giveUpAfter
        self.onRedelivered = onRedelivered
    }

    /// A page of deliveries, newest first.
    /// - Throws: `admin.invalid_cursor`, `admin.invalid_parameter` (a limit outside 1...500).
    public func deliveries(_ filter: WebhookDeliveryFilter, cursor: String?, limit: Int?) throws
        -> AdminPage<WebhookDelivery>
    {
        let limit = try AccountAdministration.checkLimit(limit)
        let after = try cursor.map { cursor throws(AuthError) -> WebhookDeliveryKey in
            let key = try Cursor.decode(cursor, kind: "w")
            guard let colon = key.firstIndex(of: ":"), let millis = Int64(key[..<colon]) else {
                throw AuthError(.invalidCursor, "the cursor is not one this server handed out")
            }
            return WebhookDeliveryKey(
                createdAt: Date(timeIntervalSince1970: Double(millis) / 1000),
                id: String(key[key.index(after: colon)...]))
        }
        let found = try store.webhookDeliveries(filter, after: after, limit: limit + 1)
        let page = Array(found.prefix(limit))
        let next = page.last.map { last in
            Cursor.encode(
                "\(Int64((last.createdAt.timeIntervalSince1970 * 1000).rounded())):\(last.id)", kind: "w")
        }
        return AdminPage(items: page, nextCursor: found.count > limit ? next : nil)
    }

    /// One delivery, with its payload.
    /// - Throws: `admin.delivery_not_found`.
    public func delivery(id: String) throws -> WebhookDelivery {
        guard let delivery = try store.webhookDelivery(id: id) else {
            throw AuthError(.deliveryNotFound, "no webhook delivery has this id")
        }
        return delivery
    }

    /// Makes a delivery pending now under the same `webhook-id`, retried for the configured time
    /// from now, its attempts kept; audited as `admin.webhook.redelivered`. Asking again is harmless.
    /// - Throws: `admin.delivery_not_found`.
    public func redeliver(id: String, by admin: AdminPrincipal, context: ClientContext) throws
        -> WebhookDelivery
    {
        let now = clock.now()
        guard let existing = try store.webhookDelivery(id: id) else {
            throw AuthError(.deliveryNotFound, "no webhook delivery has this id")
        }
        let audit = AuditEvent(
            .adminWebhookRedelivered, by: admin.actor, userID: nil, context: context,
            details: ["deliveryId": id, "eventId": existing.eventID, "adminTokenId": admin.tokenID], at: now)
        guard
            try store.redeliverWebhook(
                id: id, at: now, giveUpAt: now.addingTimeInterval(giveUpAfter), audit: audit)
        else { throw AuthError(.deliveryNotFound, "no webhook delivery has this id") }
        onRedelivered()
        return try delivery(id: id)
    }
}
