/// Who asked, for the audit trail and the sessions list.
public struct ClientContext: Sendable {
    /// The request id, to correlate audit events with logs.
    public var requestID: String?
    /// The client address.
    public var ipAddress: String?
    /// The User-Agent, kept on new sessions.
    public var userAgent: String?

    /// Creates a context.
    public init(requestID: String? = nil, ipAddress: String? = nil, userAgent: String? = nil) {
        self.requestID = requestID
        self.ipAddress = ipAddress
        self.userAgent = userAgent
    }
}
