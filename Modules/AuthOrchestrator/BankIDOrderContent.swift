public import BankIDCore
import CryptoCore
import FoundationEssentials

/// The text BankID shows for one intent, in Swedish and English, and how BankID renders it.
public struct BankIDOrderText: Sendable, Equatable {
    /// Shown when the client asks for Swedish (and when it asks for neither language).
    public var swedish: String
    /// Shown when the client asks for English.
    public var english: String
    /// How BankID renders the text.
    public var format: UserVisibleDataFormat

    /// Creates a text.
    public init(swedish: String, english: String, format: UserVisibleDataFormat = .plaintext) {
        self.swedish = swedish
        self.english = english
        self.format = format
    }

    /// The text in `language`.
    public func text(_ language: MessageLanguage) -> String {
        switch language {
        case .swedish: swedish
        case .english: english
        }
    }
}

/// What Portvakt puts into each BankID order beyond the journey's own rules: the text the user
/// is asked to approve and the requirements, per intent; the app identifiers native clients may
/// name; the origins a web order's page may come from; and the key that turns a device cookie
/// or an app's device identifier into the `deviceIdentifier` BankID receives.
///
/// Kept apart from `BankIDPolicy` (which says which journeys run and how results are judged):
/// this is the order's content, Docs/bankid.md ("What each order carries").
public struct BankIDOrderContent: Sendable {
    /// The text per intent; a sign order shows the API's text instead.
    public var texts: [BankIDOrderIntent: BankIDOrderText]
    /// The requirement per intent; an intent missing here requires nothing.
    public var requirements: [BankIDOrderIntent: BankIDRequirement]
    /// The app identifiers (bundle ids, package names) a native order may name; none refuses
    /// every native order.
    public var appIdentifiers: Set<String>
    /// The public URL's origin (`https://login.example.com`): its host is the referring domain of
    /// a web order whose page did not name an allowed origin.
    public var publicOrigin: String
    /// Further origins whose pages may start orders (the CORS origins).
    public var allowedOrigins: Set<String>
    /// The key of the device identifier's HMAC (at least 32 bytes).
    let deviceKey: RedactedBytes

    /// The label of the device identifier's HMAC, so its values never equal another use's.
    static let deviceDomain = "portvakt.bankid.device-identifier.v1:"

    /// Creates the content.
    /// - Parameters:
    ///   - texts: per intent; intents left out get ``defaultTexts(serviceName:)``'s.
    ///   - deviceKey: a server secret of at least 32 bytes (for example an identity key's
    ///     ``IdentityHasher/derivedKey(purpose:)``); the raw device values never leave without it.
    public init(
        serviceName: String, publicOrigin: String, allowedOrigins: Set<String> = [],
        texts: [BankIDOrderIntent: BankIDOrderText] = [:],
        requirements: [BankIDOrderIntent: BankIDRequirement] = [:], appIdentifiers: Set<String> = [],
        deviceKey: [UInt8]
    ) {
        self.texts = Self.defaultTexts(serviceName: serviceName).merging(texts) { _, configured in configured
        }
        self.requirements = requirements
        self.appIdentifiers = appIdentifiers
        self.publicOrigin = publicOrigin
        self.allowedOrigins = allowedOrigins
        self.deviceKey = RedactedBytes(deviceKey)
    }

    /// The built-in texts: they name the service and say why BankID is asked, so the user sees
    /// in the BankID app who asks and what for.
    public static func defaultTexts(serviceName name: String) -> [BankIDOrderIntent: BankIDOrderText] {
        [
            .login: BankIDOrderText(swedish: "Logga in på \(name).", english: "Log in to \(name)."),
            .signup: BankIDOrderText(
                swedish: "Skapa ett konto hos \(name) med ditt BankID.",
                english: "Create an account with \(name) using your BankID."),
            .link: BankIDOrderText(
                swedish: "Koppla ditt BankID till ditt konto hos \(name).",
                english: "Link your BankID to your account with \(name)."),
            .recovery: BankIDOrderText(
                swedish:
                    "Återställ åtkomsten till ditt konto hos \(name). Därefter lägger du till en ny nyckel.",
                english: "Recover access to your account with \(name). You then add a new passkey."),
        ]
    }

    /// The `deviceIdentifier` BankID gets for a raw device value (a browser's device cookie, an
    /// app's own identifier): lowercase hex HMAC-SHA256 under the server key, so the value is
    /// stable per device and key, and says nothing about the raw value.
    public func deviceIdentifier(_ raw: String) -> String {
        Hex.encode(
            HMAC.authenticate(.sha256, key: deviceKey.bytes, data: Array((Self.deviceDomain + raw).utf8)))
    }

    /// The host a web order names as `referringDomain`: the page's origin when it is the public
    /// URL's or an allowed one, else the public URL's host (a page elsewhere does not get to name
    /// itself to BankID).
    public func referringDomain(origin: String?) -> String {
        let trusted = origin.flatMap { $0 == publicOrigin || allowedOrigins.contains($0) ? $0 : nil }
        return Self.host(of: trusted ?? publicOrigin) ?? Self.host(of: publicOrigin) ?? "localhost"
    }

    /// The host of an origin or URL, without port or brackets.
    static func host(of origin: String) -> String? {
        guard let host = URLComponents(string: origin)?.host, !host.isEmpty else { return nil }
        return host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }
}

/// Bytes that never print (a key).
struct RedactedBytes: Sendable, CustomStringConvertible {
    let bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    var description: String { "<redacted>" }
}
