public import Kernel

/// An error from WebhookCore: a stable code, a message without secrets or bodies, and where it
/// arose.
public struct WebhookError: CodedError, Sendable {
    /// The stable codes WebhookCore reports.
    public enum Code: String, Sendable, CaseIterable {
        /// A webhook URL that is not https (or http to this machine).
        case invalidURL = "webhook.invalid_url"
        /// The sender could not be set up (curl, threads, limits).
        case configuration = "webhook.configuration"
    }

    public let code: Code
    public let message: String
    public let file: String
    public let line: Int

    /// Creates an error.
    public init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
    }
}
