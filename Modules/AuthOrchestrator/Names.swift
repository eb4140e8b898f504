import FoundationEssentials
import Kernel

/// The rules for the names people type: usernames, display names and passkey names.
public enum Names {
    /// The characters a username may hold besides letters and digits.
    static let usernamePunctuation: Set<Character> = [".", "_", "-", "@"]

    /// A username in its one stored form: NFC, trimmed, lowercased, 3 to 64 characters of
    /// letters, digits, `.`, `_`, `-` and `@`.
    ///
    /// Normalising before both storing and looking up makes "Ada", " ada " and the decomposed
    /// "åsa" the same account, so nobody can register a look-alike of an existing name by case or
    /// Unicode form alone.
    /// - Throws: `AuthError(.invalidUsername)`.
    public static func normaliseUsername(_ text: String) throws(AuthError) -> String {
        let trimmed = text.canonicallyComposed.trimmingWhitespaceAndNewlines()
        // Lowercasing can decompose (e.g. "İ"), so compose again afterwards.
        let name = trimmed.lowercased().canonicallyComposed
        guard (3...64).contains(name.count),
            name.allSatisfy({ $0.isLetter || $0.isNumber || usernamePunctuation.contains($0) })
        else {
            throw AuthError(
                .invalidUsername,
                "a username is 3 to 64 letters, digits, \".\", \"_\", \"-\" or \"@\"")
        }
        return name
    }

    /// A display name or passkey name: NFC, trimmed, 1 to 64 characters, no control characters.
    /// - Returns: nil when the text breaks the rule.
    static func label(_ text: String) -> String? {
        let label = text.canonicallyComposed.trimmingWhitespaceAndNewlines()
        guard (1...64).contains(label.count),
            !label.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { return nil }
        return label
    }

    /// A display name, or `AuthError(.invalidDisplayName)`.
    public static func displayName(_ text: String) throws(AuthError) -> String {
        guard let label = label(text) else {
            throw AuthError(
                .invalidDisplayName, "a display name is 1 to 64 characters without control characters")
        }
        return label
    }

    /// A passkey name, or `AuthError(.invalidPasskeyName)`.
    public static func passkeyName(_ text: String) throws(AuthError) -> String {
        guard let label = label(text) else {
            throw AuthError(
                .invalidPasskeyName, "a passkey name is 1 to 64 characters without control characters")
        }
        return label
    }
}
