public import FoundationEssentials

/// What an admin search of the audit trail asks for; nil fields do not filter.
public struct AuditQuery: Sendable, Equatable {
    /// Only events about this user.
    public var userID: String?
    /// Only events with exactly this action (for example `.adminUserDisabled`).
    public var action: AuditAction?
    /// Only events at or after this time.
    public var from: Date?
    /// Only events before this time.
    public var until: Date?

    /// Creates a query.
    public init(userID: String? = nil, action: AuditAction? = nil, from: Date? = nil, until: Date? = nil) {
        self.userID = userID
        self.action = action
        self.from = from
        self.until = until
    }
}
