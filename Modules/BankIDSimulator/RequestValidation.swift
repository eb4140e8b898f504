import CryptoCore
import FoundationEssentials
import Glibc

/// Validates RP request bodies as strictly as BankID: every field the v6 reference lists is
/// type- and format-checked, unknown fields are refused, and the first problem becomes the
/// `details` of a 400 invalidParameters.
enum RequestValidation {
    /// A validation failure: the details text BankID-like clients log.
    struct Invalid: Error, Equatable {
        let details: String
        init(_ details: String) { self.details = details }
    }

    static let userVisibleDataLimit = 40_000
    static let userNonVisibleDataLimit = 200_000
    static let returnUrlLimit = 512

    /// Validates an /auth, /sign, /phone/auth or /phone/sign body.
    static func order(_ kind: OrderKind, _ body: JSONValue) throws(Invalid) -> OrderRequest {
        guard let fields = body.object else { throw Invalid("Invalid JSON body") }
        var allowed: Set<String> = [
            "requirement", "userVisibleData", "userVisibleDataFormat", "userNonVisibleData",
        ]
        if kind.isPhone {
            allowed.formUnion(["callInitiator", "personalNumber"])
        } else {
            allowed.formUnion(["endUserIp", "returnUrl", "returnRisk", "app", "web"])
        }
        if let unknown = fields.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw Invalid("Unknown parameter: \(unknown)")
        }
        var request = OrderRequest(kind: kind)

        if kind.isPhone {
            guard let initiator = fields["callInitiator"] else { throw Invalid("Missing callInitiator") }
            guard let text = initiator.string, text == "user" || text == "RP" else {
                throw Invalid("Invalid callInitiator")
            }
            request.callInitiator = text
            guard let number = fields["personalNumber"] else { throw Invalid("Missing personalNumber") }
            guard let text = number.string, PersonalNumber.isValid(text) else {
                throw Invalid("Invalid personalNumber")
            }
            request.personalNumber = text
        } else {
            guard let ip = fields["endUserIp"] else { throw Invalid("Missing endUserIp") }
            guard let text = ip.string, isIPAddress(text) else { throw Invalid("Invalid endUserIp") }
            request.endUserIp = text
            if let url = fields["returnUrl"] {
                guard let text = url.string, isReturnURL(text) else { throw Invalid("Invalid returnUrl") }
                request.returnUrl = text
            }
            if let risk = fields["returnRisk"] {
                guard let value = risk.bool else { throw Invalid("Invalid returnRisk") }
                request.returnRisk = value
            }
            if fields["app"] != nil && fields["web"] != nil {
                throw Invalid("Only one of app and web may be given")
            }
            if let app = fields["app"] {
                try deviceInfo(
                    app, name: "app",
                    keys: ["appIdentifier", "deviceOS", "deviceModelName", "deviceIdentifier"])
            }
            if let web = fields["web"] {
                try deviceInfo(web, name: "web", keys: ["referringDomain", "userAgent", "deviceIdentifier"])
            }
        }

