public import BankIDCore

/// What a native app says about itself when it starts an order; each member becomes the field
/// of the same name in BankID's `app`.
public struct BankIDAppDetails: Sendable, Equatable {
    /// The app's bundle id or package name; must be one of `bankid.appIdentifiers`.
    public var appIdentifier: String?
    /// The operating system and its version, e.g. "iOS 18.1".
    public var deviceOS: String?
    /// The device model, e.g. "Apple iPhone16,2".
    public var deviceModelName: String?
    /// The app's own stable identifier of the device; BankID receives its keyed hash.
    public var deviceIdentifier: String?

    /// Creates app details.
    public init(
        appIdentifier: String? = nil, deviceOS: String? = nil, deviceModelName: String? = nil,
        deviceIdentifier: String? = nil
    ) {
        self.appIdentifier = appIdentifier
        self.deviceOS = deviceOS
        self.deviceModelName = deviceModelName
        self.deviceIdentifier = deviceIdentifier
    }

    /// Whether any member was given.
    var isEmpty: Bool {
        appIdentifier == nil && deviceOS == nil && deviceModelName == nil && deviceIdentifier == nil
    }
}

/// What the request says beyond the journey's own inputs, for the order's content: the language
/// of the text, where a web order's page is and which browser it is, what a native app says about
/// itself, and a signature's hidden data. The API fills it from the headers and the body.
public struct BankIDStartDetails: Sendable {
    /// The language of the text the user approves (from Accept-Language).
    public var language: MessageLanguage
    /// The request's Origin header (web clients).
    public var origin: String?
    /// The device cookie the browser presented (web clients); a new one is made when absent.
    public var deviceCookie: String?
    /// What the app says about itself (native clients; required there).
    public var app: BankIDAppDetails?
    /// Text bound into a signature without being shown (sign only), plain UTF-8.
    public var userNonVisibleData: String?

    /// Creates details.
    public init(
        language: MessageLanguage = .swedish, origin: String? = nil, deviceCookie: String? = nil,
        app: BankIDAppDetails? = nil, userNonVisibleData: String? = nil
    ) {
        self.language = language
        self.origin = origin
        self.deviceCookie = deviceCookie
        self.app = app
        self.userNonVisibleData = userNonVisibleData
    }
}
