public import CryptoCore
public import FoundationEssentials

/// The one encoder and decoder the front uses: configured once, shared by every request thread.
///
/// Foundation's coders are safe to share once configured (their options are only read while
/// coding), and building one per request would cost an allocation and option setup each time.
public enum JSONCoding {
    /// Compact output, ISO 8601 dates, and `/` left unescaped so URLs stay readable.
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    /// Sorted keys, for documents whose bytes should not change between runs (OpenAPI).
    public static let stableEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        return encoder
    }()

    /// ISO 8601 dates, matching the encoder.
    public static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()
}

/// A response body written straight to bytes, for the few bodies on the sign-in path and on
/// routes an app server calls per request (introspection), where Foundation's encoder showed in
/// profiles. Such a type stays `Encodable` too (other responses
/// embed it); a test keeps the two forms equal: members in declaration order, nil ones omitted.
public protocol JSONWritable: Encodable {
    /// Writes the value as one JSON value.
    func write(to writer: inout JSONWriter)
}
