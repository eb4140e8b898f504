import HTTPEngine
import Testing

/// `HTTPRequest.decodeJSON`, the one path every API body takes: the kernel's strict parser first,
/// then the decoder, so a repeated member name, which Foundation alone would accept (keeping one
/// of the two), is a 400.
@Suite("decodeJSON: strict bodies")
struct DecodeJSONTests {
    struct Body: Decodable, Equatable {
        var username: String
        var extra: [String: Int]?
    }

    private func request(_ json: String, contentType: String = "application/json") -> HTTPRequest {
        HTTPRequest(
            method: .POST, path: "/", headers: ["Content-Type": contentType], body: Array(json.utf8))
    }

    @Test("a member name repeated at the top or deeper is request.malformed_json, never the first or last")
    func duplicates() {
        for json in [
            #"{"username":"a","username":"b"}"#,
            #"{"username":"a","extra":{"n":1,"n":2}}"#,
            #"{"username":"a","other":[{"x":{"y":1,"y":1}}]}"#,
        ] {
            #expect(throws: HTTPError.malformedJSON(), "\(json)") { try request(json).decodeJSON(Body.self) }
        }
    }

    @Test("valid bodies decode as before; the media type and an empty body are still checked first")
    func validAndChecks() throws {
        let body = try request(#"{"username":"a\u00e5","extra":{"n":1},"unknown":[{"n":1},{"n":2}]}"#)
            .decodeJSON(Body.self)
        #expect(body == Body(username: "aå", extra: ["n": 1]))
        #expect(throws: HTTPError.unsupportedMediaType()) {
            try request(#"{"username":"a"}"#, contentType: "text/plain").decodeJSON(Body.self)
        }
        #expect(throws: HTTPError.malformedJSON()) { try request("").decodeJSON(Body.self) }
        #expect(throws: HTTPError.malformedJSON()) { try request(#"{"username":1}"#).decodeJSON(Body.self) }
    }
}
