public import CryptoCore
import FoundationEssentials

/// An endpoint's signing secret in the Standard Webhooks form: `whsec_` followed by the base64 of
/// 24 to 64 random bytes. The HMAC key is the decoded bytes, never the text.
public struct WebhookSecret: Sendable, Equatable, CustomStringConvertible {
    /// The text's required prefix.
    public static let prefix = "whsec_"
    /// How many key bytes the specification asks for.
    public static let keyBytes = 24...64

    /// The decoded key, redacted from descriptions.
    let key: [UInt8]

    /// Parses `text`; nil when it is not `whsec_` + base64 (standard alphabet, padded or not) of
    /// 24 to 64 bytes. Callers report the problem without the value.
    public init?(_ text: RedactedSecret) {
        guard text.value.hasPrefix(Self.prefix) else { return nil }
        var encoded = String(text.value.dropFirst(Self.prefix.count))
        guard !encoded.isEmpty,
            encoded.unicodeScalars.allSatisfy({
                ("A"..."Z").contains($0) || ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "+"
                    || $0 == "/" || $0 == "="
            })
        else { return nil }
        while encoded.utf8.count % 4 != 0 { encoded += "=" }
        guard let data = Data(base64Encoded: encoded), Self.keyBytes.contains(data.count) else { return nil }
        key = [UInt8](data)
    }

    /// Always `<redacted>`.
    public var description: String { "<redacted>" }

    /// Compares in constant time.
    public static func == (lhs: Self, rhs: Self) -> Bool { ConstantTime.equals(lhs.key, rhs.key) }
}
