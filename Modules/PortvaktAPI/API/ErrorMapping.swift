public import AuthOrchestrator
import BankIDCore
public import HTTPEngine
public import Kernel
public import PasskeyCore
public import SessionCore

/// Session failures as HTTP problems: 401 for every reason a token cannot be used, 404 for a
/// session id that is not the caller's.
extension SessionError: HTTPResponseError {
    public var status: Int { code == .notFound ? 404 : 401 }

    public var problem: ProblemDetails {
        switch code {
        case .notFound:
            ProblemDetails(status: 404, code: code.rawValue, title: "Session not found", detail: message)
        default:
            ProblemDetails(status: 401, code: code.rawValue, title: "Not signed in", detail: message)
        }
    }

    public var headers: [(String, String)] {
        code == .notFound ? [] : [("WWW-Authenticate", "Bearer")]
    }
}

/// The use cases' failures as problems. 400 for malformed input, 401 for a missing or failed
/// credential (with `WWW-Authenticate: Bearer` for admin tokens), 403 for what is switched off or
/// not allowed, 404 for what is not the caller's, 409 for conflicts, 410 for a BankID result no
/// longer kept, 503 when BankID fails (the detail names the RFA message to show), 500 with
/// nothing more said for a failed random source.
extension AuthError: HTTPResponseError {
    public var status: Int {
        switch code {
        case .invalidUsername, .invalidDisplayName, .invalidPasskeyName, .challengeInvalid, .loginFailed,
            .conditionalNotAllowed,
            .enrollmentInvalid, .enrollmentInvalidLifetime, .bankIDInvalidRequest, .bankIDAppNotAllowed,
            .invalidTokenName,
            .invalidExpiry, .invalidCursor, .invalidParameter, .reauthenticationFailed:
            400
        case .reviewLoginFailed, .signInRequired, .adminUnauthorized: 401
        case .passkeyDisabled, .signupDisabled, .idSwitchingRefused, .accountDisabled, .methodDisabled,
            .returnMismatch,
            .sandboxed,
            .adminForbidden, .reauthenticationRequired, .reviewAccountDeletion:
            403
        case .passkeyNotFound, .orderNotFound, .userNotFound, .adminPasskeyNotFound, .sessionNotFound,
            .tokenNotFound, .signatureNotFound, .verificationNotFound, .deliveryNotFound,
            .bankIDNotLinkedToAccount:
            404
        case .usernameTaken, .credentialExists, .lastPasskey, .alreadyInProgress, .tokenNameTaken,
            .bankIDNotLinked, .lastWayIn:
            409
        case .orderExpired: 410
        case .randomFailure: 500
        case .intentNotSupported: 501
        case .bankIDUnavailable, .accessTokenKeyUnavailable: 503
        }
    }

    public var problem: ProblemDetails {
        guard code != .randomFailure else {
            return ProblemDetails(status: 500, code: "internal", title: "Internal error", detail: nil)
        }
        let (title, fixedDetail) = Self.texts[code] ?? ("Refused", nil)
        // What the client can do about it: re-authenticate by one of these (Docs/api.md).
        var extensions: [String: ProblemValue] = [:]
        if code == .reauthenticationRequired {
            extensions["methods"] = .strings(reauthenticationMethods.map(\.rawValue))
        }
        // What the client should tell the password manager (a login's unknown credential).
        if let signals { extensions["signals"] = SignalsView(signals).problemValue }
        return ProblemDetails(
            status: status, code: code.rawValue, title: title, detail: fixedDetail ?? detail,
            extensions: extensions)
    }

    public var headers: [(String, String)] {
        code == .adminUnauthorized ? [("WWW-Authenticate", "Bearer")] : []
    }

    /// A store that failed under a use case whose typed errors had to wrap it (BankID's) is the
    /// database's failure, answered as such, when it is an outage (busy, unavailable, timed out).
    /// A failure the use case turned into its own rule stays the rule's answer: a unique-key
    /// conflict is `409 user.username_taken`, not the store's `500 internal`.
    public var dependencyFailure: (any DependencyFailure)? {
        guard let failure = underlying as? any DependencyFailure, failure.isTemporary else { return nil }
        return failure
    }

    /// The detail when no fixed one applies: the message, except for BankID failures, whose own
    /// details can echo request data — the RFA code says what to show.
    private var detail: String {
        code == .bankIDUnavailable
            ? "BankID could not complete the request (\((userMessage ?? .rfa22).code)); try again." : message
    }

