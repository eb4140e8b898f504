public import AuthOrchestrator
import BankIDCore
import CryptoCore
import FoundationEssentials
public import HTTPEngine
import Kernel
import SessionCore

/// The admin routes over users, their passkeys and sessions, and the audit trail. Handlers
/// translate HTTP to `AccountAdministration` calls and back; the rules live there.
public struct AdminAccountsAPI: Sendable {
    let authenticator: AdminAuthenticator
    let administration: AccountAdministration
    let enrollment: EnrollmentService?
    let signInPage: String

    /// Creates the routes over the administration use cases.
    /// - Parameters:
    ///   - enrollment: Issues enrollment tokens; without it the enrollment-links route is absent.
    ///   - signInPage: The public sign-in page's URL; enrollment links point there.
    public init(
        authenticator: AdminAuthenticator, administration: AccountAdministration,
        enrollment: EnrollmentService? = nil, signInPage: String = ""
    ) {
        self.authenticator = authenticator
        self.administration = administration
        self.enrollment = enrollment
        self.signInPage = signInPage
    }

    /// Adds the routes to `router`.
    public func register(on router: inout Router) {
        let admin = administration
        func add(
            _ method: HTTPMethod, _ pattern: String, _ summary: String, _ contract: RouteContract,
            _ handler: @escaping AdminHandler
        ) {
            router.addAdmin(
                method, pattern, authenticator: authenticator, summary: summary, contract: contract,
                handler: handler)
        }
        let pageQuery = [
            RouteContract.QueryParameter("cursor", "The nextCursor of the previous page"),
            RouteContract.QueryParameter(
                "limit", .string(pattern: "^[0-9]+$"), "Items per page (1-200, default 50)"),
        ]
        let userProblems = Problems.auth(.userNotFound)

        add(
            .GET, "/admin/v1/users",
            "Users by id, a page at a time; search by id, username, display name or personal number",
            RouteContract(
                query: [
                    RouteContract.QueryParameter(
                        "search", "An id, a username or display name part, or 12 digits")
                ]
                    + pageQuery,
                responses: [.json(UserList.self)], problems: Problems.auth(.invalidCursor, .invalidParameter))
        ) {
            request, _ in
            // POST /admin/v1/users/search keeps a personal number out of URLs.
            let page = try admin.listUsers(
                search: request.query["search"], cursor: request.query["cursor"],
                limit: try Self.limit(request))
            return try .json(UserList(users: page.items.map(AdminUserView.init), nextCursor: page.nextCursor))
        }
        add(
            .POST, "/admin/v1/users/search",
            "The user whose linked BankID identity is {\"personalNumber\"} (kept out of URLs and logs)",
            RouteContract(
                body: .json(PersonalNumberSearchBody.self), responses: [.json(UserList.self)],
                problems: Problems.auth(.invalidParameter))
        ) {
            request, _ in
            let body = try request.decodeJSON(PersonalNumberSearchBody.self)
            let found = try admin.user(personalNumber: body.personalNumber)
            return try .json(UserList(users: found.map { [AdminUserView($0)] } ?? [], nextCursor: nil))
        }
        add(
            .POST, "/admin/v1/users", "Create a user without a passkey (to send an enrollment link)",
            RouteContract(
                body: .json(CreateUserBody.self),
                responses: [.json(AdminUserView.self, status: 201, "Created")],
                problems: Problems.auth(
                    .invalidUsername, .invalidDisplayName, .usernameTaken, .invalidParameter))
        ) {
            request, principal in
            let body = try request.decodeJSON(CreateUserBody.self)
            let user = try admin.createUser(
                username: body.username, displayName: body.displayName, by: principal,
                context: request.clientContext)
            return try .json(AdminUserView(user), status: 201)
        }
        add(
            .GET, "/admin/v1/users/{id}", "A user with passkeys, live sessions and recent audit events",
            RouteContract(responses: [.json(UserDetailView.self)], problems: userProblems)
        ) {
            request, _ in
            let detail = try admin.userDetail(id: Self.parameter(request, "id"))
            return try .json(
                UserDetailView(
                    user: AdminUserView(detail.user), passkeys: detail.passkeys.map(PasskeyView.init),
                    sessions: detail.sessions.map { SessionView($0) },
                    recentEvents: detail.recentEvents.map(AuditEventView.init),
                    bankID: detail.identity.map(LinkedIdentityView.init), reviewAccount: detail.reviewAccount)
            )
        }
        add(
            .PATCH, "/admin/v1/users/{id}", "Disable, enable or rename a user; disabling ends every session",
            RouteContract(
                body: .json(PatchUserBody.self), responses: [.json(AdminUserView.self)],
                problems: userProblems + Problems.auth(.invalidUsername, .invalidDisplayName, .usernameTaken))
        ) {
            request, principal in
            let body = try request.decodeJSON(PatchUserBody.self)
            let user = try admin.updateUser(
                id: Self.parameter(request, "id"),
                changes: UserChanges(
                    disabled: body.disabled, username: body.username, displayName: body.displayName),
                by: principal, context: request.clientContext)
            return try .json(AdminUserView(user))
        }
        add(
            .DELETE, "/admin/v1/users/{id}", "Delete a user with every passkey and session",
            RouteContract(responses: [.noContent], problems: userProblems)
        ) {
            request, principal in
            try admin.deleteUser(
                id: Self.parameter(request, "id"), by: principal, context: request.clientContext)
            return .noContent
        }
        add(
            .GET, "/admin/v1/users/{id}/passkeys", "A user's passkeys",
            RouteContract(responses: [.json(PasskeysList.self)], problems: userProblems)
        ) { request, _ in
            try .json(
                PasskeysList(
                    passkeys: try admin.passkeys(userID: Self.parameter(request, "id")).map(PasskeyView.init))
            )
        }
        add(
            .GET, "/admin/v1/users/{id}/passkeys/{pid}", "One of a user's passkeys",
            RouteContract(
                responses: [.json(PasskeyView.self)],
                problems: userProblems + Problems.auth(.adminPasskeyNotFound))
        ) { request, _ in
            try .json(
                PasskeyView(
                    try admin.passkey(
                        userID: Self.parameter(request, "id"), credentialID: Self.parameter(request, "pid"))))
        }
        add(
            .DELETE, "/admin/v1/users/{id}/passkeys/{pid}",
            "Remove one of a user's passkeys (the last one too)",
            RouteContract(
                responses: [.noContent], problems: userProblems + Problems.auth(.adminPasskeyNotFound))
        ) {
            request, principal in
            try admin.deletePasskey(
                userID: Self.parameter(request, "id"), credentialID: Self.parameter(request, "pid"),
                by: principal,
                context: request.clientContext)
            return .noContent
        }
        add(
            .GET, "/admin/v1/users/{id}/sessions", "A user's live sessions",
            RouteContract(responses: [.json(SessionsList.self)], problems: userProblems)
        ) { request, _ in
            try .json(
                SessionsList(
                    sessions: try admin.sessions(userID: Self.parameter(request, "id")).map(
                        { SessionView($0) })))
        }
        add(
            .DELETE, "/admin/v1/users/{id}/sessions", "End every live session of a user",
            RouteContract(responses: [.json(RevokedCount.self)], problems: userProblems)
        ) {
            request, principal in
            let revoked = try admin.revokeSessions(
                userID: Self.parameter(request, "id"), by: principal, context: request.clientContext)
            return try .json(RevokedCount(revoked: revoked))
        }
        add(
            .DELETE, "/admin/v1/users/{id}/sessions/{sid}", "End one session of a user",
            RouteContract(responses: [.noContent], problems: userProblems + Problems.auth(.sessionNotFound))
        ) {
            request, principal in
            try admin.revokeSession(
                userID: Self.parameter(request, "id"), sessionID: Self.parameter(request, "sid"),
                by: principal,
                context: request.clientContext)
            return .noContent
        }
        if let enrollment {
            let page = signInPage.hasSuffix("/") ? signInPage : signInPage + "/"
            add(
                .POST, "/admin/v1/users/{id}/enrollment-links",
                "A one-time passkey enrollment link for the user (the token is shown once)",
                RouteContract(
                    body: .json(EnrollmentLinkBody.self, required: false),
                    responses: [
                        .json(EnrollmentLinkView.self, status: 201, "The link; its token is shown only here")
                    ],
                    problems: userProblems + Problems.auth(.enrollmentInvalidLifetime, .accountDisabled))
            ) { request, principal in
                let body = try request.decodeOptionalJSON(EnrollmentLinkBody.self)
                let issued = try admin.issueEnrollment(
                    userID: Self.parameter(request, "id"),
                    lifetime: body.expiresInSeconds.map(TimeInterval.init),
                    using: enrollment, by: principal, context: request.clientContext)
                // In the fragment: browsers never send it, so the token stays out of server and
                // proxy logs when the link is opened.
                return try .json(
                    EnrollmentLinkView(
                        id: issued.id, token: issued.token, url: page + "#enroll=" + issued.token,
                        expiresAt: UTCTimestamp.string(issued.expiresAt)),
                    status: 201)
            }
        }
        add(
            .GET, "/admin/v1/users/{id}/bankid/signatures",
            "The user's BankID signatures (step-ups), newest first: what was signed and its evidence",
            RouteContract(responses: [.json(SignatureList.self)], problems: userProblems)
        ) { request, _ in
            try .json(
                SignatureList(
                    signatures: try admin.signatures(userID: Self.parameter(request, "id")).map(
                        SignatureEvidenceView.init)))
        }
        add(
            .GET, "/admin/v1/bankid/signatures/{signatureId}",
            "One BankID signature's evidence (audited): the signature itself when bankid.keepSignatures",
            RouteContract(
                responses: [.json(SignatureEvidenceView.self)], problems: Problems.auth(.signatureNotFound))
        ) { request, principal in
            try .json(
                SignatureEvidenceView(
                    try admin.signature(
                        id: Self.parameter(request, "signatureId"), by: principal,
                        context: request.clientContext)))
        }
        add(
            .GET, "/admin/v1/audit", "Audit events, newest first; filter by user, type and time",
            RouteContract(
                query: [
                    RouteContract.QueryParameter("user", "Only this user's events"),
                    RouteContract.QueryParameter("type", "Only events of this type (e.g. session.created)"),
                    RouteContract.QueryParameter("from", "From this RFC 3339 time on"),
                    RouteContract.QueryParameter("to", "Until this RFC 3339 time"),
                ] + pageQuery,
                responses: [.json(AuditList.self)], problems: Problems.auth(.invalidCursor, .invalidParameter)
            )
        ) {
            request, _ in
            let query = AuditQuery(
                userID: request.query["user"], action: request.query["type"].map(AuditAction.init(rawValue:)),
                from: try Self.time(request, "from"), until: try Self.time(request, "to"))
            let page = try admin.auditEvents(
                query, cursor: request.query["cursor"], limit: try Self.limit(request))
            return try .json(
                AuditList(events: page.items.map(AuditEventView.init), nextCursor: page.nextCursor))
        }
    }

