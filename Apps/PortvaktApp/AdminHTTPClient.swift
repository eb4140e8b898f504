import CCurl

/// One HTTP exchange with the admin API over libcurl (which the binary links for BankID anyway),
/// in place of FoundationNetworking's URLSession, which would link all of Foundation.
enum AdminHTTPClient {
    struct Response {
        let status: Int
        let body: [UInt8]
    }

    private static let globalInit: Void = {
        // curl_global_init is not thread-safe in every build; run it once for the process.
        _ = curl_global_init(Int(CURL_GLOBAL_ALL))
    }()

    private final class Sink {
        var body: [UInt8] = []
    }

    /// Sends `method` to `url` with `headers` and `body`, waiting at most `timeout` seconds.
    /// - Returns: the status and body, or curl's description of why there was no response.
    static func send(
        _ method: String, url: String, headers: [(String, String)], body: [UInt8]?, timeout: Double
    ) -> Result<Response, CurlFailure> {
        _ = globalInit
        guard let handle = curl_easy_init() else {
            return .failure(CurlFailure(message: "curl_easy_init failed"))
        }
        defer { curl_easy_cleanup(handle) }
        var list: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(list) }
        for (name, value) in headers + [("Expect", "")] {
            list = curl_slist_append(list, value.isEmpty ? "\(name):" : "\(name): \(value)")
        }
        let sink = Sink()
        _ = ccurl_setopt_string(handle, CURLOPT_URL, url)
        _ = ccurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = ccurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)
        _ = ccurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, Int(timeout * 1000))
        _ = ccurl_setopt_slist(handle, CURLOPT_HTTPHEADER, list)
        _ = ccurl_setopt_write_function(handle, CURLOPT_WRITEFUNCTION) { data, size, count, context in
            let sink = Unmanaged<Sink>.fromOpaque(context!).takeUnretainedValue()
            data!.withMemoryRebound(to: UInt8.self, capacity: size * count) { bytes in
                sink.body.append(contentsOf: UnsafeBufferPointer(start: bytes, count: size * count))
            }
            return size * count
        }
        _ = ccurl_setopt_pointer(handle, CURLOPT_WRITEDATA, Unmanaged.passUnretained(sink).toOpaque())
        // One spare byte so the buffer always has an address: curl reads a NULL POSTFIELDS from stdin.
        let payload = (body ?? []) + [0]
        let code: CURLcode = withExtendedLifetime(sink) {
            payload.withUnsafeBytes { raw in
                if method == "GET", body == nil {
                    _ = ccurl_setopt_long(handle, CURLOPT_HTTPGET, 1)
                } else {
                    _ = ccurl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, method)
                    if body != nil {
                        _ = ccurl_setopt_long(handle, CURLOPT_POSTFIELDSIZE, raw.count - 1)
                        _ = ccurl_setopt_pointer(
                            handle, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress))
                    }
                }
                return curl_easy_perform(handle)
            }
        }
        guard code == CURLE_OK else {
            return .failure(CurlFailure(message: String(cString: curl_easy_strerror(code))))
        }
        var status = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return .success(Response(status: status, body: sink.body))
    }

    struct CurlFailure: Error {
        let message: String
    }
}
