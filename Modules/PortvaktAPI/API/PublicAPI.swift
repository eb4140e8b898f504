public import AuthOrchestrator
import CryptoCore
import FoundationEssentials
public import HTTPEngine
import Kernel
import SessionCore

/// The public listener's routes that exist independently of any login method: the signed-in
/// user, sessions, logout and operations. Login methods add their routes beside these.
public struct PublicAPI: Sendable {
    let access: AccountSessionService
    let transport: SessionTransport
    let readiness: @Sendable () throws -> [String]

    /// Creates the API over the signed-in user's use cases. `readiness` throws when the server
    /// cannot serve (for example the database does not answer).
    public init(
        access: AccountSessionService, transport: SessionTransport,
        readiness: @escaping @Sendable () throws -> [String]
    ) {
        self.access = access
        self.transport = transport
        self.readiness = readiness
    }

    /// Adds the routes to `router`.
    public func register(on router: inout Router) {
        router.add(
            .GET, "/health/alive", rateClass: .unlimited, summary: "Liveness: the process answers",
            contract: HealthResponse.contract
        ) { _ in
            HealthResponse.alive
        }
        router.add(
            .GET, "/health/ready", rateClass: .unlimited, summary: "Readiness: the database answers",
            contract: RouteContract(
                responses: [.json(HealthView.self)],
                problems: [RouteContract.Problem(HealthResponse.notReady)])
        ) { _ in
            let warnings: [String]
            do {
                warnings = try readiness()
            } catch {
                throw HealthResponse.notReady
            }
            return HealthResponse.ready(warnings: warnings)
        }
        router.addSignedIn(
            .GET, "/v1/me", summary: "The signed-in user and the current session",
            contract: RouteContract(responses: [.json(MeResponse.self)]), transport: transport, access: access
        ) { _, auth in
            try .json(MeResponse(try access.overview(auth.signedIn)))
        }
        // Logging out never rotates: the token is about to end anyway.
        router.addSignedIn(
            .POST, "/v1/logout", summary: "End the current session",
            contract: RouteContract(responses: [.noContent]), transport: transport, access: access,
            rotating: false, commits: true
        ) { request, auth in
            try access.logout(auth.signedIn, context: request.clientContext)
            var response = HTTPResponse.noContent
            if auth.source == .cookie { response.headers.add("Set-Cookie", transport.clearCookie) }
            return response
        }
        router.addSignedIn(
            .GET, "/v1/me/sessions", summary: "The signed-in user's live sessions",
            contract: RouteContract(responses: [.json(SessionsResponse.self)]), transport: transport,
            access: access
        ) { _, auth in
            let current = auth.signedIn.current.id
            let list = try access.liveSessions(auth.signedIn).map {
                SessionView($0, current: $0.id == current)
            }
            return try .json(SessionsResponse(sessions: list))
        }
        router.addSignedIn(
            .DELETE, "/v1/me/sessions/{id}", summary: "End one of the signed-in user's sessions",
            contract: RouteContract(
                responses: [.noContent], problems: Problems.sessionNotFound),
            transport: transport, access: access, commits: true
        ) { request, auth in
            let id = request.pathParameters["id"] ?? ""
            try access.revoke(sessionID: id, of: auth.signedIn, context: request.clientContext)
            var response = HTTPResponse.noContent
            if id == auth.signedIn.current.id, auth.source == .cookie {
                response.headers.add("Set-Cookie", transport.clearCookie)
            }
            return response
        }
    }
}

/// A health answer: `alive` or `ready`, and what an operator should attend to (a certificate
/// near its expiry) when any.
struct HealthView: Codable {
    enum Status: String, Codable, CaseIterable {
        case alive, ready
    }
    let status: Status
    let warnings: [String]?
}

/// The health routes' answers, encoded once: liveness is the hottest route a load balancer hits.
enum HealthResponse {
    static let alive = response(HealthView(status: .alive, warnings: nil))
    static let ready = response(HealthView(status: .ready, warnings: nil))

    static let contract = RouteContract(responses: [.json(HealthView.self)])

    static let notReady = HTTPError(
        status: 503, code: "health.not_ready", title: "Not ready",
        detail: "A dependency of the server is not available.")

    /// Ready, with the warnings when any.
    static func ready(warnings: [String]) -> HTTPResponse {
        warnings.isEmpty ? ready : response(HealthView(status: .ready, warnings: warnings))
    }

    private static func response(_ view: HealthView) -> HTTPResponse {
        // A struct of strings: encoding cannot fail.
        let body = (try? JSONCoding.encoder.encode(view)).map { [UInt8]($0) } ?? []
        return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: body)
    }
}

/// A user as the public API shows it.
struct UserView: JSONWritable, Decodable {
    let id: String
    let username: String?
    let displayName: String
    let createdAt: String

    init(_ user: User) {
        id = user.id
        username = user.username
        displayName = user.displayName
        createdAt = UTCTimestamp.string(user.createdAt)
    }

    func write(to writer: inout JSONWriter) {
        writer.object { object in
            object.member("id", id)
            if let username { object.member("username", username) }
            object.member("displayName", displayName)
            object.member("createdAt", createdAt)
        }
    }
}

/// A session as its owner (or an administrator) sees it: never the token or its hash.
struct SessionView: Codable {
    let id: String
    /// Whether it is the session of the request; absent where that means nothing (the admin API).
    let current: Bool?
    let clientKind: String
    let authMethod: String
    let createdAt: String
    let lastSeenAt: String
    let expiresAt: String
    /// When it was revoked; absent for a live one (every list but the export's).
    let revokedAt: String?
    /// Its last proof of presence: the sign-in, or a later re-authentication
    /// (`account.reauthenticationSeconds` after it, the acts that cannot be undone need a new one).
    let authenticatedAt: String
    let userAgent: String?
    let ipAddress: String?

    init(_ session: Session, current: Bool? = nil) {
        id = session.id
        self.current = current
        clientKind = session.clientKind.rawValue
        authMethod = session.authMethod.rawValue
        createdAt = UTCTimestamp.string(session.createdAt)
        lastSeenAt = UTCTimestamp.string(session.lastSeenAt)
        expiresAt = UTCTimestamp.string(session.expiresAt)
        revokedAt = session.revokedAt.map(UTCTimestamp.string)
        authenticatedAt = UTCTimestamp.string(session.authenticatedAt)
        userAgent = session.userAgent
        ipAddress = session.ipAddress
    }
}

struct MeResponse: Codable {
    let user: UserView
    let session: SessionView
    /// Until when the session is stepped up by a BankID signature; absent when it is not.
    let steppedUpUntil: String?
    /// The user's BankID link; absent when the server has no BankID.
    let bankId: BankIDLink?

    init(_ overview: AccountOverview) {
        user = UserView(overview.user)
        session = SessionView(overview.session, current: true)
        steppedUpUntil = overview.steppedUpUntil.map(UTCTimestamp.string)
        bankId = overview.bankID.map(BankIDLink.init)
    }

    /// Whether a BankID identity is linked to the account: its name and link time, never a number.
    struct BankIDLink: Codable {
        let linked: Bool
        let name: String?
        let linkedAt: String?

        init(_ state: AccountOverview.BankIDLinkState) {
            linked = state.link != nil
            name = state.link?.name
            linkedAt = state.link.map { UTCTimestamp.string($0.linkedAt) }
        }
    }
}

struct SessionsResponse: Codable {
    let sessions: [SessionView]
}
