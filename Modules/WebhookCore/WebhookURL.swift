import FoundationEssentials

/// The rule for where webhooks may be sent: https anywhere, plain http only to this machine
/// (`localhost`, 127.0.0.0/8, `[::1]`), so events never cross a network unencrypted. The
/// configuration check and the sender apply the same rule.
public struct WebhookURL: Sendable, Equatable, CustomStringConvertible {
    /// The URL as configured.
    public let text: String
    /// "https" or "http".
    public let scheme: String
    /// The host as written (IPv6 in brackets).
    public let host: String

    /// Parses `text`: `http(s)://host[:port][/path][?query]`, no user information, no fragment,
    /// no spaces or control characters.
    /// - Throws: `WebhookError(.invalidURL)` saying what is wrong.
    public init(_ text: String) throws(WebhookError) {
        func refuse(_ message: String) -> WebhookError { WebhookError(.invalidURL, message) }
        guard text.utf8.count <= 2048 else { throw refuse("a webhook URL may be at most 2048 bytes") }
        guard text.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) }) else {
            throw refuse("a webhook URL must be visible ASCII without spaces")
        }
        guard let separator = text.firstRange(of: "://") else {
            throw refuse("expected an https URL such as \"https://api.example.com/portvakt-events\"")
        }
        let scheme = String(text[..<separator.lowerBound])
        guard scheme == "https" || scheme == "http" else { throw refuse("a webhook URL must use https") }
        let rest = text[separator.upperBound...]
        let authorityEnd = rest.firstIndex { "/?#".contains($0) } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        if rest[authorityEnd...].contains("#") { throw refuse("a webhook URL must not have a fragment") }
        if authority.contains("@") { throw refuse("a webhook URL must not contain user information") }
        // The port follows the last colon outside IPv6 brackets.
        if let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]") {
            let port = authority[authority.index(after: colon)...]
            guard !port.isEmpty, port.count <= 5, port.allSatisfy({ $0.isASCII && $0.isNumber }),
                let number = Int(port), (1...65535).contains(number)
            else { throw refuse("a webhook URL has an invalid port, expected 1 to 65535") }
            authority = authority[..<colon]
        }
        let host = String(authority)
        guard !host.isEmpty else { throw refuse("a webhook URL needs a host") }
        guard host.unicodeScalars.allSatisfy({ !("A"..."Z").contains($0) }) else {
            throw refuse("write the webhook URL's host in lowercase")
        }
        self.text = text
        self.scheme = scheme
        self.host = host
        if scheme == "http", !isLoopback {
            throw refuse(
                "plain http is allowed only to this machine (localhost, 127.0.0.1, [::1]); use https")
        }
    }

    /// Whether the host is this machine.
    public var isLoopback: Bool {
        if host == "localhost" || host == "[::1]" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127"
            && parts.allSatisfy { part in
                !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isNumber) && Int(part)! <= 255
            }
    }

    public var description: String { text }
}
