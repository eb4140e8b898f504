/// The rate-limit class a route's requests count against, per client.
///
/// The API that registers routes declares its classes as static members (so a misspelt class is
/// a compile error, as with an enum), and every route names one: `.unlimited` says in so many
/// words that a route is not limited. The server refuses to start when a route's class has no
/// configured limit, so no class is ever unlimited by accident.
public struct RateClass: Hashable, Sendable, CustomStringConvertible {
    /// The class's name, as configuration and the API document spell it.
    public let name: String

    /// A class by name; declare each once, as a static member.
    public init(_ name: String) { self.name = name }

    /// Routes that no limit applies to (liveness and the like).
    public static let unlimited = RateClass("unlimited")

    public var description: String { name }
}
