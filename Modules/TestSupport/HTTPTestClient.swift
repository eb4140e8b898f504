import CCurl
public import Foundation
public import HTTPEngine
import PortvaktAPI

/// A failed exchange: curl could not connect, send or receive.
public struct HTTPTestClientError: Error, CustomStringConvertible {
    /// curl's error code (CURLcode).
    public let curlCode: Int
    /// curl's explanation.
    public let message: String

    /// Whether the server refused the connection (nothing listening).
    public var isConnectionRefused: Bool { curlCode == Int(CURLE_COULDNT_CONNECT.rawValue) }
    /// Whether the exchange ran past the client's timeout.
    public var isTimeout: Bool { curlCode == Int(CURLE_OPERATION_TIMEDOUT.rawValue) }

    /// Creates an error from curl's code and message.
    public init(curlCode: Int, message: String) {
        self.curlCode = curlCode
        self.message = message
    }

    /// The code and message.
    public var description: String { "curl error \(curlCode): \(message)" }
}

/// A response as the test client received it.
public struct TestResponse: Sendable {
    /// The status code.
    public let status: Int
    /// The response headers (case-insensitive lookup).
    public let headers: HTTPHeaders
    /// The body bytes.
    public let body: [UInt8]
    /// Connections curl opened for this exchange: 0 when a kept-alive one was reused.
    public let newConnections: Int

    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// Decodes the body as JSON into `type`.
    public func json<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(body))
    }

    /// The body as a JSON object (for asserting on members without declaring a type).
    public func jsonObject() throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw HTTPTestClientError(curlCode: -1, message: "body is not a JSON object")
        }
        return object
    }
}

/// A synchronous HTTP/1.1 client over libcurl for tests against a real server (a test that
/// needs no socket uses `InProcessHTTPClient`, which has the same interface).
///
/// One client holds one curl handle and so one kept-alive connection per host; use one client
/// per thread (curl handles are not shared between threads). Redirects are never followed.
public final class HTTPTestClient: HTTPTestTransport {
    /// The curl easy handle; owned here and cleaned up in deinit.
    private let handle: UnsafeMutableRawPointer
    /// How long one exchange may take, in seconds.
    public var timeout: TimeInterval
    /// TLS settings for https URLs: the CA to trust and a client certificate to present.
    public var tls: TLS?

    /// What an https exchange trusts and presents (mutual TLS, as BankID's RP API wants).
    public struct TLS: Sendable {
        /// The CA certificate (PEM file) the server's certificate must chain to.
        public var caPath: String
        /// The client certificate file, if one is presented.
        public var certificatePath: String?
        /// "P12" or "PEM".
        public var certificateType: String
        /// The private key (PEM file) when the certificate is PEM.
        public var keyPath: String?
        /// The PKCS#12 or key passphrase.
        public var passphrase: String?

        /// Creates TLS settings; only the CA is required.
        public init(
            caPath: String, certificatePath: String? = nil, certificateType: String = "P12",
            keyPath: String? = nil,
            passphrase: String? = nil
        ) {
            self.caPath = caPath
            self.certificatePath = certificatePath
            self.certificateType = certificateType
            self.keyPath = keyPath
            self.passphrase = passphrase
        }
    }

    private static let globalInit: Void = {
        // curl_global_init is not thread-safe in every build; run it once for the process.
        _ = curl_global_init(Int(CURL_GLOBAL_ALL))
    }()

    /// Creates a client.
    /// - Parameter timeout: the limit for each exchange, in seconds.
    public init(timeout: TimeInterval = 10, tls: TLS? = nil) {
        _ = Self.globalInit
        handle = curl_easy_init()
        self.timeout = timeout
        self.tls = tls
    }

    deinit {
        curl_easy_cleanup(handle)
    }

