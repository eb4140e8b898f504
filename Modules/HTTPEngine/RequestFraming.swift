import Kernel

/// The checks on a request's message framing (RFC 9112 §6) that libmicrohttpd 0.9.75 does not
/// make, run on the header block before a byte of body is read.
///
/// MHD decides the body's length from `Transfer-Encoding` alone when it is present (ignoring a
/// `Content-Length` beside it), from the first `Content-Length` field otherwise, decodes chunked
/// only when the first `Transfer-Encoding` value is exactly `chunked` (any case), and reads any
/// other coding's body until the connection closes. Where a front proxy frames the same bytes
/// differently, the difference is a smuggled request; so every request whose framing is not
/// exactly one MHD and RFC 9112 agree on is refused here, and its connection closed.
enum RequestFraming {
    /// What a request's framing allows.
    enum Verdict: Equatable {
        /// Framed as MHD will read it: a `Content-Length` (nil without one, or with chunked).
        /// A length past `UInt64.max` saturates: it is too large either way.
        case acceptable(contentLength: UInt64?)
        /// Refused: answer with this problem and close the connection.
        case refused(HTTPError)
    }

    /// Checks the header block of one request.
    /// - Parameters:
    ///   - version: the request line's version, e.g. `HTTP/1.1`.
    ///   - headers: every header field as MHD parsed it, in order, repeated names kept.
    /// - Returns: the length MHD will read, or the problem to answer with.
    static func check(version: String, headers: HTTPHeaders) -> Verdict {
        var transferEncodings: [String] = []
        var contentLengths: [String] = []
        var hosts = 0
        for field in headers {
            guard isToken(field.name) else {
                // Whitespace before the colon (RFC 9112 §5.1: MUST be refused with 400) reaches us
                // as a name with a trailing space, since MHD 0.9.75 keeps it.
                return .refused(malformed("A header field name is not a token (RFC 9110 §5.1)."))
            }
            if HTTPHeaders.equalIgnoringCase(field.name, "Transfer-Encoding") {
                transferEncodings.append(field.value)
            } else if HTTPHeaders.equalIgnoringCase(field.name, "Content-Length") {
                contentLengths.append(field.value)
            } else if HTTPHeaders.equalIgnoringCase(field.name, "Host") {
                hosts += 1
            } else if hasPrefixIgnoringCase(field.name, "transfer-encoding")
                || hasPrefixIgnoringCase(field.name, "content-length")
            {
                // A folded framing field (`Transfer-Encoding:` CRLF SP `chunked`, obs-fold) comes
                // out of MHD 0.9.75 as one name, `Transfer-Encodingchunked`, with an empty value:
                // MHD then frames no body while a proxy that unfolds sees chunked. RFC 9112 §5.2
                // lets a server refuse obs-fold with 400.
                return .refused(malformed("A framing header field is folded or misspelt."))
            }
        }
        if version == "HTTP/1.1" && hosts != 1 {
            // RFC 9112 §3.2: no Host, or more than one, MUST be answered with 400.
            return .refused(
                HTTPError(
                    status: 400, code: "request.bad_host", title: "Bad Host header",
                    detail: "An HTTP/1.1 request carries exactly one Host header field."))
        }
        if !transferEncodings.isEmpty {
            return checkTransferEncoding(
                transferEncodings, version: version, hasContentLength: !contentLengths.isEmpty)
        }
        guard !contentLengths.isEmpty else { return .acceptable(contentLength: nil) }
        // RFC 9112 §6.3 item 5: an invalid Content-Length is unrecoverable: 400 and close. MHD
        // parses only the first field; differing ones (or a list, RFC 9110 §8.6) are refused here.
        // Identical repeated fields frame the same body for everyone and pass.
        var length: UInt64?
        for value in contentLengths {
            guard let parsed = decimal(value) else {
                return .refused(badFraming("Content-Length must be one decimal number."))
            }
            if let length, length != parsed {
                return .refused(badFraming("The request carries different Content-Length values."))
            }
            length = parsed
        }
        return .acceptable(contentLength: length)
    }

