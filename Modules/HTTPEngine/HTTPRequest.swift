import FoundationEssentials
public import Kernel

/// A request as a handler sees it: parsed, size-checked, routed, with the client resolved.
public struct HTTPRequest: Sendable {
    /// The request method.
    public let method: HTTPMethod
    /// The raw path as sent, without the query (still percent-encoded).
    public let path: String
    /// The query's parameters, percent-decoded; the first value wins when a name repeats.
    public let query: [String: String]
    /// The request header fields.
    public let headers: HTTPHeaders
    /// The request body (at most `maxBodyBytes`).
    public let body: [UInt8]
    /// The socket peer's address, normalised (IPv4-mapped IPv6 shown as IPv4).
    public let peerAddress: String
    /// The client's address: the peer, or the first untrusted hop when the peer is a trusted proxy.
    public let clientIP: String
    /// The request id echoed in `X-Request-Id`, for correlating logs.
    public let requestID: String
    /// Values of the route's `{name}` segments, percent-decoded.
    public let pathParameters: [String: String]
    /// The matched route's pattern, e.g. `/v1/me/sessions/{id}`; safe to log.
    public let route: String

    /// Creates a request; the server builds these, tests and adapters may too.
    public init(
        method: HTTPMethod, path: String, query: [String: String] = [:], headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [], peerAddress: String = "127.0.0.1", clientIP: String? = nil,
        requestID: String = "test", pathParameters: [String: String] = [:], route: String? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.peerAddress = peerAddress
        self.clientIP = clientIP ?? peerAddress
        self.requestID = requestID
        self.pathParameters = pathParameters
        self.route = route ?? path
    }

    /// The value of the cookie `name` from the `Cookie` header(s), or nil.
    public func cookie(_ name: String) -> String? {
        for header in headers.values(for: "Cookie") {
            for pair in header.split(separator: ";") {
                let trimmed = pair.drop { $0 == " " }
                guard let equals = trimmed.firstIndex(of: "=") else { continue }
                guard trimmed[..<equals] == name else { continue }
                var value = trimmed[trimmed.index(after: equals)...]
                // RFC 6265 allows a cookie value in double quotes; the quotes are not part of it.
                if value.count >= 2, value.first == "\"", value.last == "\"" {
                    value = value.dropFirst().dropLast()
                }
                return String(value)
            }
        }
        return nil
    }

    /// Decodes the body as JSON: the one path every API body takes.
    ///
    /// The body is first read by the kernel's strict parser (`StrictJSON`), the one WebAuthn's
    /// client data goes through, so that a body Foundation would accept leniently is refused: a
    /// member name repeated at any depth (`{"username":"a","username":"b"}`, where Foundation
    /// keeps one of the two), lone surrogates, leading zeros. Only then does the decoder map it
    /// to `type`, which can no longer see anything the strict parser did not.
    /// - Parameter type: the expected shape.
    /// - Returns: the decoded value.
    /// - Throws: `HTTPError.unsupportedMediaType()` (415) when the body is not declared
    ///   `application/json` (or `application/*+json`); `HTTPError.malformedJSON()` (400) when the
    ///   body is missing, not strict JSON, or not that shape; the detail names the member and
    ///   what is wrong with it, never its value (the decoder's own message can quote request data).
    public func decodeJSON<T: Decodable>(_ type: T.Type) throws(HTTPError) -> T {
        _ = try strictJSONBody()
        return try decoded(type)
    }

    /// `decodeJSON(_:)` for a type that reads itself from the strict parse: the same bodies are
    /// accepted and refused, with the same details, but one of the right shape costs no
    /// Foundation decoder.
    public func decodeJSON<T: StrictJSONReadable>(_ type: T.Type) throws(HTTPError) -> T {
        if let read = T(strict: try strictJSONBody()) { return read }
        // Not the type's shape: the decoder says what is wrong, as for every other body.
        return try decoded(type)
    }

    /// The body as the strict parser reads it, once its media type is JSON.
    private func strictJSONBody() throws(HTTPError) -> StrictJSON.Value {
        try requireJSONBody()
        do {
            return try StrictJSON.parse(body)
        } catch {
            // The reason and offset quote no request data (a duplicate's name is not repeated).
            throw HTTPError.malformedJSON(
                detail: "The request body is not strict JSON: \(error.reason) at byte \(error.offset).")
        }
    }

    /// The body, already found strict, mapped to `type` by Foundation's decoder.
    private func decoded<T: Decodable>(_ type: T.Type) throws(HTTPError) -> T {
        do {
            return try JSONCoding.decoder.decode(T.self, from: Data(body))
        } catch let error as DecodingError {
            throw HTTPError.malformedJSON(detail: Self.explain(error))
        } catch {
            throw HTTPError.malformedJSON()
        }
    }

