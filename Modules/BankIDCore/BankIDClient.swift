import FoundationEssentials
import Glibc

/// The client's retry policy: only maintenance (503) is retried, silently, a bounded number of
/// times with a growing pause; nothing else is ever resent automatically.
public struct BankIDRetryPolicy: Sendable, Equatable {
    /// Retries after the first 503 (0 disables them).
    public var maintenanceRetries: Int
    /// The pause before the first retry, in seconds; each further one doubles it.
    public var initialBackoff: Double
    /// The longest pause, in seconds.
    public var maximumBackoff: Double

    /// Creates a policy; by default 2 retries after 0.5 s and 1 s.
    public init(maintenanceRetries: Int = 2, initialBackoff: Double = 0.5, maximumBackoff: Double = 4) {
        self.maintenanceRetries = maintenanceRetries
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
    }

    /// The pause before retry `attempt` (0 for the first retry).
    public func backoff(beforeRetry attempt: Int) -> Double {
        min(maximumBackoff, initialBackoff * pow(2, Double(attempt)))
    }
}

/// The BankID RP API v6 client: typed calls, requests checked before sending, answers turned into
/// typed results or ``BankIDError`` codes, and the reference's retry policy.
///
/// Every call is `async` and runs its I/O on the transport's own threads, so a slow BankID
/// suspends tasks but never occupies the caller's thread.
public final class BankIDClient: Sendable {
    private let transport: any BankIDTransport
    /// The retry policy in force.
    public let retryPolicy: BankIDRetryPolicy
    private let sleep: @Sendable (Double) async -> Void

