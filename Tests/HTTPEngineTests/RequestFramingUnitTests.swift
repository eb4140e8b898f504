import Testing

@testable import HTTPEngine

/// `RequestFraming` without sockets: the parts of RFC 9112 §6 the raw-socket tests cannot reach,
/// because libmicrohttpd refuses those bytes before the check runs.
@Suite("Request framing rules, without sockets")
struct RequestFramingUnitTests {
    @Test("Content-Length is 1*DIGIT: a sign, a space, a list or nothing is refused; past 2^64 saturates")
    func decimal() {
        #expect(RequestFraming.decimal("0") == 0)
        #expect(RequestFraming.decimal("007") == 7)
        #expect(RequestFraming.decimal("18446744073709551615") == .max)
        #expect(RequestFraming.decimal("99999999999999999999999") == .max)
        for bad in ["", "-1", "+2", "2 ", " 2", "2, 2", "0x10", "1e3"] {
            #expect(RequestFraming.decimal(bad) == nil, "\(bad)")
        }
    }

    @Test("field names are tokens: whitespace, a colon or nothing is not")
    func token() {
        #expect(RequestFraming.isToken("X-Request-Id"))
        #expect(RequestFraming.isToken("a!#$%&'*+-.^_`|~9"))
        for bad in ["", "Content-Length ", "A B", "A:B", "A\tB", "Ä"] {
            #expect(!RequestFraming.isToken(bad), "\(bad)")
        }
    }

    @Test("an invalid second Content-Length (MHD reads only the first) is refused with 400")
    func invalidSecondContentLength() {
        let verdict = RequestFraming.check(
            version: "HTTP/1.1",
            headers: HTTPHeaders([("Host", "x"), ("Content-Length", "2"), ("Content-Length", "x")]))
        #expect(verdict == .refused(HTTPError(status: 400, code: "request.bad_framing", title: "")))
    }

    @Test("an empty Transfer-Encoding or one split over fields MHD would not decode is refused with 400")
    func transferEncodingForms() {
        for fields in [[""], [" , "], ["chunked,"], ["", "chunked"]] {
            let headers = HTTPHeaders([("Host", "x")] + fields.map { ("Transfer-Encoding", $0) })
            #expect(
                RequestFraming.check(version: "HTTP/1.1", headers: headers)
                    == .refused(HTTPError(status: 400, code: "request.bad_framing", title: "")), "\(fields)")
        }
        #expect(
            RequestFraming.check(
                version: "HTTP/1.1", headers: HTTPHeaders([("Host", "x"), ("Transfer-Encoding", "cHuNkEd")]))
                == .acceptable(contentLength: nil))
    }

    @Test("HTTP/1.0 needs no Host; a plain request with one Content-Length is acceptable with its length")
    func acceptable() {
        #expect(
            RequestFraming.check(version: "HTTP/1.0", headers: HTTPHeaders())
                == .acceptable(contentLength: nil))
        #expect(
            RequestFraming.check(
                version: "HTTP/1.1", headers: HTTPHeaders([("Host", "x"), ("Content-Length", "12")]))
                == .acceptable(contentLength: 12))
    }
}
