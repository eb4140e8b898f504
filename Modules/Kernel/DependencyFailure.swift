/// A failure of something the server depends on (its database) rather than of the request.
///
/// Every layer passes these through untouched; the HTTP engine answers a temporary one `503` with
/// its code and `Retry-After`, and any other `500 internal`, with nothing of the cause in the body.
/// So no layer above the store needs to know which engine stores the data to answer rightly.
public protocol DependencyFailure: Error {
    /// The stable code, for example `storage.busy`.
    var failureCode: String { get }
    /// Whether trying again shortly may succeed (busy, unreachable, timed out).
    var isTemporary: Bool { get }
}
