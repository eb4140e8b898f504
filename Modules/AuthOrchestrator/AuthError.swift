public import CryptoCore

/// The one error AuthOrchestrator throws for its own rules: a stable code, a message free of
/// personal data, an optional cause and the source location. Verification failures keep
/// PasskeyCore's `PasskeyError` (and its step's code); storage faults keep `StorageError`.
public struct AuthError: CodedError {
    /// The stable codes of the use cases; raw values never change once shipped.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// Passkeys are switched off in this deployment (`methods.passkey.enabled`).
        case passkeyDisabled = "passkey.disabled"
        /// New accounts cannot be created with a passkey (`methods.passkey.signup`).
        case signupDisabled = "passkey.signup_disabled"
        /// The username breaks the rules (3 to 64 letters, digits, `.`, `_`, `-`, `@`).
        case invalidUsername = "user.invalid_username"
        /// The display name is empty, too long or holds control characters.
        case invalidDisplayName = "user.invalid_display_name"
        /// Someone already has this username.
        case usernameTaken = "user.username_taken"
        /// The challenge is unknown, used, expired, for the other ceremony or for another user.
        case challengeInvalid = "passkey.challenge_invalid"
        /// The credential ID is already registered (§7.1 step 26).
        case credentialExists = "passkey.credential_exists"
        /// A login that failed for a reason that must not be told apart (unknown credential,
        /// unknown user, a credential of another user).
        case loginFailed = "passkey.login_failed"
        /// The passkey name is empty, too long or holds control characters.
        case invalidPasskeyName = "passkey.invalid_name"
        /// No passkey with that id belongs to the signed-in user.
        case passkeyNotFound = "passkey.not_found"
        /// Deleting this passkey would leave the account with no way in.
        case lastPasskey = "passkey.last_passkey"
        /// The account was disabled by an administrator.
        case accountDisabled = "account.disabled"
        /// The reviewer login is switched off (`reviewAccount.enabled`).
        case methodDisabled = "method_disabled"
        /// A reviewer login that failed, for whatever reason (one code: a prober learns nothing).
        case reviewLoginFailed = "review.login_failed"
        /// The randomness source failed; nothing was issued.
        case randomFailure = "auth.random_failure"
    }

    /// What went wrong.
    public let code: Code
    /// A readable explanation without secrets, usernames or credential IDs.
    public let message: String
    /// The cause, when another module's error led to this one (kept for logs, never shown).
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
