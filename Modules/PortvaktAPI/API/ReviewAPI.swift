public import AuthOrchestrator
import FoundationEssentials
public import HTTPEngine
import SessionCore

/// POST /v1/review/login: the app-store reviewer's sign-in to the one sandboxed review account
/// (`reviewAccount` in the configuration). Answers like a passkey login: the user and a session
/// (the cookie for web clients, the token in the body for native ones).
public struct ReviewAPI: Sendable {
    let service: ReviewLoginService
    let transport: SessionTransport

    /// Creates the API.
    public init(service: ReviewLoginService, transport: SessionTransport) {
        self.service = service
        self.transport = transport
    }

    /// Adds the route, in the `auth` rate class (per client IP) like every other login.
    public func register(on router: inout Router) {
        router.addBlocking(
            .POST, "/v1/review/login", rateClass: .auth,
            summary: "The app-store reviewer's sign-in to the sandboxed review account (when enabled)",
            contract: RouteContract(
                body: .json(LoginBody.self),
                responses: [.json(LoginResponse.self, "The user and the new session")],
                problems: Problems.auth(.reviewLoginFailed, .methodDisabled, .accountDisabled))
        ) { request in
            let body = try request.decodeJSON(LoginBody.self)
            let client = body.client ?? .web
            let (user, issued) = try service.login(
                username: body.username, code: body.code, clientKind: client, context: request.clientContext)
            var response = HTTPResponse.json(
                writing: LoginResponse(user: UserView(user), session: SessionGrant(issued, client: client)))
            if client == .web { response.headers.add("Set-Cookie", transport.setCookie(for: issued)) }
            return response
        }
    }

    struct LoginBody: Decodable {
        let username: String
        let code: String
        /// `web` unless given.
        let client: ClientKind?
    }
}
