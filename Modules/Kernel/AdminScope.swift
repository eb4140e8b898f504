/// What an admin token may do: `read` only looks, `write` may also change.
public enum AdminScope: String, Sendable, Hashable, CaseIterable {
    /// GET requests only.
    case read
    /// Every request.
    case write
}
