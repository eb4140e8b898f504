public import CryptoCore
import Foundation
public import HTTPEngine
public import Kernel
public import SessionCore
public import Storage

/// The public listener's routes that exist independently of any login method: the signed-in
/// user, sessions, logout and operations. Login methods add their routes beside these.
public struct PublicAPI: Sendable {
    let sessions: SessionService
    let users: any UserStore
    let audit: any AuditStore
    let transport: SessionTransport
    let clock: any WallClock
    let readiness: @Sendable () throws -> [String]
    /// The session's BankID step-up (a signature) and the user's linked identity; nil without BankID.
    let stepUps: (any BankIDIdentityStore)?

    /// Creates the API over its services. `readiness` throws when the server cannot serve
    /// (for example the database does not answer); `stepUps` lets GET /v1/me say until when the
    /// session is stepped up and whether a BankID identity is linked.
    public init(
        sessions: SessionService, users: any UserStore, audit: any AuditStore,
        transport: SessionTransport, clock: any WallClock,
        readiness: @escaping @Sendable () throws -> [String], stepUps: (any BankIDIdentityStore)? = nil
    ) {
        self.sessions = sessions
        self.users = users
        self.audit = audit
        self.transport = transport
        self.clock = clock
        self.readiness = readiness
        self.stepUps = stepUps
    }

    /// Adds the routes to `router`.
    public func register(on router: inout Router) {
        router.add(.GET, "/health/alive", rateClass: .unlimited, summary: "Liveness: the process answers") {
            _ in
            HealthResponse.alive
        }
        router.add(.GET, "/health/ready", rateClass: .unlimited, summary: "Readiness: the database answers") {
            _ in
            let warnings: [String]
            do {
                warnings = try readiness()
            } catch {
                throw HTTPError(
                    status: 503, code: "health.not_ready", title: "Not ready",
                    detail: "A dependency of the server is not available.")
            }
            return HealthResponse.ready(warnings: warnings)
        }
        router.add(
            .GET, "/v1/me", rateClass: .standard, summary: "The signed-in user and the current session"
        ) { request in
            let (auth, user) = try currentUser(request)
            // Stepped up while a BankID signature made in this session is still within its window.
            let until = try stepUps?.stepUp(sessionID: auth.session.id)?.validUntil
            // Whether BankID is linked (and the name BankID gave), so a client can offer linking.
            let bankID = try stepUps.map { MeResponse.BankIDLink(try $0.linkedIdentity(userID: user.id)) }
            return try .json(
                MeResponse(
                    user: UserView(user), session: SessionView(auth.session, current: true),
                    steppedUpUntil: until.flatMap { $0 > clock.now() ? UTCTimestamp.string($0) : nil },
                    bankId: bankID))
        }
        router.add(.POST, "/v1/logout", rateClass: .standard, summary: "End the current session") { request in
            let (auth, user) = try currentUser(request)
            try sessions.revoke(sessionID: auth.session.id, ofUser: user.id)
            try record(
                .sessionLogout, user: user.id, request: request, details: ["sessionId": auth.session.id])
            var response = HTTPResponse.noContent
            if auth.source == .cookie { response.headers.add("Set-Cookie", transport.clearCookie) }
            return response
        }
        router.add(
            .GET, "/v1/me/sessions", rateClass: .standard, summary: "The signed-in user's live sessions"
        ) { request in
            let (auth, user) = try currentUser(request)
            let list = try sessions.list(userID: user.id).map {
                SessionView($0, current: $0.id == auth.session.id)
            }
            return try .json(SessionsResponse(sessions: list))
        }
        router.add(
            .DELETE, "/v1/me/sessions/{id}", rateClass: .standard,
            summary: "End one of the signed-in user's sessions"
        ) {
            request in
            let (auth, user) = try currentUser(request)
            let id = request.pathParameters["id"] ?? ""
            try sessions.revoke(sessionID: id, ofUser: user.id)
            try record(.sessionRevokedByUser, user: user.id, request: request, details: ["sessionId": id])
            var response = HTTPResponse.noContent
            if id == auth.session.id, auth.source == .cookie {
                response.headers.add("Set-Cookie", transport.clearCookie)
            }
            return response
        }
    }

    /// The session and its user, refusing disabled or deleted accounts.
    private func currentUser(_ request: HTTPRequest) throws -> (AuthenticatedSession, User) {
        try sessions.currentUser(request, transport: transport, users: users)
    }

    private func record(_ action: AuditAction, user: String, request: HTTPRequest, details: [String: String])
        throws
    {
        _ = try audit.appendAudit(
            AuditEvent(
                id: nil, at: clock.now(), action: action, actor: .user(user), userID: user,
                requestID: request.requestID, ipAddress: request.clientIP, details: details))
    }
}

/// The health routes' answers, encoded once: liveness is the hottest route a load balancer hits.
enum HealthResponse {
    static let alive = HTTPResponse(
        status: 200, headers: ["Content-Type": "application/json"], body: Array(#"{"status":"alive"}"#.utf8))
    static let ready = HTTPResponse(
        status: 200, headers: ["Content-Type": "application/json"], body: Array(#"{"status":"ready"}"#.utf8))

    /// Ready, with what an operator should attend to (a certificate near its expiry) when any.
    static func ready(warnings: [String]) -> HTTPResponse {
        guard !warnings.isEmpty else { return ready }
        var writer = JSONWriter()
        writer.object { object in
            object.member("status", "ready")
            object.key("warnings")
            object.array { array in
                for warning in warnings { array.string(warning) }
            }
        }
        return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: writer.bytes)
    }
}

/// A user as the public API shows it.
struct UserView: JSONWritable {
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
struct SessionView: Encodable {
    let id: String
    /// Whether it is the session of the request; absent where that means nothing (the admin API).
    let current: Bool?
    let clientKind: String
    let authMethod: String
    let createdAt: String
    let lastSeenAt: String
    let expiresAt: String
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
        userAgent = session.userAgent
        ipAddress = session.ipAddress
    }
}

struct MeResponse: Encodable {
    let user: UserView
    let session: SessionView
    /// Until when the session is stepped up by a BankID signature; absent when it is not.
    let steppedUpUntil: String?
    /// The user's BankID link; absent when the server has no BankID.
    let bankId: BankIDLink?

    /// Whether a BankID identity is linked to the account: its name and link time, never a number.
    struct BankIDLink: Encodable {
        let linked: Bool
        let name: String?
        let linkedAt: String?

        init(_ identity: LinkedIdentity?) {
            linked = identity != nil
            name = identity?.name
            linkedAt = identity.map { UTCTimestamp.string($0.linkedAt) }
        }
    }
}

struct SessionsResponse: Encodable {
    let sessions: [SessionView]
}
