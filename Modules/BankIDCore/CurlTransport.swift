import CCurl
public import CryptoCore
import FoundationEssentials
import Kernel
import Synchronization

/// How the RP proves itself to BankID: its client certificate and key.
public enum BankIDClientIdentity: Sendable, Equatable {
    /// A PKCS#12 file (what banks issue) and its passphrase.
    case pkcs12(path: String, passphrase: RedactedSecret)
    /// A PEM certificate and a PEM private key, the key optionally encrypted.
    case pem(certificatePath: String, keyPath: String, keyPassphrase: RedactedSecret?)
}

/// Everything the libcurl transport needs; plain values, checked by ``CurlBankIDTransport/init(configuration:)``.
public struct BankIDTransportConfiguration: Sendable, Equatable {
    /// BankID's production API.
    public static let productionBaseURL = "https://appapi2.bankid.com/rp/v6.0"
    /// BankID's test API.
    public static let testBaseURL = "https://appapi2.test.bankid.com/rp/v6.0"

    /// The API's base URL, https (production, test, or a simulator); a trailing slash is ignored.
    public var baseURL: String
    /// The RP's client certificate.
    public var clientIdentity: BankIDClientIdentity
    /// A PEM file with the BankID root CA of the environment: the only certificate trusted for the server.
    public var caCertificatePath: String
    /// The longest a TCP + TLS connect may take, in seconds.
    public var connectTimeout: Double
    /// The longest a whole call may take, connect included, in seconds.
    public var requestTimeout: Double
    /// The threads (each with its own kept-alive connection) that run calls.
    public var threads: Int
    /// Calls allowed to wait for a thread; one more is refused at once with `overloaded`.
    public var maximumQueued: Int

    /// Creates a configuration with conservative defaults: 5 s connect, 10 s total, 4 threads, 256 waiting.
    public init(
        baseURL: String, clientIdentity: BankIDClientIdentity, caCertificatePath: String,
        connectTimeout: Double = 5, requestTimeout: Double = 10, threads: Int = 4, maximumQueued: Int = 256
    ) {
        self.baseURL = baseURL
        self.clientIdentity = clientIdentity
        self.caCertificatePath = caCertificatePath
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
        self.threads = threads
        self.maximumQueued = maximumQueued
    }
}

/// The BankID transport over libcurl: mutual TLS, the configured CA only, TLS 1.2 or newer, and
/// timeouts on every call.
///
/// Calls run on the transport's own threads, never the caller's: `send` suspends its task and a
/// worker thread runs the blocking `curl_easy_perform`. Each worker owns one curl easy handle and
/// so one kept-alive TLS connection to BankID (connection reuse without sharing handles between
/// threads). A BankID that hangs therefore occupies at most `threads` of these threads, and calls
/// beyond `maximumQueued` waiting fail at once with `overloaded`, so the HTTP server's own threads
/// and memory are never held hostage.
public final class CurlBankIDTransport: BankIDTransport, Sendable {
    /// The checked configuration.
    public let configuration: BankIDTransportConfiguration
    /// Worker threads, each with its own easy handle (and so its own kept-alive connection).
    private let pool: WorkerThreads<EasyHandle>
    /// Connections the workers' handles opened (CURLINFO_NUM_CONNECTS summed).
    private let connections = Atomic<Int>(0)

    private static let globalInit: Void = {
        // curl_global_init is not thread-safe; run it once per process before any handle exists.
        _ = curl_global_init(Int(CURL_GLOBAL_ALL))
    }()

    /// Checks the configuration and starts the worker threads.
    /// - Throws: `BankIDError(.configuration)` for a non-https base URL, unreadable files or bad limits.
    public init(configuration: BankIDTransportConfiguration) throws(BankIDError) {
        _ = Self.globalInit
        var configuration = configuration
        // BankID documents its base URLs with a trailing slash; paths here start with one.
        while configuration.baseURL.hasSuffix("/") { configuration.baseURL.removeLast() }
        guard configuration.baseURL.hasPrefix("https://"), configuration.baseURL.count > 8 else {
            throw BankIDError(.configuration, "baseURL: must be an https URL")
        }
        var files = [("caCertificatePath", configuration.caCertificatePath)]
        switch configuration.clientIdentity {
        case .pkcs12(let path, _): files.append(("clientCertificate", path))
        case .pem(let certificate, let key, _):
            files += [("clientCertificate", certificate), ("clientKey", key)]
        }
        for (name, path) in files where !FileManager.default.isReadableFile(atPath: path) {
            throw BankIDError(.configuration, "\(name): cannot read \(path)")
        }
        guard configuration.connectTimeout > 0, configuration.requestTimeout >= configuration.connectTimeout,
            configuration.threads >= 1, configuration.maximumQueued >= 0
        else {
            throw BankIDError(
                .configuration, "timeouts must be positive (total at least connect), threads at least 1")
        }
        self.configuration = configuration
        pool = WorkerThreads(
            name: "bankid-curl", threads: configuration.threads, maximumQueued: configuration.maximumQueued,
            makeWorker: { EasyHandle() })
    }

