import CryptoCore
import FoundationEssentials

/// The Standard Webhooks signature of one attempt: `v1,` + base64(HMAC-SHA256(key,
/// "<webhook-id>.<webhook-timestamp>.<body>")). The timestamp is the attempt's, so a late retry
/// still passes a receiver's ±5 minute check; it is computed anew for every attempt.
public enum WebhookSignature {
    /// The `webhook-signature` header value for `body` sent as `id` at `timestamp` (Unix seconds).
    public static func sign(id: String, timestamp: Int64, body: [UInt8], secret: WebhookSecret) -> String {
        let signed = Array("\(id).\(timestamp).".utf8) + body
        let mac = HMAC.authenticate(.sha256, key: secret.key, data: signed)
        return "v1," + Data(mac).base64EncodedString()
    }
}
