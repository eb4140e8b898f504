import CryptoCore
public import Kernel

/// Why a session could not be used. Codes are stable: the HTTP layer maps them to problems.
public struct SessionError: CodedError {
    /// The stable codes SessionCore reports.
    public enum Code: String, Sendable, CaseIterable {
        /// No token was presented, or it is not in Portvakt's token format.
        case missing = "session.missing"
        /// No session has this token.
        case unknown = "session.unknown"
        /// The session was revoked.
        case revoked = "session.revoked"
        /// The session passed its absolute lifetime.
        case expired = "session.expired"
        /// The session was unused longer than the idle timeout.
        case idleExpired = "session.idle_expired"
        /// No session with that id belongs to this user.
        case notFound = "session.not_found"
    }

    /// What went wrong, as a stable code callers switch on.
    public let code: Code
    /// A readable explanation; never contains a token.
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
