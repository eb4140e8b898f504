import CCurl
public import FoundationEssentials
import Glibc
import Kernel

/// One POST to a receiver.
public struct WebhookRequest: Sendable, Equatable {
    /// Where to, already checked against the https-outside-loopback rule.
    public var url: WebhookURL
    /// Header lines `name: value`.
    public var headers: [(name: String, value: String)]
    /// The body.
    public var body: [UInt8]

    /// Creates a request.
    public init(url: WebhookURL, headers: [(name: String, value: String)], body: [UInt8]) {
        self.url = url
        self.headers = headers
        self.body = body
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.url == rhs.url && lhs.body == rhs.body && lhs.headers.map(\.name) == rhs.headers.map(\.name)
            && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }
}

/// How one POST ended: a status, or the class of failure that kept one from coming.
public struct WebhookResponse: Sendable, Equatable {
    /// What happened, in the words the metrics and `last_error` use.
    public enum Result: String, Sendable, CaseIterable {
        case success = "2xx"
        case redirect = "3xx"
        case clientError = "4xx"
        case serverError = "5xx"
        case timeout
        case connection
        case tls
        case error
    }

    /// The HTTP status, nil when none came.
    public var status: Int?
    /// The receiver's `Retry-After` in seconds, if it sent one.
    public var retryAfter: TimeInterval?
    /// The failure class when no status came.
    public var failure: Result?
    /// How long the attempt took, in seconds.
    public var duration: Double

    /// Creates a response.
    public init(status: Int?, retryAfter: TimeInterval? = nil, failure: Result? = nil, duration: Double) {
        self.status = status
        self.retryAfter = retryAfter
        self.failure = failure
        self.duration = duration
    }

    /// The attempt's result class.
    public var result: Result {
        if let failure { return failure }
        switch status ?? 0 {
        case 200..<300: return .success
        case 300..<400: return .redirect
        case 400..<500: return .clientError
        case 500..<600: return .serverError
        default: return .error
        }
    }

    /// What `last_error` records: nil on success, else a class, never a body.
    public var errorClass: String? {
        switch result {
        case .success: nil
        case .redirect: "status_3xx"
        case .clientError: "status_4xx"
        case .serverError: "status_5xx"
        case .timeout: "timed_out"
        case .connection: "connection_failed"
        case .tls: "tls_failed"
        case .error: "failed"
        }
    }
}

/// Sends one POST and waits for its end; a sender thread's own connection.
public protocol WebhookPoster {
    /// POSTs `request`; never throws: a failure is a response without a status.
    func post(_ request: WebhookRequest) -> WebhookResponse
}

/// Runs webhook jobs on threads of its own, never the caller's: the dispatcher's seam.
public protocol WebhookSender: Sendable {
    /// Queues `job`, which runs on a sender thread with that thread's poster. The job builds its
    /// request there, so the signature's timestamp is the attempt's own.
    /// - Returns: false when the sender is stopped and `job` will never run.
    func submit(_ job: @escaping @Sendable (any WebhookPoster) -> Void) -> Bool
}

/// Webhook POSTs over libcurl: a fixed set of threads, each owning one easy handle (and so one
/// kept-alive connection per receiver), never the request threads.
///
/// Every transfer has `NOSIGNAL`, no redirects, the URL's scheme as the only protocol (https,
/// or http to this machine, which `WebhookURL` alone admits), no proxy from the environment,
/// the system's CA store, a connect timeout of min(5 s, timeout) and a total timeout. The answer's
/// body is read and dropped as it arrives: only the status (and `Retry-After`) matters.
public final class CurlWebhookSender: WebhookSender, Sendable {
    private let threads: WorkerThreads<WebhookEasyHandle>

    private static let globalInit: Void = {
        // curl_global_init is not thread-safe; run it once per process before any handle exists.
        _ = curl_global_init(Int(CURL_GLOBAL_ALL))
    }()

    /// Starts `threads` sender threads.
    /// - Parameters:
    ///   - timeout: The longest an attempt may take, connect included, in seconds.
    public init(threads: Int, timeout: Double) throws(WebhookError) {
        guard threads >= 1, timeout > 0 else {
            throw WebhookError(
                .configuration, "a webhook sender needs at least one thread and a positive timeout")
        }
        _ = Self.globalInit
        self.threads = WorkerThreads(
            name: "webhook", threads: threads, makeWorker: { WebhookEasyHandle(timeout: timeout) })
    }

    public func submit(_ job: @escaping @Sendable (any WebhookPoster) -> Void) -> Bool {
        threads.submit(job)
    }

