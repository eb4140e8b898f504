/// A secret string (a passphrase, a key's text) that does not show itself: `description`,
/// `debugDescription` and `dump` print `<redacted>`, and `==` compares in constant time.
///
/// The one wrapper for secrets read from configuration and handed to the BankID client, so a
/// secret stays redacted from the file it was read from to the call that uses it.
public struct RedactedSecret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The secret; read it only where it is used, never to log or show.
    public let value: String

    /// Wraps a secret.
    public init(_ value: String) { self.value = value }

    /// Always `<redacted>`.
    public var description: String { "<redacted>" }
    /// Always `<redacted>`.
    public var debugDescription: String { "<redacted>" }
    /// A mirror without children, so `dump` and reflection see nothing.
    public var customMirror: Mirror { Mirror(self, children: [:]) }

    /// Compares in time independent of the contents (lengths are not secret).
    public static func == (lhs: RedactedSecret, rhs: RedactedSecret) -> Bool {
        ConstantTime.equals(Array(lhs.value.utf8), Array(rhs.value.utf8))
    }
}
