public import AuthOrchestrator
import BankIDCore
import CryptoCore
import FoundationEssentials
public import HTTPEngine
import Kernel

/// An admin handler that awaits something slow (BankID): it runs only after the token was
/// checked, as an async route, so only its own connection waits.
public typealias AsyncAdminHandler = @Sendable (HTTPRequest, AdminPrincipal) async throws -> HTTPResponse

extension Router {
    /// Registers an async admin route: as ``addAdmin(_:_:authenticator:summary:contract:requires:rateClass:handler:)``,
    /// as an async route (only its connection waits while the handler awaits).
    public mutating func addAdminAsync(
        _ method: HTTPMethod, _ pattern: String, authenticator: AdminAuthenticator, summary: String,
        contract: RouteContract, handler: @escaping AsyncAdminHandler
    ) {
        let needed = AdminAuthenticator.scope(for: method)
        var contract = contract
        contract.security = .adminToken
        contract.roles = [needed.rawValue]
        contract.problems = Problems.admin(requires: needed) + contract.problems
        addAsync(method, pattern, rateClass: .admin, summary: summary, contract: contract) { request in
            let principal = try authenticator.authorize(request, requires: needed)
            return try await handler(request, principal)
        }
    }
}

/// The support desk's BankID identity check by phone, on the admin listener only: start a
/// /phone/auth (or /phone/sign) for an account, poll it, cancel it. The answer is whether the
/// person who completed it is the account's linked identity, never who that person is.
public struct AdminBankIDAPI: Sendable {
    let authenticator: AdminAuthenticator
    let verifications: BankIDPhoneVerificationService

    /// Creates the routes over the phone verification use case.
    public init(authenticator: AdminAuthenticator, verifications: BankIDPhoneVerificationService) {
        self.authenticator = authenticator
        self.verifications = verifications
    }

    /// Adds the routes to `router`.
    public func register(on router: inout Router) {
        let service = verifications
        let startProblems =
            Problems.auth(.userNotFound, .bankIDNotLinked, .invalidParameter, .bankIDInvalidRequest)
            + Self.bankIDProblems + Problems.auth(.alreadyInProgress)
        router.addAdminAsync(
            .POST, "/admin/v1/users/{id}/bankid/phone-verifications", authenticator: authenticator,
            summary:
                "Start a BankID phone identification (phone/auth) of the caller, to the personal number they state",
            contract: RouteContract(
                body: .json(PhoneAuthBody.self),
                responses: [.json(PhoneVerificationView.self, status: 201, "Started; poll it")],
                problems: startProblems)
        ) { request, principal in
            let body = try request.decodeJSON(PhoneAuthBody.self)
            let started = try await service.start(
                userID: request.pathParameters["id"] ?? "", kind: .auth,
                callInitiator: body.callInitiator.value, personalNumber: body.personalNumber,
                userVisibleText: nil, by: principal, context: request.clientContext)
            return try .json(PhoneVerificationView(started, request), status: 201)
        }
        router.addAdminAsync(
            .POST, "/admin/v1/users/{id}/bankid/phone-signatures", authenticator: authenticator,
            summary: "Start a BankID phone signature (phone/sign): the caller confirms userVisibleData",
            contract: RouteContract(
                body: .json(PhoneSignBody.self),
                responses: [.json(PhoneVerificationView.self, status: 201, "Started; poll it")],
                problems: startProblems)
        ) { request, principal in
            let body = try request.decodeJSON(PhoneSignBody.self)
            let started = try await service.start(
                userID: request.pathParameters["id"] ?? "", kind: .sign,
                callInitiator: body.callInitiator.value, personalNumber: body.personalNumber,
                userVisibleText: body.userVisibleData, by: principal, context: request.clientContext)
            return try .json(PhoneVerificationView(started, request), status: 201)
        }
        router.addAdmin(
            .GET, "/admin/v1/bankid/phone-verifications/{verificationId}", authenticator: authenticator,
            summary:
                "A phone verification: pending (hint, message), complete (verified or not), failed (reason)",
            contract: RouteContract(
                responses: [.json(PhoneVerificationView.self)],
                problems: Problems.auth(.verificationNotFound, .bankIDUnavailable))
        ) { request, _ in
            let status = try service.status(
                id: request.pathParameters["verificationId"] ?? "", context: request.clientContext)
            return try .json(PhoneVerificationView(status, request))
        }
        router.addAdminAsync(
            .DELETE, "/admin/v1/bankid/phone-verifications/{verificationId}", authenticator: authenticator,
            summary: "Cancel a pending phone verification (BankID is told); an ended one is shown as it is",
            contract: RouteContract(
                responses: [.json(PhoneVerificationView.self)],
                problems: Problems.auth(.verificationNotFound) + Self.bankIDProblems)
        ) { request, principal in
            let status = try await service.cancel(
                id: request.pathParameters["verificationId"] ?? "", by: principal,
                context: request.clientContext)
            return try .json(PhoneVerificationView(status, request))
        }
    }

    /// A route that waits on BankID: BankID failing, or the server stopping while it waits.
    private static let bankIDProblems =
        Problems.auth(.bankIDUnavailable) + [RouteContract.Problem(HTTPError.serverStopping)]
}

// MARK: Bodies and views

/// Who called whom, as BankID spells it (exact case).
enum CallInitiatorValue: String, Codable, CaseIterable {
    case rp = "RP"
    case user

    var value: CallInitiator { self == .rp ? .rp : .user }
}

/// POST …/bankid/phone-verifications.
struct PhoneAuthBody: Decodable {
    let callInitiator: CallInitiatorValue
    /// The personal number the caller states (12 digits); sent to BankID, never stored or shown.
    let personalNumber: String
}

/// POST …/bankid/phone-signatures.
struct PhoneSignBody: Decodable {
    let callInitiator: CallInitiatorValue
    let personalNumber: String
    /// The text the caller confirms in their BankID app.
    let userVisibleData: String
}

/// A phone verification as the agent sees it: nothing about who completed it.
struct PhoneVerificationView: Codable {
    let id: String
    let kind: BankIDPhoneVerificationKind
    let userId: String
    let callInitiator: CallInitiatorValue
    /// pending, complete, failed or cancelled.
    let status: String
    /// True only when complete by the account's linked BankID identity.
    let verified: Bool
    let hintCode: String?
    let message: MessageView?
    let reason: BankIDPhoneFailureReason?
    /// Signatures, once complete: whether BankID's signature came with it.
    let signatureReceived: Bool?
    let startedAt: String
    let finishedAt: String?
    let startedBy: String

    init(_ status: BankIDPhoneVerificationStatus, _ request: HTTPRequest) {
        let language = BankIDAPI.language(request.headers["accept-language"])
        id = status.id
        kind = status.kind
        userId = status.userID
        callInitiator = status.callInitiator == .rp ? .rp : .user
        self.status = status.status.rawValue
        verified = status.verified
        hintCode = status.hintCode
        message = status.message.map { MessageView(code: $0.code, text: $0.text(language)) }
        reason = status.reason
        signatureReceived = status.signatureReceived
        startedAt = UTCTimestamp.string(status.startedAt)
        finishedAt = status.finishedAt.map(UTCTimestamp.string)
        startedBy = "admin:" + status.startedBy
    }
}