    /// Stops the threads once the queued jobs are done; waits at most `grace` seconds for that.
    public func stop(grace: Double) { threads.stop(grace: grace) }
}

/// The monotonic clock, for durations and lease margins (the wall clock may jump).
enum Monotonic {
    static func seconds() -> Double { Double(LatencyHistogram.now()) / 1e9 }
}

/// One curl easy handle, reused across attempts so connections stay alive; freed in deinit.
private final class WebhookEasyHandle: WebhookPoster {
    private let handle: UnsafeMutableRawPointer
    private let timeout: Double

    init(timeout: Double) {
        guard let handle = curl_easy_init() else { fatalError("curl_easy_init failed") }
        self.handle = handle
        self.timeout = timeout
    }

    deinit { curl_easy_cleanup(handle) }

    func post(_ request: WebhookRequest) -> WebhookResponse {
        let started = Monotonic.seconds()
        curl_easy_reset(handle)
        let sink = ResponseSink()
        var headers: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headers) }
        for (name, value) in request.headers { headers = curl_slist_append(headers, "\(name): \(value)") }
        headers = curl_slist_append(headers, "Expect:")
        let timeoutMS = Int(timeout * 1000)
        var status = [
            ccurl_setopt_string(handle, CURLOPT_URL, request.url.text),
            ccurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1),
            ccurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0),
            // Only the URL's own scheme: https, or http where WebhookURL allowed it (loopback).
            ccurl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, request.url.scheme),
            ccurl_setopt_string(handle, CURLOPT_PROXY, ""),
            ccurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, min(5000, timeoutMS)),
            ccurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, timeoutMS),
            ccurl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1),
            ccurl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2),
            ccurl_setopt_long(handle, CURLOPT_TCP_KEEPALIVE, 1),
            ccurl_setopt_slist(handle, CURLOPT_HTTPHEADER, headers),
        ]
        let context = Unmanaged.passUnretained(sink).toOpaque()
        status += [
            ccurl_setopt_write_function(handle, CURLOPT_WRITEFUNCTION) { data, size, count, context in
                let sink = Unmanaged<ResponseSink>.fromOpaque(context!).takeUnretainedValue()
                sink.bodyBytes += size * count
                return size * count
            },
            ccurl_setopt_pointer(handle, CURLOPT_WRITEDATA, context),
            ccurl_setopt_write_function(handle, CURLOPT_HEADERFUNCTION) { data, size, count, context in
                let sink = Unmanaged<ResponseSink>.fromOpaque(context!).takeUnretainedValue()
                let length = size * count
                if length < 256 {
                    let line = data!.withMemoryRebound(to: UInt8.self, capacity: length) {
                        String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
                    }
                    sink.header(line)
                }
                return length
            },
            ccurl_setopt_pointer(handle, CURLOPT_HEADERDATA, context),
            ccurl_setopt_long(handle, CURLOPT_POSTFIELDSIZE, request.body.count),
            request.body.withUnsafeBytes { raw in
                ccurl_setopt_pointer(
                    handle, CURLOPT_COPYPOSTFIELDS,
                    UnsafeMutableRawPointer(mutating: raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!))
            },
        ]
        if status.contains(where: { $0 != CURLE_OK }) {
            return WebhookResponse(status: nil, failure: .error, duration: Monotonic.seconds() - started)
        }
        let code = curl_easy_perform(handle)
        let duration = Monotonic.seconds() - started
        guard code == CURLE_OK else {
            let failure: WebhookResponse.Result =
                switch code {
                case CURLE_OPERATION_TIMEDOUT: .timeout
                case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY,
                    CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING:
                    .connection
                case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
                    CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CIPHER, CURLE_SSL_ISSUER_ERROR:
                    .tls
                default: .error
                }
            return WebhookResponse(status: nil, failure: failure, duration: duration)
        }
        var httpStatus = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &httpStatus)
        return WebhookResponse(status: httpStatus, retryAfter: sink.retryAfter, duration: duration)
    }
}

/// What the callbacks keep of one answer: its size (the body itself is dropped as it arrives)
/// and a `Retry-After` in seconds.
private final class ResponseSink {
    var bodyBytes = 0
    var retryAfter: TimeInterval?

    func header(_ line: String) {
        // A new status line (after a 100 Continue) starts the headers afresh.
        if line.hasPrefix("HTTP/") { retryAfter = nil }
        guard let colon = line.firstIndex(of: ":"),
            line[..<colon].lowercased() == "retry-after"
        else { return }
        let value = String(line[line.index(after: colon)...]).trimmingWhitespaceAndNewlines()
        if let seconds = Int(value), seconds >= 0 { retryAfter = TimeInterval(seconds) }
    }
}
