/// One request to BankID, as the transport sends it.
public struct BankIDHTTPRequest: Sendable, Equatable {
    /// The endpoint path below the base URL, e.g. "/auth".
    public var path: String
    /// The method; always POST for the API (GET only for a health probe, which expects 405).
    public var method: String
    /// The JSON body.
    public var body: [UInt8]
    /// The Content-Type sent. BankID requires exactly `application/json`; this exists so tests can
    /// prove a `; charset=…` is refused, and nothing else should change it.
    public var contentType: String

    /// Whether sending the request twice is harmless. A request that starts an order is not:
    /// the transport sends it on a fresh connection, because libcurl silently resends a request
    /// once when a reused connection turns out to be dead, and cannot tell a connection the server
    /// closed while idle from one it closed after reading the request.
    public var isIdempotent: Bool

    /// The Content-Type BankID accepts, exactly.
    public static let jsonContentType = "application/json"

    /// Creates a request; POST with `application/json` unless told otherwise. Start requests
    /// (/auth, /sign, /phone/auth, /phone/sign) are not idempotent; the rest are.
    public init(
        path: String, body: [UInt8], method: String = "POST", contentType: String = jsonContentType,
        isIdempotent: Bool? = nil
    ) {
        self.path = path
        self.method = method
        self.body = body
        self.contentType = contentType
        self.isIdempotent = isIdempotent ?? !["/auth", "/sign", "/phone/auth", "/phone/sign"].contains(path)
    }
}

/// BankID's answer, whatever its status.
public struct BankIDHTTPResponse: Sendable, Equatable {
    /// The HTTP status.
    public var status: Int
    /// The body bytes.
    public var body: [UInt8]

    /// Creates a response.
    public init(status: Int, body: [UInt8]) {
        self.status = status
        self.body = body
    }
}

/// Sends requests to BankID and returns its answers; ``CurlBankIDTransport`` is the real one, and
/// tests give a canned one.
///
/// A transport throws only when there is no HTTP answer (`timedOut`, `connectionFailed`,
/// `tlsFailed`, `transportFailed`, `overloaded`); every status, 4xx and 5xx included, is a
/// response for ``BankIDClient`` to interpret. Implementations must not block the caller's thread.
public protocol BankIDTransport: Sendable {
    /// Sends one request and waits, without blocking a thread, for its answer.
    func send(_ request: BankIDHTTPRequest) async throws(BankIDError) -> BankIDHTTPResponse
}