        if let data = fields["userVisibleData"] {
            guard let text = data.string, isBase64UTF8(text, limit: userVisibleDataLimit) else {
                throw Invalid("Invalid userVisibleData")
            }
            request.userVisibleData = text
        } else if kind == .sign || kind == .phoneSign {
            throw Invalid("Missing userVisibleData")
        }
        if let format = fields["userVisibleDataFormat"] {
            guard format.string == "simpleMarkdownV1", request.userVisibleData != nil else {
                throw Invalid("Invalid userVisibleDataFormat")
            }
            request.userVisibleDataFormat = "simpleMarkdownV1"
        }
        if let data = fields["userNonVisibleData"] {
            guard let text = data.string, isBase64(text, limit: userNonVisibleDataLimit) else {
                throw Invalid("Invalid userNonVisibleData")
            }
        }
        if let requirement = fields["requirement"] {
            try apply(requirement: requirement, to: &request)
        }
        return request
    }

    /// Validates a /collect or /cancel body and returns the orderRef.
    static func orderRef(_ body: JSONValue) throws(Invalid) -> String {
        guard let fields = body.object else { throw Invalid("Invalid JSON body") }
        if let unknown = fields.keys.sorted().first(where: { $0 != "orderRef" }) {
            throw Invalid("Unknown parameter: \(unknown)")
        }
        guard let value = fields["orderRef"] else { throw Invalid("Missing orderRef") }
        guard let text = value.string, UUID(uuidString: text) != nil else {
            throw Invalid("Invalid orderRef")
        }
        return text.lowercased()
    }

    private static func apply(requirement: JSONValue, to request: inout OrderRequest) throws(Invalid) {
        guard let fields = requirement.object else { throw Invalid("Invalid requirement") }
        let allowed: Set<String> = [
            "pinCode", "mrtd", "cardReader", "certificatePolicies", "personalNumber", "risk",
        ]
        if let unknown = fields.keys.sorted().first(where: { !allowed.contains($0) }) {
            // allowFingerprint, issuerCn, tokenStartRequired and autoStartTokenRequired were removed in v6.
            throw Invalid("Unknown requirement: \(unknown)")
        }
        if let pin = fields["pinCode"], pin.bool == nil { throw Invalid("Invalid requirement.pinCode") }
        if let mrtd = fields["mrtd"] {
            guard let value = mrtd.bool else { throw Invalid("Invalid requirement.mrtd") }
            request.mrtd = value
        }
        if let reader = fields["cardReader"], reader.string != "class1" && reader.string != "class2" {
            throw Invalid("Invalid requirement.cardReader")
        }
        if let policies = fields["certificatePolicies"] {
            guard case .array(let items) = policies, !items.isEmpty,
                items.allSatisfy({ $0.string.map(isOID) ?? false })
            else { throw Invalid("Invalid requirement.certificatePolicies") }
        }
        if let number = fields["personalNumber"] {
            guard let text = number.string, PersonalNumber.isValid(text) else {
                throw Invalid("Invalid requirement.personalNumber")
            }
            if let other = request.personalNumber, other != text {
                throw Invalid("requirement.personalNumber differs from personalNumber")
            }
            request.personalNumber = text
        }
        if let risk = fields["risk"] {
            guard let text = risk.string, text == "low" || text == "moderate" else {
                throw Invalid("Invalid requirement.risk")
            }
            request.acceptedRisk = text
        }
    }

    /// The longest `app` or `web` field, in UTF-8 bytes.
    static let deviceFieldLimit = 256

    /// `app` or `web`: an object with every one of `keys` (all are required), each a string of
    /// 1 to 256 bytes without control characters, and nothing else.
    private static func deviceInfo(_ value: JSONValue, name: String, keys: Set<String>) throws(Invalid) {
        guard let fields = value.object else { throw Invalid("Invalid \(name)") }
        if let unknown = fields.keys.sorted().first(where: { !keys.contains($0) }) {
            throw Invalid("Unknown parameter: \(name).\(unknown)")
        }
        if let missing = keys.sorted().first(where: { fields[$0] == nil }) {
            throw Invalid("Missing \(name).\(missing)")
        }
        for key in keys.sorted() {
            guard let text = fields[key]?.string, !text.isEmpty, text.utf8.count <= deviceFieldLimit,
                !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else { throw Invalid("Invalid \(name).\(key)") }
        }
    }

    /// An IPv4 or IPv6 literal.
    static func isIPAddress(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    /// An absolute URL with a scheme (https or an app's own), at most 512 characters.
    static func isReturnURL(_ text: String) -> Bool {
        guard !text.isEmpty, text.count <= returnUrlLimit, let url = URL(string: text),
            let scheme = url.scheme
        else { return false }
        return !scheme.isEmpty && text.contains(":")
    }

    /// Dotted OID: at least two arcs of digits.
    static func isOID(_ text: String) -> Bool {
        let arcs = text.split(separator: ".", omittingEmptySubsequences: false)
        return arcs.count >= 2
            && arcs.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }
    }

    /// Standard padded base64 of at most `limit` characters, non-empty.
    static func isBase64(_ text: String, limit: Int) -> Bool {
        !text.isEmpty && text.utf8.count <= limit && Base64.decode(text) != nil
    }

    /// Base64 of UTF-8 text, at most `limit` characters.
    static func isBase64UTF8(_ text: String, limit: Int) -> Bool {
        guard isBase64(text, limit: limit), let bytes = Base64.decode(text) else { return false }
        return String(validating: bytes, as: UTF8.self) != nil
    }
}
