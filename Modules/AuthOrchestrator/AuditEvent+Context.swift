public import Foundation
public import Storage

extension AuditEvent {
    /// An event about `userID` (its actor too; "anonymous" when nobody is known yet), with the
    /// request's id and client address from `context`.
    public init(
        _ action: String, userID: String?, context: ClientContext, details: [String: String] = [:], at: Date
    ) {
        self.init(
            at: at, action: action, actor: userID.map { "user:\($0)" } ?? "anonymous", userID: userID,
            requestID: context.requestID, ipAddress: context.ipAddress, details: details)
    }
}
