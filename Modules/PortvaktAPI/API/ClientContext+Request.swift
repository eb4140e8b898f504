import AuthOrchestrator
public import HTTPEngine
public import Kernel

extension HTTPRequest {
    /// What the use cases record about the request: its id, the client IP as the front resolved
    /// it (trusted proxies only) and the User-Agent.
    public var clientContext: ClientContext {
        ClientContext(requestID: requestID, ipAddress: clientIP, userAgent: headers["user-agent"])
    }
}
