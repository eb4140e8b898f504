public import AuthOrchestrator
public import PasskeyCore
public import SessionCore
public import Storage

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

/// Storage failures: a busy database is worth a retry (503); anything else is an internal error
/// whose details stay in the log.
extension StorageError: HTTPResponseError {
    public var status: Int { code == .busy ? 503 : 500 }

    public var problem: ProblemDetails {
        code == .busy
            ? ProblemDetails(
                status: 503, code: "storage.busy", title: "Temporarily unavailable",
                detail: "The database is busy; try again shortly.")
            : ProblemDetails(status: 500, code: "internal", title: "Internal error", detail: nil)
    }

    public var headers: [(String, String)] { code == .busy ? [("Retry-After", "1")] : [] }
}

/// The passkey use cases' own failures: 403 for switched-off features and disabled accounts,
/// 409 for conflicts, 404 for a passkey that is not the caller's, 400 for the rest.
extension AuthError: HTTPResponseError {
    public var status: Int {
        switch code {
        case .passkeyDisabled, .signupDisabled, .accountDisabled, .methodDisabled: 403
        case .reviewLoginFailed: 401
        case .usernameTaken, .credentialExists, .lastPasskey: 409
        case .passkeyNotFound: 404
        case .randomFailure: 500
        case .invalidUsername, .invalidDisplayName, .invalidPasskeyName, .challengeInvalid, .loginFailed: 400
        }
    }

    public var problem: ProblemDetails {
        switch code {
        case .randomFailure:
            ProblemDetails(status: 500, code: "internal", title: "Internal error", detail: nil)
        case .challengeInvalid:
            ProblemDetails(
                status: 400, code: code.rawValue, title: "Challenge not valid",
                detail:
                    "The challenge is unknown, already used, expired or for another ceremony; start again.")
        case .loginFailed:
            ProblemDetails(
                status: 400, code: code.rawValue, title: "Sign-in failed",
                detail: "This passkey cannot sign in here.")
        case .reviewLoginFailed:
            ProblemDetails(
                status: 401, code: code.rawValue, title: "Sign-in failed",
                detail: "The reviewer username or code is not right.")
        default:
            ProblemDetails(
                status: status, code: code.rawValue, title: Self.titles[code] ?? "Refused", detail: message)
        }
    }

    private static let titles: [Code: String] = [
        .passkeyDisabled: "Passkeys are not enabled", .signupDisabled: "Sign-up is not enabled",
        .accountDisabled: "Account disabled", .usernameTaken: "Username taken",
        .methodDisabled: "Method disabled",
        .credentialExists: "Passkey already registered", .lastPasskey: "Last passkey",
        .passkeyNotFound: "Passkey not found", .invalidUsername: "Invalid username",
        .invalidDisplayName: "Invalid display name", .invalidPasskeyName: "Invalid passkey name",
    ]
}

/// WebAuthn verification failures: 400 with the failing step's code (`ceremony.*`,
/// `attestation.*`, `response.*`, `clientdata.*`, …). `options.*` and `config.*` are server faults:
/// 500 with nothing more said.
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
    }
}
