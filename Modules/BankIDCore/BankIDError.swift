import CryptoCore
public import Kernel

/// An error from BankIDCore: a stable code callers switch on, a message free of secrets and
/// personal numbers, and where it arose.
///
/// Codes fall in three groups: a request refused before it was sent (`bankid.invalid_*`), an
/// answer from BankID (`bankid.upstream_*`, one per v6 `errorCode` plus `upstreamUnknown`), and a
/// failure to get an answer at all (`bankid.transport_*`, `bankid.timed_out`). ``isRetryable``
/// and ``recommendedMessage`` carry the reference's policy so callers need no table of their own.
public struct BankIDError: CodedError, Sendable {
    /// The stable codes BankIDCore reports.
    public enum Code: String, Sendable, CaseIterable {
        // Validation, before anything is sent.
        /// `endUserIp` is not an IPv4 or IPv6 address.
        case invalidEndUserIP = "bankid.invalid_end_user_ip"
        /// A personal number is not 12 digits with a valid check digit.
        case invalidPersonalNumber = "bankid.invalid_personal_number"
        /// `callInitiator` is not exactly "user" or "RP".
        case invalidCallInitiator = "bankid.invalid_call_initiator"
        /// Both `app` and `web` were given; BankID takes one of them.
        case conflictingDeviceInfo = "bankid.conflicting_device_info"
        /// `userVisibleData` is missing where required, empty, or over its limit.
        case invalidUserVisibleData = "bankid.invalid_user_visible_data"
        /// `userNonVisibleData` is empty or over its limit.
        case invalidUserNonVisibleData = "bankid.invalid_user_non_visible_data"
        /// A format was given without the text it formats.
        case invalidUserVisibleDataFormat = "bankid.invalid_user_visible_data_format"
        /// A requirement field is malformed (for example a certificate policy that is not an OID).
        case invalidRequirement = "bankid.invalid_requirement"
        /// `returnUrl` is not an https URL with a nonce, or is too long.
        case invalidReturnURL = "bankid.invalid_return_url"
        /// An `app` or `web` field is empty or too long.
        case invalidDeviceInfo = "bankid.invalid_device_info"
        /// An orderRef is empty or not a plausible identifier.
        case invalidOrderRef = "bankid.invalid_order_ref"

        // Answers from BankID (HTTP status + errorCode).
        /// 400 alreadyInProgress: an order is already running for this person (RFA4).
        case alreadyInProgress = "bankid.upstream_already_in_progress"
        /// 400 invalidParameters: a bad request, a collect after the final state, a second cancel.
        case invalidParameters = "bankid.upstream_invalid_parameters"
        /// 401 or 403 unauthorized: the RP certificate was refused or lacks the right.
        case unauthorized = "bankid.upstream_unauthorized"
        /// 404 notFound: a wrong path (a wrong base URL).
        case notFound = "bankid.upstream_not_found"
        /// 405 methodNotAllowed.
        case methodNotAllowed = "bankid.upstream_method_not_allowed"
        /// 408 requestTimeout: BankID gave up reading the request; not resent automatically.
        case requestTimeout = "bankid.upstream_request_timeout"
        /// 415 unsupportedMediaType: the Content-Type was not exactly application/json.
        case unsupportedMediaType = "bankid.upstream_unsupported_media_type"
        /// 429: too many requests.
        case tooManyRequests = "bankid.upstream_too_many_requests"
        /// 500 internalError.
        case internalError = "bankid.upstream_internal_error"
        /// 503 maintenance, after the silent retries ran out.
        case maintenance = "bankid.upstream_maintenance"
        /// An error status or errorCode this version does not know; `upstreamCode` keeps the raw one.
        case upstreamUnknown = "bankid.upstream_unknown"
        /// A 200 answer whose body is not the JSON the endpoint promises.
        case malformedResponse = "bankid.malformed_response"

        // No answer.
        /// The call ran past its total timeout after the request may have been sent: BankID may
        /// have acted on it, so it is not resent; collect (or start anew) instead.
        case timedOut = "bankid.timed_out"
        /// No connection could be made (refused, DNS, connect timeout): nothing reached BankID.
        case connectionFailed = "bankid.transport_connection_failed"
        /// The TLS handshake failed: BankID's certificate did not verify against the configured
        /// CA, or ours was refused.
        case tlsFailed = "bankid.transport_tls_failed"
        /// Another transport failure (reset connection, bad local certificate file, …).
        case transportFailed = "bankid.transport_failed"
        /// The client's bounded queue is full: BankID is slow and more calls are waiting than allowed.
        case overloaded = "bankid.overloaded"

        // The coordinator.
        /// No order with that orderRef is known (never started, or purged after its retention).
        case orderNotFound = "bankid.order_not_found"
        /// The order's final result is past its retention window.
        case orderExpired = "bankid.order_expired"
        /// A stored order or a configuration value is unusable (for example no identity key).
        case configuration = "bankid.configuration"
        /// The order store failed.
        case storage = "bankid.storage"
        /// Reading the RP certificate failed.
        case certificate = "bankid.certificate"
    }

    /// What went wrong, as a stable code callers switch on.
    public let code: Code
    /// A readable explanation; never contains a secret or a personal number.
    public let message: String
    /// The HTTP status of an upstream answer, when there was one.
    public let httpStatus: Int?
    /// BankID's raw `errorCode`, when it sent one (kept for unknown codes and for logs).
    public let upstreamCode: String?
    /// The source file that raised the error.
    public let file: String
    /// The source line that raised the error.
    public let line: Int

    /// Creates an error; the location defaults to the caller's.
    public init(
        _ code: Code, _ message: String, httpStatus: Int? = nil, upstreamCode: String? = nil,
        file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
        self.upstreamCode = upstreamCode
        self.file = file
        self.line = line
    }

    /// Whether the client may resend the same request by itself: only for maintenance (503),
    /// which BankID documents as safe to retry silently. Everything else is surfaced.
    public var isRetryable: Bool { code == .maintenance }

    /// The message the user should see for this error (the reference's error → RFA mapping).
    public var recommendedMessage: RecommendedMessage {
        switch code {
        case .alreadyInProgress: .rfa4
        case .requestTimeout, .maintenance, .internalError, .tooManyRequests, .timedOut,
            .connectionFailed, .overloaded:
            .rfa5
        default: .rfa22
        }
    }
}