    deinit { pool.stop() }

    /// Sends one request on a worker thread.
    public func send(_ request: BankIDHTTPRequest) async throws(BankIDError) -> BankIDHTTPResponse {
        let configuration = configuration
        let outcome: Result<BankIDHTTPResponse, BankIDError> = await withCheckedContinuation { continuation in
            let accepted = pool.submit { [self] easy in
                let outcome = easy.perform(request, configuration: configuration)
                connections.add(easy.lastConnectionCount, ordering: .relaxed)
                continuation.resume(returning: outcome)
            }
            if !accepted {
                continuation.resume(
                    returning: .failure(
                        BankIDError(.overloaded, "too many BankID calls are waiting; try again shortly")))
            }
        }
        return try outcome.get()
    }

    /// How many calls are waiting for a worker (for metrics and tests).
    public var queuedCount: Int { pool.queuedCount }

    /// How many TCP + TLS connections calls have opened: with reuse, about one per worker thread.
    public var connectionsOpened: Int { connections.load(ordering: .relaxed) }
}

/// One curl easy handle; reused across calls so its connection stays alive, freed in deinit.
private final class EasyHandle {
    private let handle: UnsafeMutableRawPointer
    /// Connections the last call opened (0 when it reused the kept-alive one).
    private(set) var lastConnectionCount = 0
    /// Responses larger than this are abandoned: BankID's are a few kilobytes (a signature ~10 kB).
    static let maximumResponseBytes = 1 << 20

    init() {
        guard let handle = curl_easy_init() else { fatalError("curl_easy_init failed") }
        self.handle = handle
    }

    deinit { curl_easy_cleanup(handle) }

