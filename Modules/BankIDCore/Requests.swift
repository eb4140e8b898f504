import CryptoCore
import FoundationEssentials
import Glibc

/// How BankID renders `userVisibleData`.
public enum UserVisibleDataFormat: String, Sendable, Equatable {
    /// BankID's Markdown subset (headings, bold, italics, tables, lines).
    case simpleMarkdownV1
    /// Plain text, which some clients send explicitly.
    case plaintext
}

/// Who started a phone order's call.
public enum CallInitiator: String, Sendable, Equatable {
    /// The user called the RP.
    case user
    /// The RP called the user.
    case rp = "RP"

    /// Checks the exact-case value BankID takes.
    /// - Throws: `BankIDError(.invalidCallInitiator)` for anything but "user" or "RP".
    public init(validating text: String) throws(BankIDError) {
        guard let value = Self(rawValue: text) else {
            throw BankIDError(
                .invalidCallInitiator, "callInitiator: expected \"user\" or \"RP\" (exact case)")
        }
        self = value
    }
}

/// The card reader class a requirement may demand.
public enum CardReaderClass: String, Sendable, Equatable {
    /// A reader with or without a PIN pad.
    case class1
    /// A reader with a PIN pad.
    case class2
}

/// The most risk BankID may accept for the order.
public enum RiskLevel: String, Sendable, Equatable {
    /// Only low-risk orders.
    case low
    /// Low and moderate risk.
    case moderate
}

/// Conditions the user and their BankID must meet (`requirement`, v6).
public struct BankIDRequirement: Sendable, Equatable {
    /// Whether the security code must be used (not biometrics).
    public var pinCode: Bool?
    /// Whether the user must scan their ID document (MRTD).
    public var mrtd: Bool?
    /// The card reader class for smart-card BankIDs.
    public var cardReader: CardReaderClass?
    /// OIDs of the certificate policies accepted (for example 1.2.752.78.1.5, mobile BankID).
    public var certificatePolicies: [String]?
    /// The only person who may complete the order.
    public var personalNumber: PersonalNumber?
    /// The highest accepted risk.
    public var risk: RiskLevel?

    /// Creates a requirement; nil fields are not sent.
    public init(
        pinCode: Bool? = nil, mrtd: Bool? = nil, cardReader: CardReaderClass? = nil,
        certificatePolicies: [String]? = nil, personalNumber: PersonalNumber? = nil,
        risk: RiskLevel? = nil
    ) {
        self.pinCode = pinCode
        self.mrtd = mrtd
        self.cardReader = cardReader
        self.certificatePolicies = certificatePolicies
        self.personalNumber = personalNumber
        self.risk = risk
    }

    /// Whether nothing is required (then the member is left out).
    var isEmpty: Bool {
        pinCode == nil && mrtd == nil && cardReader == nil && certificatePolicies == nil
            && personalNumber == nil && risk == nil
    }

    func validate() throws(BankIDError) {
        guard let policies = certificatePolicies else { return }
        guard !policies.isEmpty else {
            throw BankIDError(
                .invalidRequirement, "requirement.certificatePolicies: give at least one OID or leave it out")
        }
        for policy in policies where !Self.isOID(policy) {
            throw BankIDError(
                .invalidRequirement,
                "requirement.certificatePolicies: \"\(policy.prefix(64))\" is not a dotted OID")
        }
    }

    /// A dotted-decimal OID with at least two arcs, each without leading zeros.
    static func isOID(_ text: String) -> Bool {
        let arcs = text.split(separator: ".", omittingEmptySubsequences: false)
        return arcs.count >= 2 && text.utf8.count <= 128
            && arcs.allSatisfy { arc in
                !arc.isEmpty && arc.utf8.allSatisfy { (0x30...0x39).contains($0) }
                    && (arc == "0" || !arc.hasPrefix("0"))
            }
    }

    var json: [String: Any] {
        var object: [String: Any] = [:]
        if let pinCode { object["pinCode"] = pinCode }
        if let mrtd { object["mrtd"] = mrtd }
        if let cardReader { object["cardReader"] = cardReader.rawValue }
        if let certificatePolicies { object["certificatePolicies"] = certificatePolicies }
        if let personalNumber { object["personalNumber"] = personalNumber.digits }
        if let risk { object["risk"] = risk.rawValue }
        return object
    }
}

/// The app the user started the order from (`app`); send this or ``BankIDWebInfo``, never both.
public struct BankIDAppInfo: Sendable, Equatable {
    /// The app's identifier (package name or bundle id).
    public var appIdentifier: String
    /// The device's operating system and version.
    public var deviceOS: String
    /// The device model.
    public var deviceModelName: String
    /// A stable identifier of the device, chosen by the RP.
    public var deviceIdentifier: String