    /// Sends one request and waits for the whole response.
    /// - Parameters:
    ///   - method: the method token, e.g. `GET` (any token, so tests can send unknown ones).
    ///   - url: the absolute URL.
    ///   - headers: request header fields; `Expect:` is sent empty unless given, so bodies go at once.
    ///   - body: the request body, if any.
    /// - Returns: the response.
    /// - Throws: `HTTPTestClientError` when curl fails (connection refused, timeout, reset).
    public func send(
        method: String = "GET", url: String, headers: [(String, String)] = [], body: [UInt8]? = nil
    ) throws(HTTPTestClientError) -> TestResponse {
        // Reset clears the last request's options but keeps the live connection for keep-alive.
        curl_easy_reset(handle)
        let sink = ResponseSink()
        var list: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(list) }
        var fields = headers
        if !fields.contains(where: { $0.0.lowercased() == "expect" }) { fields.append(("Expect", "")) }
        for (name, value) in fields {
            // "Name;" is curl's spelling for a header with an empty value; "Name:" would remove it.
            list = curl_slist_append(list, value.isEmpty ? "\(name):" : "\(name): \(value)")
        }
        let context = Unmanaged.passUnretained(sink).toOpaque()
        _ = ccurl_setopt_string(handle, CURLOPT_URL, url)
        _ = ccurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = ccurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)
        _ = ccurl_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1))
        _ = ccurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, Int(timeout * 1000))
        _ = ccurl_setopt_slist(handle, CURLOPT_HTTPHEADER, list)
        if let tls {
            // curl copies string options, so the Swift strings may go after each call.
            _ = ccurl_setopt_string(handle, CURLOPT_CAINFO, tls.caPath)
            if let certificate = tls.certificatePath {
                _ = ccurl_setopt_string(handle, CURLOPT_SSLCERT, certificate)
                _ = ccurl_setopt_string(handle, CURLOPT_SSLCERTTYPE, tls.certificateType)
            }
            if let key = tls.keyPath { _ = ccurl_setopt_string(handle, CURLOPT_SSLKEY, key) }
            if let passphrase = tls.passphrase {
                _ = ccurl_setopt_string(handle, CURLOPT_KEYPASSWD, passphrase)
            }
        }
        _ = ccurl_setopt_write_function(handle, CURLOPT_WRITEFUNCTION) { data, size, count, context in
            let sink = Unmanaged<ResponseSink>.fromOpaque(context!).takeUnretainedValue()
            data!.withMemoryRebound(to: UInt8.self, capacity: size * count) { bytes in
                sink.body.append(contentsOf: UnsafeBufferPointer(start: bytes, count: size * count))
            }
            return size * count
        }
        _ = ccurl_setopt_pointer(handle, CURLOPT_WRITEDATA, context)
        _ = ccurl_setopt_write_function(handle, CURLOPT_HEADERFUNCTION) { data, size, count, context in
            let sink = Unmanaged<ResponseSink>.fromOpaque(context!).takeUnretainedValue()
            let line = data!.withMemoryRebound(to: UInt8.self, capacity: size * count) { bytes in
                String(decoding: UnsafeBufferPointer(start: bytes, count: size * count), as: UTF8.self)
            }
            sink.headerLine(line)
            return size * count
        }
        _ = ccurl_setopt_pointer(handle, CURLOPT_HEADERDATA, context)

        // One spare byte so the buffer always has an address: curl treats a NULL POSTFIELDS as
        // "read the body from stdin".
        let payload = (body ?? []) + [0]
        let code: CURLcode = payload.withUnsafeBytes { raw in
            switch method {
            case "GET" where body == nil:
                _ = ccurl_setopt_long(handle, CURLOPT_HTTPGET, 1)
            case "HEAD":
                _ = ccurl_setopt_long(handle, CURLOPT_NOBODY, 1)
            default:
                _ = ccurl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, method)
                if body != nil || method == "POST" || method == "PUT" || method == "PATCH" {
                    // curl reads the body from this buffer during perform; it outlives the call.
                    _ = ccurl_setopt_long(handle, CURLOPT_POSTFIELDSIZE, raw.count - 1)
                    _ = ccurl_setopt_pointer(
                        handle, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress))
                }
            }
            return curl_easy_perform(handle)
        }
        guard code == CURLE_OK else {
            throw HTTPTestClientError(
                curlCode: Int(code.rawValue), message: String(cString: curl_easy_strerror(code)))
        }
        var status = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        var connects = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects)
        return TestResponse(status: status, headers: sink.headers, body: sink.body, newConnections: connects)
    }
}

/// Collects one response's header lines and body from curl's callbacks.
private final class ResponseSink {
    var headers = HTTPHeaders()
    var body: [UInt8] = []

    func headerLine(_ line: String) {
        // Each status line (an interim 100 Continue, then the final one) starts a new header block.
        if line.hasPrefix("HTTP/") {
            headers = HTTPHeaders()
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = String(line[..<colon])
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
        headers.add(name, value)
    }
}

extension TestResponse {
    /// The `code` of a problem+json body; nil when the body is not a problem.
    public func problemCode() throws -> String? {
        guard headers["content-type"] == "application/problem+json" else { return nil }
        return try jsonObject()["code"] as? String
    }
}