    /// What is wrong, by member path (`"intent"`, `"items[2].name"`): the names come from the
    /// type's coding keys, and a name that is not a plain identifier is left out, so nothing
    /// the client sent is echoed.
    static func explain(_ error: DecodingError) -> String {
        func isIdentifierByte(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"):
                true
            default: false
            }
        }
        func path(_ keys: [any CodingKey]) -> String {
            var text = ""
            for key in keys {
                if let index = key.intValue {
                    text += "[\(index)]"
                } else if !key.stringValue.isEmpty, key.stringValue.utf8.allSatisfy(isIdentifierByte) {
                    text += (text.isEmpty ? "" : ".") + key.stringValue
                } else {
                    return "A member"
                }
            }
            return text.isEmpty ? "The body" : "\"\(text)\""
        }
        switch error {
        case .keyNotFound(let key, let context): return "\(path(context.codingPath + [key])) is required."
        case .valueNotFound(_, let context): return "\(path(context.codingPath)) must not be null."
        case .typeMismatch(_, let context): return "\(path(context.codingPath)) has the wrong type."
        case .dataCorrupted(let context): return "\(path(context.codingPath)) is not an allowed value."
        @unknown default: return "The request body is not valid JSON for this endpoint."
        }
    }

    /// Checks that a body is present and declared JSON: the first step of every API body, shared by
    /// `decodeJSON` and the handlers that hand the bytes to another use of the same strict parser
    /// (the passkey finalize envelope, whose credential PasskeyCore reads).
    /// - Throws: `HTTPError.malformedJSON()` (400) for a missing body;
    ///   `HTTPError.unsupportedMediaType()` (415) when the body is not declared JSON.
    public func requireJSONBody() throws(HTTPError) {
        guard !body.isEmpty else { throw HTTPError.malformedJSON(detail: "A JSON body is required.") }
        guard Self.isJSONMediaType(headers["Content-Type"]) else { throw HTTPError.unsupportedMediaType() }
    }

    /// Whether a Content-Type names JSON: `application/json` or a `+json` suffix, any parameters.
    public static func isJSONMediaType(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        // Every JSON body passes here (twice per passkey login), and splitting by Character cost
        // about 10,000 instructions a call: an ASCII value, where Characters are bytes, is read
        // as bytes, with the same answer. Anything else takes the Character path below.
        if let answer = contentType.utf8.withContiguousStorageIfAvailable(asciiIsJSONMediaType) {
            if let answer { return answer }
        }
        let media = (contentType.split(separator: ";", maxSplits: 1).first ?? "").trimmingOWS()
        let lowered = media.lowercased()
        return lowered == "application/json"
            || (lowered.hasPrefix("application/") && lowered.hasSuffix("+json"))
    }

    /// `isJSONMediaType` on the bytes of an all-ASCII value; nil for any other value.
    private static func asciiIsJSONMediaType(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool? {
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        let isOWS: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        // The media type: up to the first `;`, without the optional whitespace around it.
        var media = bytes[..<(bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex)]
        while let first = media.first, isOWS(first) { media = media.dropFirst() }
        while let last = media.last, isOWS(last) { media = media.dropLast() }
        func lowered(_ byte: UInt8) -> UInt8 {
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
        }
        func hasPrefix(_ text: StaticString) -> Bool {
            let pattern = UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
            return media.count >= pattern.count && zip(media, pattern).allSatisfy { lowered($0) == $1 }
        }
        func hasSuffix(_ text: StaticString) -> Bool {
            let pattern = UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
            return media.count >= pattern.count
                && zip(media.suffix(pattern.count), pattern).allSatisfy { lowered($0) == $1 }
        }
        return (media.count == 16 && hasPrefix("application/json"))
            || (hasPrefix("application/") && hasSuffix("+json"))
    }
}

/// A request body that reads itself from the strict parser's value, so that `decodeJSON` skips
/// Foundation's decoder for it: for bodies on routes an app server may call on every request.
/// `init(strict:)` returns nil for every value its `Decodable` form would not decode to the same
/// thing (a test holds the two forms to each other); the decoder then reads that body, to refuse
/// it with the detail every body gets.
public protocol StrictJSONReadable: Decodable {
    /// The value read from `value`, or nil when it is not exactly this type's shape.
    init?(strict value: StrictJSON.Value)
}

extension StringProtocol {
    /// Without the optional whitespace HTTP allows around values (spaces and tabs, RFC 9110
    /// §5.6.3). Byte-level, unlike Foundation's trimming, which is slow enough to show on the
    /// request path.
    public func trimmingOWS() -> String {
        // On the string's own contiguous bytes where it has them (native strings do), without
        // copying them into an array first.
        utf8.withContiguousStorageIfAvailable(Self.trimmingOWS)
            ?? Array(utf8).withUnsafeBufferPointer(Self.trimmingOWS)
    }

    private static func trimmingOWS(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        let isOWS: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isOWS($0) }),
            let last = bytes.lastIndex(where: { !isOWS($0) })
        else { return "" }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[first...last]), as: UTF8.self)
    }
}