    /// Creates app information.
    public init(appIdentifier: String, deviceOS: String, deviceModelName: String, deviceIdentifier: String) {
        self.appIdentifier = appIdentifier
        self.deviceOS = deviceOS
        self.deviceModelName = deviceModelName
        self.deviceIdentifier = deviceIdentifier
    }

    var fields: [(String, String)] {
        [
            ("appIdentifier", appIdentifier), ("deviceOS", deviceOS),
            ("deviceModelName", deviceModelName), ("deviceIdentifier", deviceIdentifier),
        ]
    }
}

/// The web page the user started the order from (`web`); send this or ``BankIDAppInfo``, never both.
public struct BankIDWebInfo: Sendable, Equatable {
    /// The domain of the page that started the order.
    public var referringDomain: String
    /// The browser's User-Agent.
    public var userAgent: String
    /// A stable identifier of the browser, chosen by the RP (for example a hashed cookie).
    public var deviceIdentifier: String

    /// Creates web information.
    public init(referringDomain: String, userAgent: String, deviceIdentifier: String) {
        self.referringDomain = referringDomain
        self.userAgent = userAgent
        self.deviceIdentifier = deviceIdentifier
    }

    var fields: [(String, String)] {
        [
            ("referringDomain", referringDomain), ("userAgent", userAgent),
            ("deviceIdentifier", deviceIdentifier),
        ]
    }
}

/// The body of /auth and /sign. Text fields are plain text: the client encodes them to base64.
public struct BankIDStartRequest: Sendable, Equatable {
    /// The user's IP address as this server sees it (not a proxy's).
    public var endUserIP: String
    /// Conditions on the user and their BankID.
    public var requirement: BankIDRequirement?
    /// Text shown to the user, plain (the client base64-encodes it); required for /sign.
    public var userVisibleData: String?
    /// How BankID renders ``userVisibleData``.
    public var userVisibleDataFormat: UserVisibleDataFormat?
    /// Text bound into the signature but not shown, plain.
    public var userNonVisibleData: String?
    /// Where the BankID app returns to after a same-device order; must carry a `nonce` parameter.
    public var returnURL: String?
    /// Whether completionData should include BankID's risk assessment.
    public var returnRisk: Bool?
    /// The app that started the order.
    public var app: BankIDAppInfo?
    /// The web page that started the order.
    public var web: BankIDWebInfo?

    /// Creates a request; only `endUserIP` is required.
    public init(
        endUserIP: String, requirement: BankIDRequirement? = nil, userVisibleData: String? = nil,
        userVisibleDataFormat: UserVisibleDataFormat? = nil, userNonVisibleData: String? = nil,
        returnURL: String? = nil, returnRisk: Bool? = nil, app: BankIDAppInfo? = nil,
        web: BankIDWebInfo? = nil
    ) {
        self.endUserIP = endUserIP
        self.requirement = requirement
        self.userVisibleData = userVisibleData
        self.userVisibleDataFormat = userVisibleDataFormat
        self.userNonVisibleData = userNonVisibleData
        self.returnURL = returnURL
        self.returnRisk = returnRisk
        self.app = app
        self.web = web
    }

    /// Checks every field; `forSign` requires `userVisibleData`.
    /// - Throws: `BankIDError` naming the first field that is wrong.
    public func validate(forSign: Bool) throws(BankIDError) {
        try BankIDValidation.endUserIP(endUserIP)
        try requirement?.validate()
        try BankIDValidation.visibleData(userVisibleData, format: userVisibleDataFormat, required: forSign)
        try BankIDValidation.nonVisibleData(userNonVisibleData)
        if let returnURL { try BankIDValidation.returnURL(returnURL) }
        if app != nil, web != nil {
            throw BankIDError(.conflictingDeviceInfo, "app, web: give one of them, never both")
        }
        if let app { try BankIDValidation.deviceFields("app", app.fields) }
        if let web { try BankIDValidation.deviceFields("web", web.fields) }
    }

    /// The JSON body; call ``validate(forSign:)`` first.
    func body() -> [UInt8] {
        var object: [String: Any] = ["endUserIp": endUserIP]
        if let requirement, !requirement.isEmpty { object["requirement"] = requirement.json }
        BankIDValidation.addText(
            &object, visible: userVisibleData, format: userVisibleDataFormat,
            nonVisible: userNonVisibleData)
        if let returnURL { object["returnUrl"] = returnURL }
        if let returnRisk { object["returnRisk"] = returnRisk }
        if let app { object["app"] = Dictionary(uniqueKeysWithValues: app.fields) }
        if let web { object["web"] = Dictionary(uniqueKeysWithValues: web.fields) }
        return BankIDValidation.serialize(object)
    }
}

