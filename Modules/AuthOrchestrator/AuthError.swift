public import BankIDCore
import CryptoCore
public import Kernel

/// The one error AuthOrchestrator throws for its own rules — passkey and account use cases,
/// enrollment, BankID journeys, the reviewer login and administration: a stable code, a message
/// free of personal data, the BankID message to show when BankID's answer decides it, an
/// optional cause and the source location. Verification failures keep PasskeyCore's
/// `PasskeyError` (and its step's code); storage faults keep `StorageError`.
public struct AuthError: CodedError {
    /// The stable codes of the use cases; raw values never change once shipped.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        // MARK: Passkeys and accounts

        /// Passkeys are switched off in this deployment (`methods.passkey.enabled`).
        case passkeyDisabled = "passkey.disabled"
        /// New accounts cannot be created with a passkey (`methods.passkey.signup`).
        case signupDisabled = "passkey.signup_disabled"
        /// A session BankID opened may not add a passkey here: BankID's terms forbid issuing
        /// another way in on the strength of a BankID identification (ID switching), and the
        /// configuration does not acknowledge `passkeyAfterBankID`.
        case idSwitchingRefused = "passkey.id_switching_refused"
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
        /// `mediation: "conditional"` (an automatic passkey upgrade, whose response may lack user
        /// presence) was asked for a registration that is not a signed-in user's own: a new
        /// account or an enrollment token must be created with the user present.
        case conditionalNotAllowed = "passkey.conditional_not_allowed"
        /// No passkey with that id belongs to the signed-in user.
        case passkeyNotFound = "passkey.not_found"
        /// Deleting this passkey would leave the account with no way in.
        case lastPasskey = "passkey.last_passkey"
        /// The account was disabled by an administrator.
        case accountDisabled = "account.disabled"
        /// A method or journey is switched off here (a BankID journey, the reviewer login).
        case methodDisabled = "method_disabled"
        /// The randomness source failed; nothing was issued.
        case randomFailure = "auth.random_failure"

        // MARK: The user's own account

        /// The act cannot be undone or weakens the account, and the session's last proof of
        /// presence is older than `account.reauthenticationSeconds`: re-authenticate first
        /// (`methods` says how).
        case reauthenticationRequired = "reauthentication_required"
        /// A re-authentication that failed for a reason that must not be told apart (an unknown
        /// passkey, another user's).
        case reauthenticationFailed = "reauthentication_failed"
        /// The app-store review account cannot be deleted by its user (it is recreated at start).
        case reviewAccountDeletion = "review.deletion_refused"

        // MARK: Enrollment tokens

        /// The token is unknown, already used, expired or another client's (one code: a prober
        /// learns nothing).
        case enrollmentInvalid = "enrollment.invalid"
        /// A lifetime outside what is allowed.
        case enrollmentInvalidLifetime = "enrollment.invalid_lifetime"

        // MARK: BankID journeys

        /// No order with this id belongs to this client (unknown, purged, or another client's).
        case orderNotFound = "bankid.order_not_found"
        /// The order's result is no longer kept.
        case orderExpired = "bankid.order_expired"
        /// The intent is not served here (recovery without enrollment wired).
        case intentNotSupported = "bankid.intent_not_supported"
        /// The order request is malformed (a sign without text, a text too long, a bad device).
        case bankIDInvalidRequest = "bankid.invalid_request"
        /// A native order without an app identifier, or with one not in `bankid.appIdentifiers`.
        case bankIDAppNotAllowed = "bankid.app_not_allowed"
        /// The nonce a same-device poll presented is not the one BankID was told to return with.
        case returnMismatch = "bankid.return_mismatch"
        /// Linking and signing need a signed-in session.
        case signInRequired = "bankid.sign_in_required"
        /// BankID refused or failed; `userMessage` is the RFA to show.
        case bankIDUnavailable = "bankid.unavailable"
        /// BankID says an order for this person is already running (RFA4).
        case alreadyInProgress = "bankid.already_in_progress"
        /// The signed-in account has no BankID identity linked (nothing to unlink).
        case bankIDNotLinkedToAccount = "bankid.not_linked"
        /// Unlinking BankID would leave the account with no way in (no passkey it can sign in with).
        case lastWayIn = "bankid.last_way_in"

        // MARK: The reviewer login

        /// A reviewer login that failed, for whatever reason (one code: a prober learns nothing).
        case reviewLoginFailed = "review.login_failed"
        /// The review account is sandboxed: it cannot take on a real identity.
        case sandboxed = "review.sandboxed"

        // MARK: Administration

        /// No admin token, an unknown one, a revoked one or an expired one (one code: a caller
        /// without a working token learns nothing about which).
        case adminUnauthorized = "admin.unauthorized"
        /// A read-scoped token on a route that changes something.
        case adminForbidden = "admin.forbidden"
        /// A token name that is empty, too long or not of the allowed characters.
        case invalidTokenName = "admin.invalid_token_name"
        /// Another live token has this name.
        case tokenNameTaken = "admin.token_name_taken"
        /// No live token has this name.
        case tokenNotFound = "admin.token_not_found"
        /// An expiry in the past or beyond what is allowed.
        case invalidExpiry = "admin.invalid_expiry"
        /// No user has this id.
        case userNotFound = "admin.user_not_found"
        /// The user has no passkey with this id.
        case adminPasskeyNotFound = "admin.passkey_not_found"
        /// The user has no session with this id.
        case sessionNotFound = "admin.session_not_found"
        /// No BankID signature evidence has this id.
        case signatureNotFound = "admin.signature_not_found"
        /// A page cursor that this server did not hand out.
        case invalidCursor = "admin.invalid_cursor"
        /// A query parameter out of its range or form.
        case invalidParameter = "admin.invalid_parameter"
        /// The account has no linked BankID identity, so no BankID phone check can verify its owner.
        case bankIDNotLinked = "admin.bankid_not_linked"
        /// No BankID phone verification has this id (unknown, or purged).
        case verificationNotFound = "admin.verification_not_found"
        /// No webhook delivery has this id (unknown, or purged after the retention).
        case deliveryNotFound = "admin.delivery_not_found"
        /// No access token can be signed: no signing key is usable (a wrong
        /// `PORTVAKT_ACCESS_TOKEN_KEY`, or none active yet). The deployment must act; a 503.
        case accessTokenKeyUnavailable = "access_token.key_unavailable"
    }

    /// What went wrong.
    public let code: Code
    /// A readable explanation without secrets, usernames, personal numbers or credential IDs.
    public let message: String
    /// The recommended BankID message to show, when BankID's answer decides it.
    public let userMessage: RecommendedMessage?
    /// The cause, when another module's error led to this one (kept for logs, never shown).
    public let underlying: (any Error)?
    /// How the user can re-authenticate, for `reauthentication_required` (`RecentAuthentication`);
    /// empty otherwise.
    public internal(set) var reauthenticationMethods: [AuthMethod] = []
    /// What the client should tell the password manager about this refusal (a login's unknown
    /// credential), sent in the problem body's `signals` member.
    public let signals: PasskeySignals?
    /// The source file that raised the error.
    public let file: String
    /// The source line that raised the error.
    public let line: Int

    /// Creates an error at the caller's location.
    public init(
        _ code: Code, _ message: String, userMessage: RecommendedMessage? = nil,
        underlying: (any Error)? = nil, signals: PasskeySignals? = nil,
        file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.userMessage = userMessage
        self.underlying = underlying
        self.signals = signals
        self.file = file
        self.line = line
    }
}
