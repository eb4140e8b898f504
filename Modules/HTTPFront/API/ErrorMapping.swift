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