/// The body of /phone/auth and /phone/sign.
public struct BankIDPhoneRequest: Sendable, Equatable {
    /// Who called whom.
    public var callInitiator: CallInitiator
    /// The person the RP is talking to, when known.
    public var personalNumber: PersonalNumber?
    /// Conditions on the user and their BankID.
    public var requirement: BankIDRequirement?
    /// Text shown to the user, plain; required for /phone/sign.
    public var userVisibleData: String?
    /// How BankID renders ``userVisibleData``.
    public var userVisibleDataFormat: UserVisibleDataFormat?
    /// Text bound into the signature but not shown, plain.
    public var userNonVisibleData: String?

    /// Creates a phone request.
    public init(
        callInitiator: CallInitiator, personalNumber: PersonalNumber? = nil,
        requirement: BankIDRequirement? = nil, userVisibleData: String? = nil,
        userVisibleDataFormat: UserVisibleDataFormat? = nil, userNonVisibleData: String? = nil
    ) {
        self.callInitiator = callInitiator
        self.personalNumber = personalNumber
        self.requirement = requirement
        self.userVisibleData = userVisibleData
        self.userVisibleDataFormat = userVisibleDataFormat
        self.userNonVisibleData = userNonVisibleData
    }

    /// Checks every field; `forSign` requires `userVisibleData`.
    /// - Throws: `BankIDError` naming the first field that is wrong.
    public func validate(forSign: Bool) throws(BankIDError) {
        try requirement?.validate()
        try BankIDValidation.visibleData(userVisibleData, format: userVisibleDataFormat, required: forSign)
        try BankIDValidation.nonVisibleData(userNonVisibleData)
    }

    func body() -> [UInt8] {
        var object: [String: Any] = ["callInitiator": callInitiator.rawValue]
        if let personalNumber { object["personalNumber"] = personalNumber.digits }
        if let requirement, !requirement.isEmpty { object["requirement"] = requirement.json }
        BankIDValidation.addText(
            &object, visible: userVisibleData, format: userVisibleDataFormat,
            nonVisible: userNonVisibleData)
        return BankIDValidation.serialize(object)
    }
}

/// The checks shared by the request types, each naming the field it checks.
public enum BankIDValidation {
    /// The longest `userVisibleData` after base64 encoding.
    public static let userVisibleDataLimit = 40_000
    /// The longest `userNonVisibleData` after base64 encoding.
    public static let userNonVisibleDataLimit = 200_000
    /// The longest `returnUrl`.
    public static let returnURLLimit = 512
    /// The shortest nonce accepted in a `returnUrl` (128 bits in base64url is 22 characters).
    public static let minimumNonceLength = 16
    /// The longest `app` or `web` field, in UTF-8 bytes. The reference names no limit; this is
    /// the simulator's, and a User-Agent is cut to it (``truncated(_:toBytes:)``).
    public static let deviceFieldLimit = 256

    /// Checks that `text` is an IPv4 or IPv6 address literal.
    public static func endUserIP(_ text: String) throws(BankIDError) {
        var buffer = [UInt8](repeating: 0, count: 16)
        let valid =
            !text.contains("\0")
            && (inet_pton(AF_INET, text, &buffer) == 1 || inet_pton(AF_INET6, text, &buffer) == 1)
        guard valid else {
            throw BankIDError(.invalidEndUserIP, "endUserIp: expected an IPv4 or IPv6 address")
        }
    }

