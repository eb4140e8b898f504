public import AuthOrchestrator
import CryptoCore
import FoundationEssentials
public import HTTPEngine
import Kernel
import SessionCore

/// Session introspection on the admin listener, for the app's own servers: the shape of RFC 7662
/// (`active` and claims), JSON only. Any admin token may call it, an `introspect` token only it.
public struct IntrospectionAPI: Sendable {
    let authenticator: AdminAuthenticator
    let introspection: SessionIntrospection

    /// Creates the route over the introspection use case.
    public init(authenticator: AdminAuthenticator, introspection: SessionIntrospection) {
        self.authenticator = authenticator
        self.introspection = introspection
    }

    /// Adds the route to `router`.
    public func register(on router: inout Router) {
        let introspection = introspection
        router.addAdmin(
            .POST, "/admin/v1/sessions/introspect", authenticator: authenticator,
            summary: "Whether a session token is active, and whose it is (RFC 7662 shape)",
            contract: RouteContract(
                body: .json(IntrospectionBody.self), responses: [.json(IntrospectionView.self)]),
            // An app server may introspect on every request it serves: the backend class, not the
            // admin one (20/s by default).
            requires: .introspect, rateClass: .backend
        ) { request, _ in
            let body = try request.decodeJSON(IntrospectionBody.self)
            guard let found = try introspection.introspect(token: body.token) else {
                return .json(writing: IntrospectionView.inactive)
            }
            return .json(writing: IntrospectionView(found))
        }
    }
}

/// The token to introspect: a session token (`pvs_…`). Anything else is simply not active.
struct IntrospectionBody: StrictJSONReadable {
    let token: String

    init?(strict value: StrictJSON.Value) {
        // Other members are ignored, as the decoder ignores them.
        guard case .object(let object) = value, case .string(let token)? = object["token"] else { return nil }
        self.token = token
    }
}

/// The answer: `{"active": false}` alone, or an active session's claims. Times are seconds
/// since 1970 (RFC 7662's NumericDate); `exp` is the absolute end, which the idle timeout may
/// bring forward.
struct IntrospectionView: JSONWritable, Decodable {
    let active: Bool
    /// The user's id.
    var sub: String?
    /// The session's id.
    var sid: String?
    /// The username, when the account has one.
    var username: String?
    /// How the session was opened: `passkey`, `bankid` or `review`.
    var amr: [String]?
    /// When the session began.
    var iat: Int64?
    /// When the session ends at the latest.
    var exp: Int64?
    /// Until when a BankID signature steps the session up, when one is in force.
    var steppedUpUntil: Int64?

    static let inactive = IntrospectionView(active: false)

    init(active: Bool) { self.active = active }

    init(_ found: Introspection) {
        active = true
        sub = found.user.id
        sid = found.session.id
        username = found.user.username
        amr = [found.session.authMethod.amr]
        iat = Self.seconds(found.session.createdAt)
        exp = Self.seconds(found.session.expiresAt)
        steppedUpUntil = found.steppedUpUntil.map(Self.seconds)
    }

    // Written by hand: an app server may introspect on every request it serves, and Foundation's
    // encoder was a third of the route's instructions. Members in declaration order, nil ones left
    // out, as the encoder writes them.
    func write(to writer: inout JSONWriter) {
        writer.object { object in
            object.key("active")
            object.bool(active)
            if let sub { object.member("sub", sub) }
            if let sid { object.member("sid", sid) }
            if let username { object.member("username", username) }
            if let amr {
                object.key("amr")
                object.array { list in
                    for method in amr { list.string(method) }
                }
            }
            if let iat { object.member("iat", iat) }
            if let exp { object.member("exp", exp) }
            if let steppedUpUntil { object.member("steppedUpUntil", steppedUpUntil) }
        }
    }

    /// NumericDate: whole seconds, rounded down.
    static func seconds(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970.rounded(.down)) }
}
