import CryptoCore
public import Kernel

/// Why the server could not be configured or started.
public struct HTTPServerError: CodedError {
    /// The stable codes the server reports.
    public enum Code: String, Sendable {
        /// A configuration value is invalid (host, trusted proxy, thread count...).
        case invalidConfiguration = "http.invalid_configuration"
        /// libmicrohttpd could not start (no permission, resources, TLS material refused).
        case startFailed = "http.start_failed"
        /// Another socket already listens on the address and port: a second instance, usually.
        case addressInUse = "http.address_in_use"
        /// `start()` was called on a server that is running or has been shut down.
        case invalidState = "http.invalid_state"
        /// An in-process request holds what no socket could carry (see `InProcessRequest`).
        case invalidRequest = "http.invalid_request"
    }

    /// The stable code.
    public let code: Code
    /// A readable explanation.
    public let message: String
    /// The source file that raised the error.
    public let file: String
    /// The source line that raised the error.
    public let line: Int

    /// Creates an error; the location defaults to the caller's.
    public init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
    }

}