    /// Each code's title, and a fixed detail where the message must not decide what is said
    /// (a prober learns nothing from the wording).
    private static let texts: [Code: (String, String?)] = [
        .passkeyDisabled: ("Passkeys are not enabled", nil), .signupDisabled: ("Sign-up is not enabled", nil),
        .idSwitchingRefused: (
            "Not after BankID",
            "A session opened with BankID cannot add a passkey here; sign in with a passkey or use an enrollment link."
        ),
        .accountDisabled: ("Account disabled", nil), .usernameTaken: ("Username taken", nil),
        .methodDisabled: ("Method disabled", nil), .credentialExists: ("Passkey already registered", nil),
        .lastPasskey: ("Last passkey", nil), .passkeyNotFound: ("Passkey not found", nil),
        .invalidUsername: ("Invalid username", nil), .invalidDisplayName: ("Invalid display name", nil),
        .invalidPasskeyName: ("Invalid passkey name", nil),
        .conditionalNotAllowed: (
            "Conditional registration not allowed",
            "mediation \"conditional\" is only for a signed-in user adding a passkey to their own account."
        ),
        .challengeInvalid: (
            "Challenge not valid",
            "The challenge is unknown, already used, expired or for another ceremony; start again."
        ),
        .loginFailed: ("Sign-in failed", "This passkey cannot sign in here."),
        .enrollmentInvalid: (
            "Enrollment link not valid",
            "The enrollment link is unknown, already used or expired; ask for a new one."
        ),
        .enrollmentInvalidLifetime: ("Invalid lifetime", nil),
        .orderNotFound: ("Order not found", nil), .orderExpired: ("Order expired", nil),
        .intentNotSupported: ("Not supported", nil), .bankIDInvalidRequest: ("Invalid request", nil),
        .bankIDAppNotAllowed: ("App not allowed", nil),
        .returnMismatch: ("Return nonce mismatch", nil), .signInRequired: ("Not signed in", nil),
        .bankIDUnavailable: ("BankID unavailable", nil),
        .alreadyInProgress: (
            "BankID order already in progress",
            "An identification or signing for this person is already started (RFA4)."
        ),
        .reviewLoginFailed: ("Sign-in failed", "The reviewer username or code is not right."),
        .sandboxed: ("Not available for the review account", nil),
        .adminUnauthorized: (
            "Admin token required",
            "Send Authorization: Bearer with a valid, unexpired, unrevoked admin token."
        ),
        .adminForbidden: (
            "Read-only admin token", "This admin token has the read scope; changes need a write token."
        ),
        .invalidTokenName: ("Admin request refused", nil), .tokenNameTaken: ("Admin request refused", nil),
        .tokenNotFound: ("Admin request refused", nil), .invalidExpiry: ("Admin request refused", nil),
        .userNotFound: ("Admin request refused", nil), .adminPasskeyNotFound: ("Admin request refused", nil),
        .sessionNotFound: ("Admin request refused", nil), .invalidCursor: ("Admin request refused", nil),
        .signatureNotFound: ("Admin request refused", nil),
        .invalidParameter: ("Admin request refused", nil),
        .bankIDNotLinked: ("No BankID identity linked", nil),
        .verificationNotFound: ("Admin request refused", nil),
        .deliveryNotFound: ("Admin request refused", nil),
        .reauthenticationRequired: ("Re-authentication required", nil),
        .bankIDNotLinkedToAccount: ("No BankID identity linked", nil),
        .lastWayIn: ("Last way in", nil),
        .reauthenticationFailed: (
            "Re-authentication failed", "This passkey cannot re-authenticate this account."
        ),
        .reviewAccountDeletion: (
            "Not available for the review account",
            "The app-store review account cannot be deleted; it is recreated when the server starts."
        ),
        .accessTokenKeyUnavailable: (
            "Access tokens unavailable",
            "No signing key can be used right now; the operator must check PORTVAKT_ACCESS_TOKEN_KEY."
        ),
    ]
}

/// WebAuthn verification failures: 400 with the failing step's code (`ceremony.*`,
/// `attestation.*`, `response.*`, `clientdata.*`, …). `options.*`, `config.*` and `metadata.*`
/// (the metadata BLOB, read at start, never from a request) are server faults: 500 with nothing
/// more said.
extension PasskeyError: HTTPResponseError {
    public var status: Int { isServerFault ? 500 : 400 }

    public var problem: ProblemDetails {
        isServerFault
            ? ProblemDetails(status: 500, code: "internal", title: "Internal error", detail: nil)
            // PasskeyError messages name the broken rule and never carry key material or user data.
            : ProblemDetails(
                status: 400, code: code.rawValue, title: "Passkey verification failed", detail: message)
    }

    private var isServerFault: Bool {
        code.rawValue.hasPrefix("options.") || code.rawValue.hasPrefix("config.")
            || code.rawValue.hasPrefix("metadata.")
    }
}