    /// The base64 of the UTF-8 bytes of `text`, as BankID takes every text field.
    public static func base64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }

    static func visibleData(_ text: String?, format: UserVisibleDataFormat?, required: Bool)
        throws(BankIDError)
    {
        guard let text else {
            if required {
                throw BankIDError(.invalidUserVisibleData, "userVisibleData: required for a signature")
            }
            if format != nil {
                throw BankIDError(
                    .invalidUserVisibleDataFormat, "userVisibleDataFormat: given without userVisibleData")
            }
            return
        }
        guard !text.isEmpty else {
            throw BankIDError(.invalidUserVisibleData, "userVisibleData: must not be empty")
        }
        let encoded = base64Length(text)
        guard encoded <= userVisibleDataLimit else {
            throw BankIDError(
                .invalidUserVisibleData,
                "userVisibleData: \(encoded) characters after base64, at most \(userVisibleDataLimit)")
        }
    }

    static func nonVisibleData(_ text: String?) throws(BankIDError) {
        guard let text else { return }
        guard !text.isEmpty else {
            throw BankIDError(.invalidUserNonVisibleData, "userNonVisibleData: must not be empty")
        }
        let encoded = base64Length(text)
        guard encoded <= userNonVisibleDataLimit else {
            throw BankIDError(
                .invalidUserNonVisibleData,
                "userNonVisibleData: \(encoded) characters after base64, at most \(userNonVisibleDataLimit)")
        }
    }

    /// Checks a return URL: https (http only for loopback development), at most 512 characters,
    /// with a `nonce` query parameter the RP checks when the user comes back.
    public static func returnURL(_ text: String) throws(BankIDError) {
        guard text.utf8.count <= returnURLLimit else {
            throw BankIDError(.invalidReturnURL, "returnUrl: longer than \(returnURLLimit) characters")
        }
        guard let components = URLComponents(string: text), let scheme = components.scheme,
            let host = components.host, !host.isEmpty
        else { throw BankIDError(.invalidReturnURL, "returnUrl: not an absolute URL") }
        let loopback = ["localhost", "127.0.0.1", "::1", "[::1]"].contains(host)
        guard scheme == "https" || (scheme == "http" && loopback) else {
            throw BankIDError(.invalidReturnURL, "returnUrl: must be https (http only for localhost)")
        }
        let nonce = components.queryItems?.first { $0.name == "nonce" }?.value ?? ""
        guard nonce.count >= minimumNonceLength else {
            throw BankIDError(
                .invalidReturnURL,
                "returnUrl: needs a nonce query parameter of at least \(minimumNonceLength) characters")
        }
    }

    static func deviceFields(_ member: String, _ fields: [(String, String)]) throws(BankIDError) {
        for (name, value) in fields where deviceFieldProblem(value) != nil {
            throw BankIDError(.invalidDeviceInfo, "\(member).\(name): \(deviceFieldProblem(value)!)")
        }
    }

    /// What is wrong with an `app` or `web` field's value, or nil: 1 to ``deviceFieldLimit``
    /// UTF-8 bytes without control characters.
    public static func deviceFieldProblem(_ value: String) -> String? {
        guard !value.isEmpty, value.utf8.count <= deviceFieldLimit else {
            return "must be 1 to \(deviceFieldLimit) bytes"
        }
        guard !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            return "must not contain control characters"
        }
        return nil
    }

    /// `text` cut to at most `limit` UTF-8 bytes, on a character boundary.
    public static func truncated(_ text: String, toBytes limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        var result = ""
        var used = 0
        for character in text {
            let size = character.utf8.count
            if used + size > limit { break }
            result.append(character)
            used += size
        }
        return result
    }

    static func checkOrderRef(_ orderRef: String) throws(BankIDError) {
        let valid =
            !orderRef.isEmpty && orderRef.utf8.count <= 128
            && orderRef.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
        guard valid else {
            throw BankIDError(.invalidOrderRef, "orderRef: expected 1 to 128 visible ASCII characters")
        }
    }

    /// The length of `text`'s base64 form (of its UTF-8 bytes), which BankID's limits count.
    public static func base64Length(_ text: String) -> Int { (text.utf8.count + 2) / 3 * 4 }

    static func addText(
        _ object: inout [String: Any], visible: String?, format: UserVisibleDataFormat?, nonVisible: String?
    ) {
        if let visible { object["userVisibleData"] = base64(visible) }
        if let format { object["userVisibleDataFormat"] = format.rawValue }
        if let nonVisible { object["userNonVisibleData"] = base64(nonVisible) }
    }

    static func serialize(_ object: [String: Any]) -> [UInt8] {
        // Sorted keys: the same request always gives the same bytes (tests compare them).
        var writer = JSONWriter()
        write(object, to: &writer)
        return writer.bytes
    }

    /// Writes a request value as JSONSerialization did with `.sortedKeys` and
    /// `.withoutEscapingSlashes`: objects with sorted keys, strings, booleans, integers, arrays.
    private static func write(_ value: Any, to writer: inout JSONWriter) {
        switch value {
        case let object as [String: Any]:
            writer.object { members in
                for key in object.keys.sorted() {
                    members.key(key)
                    write(object[key]!, to: &members)
                }
            }
        case let array as [Any]:
            writer.array { elements in for element in array { write(element, to: &elements) } }
        case let text as String: writer.string(text)
        case let flag as Bool: writer.bool(flag)
        case let number as Int: writer.integer(Int64(number))
        default: preconditionFailure("a BankID request holds \(type(of: value))")
        }
    }
}