    func perform(_ request: BankIDHTTPRequest, configuration: BankIDTransportConfiguration)
        -> Result<BankIDHTTPResponse, BankIDError>
    {
        // Reset drops the previous call's options but keeps the live connection.
        curl_easy_reset(handle)
        let sink = BodySink()
        var headers: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headers) }
        headers = curl_slist_append(headers, "Content-Type: \(request.contentType)")
        headers = curl_slist_append(headers, "Accept: application/json")
        // No "Expect: 100-continue" round trip before the body.
        headers = curl_slist_append(headers, "Expect:")

        var status = [
            ccurl_setopt_string(handle, CURLOPT_URL, configuration.baseURL + request.path),
            ccurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1),
            ccurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0),
            ccurl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "https"),
            // An empty proxy disables proxies from the environment: BankID is reached directly.
            ccurl_setopt_string(handle, CURLOPT_PROXY, ""),
            ccurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(configuration.connectTimeout * 1000)),
            ccurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, Int(configuration.requestTimeout * 1000)),
            ccurl_setopt_long(handle, CURLOPT_TCP_KEEPALIVE, 1),
            // A start request gets a new connection, so libcurl never resends it on its own (see
            // BankIDHTTPRequest.isIdempotent); collects and cancels reuse the kept-alive one.
            ccurl_setopt_long(handle, CURLOPT_FRESH_CONNECT, request.isIdempotent ? 0 : 1),
            // Trust only the configured BankID CA: CAINFO replaces the bundle, and CAPATH is
            // cleared so the system's directory of public CAs is not consulted either.
            ccurl_setopt_string(handle, CURLOPT_CAINFO, configuration.caCertificatePath),
            ccurl_setopt_string(handle, CURLOPT_CAPATH, nil),
            ccurl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1),
            ccurl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2),
            ccurl_setopt_long(handle, CURLOPT_SSLVERSION, Int(CURL_SSLVERSION_TLSv1_2)),
            ccurl_setopt_slist(handle, CURLOPT_HTTPHEADER, headers),
        ]
        switch configuration.clientIdentity {
        case .pkcs12(let path, let passphrase):
            status += [
                ccurl_setopt_string(handle, CURLOPT_SSLCERT, path),
                ccurl_setopt_string(handle, CURLOPT_SSLCERTTYPE, "P12"),
                ccurl_setopt_string(handle, CURLOPT_KEYPASSWD, passphrase.value),
            ]
        case .pem(let certificatePath, let keyPath, let passphrase):
            status += [
                ccurl_setopt_string(handle, CURLOPT_SSLCERT, certificatePath),
                ccurl_setopt_string(handle, CURLOPT_SSLCERTTYPE, "PEM"),
                ccurl_setopt_string(handle, CURLOPT_SSLKEY, keyPath),
                ccurl_setopt_string(handle, CURLOPT_SSLKEYTYPE, "PEM"),
            ]
            if let passphrase {
                status.append(ccurl_setopt_string(handle, CURLOPT_KEYPASSWD, passphrase.value))
            }
        }
        let context = Unmanaged.passUnretained(sink).toOpaque()
        status += [
            ccurl_setopt_write_function(handle, CURLOPT_WRITEFUNCTION) { data, size, count, context in
                let sink = Unmanaged<BodySink>.fromOpaque(context!).takeUnretainedValue()
                let length = size * count
                // Returning less than given makes curl fail the transfer with CURLE_WRITE_ERROR.
                guard sink.body.count + length <= EasyHandle.maximumResponseBytes else { return 0 }
                data!.withMemoryRebound(to: UInt8.self, capacity: length) { bytes in
                    sink.body.append(contentsOf: UnsafeBufferPointer(start: bytes, count: length))
                }
                return length
            },
            ccurl_setopt_pointer(handle, CURLOPT_WRITEDATA, context),
        ]
        if request.method == "POST" {
            // COPYPOSTFIELDS copies the body, so no buffer has to outlive this call's scope.
            status.append(ccurl_setopt_long(handle, CURLOPT_POSTFIELDSIZE, request.body.count))
            status.append(
                request.body.withUnsafeBytes { raw in
                    ccurl_setopt_pointer(
                        handle, CURLOPT_COPYPOSTFIELDS,
                        UnsafeMutableRawPointer(mutating: raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!)
                    )
                })
        } else {
            status.append(ccurl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method))
        }
        if let failed = status.first(where: { $0 != CURLE_OK }) {
            return .failure(BankIDError(.transportFailed, "curl refused an option: \(Self.text(failed))"))
        }

        let code = curl_easy_perform(handle)
        var connects = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects)
        lastConnectionCount = connects
        guard code == CURLE_OK else { return .failure(classify(code)) }
        var httpStatus = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &httpStatus)
        return .success(BankIDHTTPResponse(status: httpStatus, body: sink.body))
    }

    /// Turns a curl failure into the codes callers act on: whether anything may have reached
    /// BankID decides between a safe `connectionFailed` and a `timedOut` that must not be resent.
    private func classify(_ code: CURLcode) -> BankIDError {
        var requestBytes = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_REQUEST_SIZE, &requestBytes)
        let text = Self.text(code)
        switch code {
        case CURLE_OPERATION_TIMEDOUT where requestBytes > 0:
            return BankIDError(.timedOut, "BankID did not answer in time (\(text)); not resent")
        case CURLE_OPERATION_TIMEDOUT, CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST,
            CURLE_COULDNT_RESOLVE_PROXY:
            return BankIDError(.connectionFailed, "could not connect to BankID (\(text))")
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CIPHER, CURLE_SSL_ISSUER_ERROR:
            return BankIDError(.tlsFailed, "TLS with BankID failed (\(text))")
        case CURLE_WRITE_ERROR:
            return BankIDError(.malformedResponse, "BankID's answer was larger than expected")
        default:
            // Includes a TLS 1.3 server refusing our certificate after the handshake (a receive
            // error). Never retried: once the request went out, BankID's state is unknown.
            return BankIDError(.transportFailed, "the call to BankID failed (\(text))")
        }
    }

    private static func text(_ code: CURLcode) -> String {
        "curl \(code.rawValue): \(String(cString: curl_easy_strerror(code)))"
    }
}

/// Collects one response body from curl's write callback.
private final class BodySink {
    var body: [UInt8] = []
}