    /// RFC 9112 §6.1 and §6.3 on `Transfer-Encoding`, and the one form MHD reads.
    private static func checkTransferEncoding(
        _ fields: [String], version: String, hasContentLength: Bool
    ) -> Verdict {
        if version != "HTTP/1.1" {
            // §6.1: Transfer-Encoding in an HTTP/1.0 message MUST be treated as faulty framing;
            // any other version MHD lets through (HTTP/1.2) is refused too rather than guessed at.
            return .refused(badFraming("Transfer-Encoding is only read in HTTP/1.1 requests."))
        }
        if hasContentLength {
            // §6.1: a server MAY refuse both together, and MUST close the connection either way.
            return .refused(badFraming("Transfer-Encoding and Content-Length cannot both frame a request."))
        }
        // The codings in order, across every field (a list split over fields is one list).
        let codings = fields.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
            .map { String($0.trimmingOWS()).lowercasedASCII() }
            .filter { !$0.isEmpty }
        guard codings.last == "chunked" else {
            // §6.3 item 4: chunked not final (or no coding at all): the length cannot be known,
            // and the server MUST answer 400 and close.
            return .refused(badFraming("The final transfer coding must be chunked."))
        }
        guard codings.count(where: { $0 == "chunked" }) == 1 else {
            // RFC 9112 §7: chunked MUST NOT be applied more than once.
            return .refused(badFraming("The chunked transfer coding is applied more than once."))
        }
        guard codings.count == 1 else {
            // §6.1: a coding the server does not understand SHOULD be answered with 501; this
            // server decodes none but chunked (gzip, deflate, compress are not decoded).
            return .refused(
                HTTPError(
                    status: 501, code: "request.transfer_coding_not_implemented",
                    title: "Transfer coding not implemented",
                    detail: "This server reads only Transfer-Encoding: chunked."))
        }
        guard fields.count == 1, HTTPHeaders.equalIgnoringCase(fields[0], "chunked") else {
            // Valid, but not a form MHD 0.9.75 decodes as chunked (it compares the first field
            // with `chunked` as is, so `chunked ` or `chunked,` would be read to the end of the
            // connection): refused rather than misread.
            return .refused(badFraming("Send the header as exactly Transfer-Encoding: chunked."))
        }
        return .acceptable(contentLength: nil)
    }

    /// 400 `request.bad_framing`.
    private static func badFraming(_ detail: String) -> HTTPError {
        HTTPError(status: 400, code: "request.bad_framing", title: "Bad message framing", detail: detail)
    }

    /// 400 `request.malformed_header`.
    private static func malformed(_ detail: String) -> HTTPError {
        HTTPError(
            status: 400, code: "request.malformed_header", title: "Malformed header field", detail: detail)
    }

    /// `1*DIGIT` (RFC 9110 §8.6) as a number, saturating at `UInt64.max`; nil for anything else
    /// (a sign, a space inside, a list, no digits).
    static func decimal(_ text: String) -> UInt64? {
        let bytes = text.utf8
        guard !bytes.isEmpty else { return nil }
        var value: UInt64 = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times, overflowTimes) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowSum) = times.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            value = overflowTimes || overflowSum ? .max : sum
        }
        return value
    }

    /// Whether `text` is an RFC 9110 §5.6.2 token: one or more tchar.
    static func isToken(_ text: String) -> Bool {
        let bytes = text.utf8
        guard !bytes.isEmpty else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                return true
            default:
                return "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
        }
    }

    /// Whether `text` starts with `prefix` (lowercase), ASCII case-insensitively. Runs for every
    /// field that is not a framing field, so it reads the two UTF-8 views as they are, copying
    /// neither into an array.
    private static func hasPrefixIgnoringCase(_ text: String, _ prefix: String) -> Bool {
        guard text.utf8.count >= prefix.utf8.count else { return false }
        return zip(text.utf8, prefix.utf8).allSatisfy { HTTPHeaders.lowercase($0) == $1 }
    }
}

extension Substring {
    /// Without leading and trailing SP and HTAB (RFC 9110 §5.6.3 OWS).
    fileprivate func trimmingOWS() -> Substring {
        var result = self
        while let first = result.first, first == " " || first == "\t" { result = result.dropFirst() }
        while let last = result.last, last == " " || last == "\t" { result = result.dropLast() }
        return result
    }
}
