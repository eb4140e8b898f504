public import AuthOrchestrator
import CryptoCore
import FoundationEssentials
public import HTTPEngine
import Kernel

/// The webhook deliveries on the admin listener: list them, read one with its payload, and send
/// one again under the same `webhook-id` (Docs/webhooks.md).
public struct AdminWebhooksAPI: Sendable {
    let authenticator: AdminAuthenticator
    let webhooks: WebhookAdministration

    /// Creates the routes over the use case.
    public init(authenticator: AdminAuthenticator, webhooks: WebhookAdministration) {
        self.authenticator = authenticator
        self.webhooks = webhooks
    }

    /// Adds the routes to `router`.
    public func register(on router: inout Router) {
        let webhooks = webhooks
        router.addAdmin(
            .GET, "/admin/v1/webhooks/deliveries", authenticator: authenticator,
            summary: "Webhook deliveries, newest first: state, attempts, last status",
            contract: RouteContract(
                query: [
                    RouteContract.QueryParameter(
                        "state", .string(pattern: "^(pending|delivered|failed)$"),
                        "pending, delivered or failed"),
                    RouteContract.QueryParameter("endpoint", "An endpoint's name"),
                    RouteContract.QueryParameter("type", "An event type, e.g. user.deleted"),
                    RouteContract.QueryParameter("cursor", "The nextCursor of the previous page"),
                    RouteContract.QueryParameter(
                        "limit", .string(pattern: "^[0-9]+$"), "Items per page (1-200, default 50)"),
                ],
                responses: [.json(DeliveryList.self)],
                problems: Problems.auth(.invalidCursor, .invalidParameter))
        ) { request, _ in
            var filter = WebhookDeliveryFilter()
            if let state = request.query["state"] {
                guard let known = WebhookDeliveryState(rawValue: state) else {
                    throw AuthError(.invalidParameter, "state must be pending, delivered or failed")
                }
                filter.state = known
            }
            for (name, value) in [("endpoint", request.query["endpoint"]), ("type", request.query["type"])] {
                guard let value else { continue }
                guard (1...64).contains(value.utf8.count),
                    value.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
                else {
                    throw AuthError(.invalidParameter, "\(name) must be 1 to 64 visible ASCII characters")
                }
            }
            filter.endpoint = request.query["endpoint"]
            filter.type = request.query["type"].map { ChangeEventType(rawValue: $0) }
            var limit: Int?
            if let text = request.query["limit"] {
                guard let value = Int(text) else {
                    throw AuthError(.invalidParameter, "limit must be a whole number")
                }
                limit = value
            }
            let page = try webhooks.deliveries(filter, cursor: request.query["cursor"], limit: limit)
            return try .json(
                DeliveryList(deliveries: page.items.map(DeliveryView.init), nextCursor: page.nextCursor))
        }
        router.addAdmin(
            .GET, "/admin/v1/webhooks/deliveries/{deliveryId}", authenticator: authenticator,
            summary: "One webhook delivery with the exact body it sends",
            contract: RouteContract(
                responses: [.json(DeliveryDetail.self)], problems: Problems.auth(.deliveryNotFound))
        ) { request, _ in
            try .json(DeliveryDetail(try webhooks.delivery(id: request.pathParameters["deliveryId"] ?? "")))
        }
        router.addAdmin(
            .POST, "/admin/v1/webhooks/deliveries/{deliveryId}/redeliver", authenticator: authenticator,
            summary: "Send a delivery again now, under the same webhook-id, retried for the configured time",
            contract: RouteContract(
                responses: [.json(DeliveryView.self, status: 202, "Pending again")],
                problems: Problems.auth(.deliveryNotFound))
        ) { request, principal in
            let delivery = try webhooks.redeliver(
                id: request.pathParameters["deliveryId"] ?? "", by: principal, context: request.clientContext)
            return try .json(DeliveryView(delivery), status: 202)
        }
    }
}

/// GET /admin/v1/webhooks/deliveries.
struct DeliveryList: Codable {
    let deliveries: [DeliveryView]
    let nextCursor: String?
}

/// A delivery as administrators see it; times in RFC 3339.
struct DeliveryView: Codable {
    let id: String
    let eventId: String
    let type: String
    let endpoint: String
    let state: String
    let attempts: Int
    let lastStatus: Int?
    let lastError: String?
    let lastAttemptAt: String?
    let nextAttemptAt: String?
    let deliveredAt: String?
    let createdAt: String
    let giveUpAt: String

    init(_ delivery: WebhookDelivery) {
        id = delivery.id
        eventId = delivery.eventID
        type = delivery.type.rawValue
        endpoint = delivery.endpoint
        state = delivery.state.rawValue
        attempts = delivery.attempts
        lastStatus = delivery.lastStatus
        lastError = delivery.lastError
        lastAttemptAt = delivery.lastAttemptAt.map(UTCTimestamp.string)
        nextAttemptAt = delivery.nextAttemptAt.map(UTCTimestamp.string)
        deliveredAt = delivery.deliveredAt.map(UTCTimestamp.string)
        createdAt = UTCTimestamp.string(delivery.createdAt)
        giveUpAt = UTCTimestamp.string(delivery.giveUpAt)
    }
}

/// One delivery with its body (ids only), as the exact text that is signed.
struct DeliveryDetail: Codable {
    let delivery: DeliveryView
    let payload: String

    init(_ delivery: WebhookDelivery) {
        self.delivery = DeliveryView(delivery)
        payload = String(decoding: delivery.payload, as: UTF8.self)
    }
}
