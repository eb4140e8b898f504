public import CryptoCore

/// The administration use cases' own failures: a stable code, a message without secrets or
/// personal data, an optional cause and the source location.
public struct AdminError: CodedError {
    /// The stable codes; raw values never change once shipped.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// No admin token, an unknown one, a revoked one or an expired one (one code: a caller
        /// without a working token learns nothing about which).
        case unauthorized = "admin.unauthorized"
        /// A read-scoped token asked to change something.
        case forbidden = "admin.forbidden"
        /// An admin token name is empty, too long or holds characters other than letters,
        /// digits, `.`, `_` and `-`.
        case invalidTokenName = "admin.invalid_token_name"
        /// Another admin token already has this name (revoked ones keep theirs).
        case tokenNameTaken = "admin.token_name_taken"
        /// No admin token has this name or id.
        case tokenNotFound = "admin.token_not_found"
        /// An expiry outside what is allowed.
        case invalidExpiry = "admin.invalid_expiry"
        /// No user has this id.
        case userNotFound = "admin.user_not_found"
        /// No passkey with this id belongs to the user.
        case passkeyNotFound = "admin.passkey_not_found"
        /// No session with this id belongs to the user.
        case sessionNotFound = "admin.session_not_found"
        /// A pagination cursor that this server did not hand out.
        case invalidCursor = "admin.invalid_cursor"
        /// A query parameter or body member with a value outside its rules.
        case invalidParameter = "admin.invalid_parameter"
        /// The randomness source failed; nothing was created.
        case randomFailure = "admin.random_failure"
    }

    /// What went wrong.
    public let code: Code
    /// A readable explanation without secrets.
    public let message: String
    /// The cause, kept for logs, never shown.
    public let underlying: (any Error)?
    /// The source file that raised the error.
    public let file: String
    /// The source line that raised the error.
    public let line: Int

    /// Creates an error at the caller's location.
    public init(
        _ code: Code, _ message: String, underlying: (any Error)? = nil, file: String = #fileID,
        line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.file = file
        self.line = line
    }
}
