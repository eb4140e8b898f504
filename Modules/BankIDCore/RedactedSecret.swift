/// A secret string BankIDCore holds (a certificate passphrase): prints as `<redacted>`, shows
/// nothing to reflection, and compares without an early exit.
public struct RedactedSecret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The secret; read it only where it is used.
    public let value: String

    /// Wraps a secret.
    public init(_ value: String) { self.value = value }

    /// Always `<redacted>`.
    public var description: String { "<redacted>" }
    /// Always `<redacted>`.
    public var debugDescription: String { "<redacted>" }
    /// A mirror without children.
    public var customMirror: Mirror { Mirror(self, children: [:]) }

    /// Compares in time independent of where the values differ.
    public static func == (lhs: RedactedSecret, rhs: RedactedSecret) -> Bool {
        let a = Array(lhs.value.utf8)
        let b = Array(rhs.value.utf8)
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in 0..<max(a.count, b.count) {
            difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
        }
        return difference == 0
    }
}