    // MARK: Request helpers

    /// Twelve digits: a search meant as a personal number. Whether it is a valid one (its check
    /// digit) is the service's check.
    private static func parameter(_ request: HTTPRequest, _ name: String) -> String {
        request.pathParameters[name] ?? ""
    }

    private static func limit(_ request: HTTPRequest) throws(AuthError) -> Int? {
        guard let text = request.query["limit"] else { return nil }
        guard let value = Int(text) else {
            throw AuthError(.invalidParameter, "limit must be a whole number")
        }
        return value
    }

    /// An RFC 3339 time from the query, with or without fractional seconds.
    private static func time(_ request: HTTPRequest, _ name: String) throws(AuthError) -> Date? {
        guard let text = request.query[name] else { return nil }
        if let date = try? Date(text, strategy: .iso8601) { return date }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) {
            return date
        }
        throw AuthError(.invalidParameter, "\(name) must be an RFC 3339 time such as 2026-01-31T12:00:00Z")
    }

}

// MARK: Bodies and views

struct EnrollmentLinkBody: OptionalJSONBody {
    var expiresInSeconds: Int?
}

/// A new enrollment link: the only time its token is shown.
struct EnrollmentLinkView: Codable {
    let id: String
    let token: String
    let url: String
    let expiresAt: String
}

