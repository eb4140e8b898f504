/// How a session was opened: kept on the session, shown to its owner and counted in metrics.
public enum AuthMethod: String, Sendable, CaseIterable {
    /// A passkey assertion (login) or registration (sign-up).
    case passkey
    /// A BankID identification.
    case bankid
    /// A passkey enrolled with a one-time enrollment or recovery token.
    case enrollment
    /// The app-store reviewer's code for the sandboxed review account.
    case review

    /// What the app's servers are told the session was opened with (the `amr` of introspection):
    /// the credential the person presented. An enrollment registered a passkey, so it is one.
    public var amr: String {
        switch self {
        case .passkey, .enrollment: "passkey"
        case .bankid: "bankid"
        case .review: "review"
        }
    }
}
