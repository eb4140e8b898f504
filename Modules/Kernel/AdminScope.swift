/// What an admin token may do. The scopes form a ladder, `write ⊇ read ⊇ introspect`: `write`
/// may do everything, `read` everything that only looks, `introspect` only ask whether a session
/// token is active (for an app's own servers, which should hold a token that can do nothing else).
public enum AdminScope: String, Sendable, Hashable, CaseIterable {
    /// Requests that only look (GET), session introspection included.
    case read
    /// Every request.
    case write
    /// Session introspection only.
    case introspect

    /// Whether a token of this scope may call a route that needs `needed`.
    public func allows(_ needed: AdminScope) -> Bool {
        switch self {
        case .write: true
        case .read: needed != .write
        case .introspect: needed == .introspect
        }
    }
}