struct CreateUserBody: Decodable {
    let username: String?
    let displayName: String?
}

struct PatchUserBody: Decodable {
    let disabled: Bool?
    let username: String?
    let displayName: String?
}

/// A user as administrators see it.
struct AdminUserView: Codable {
    let id: String
    let username: String?
    let displayName: String
    let createdAt: String
    let disabled: Bool
    let disabledAt: String?

    init(_ user: User) {
        id = user.id
        username = user.username
        displayName = user.displayName
        createdAt = UTCTimestamp.string(user.createdAt)
        disabled = user.disabledAt != nil
        disabledAt = user.disabledAt.map(UTCTimestamp.string)
    }
}

/// An audit event as the admin API shows it.
struct AuditEventView: Codable {
    let id: Int64?
    let at: String
    let type: String
    let actor: String
    let userId: String?
    let requestId: String?
    let ipAddress: String?
    let details: [String: String]

    init(_ event: AuditEvent) {
        id = event.id
        at = UTCTimestamp.string(event.at)
        type = event.action.rawValue
        actor = event.actor.rawValue
        userId = event.userID
        requestId = event.requestID
        ipAddress = event.ipAddress
        details = event.details
    }
}

struct UserList: Codable {
    let users: [AdminUserView]
    let nextCursor: String?
}