    /// Creates a client.
    /// - Parameters:
    ///   - transport: how requests reach BankID.
    ///   - retryPolicy: the maintenance retries.
    ///   - sleep: waits the given seconds between retries; tests pass one that records and returns.
    public init(
        transport: any BankIDTransport, retryPolicy: BankIDRetryPolicy = BankIDRetryPolicy(),
        sleep: @escaping @Sendable (Double) async -> Void = { seconds in
            try? await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1e9))
        }
    ) {
        self.transport = transport
        self.retryPolicy = retryPolicy
        self.sleep = sleep
    }

    /// Starts an identification (/auth).
    /// - Throws: `BankIDError`: a validation code naming the field, or an upstream or transport code.
    public func auth(_ request: BankIDStartRequest) async throws(BankIDError) -> BankIDStartResponse {
        try request.validate(forSign: false)
        return try await call("/auth", request.body(), as: BankIDStartResponse.self)
    }

    /// Starts a signature (/sign); `userVisibleData` is required.
    public func sign(_ request: BankIDStartRequest) async throws(BankIDError) -> BankIDStartResponse {
        try request.validate(forSign: true)
        return try await call("/sign", request.body(), as: BankIDStartResponse.self)
    }

    /// Starts an identification over the phone (/phone/auth).
    public func phoneAuth(_ request: BankIDPhoneRequest) async throws(BankIDError) -> BankIDPhoneStartResponse
    {
        try request.validate(forSign: false)
        return try await call("/phone/auth", request.body(), as: BankIDPhoneStartResponse.self)
    }

    /// Starts a signature over the phone (/phone/sign); `userVisibleData` is required.
    public func phoneSign(_ request: BankIDPhoneRequest) async throws(BankIDError) -> BankIDPhoneStartResponse
    {
        try request.validate(forSign: true)
        return try await call("/phone/sign", request.body(), as: BankIDPhoneStartResponse.self)
    }

    /// Asks where an order stands (/collect). Callers should go through
    /// ``BankIDCollectCoordinator``, which never collects an order twice at once or after its end.
    public func collect(orderRef: String) async throws(BankIDError) -> BankIDCollectResponse {
        try BankIDValidation.checkOrderRef(orderRef)
        let response = try await call(
            "/collect", BankIDValidation.serialize(["orderRef": orderRef]), as: BankIDCollectResponse.self)
        guard response.orderRef == orderRef else {
            throw BankIDError(.malformedResponse, "/collect answered for another order")
        }
        if response.status == .complete, response.completionData == nil {
            throw BankIDError(.malformedResponse, "/collect: complete without completionData")
        }
        return response
    }

    /// Cancels a pending order (/cancel).
    public func cancel(orderRef: String) async throws(BankIDError) {
        try BankIDValidation.checkOrderRef(orderRef)
        _ = try await send("/cancel", BankIDValidation.serialize(["orderRef": orderRef]))
    }

    // MARK: Exchange

    private func call<T: Decodable>(_ path: String, _ body: [UInt8], as type: T.Type)
        async throws(BankIDError)
        -> T
    {
        let response = try await send(path, body)
        do {
            return try JSONDecoder().decode(T.self, from: Data(response.body))
        } catch {
            // The decoding error may quote values (a personal number); only the path is reported.
            throw BankIDError(.malformedResponse, "\(path): the answer is not the expected JSON")
        }
    }

    /// Sends, retrying maintenance only, and returns a 200 answer or throws the mapped error.
    private func send(_ path: String, _ body: [UInt8]) async throws(BankIDError) -> BankIDHTTPResponse {
        var attempt = 0
        while true {
            let response = try await transport.send(BankIDHTTPRequest(path: path, body: body))
            if response.status == 200 { return response }
            let error = Self.error(path: path, response: response)
            guard error.isRetryable, attempt < retryPolicy.maintenanceRetries else { throw error }
            await sleep(retryPolicy.backoff(beforeRetry: attempt))
            attempt += 1
        }
    }

    /// Maps an error answer to its code: BankID's `errorCode` when known, otherwise the status.
    /// Public for callers that send raw requests through a transport (health probes, tests).
    /// - Parameters:
    ///   - path: the endpoint, named in the message.
    ///   - response: a non-200 answer.
    /// - Returns: the error, with the HTTP status and BankID's raw `errorCode`.
    public static func error(path: String, response: BankIDHTTPResponse) -> BankIDError {
        let body = try? JSONDecoder().decode(BankIDErrorBody.self, from: Data(response.body))
        let upstream = body?.errorCode
        let byName: [String: BankIDError.Code] = [
            "alreadyInProgress": .alreadyInProgress, "invalidParameters": .invalidParameters,
            "unauthorized": .unauthorized, "notFound": .notFound, "methodNotAllowed": .methodNotAllowed,
            "requestTimeout": .requestTimeout, "unsupportedMediaType": .unsupportedMediaType,
            "internalError": .internalError, "maintenance": .maintenance,
        ]
        let byStatus: [Int: BankIDError.Code] = [
            401: .unauthorized, 403: .unauthorized, 404: .notFound, 405: .methodNotAllowed,
            408: .requestTimeout, 415: .unsupportedMediaType, 429: .tooManyRequests, 500: .internalError,
            503: .maintenance,
        ]
        // A 400 with an unknown errorCode is its own case (RFA22), not invalidParameters.
        let code =
            upstream.flatMap { byName[$0] } ?? (response.status == 400 ? nil : byStatus[response.status])
            ?? .upstreamUnknown
        var message = "\(path): HTTP \(response.status)"
        if let upstream { message += " \(sanitized(upstream, limit: 64))" }
        if let details = body?.details, !details.isEmpty { message += ": \(sanitized(details, limit: 160))" }
        return BankIDError(code, message, httpStatus: response.status, upstreamCode: upstream)
    }

    /// Text from BankID made safe for a message: printable ASCII, shortened, and runs of six or more
    /// digits masked, in case a detail ever echoes a personal number.
    static func sanitized(_ text: String, limit: Int) -> String {
        var out = ""
        var digits = ""
        func flush() {
            out += digits.count >= 6 ? String(repeating: "#", count: digits.count) : digits
            digits = ""
        }
        for scalar in text.unicodeScalars.prefix(limit) {
            if (0x30...0x39).contains(scalar.value) {
                digits.unicodeScalars.append(scalar)
                continue
            }
            flush()
            out.unicodeScalars.append((0x20...0x7E).contains(scalar.value) ? scalar : "?")
        }
        flush()
        return out
    }
}