struct UserDetailView: Codable {
    let user: AdminUserView
    let passkeys: [PasskeyView]
    let sessions: [SessionView]
    let recentEvents: [AuditEventView]
    /// The linked BankID identity: the name BankID gave and when; null when none is linked.
    let bankID: LinkedIdentityView?
    /// Whether this is the sandboxed app-store review account.
    let reviewAccount: Bool

    enum CodingKeys: String, CodingKey {
        case user, passkeys, sessions, recentEvents, bankID = "bankId", reviewAccount
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(user, forKey: .user)
        try container.encode(passkeys, forKey: .passkeys)
        try container.encode(sessions, forKey: .sessions)
        try container.encode(recentEvents, forKey: .recentEvents)
        // Present as null, so "no identity linked" is explicit in the detail.
        try container.encode(bankID, forKey: .bankID)
        try container.encode(reviewAccount, forKey: .reviewAccount)
    }
}

struct LinkedIdentityView: Codable {
    let name: String
    let linkedAt: String
    let keyId: String

    init(_ identity: BankIDLink) {
        name = identity.name
        linkedAt = UTCTimestamp.string(identity.linkedAt)
        keyId = identity.keyID
    }
}

struct PersonalNumberSearchBody: Decodable {
    let personalNumber: String
}

struct PasskeysList: Codable {
    let passkeys: [PasskeyView]
}

struct SessionsList: Codable {
    let sessions: [SessionView]
}

struct RevokedCount: Codable {
    let revoked: Int
}

struct AuditList: Codable {
    let events: [AuditEventView]
    let nextCursor: String?
}

/// A BankID signature's evidence as administrators see it. `signature` is BankID's XML (base64),
/// present only where the deployment keeps it (`bankid.keepSignatures`); `signatureSha256`
/// always, so a copy kept elsewhere can be matched.
struct SignatureEvidenceView: Codable {
    let id: String
    let userId: String
    let sessionId: String
    let signedAt: String
    let userVisibleText: String
    let signatureSha256: String
    let signature: String?
    let ocspResponse: String?
    let bankIdIssueDate: String?
    /// Whether BankID checked an ID document (`stepUp.mrtd`); absent when BankID did not say.
    let mrtd: Bool?
    let risk: String?

    init(_ evidence: BankIDSignatureEvidence) {
        id = evidence.id
        userId = evidence.userID
        sessionId = evidence.sessionID
        signedAt = UTCTimestamp.string(evidence.signedAt)
        userVisibleText = evidence.userVisibleText
        signatureSha256 = Hex.encode(evidence.signatureSHA256)
        signature = evidence.signature
        ocspResponse = evidence.ocspResponse
        bankIdIssueDate = evidence.bankIDIssueDate
        mrtd = evidence.mrtd
        risk = evidence.risk
    }
}

struct SignatureList: Codable {
    let signatures: [SignatureEvidenceView]
}
