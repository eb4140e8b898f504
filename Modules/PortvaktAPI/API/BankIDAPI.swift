public import AuthOrchestrator
import BankIDCore
import CryptoCore
import FoundationEssentials
public import HTTPEngine
public import Kernel
import SessionCore

/// The BankID order routes: start (POST), status (GET), cancel (DELETE). Handlers translate HTTP
/// to `BankIDService` calls and back.
///
/// Starting and cancelling wait for BankID, so they are async routes: only their own connection
/// waits, never another request. The status never waits for BankID: it answers from the
/// store and leaves a due collect running in the background.
///
/// An order is bound to the client that started it: its session when signed in, otherwise a
/// random binding value the start hands out in an HttpOnly cookie (and, for native clients, in
/// the body, to send back in the `Portvakt-BankID-Binding` header). Another client presenting a
/// leaked order id gets `404 bankid.order_not_found`.
public struct BankIDAPI: Sendable {
    let service: BankIDService
    let access: AccountSessionService
    let transport: SessionTransport
    let qrRenderer: (@Sendable (String) -> String?)?
    /// Told each journey's result code once, when it is delivered (for metrics).
    let onResult: @Sendable (BankIDOutcome) -> Void

    /// The header native clients send their binding value in.
    public static let bindingHeader = "Portvakt-BankID-Binding"

    /// Creates the API.
    /// - Parameters:
    ///   - qrRenderer: draws QR data as SVG (`qrSvg`), when available.
    ///   - onResult: receives each journey's result code (`bankid.signed_in`, …) once, when the
    ///     poll that completes it delivers it.
    public init(
        service: BankIDService, access: AccountSessionService, transport: SessionTransport,
        qrRenderer: (@Sendable (String) -> String?)? = nil,
        onResult: @escaping @Sendable (BankIDOutcome) -> Void = { _ in }
    ) {
        self.onResult = onResult
        self.service = service
        self.access = access
        self.transport = transport
        self.qrRenderer = qrRenderer
    }

    /// Adds the routes. Starting orders is in the `bankid` rate class (per client IP).
    public func register(on router: inout Router) {
        router.addAsync(
            .POST, "/v1/bankid/orders", rateClass: .bankid,
            summary: "Start a BankID order: intent login, signup, link or sign; device same or other",
            contract: RouteContract(
                body: .json(StartBody.self),
                responses: [.json(StartResponse.self, status: 201, "The order, to poll and show")],
                problems: Problems.signedIn(.POST) + Self.bankIDProblems
                    + Problems.auth(
                        .methodDisabled, .signInRequired, .bankIDInvalidRequest, .bankIDAppNotAllowed,
                        .alreadyInProgress,
                        .sandboxed,
                        .intentNotSupported),
                security: .optionalSession)
        ) { request in
            let body = try request.decodeJSON(StartBody.self)
            let (intent, device, client) = (body.intent, body.device ?? .other, body.client ?? .web)
            let requester = try requester(request, signInRequired: intent == .link || intent == .sign)
            let app = BankIDAppDetails(
                appIdentifier: body.appIdentifier, deviceOS: body.deviceOS,
                deviceModelName: body.deviceModelName, deviceIdentifier: body.deviceIdentifier)
            let details = BankIDStartDetails(
                language: Self.language(request.headers["accept-language"]),
                origin: request.headers["origin"],
                deviceCookie: request.cookie(transport.bankIDDeviceCookie), app: app,
                userNonVisibleData: body.userNonVisibleData)
            let started = try await service.start(
                intent: intent, device: device, userVisibleText: body.userVisibleData, clientKind: client,
                requester: requester, context: request.clientContext, details: details)
            var response = try HTTPResponse.json(
                StartResponse(
                    orderId: started.orderID, autoStartToken: started.autoStartToken,
                    launchUrl: started.launchURL,
                    qrData: started.qrData, qrSvg: started.qrData.flatMap { qrRenderer?($0) },
                    clientBinding: client == .native ? started.newBinding : nil),
                status: 201)
            if let binding = started.newBinding {
                response.headers.add("Set-Cookie", bindingCookieHeader(binding))
            }
            if let device = started.newDeviceCookie {
                response.headers.add("Set-Cookie", deviceCookieHeader(device))
            }
            return response
        }
        // A poll that finds the order complete commits the journey's outcome (a session, a link).
        router.addBlocking(
            .GET, "/v1/bankid/orders/{orderId}",
            rateClass: .standard,
            summary: "A BankID order's status, message, QR code and, once complete, its result",
            contract: RouteContract(
                query: [
                    RouteContract.QueryParameter(
                        "nonce", "Same device: the nonce BankID returned to the page with")
                ],
                responses: [.json(StatusResponse.self)],
                problems: Problems.auth(.orderNotFound, .orderExpired, .returnMismatch, .methodDisabled),
                security: .optionalSession)
        ) { request in
            let status = try service.status(
                orderID: request.pathParameters["orderId"] ?? "",
                requester: try requester(request, signInRequired: false), returnNonce: request.query["nonce"],
                context: request.clientContext)
            let language = Self.language(request.headers["accept-language"])
            let result = status.result.map { ResultView($0) }
            // Later polls of a finished journey answer bankid.result_delivered: counted once.
            if let code = status.result?.code, code != .resultDelivered { onResult(code) }
            var response = try HTTPResponse.json(
                StatusResponse(
                    status: status.status.rawValue, hintCode: status.hintCode,
                    message: status.message.map { MessageView(code: $0.code, text: $0.text(language)) },
                    qrData: status.qrData, qrSvg: status.qrData.flatMap { qrRenderer?($0) }, result: result,
                    awaitingReturn: status.awaitingReturn ? true : nil))
            if let issued = status.result?.session, status.result?.clientKind == .web {
                response.headers.add("Set-Cookie", transport.setCookie(for: issued))
            }
            response.headers.set("Content-Language", language.rawValue)
            return response
        }
        router.addAsync(
            .DELETE, "/v1/bankid/orders/{orderId}", rateClass: .standard, summary: "Cancel a BankID order",
            contract: RouteContract(
                responses: [.noContent], problems: Self.bankIDProblems + Problems.auth(.orderNotFound),
                security: .optionalSession)
        ) { request in
            try await service.cancel(
                orderID: request.pathParameters["orderId"] ?? "",
                requester: try requester(request, signInRequired: false), context: request.clientContext)
            return .noContent
        }
    }

    // MARK: Helpers

    /// A route that waits on BankID: BankID failing (the detail names the RFA to show), or the
    /// server stopping while it waits.
    private static let bankIDProblems =
        Problems.auth(.bankIDUnavailable) + [RouteContract.Problem(HTTPError.serverStopping)]

    /// The request's session (when it presents a usable one) and binding value.
    private func requester(_ request: HTTPRequest, signInRequired: Bool) throws -> BankIDRequester {
        // Never rotated here: the order is bound to the session the request presents. A stale
        // session cookie does not stop an anonymous login from starting; link and sign need a
        // usable one, so a presented session that failed answers why (`session.expired`, …).
        // No session at all is the use case's rule and code (`bankid.sign_in_required`), not
        // the route's: the route does not answer for it.
        let (signedIn, failure) = try transport.optionallySignedIn(request, access: access)
        if signInRequired, signedIn == nil, let failure { throw failure }
        return BankIDRequester(
            session: signedIn?.session, user: signedIn?.user, binding: request.bankIDBinding(transport))
    }

    private func bindingCookieHeader(_ value: String) -> String {
        // Scoped to the order routes, half an hour (longer than any order lives).
        var cookie = "\(transport.bankIDBindingCookie)=\(value); Path=/; Max-Age=1800; HttpOnly; SameSite=Lax"
        if transport.cookieSecure { cookie += "; Secure" }
        return cookie
    }

    private func deviceCookieHeader(_ value: String) -> String {
        // The browser's stable BankID device identifier (BankID gets its keyed hash): a year,
        // sent only to Portvakt, never readable by scripts.
        var cookie =
            "\(transport.bankIDDeviceCookie)=\(value); Path=/; Max-Age=\(Self.deviceCookieLifetime); HttpOnly; SameSite=Lax"
        if transport.cookieSecure { cookie += "; Secure" }
        return cookie
    }

    /// The device cookie's lifetime: a year, in seconds.
    static let deviceCookieLifetime = 31_536_000

    /// Swedish or English from Accept-Language (the first of the two by weight); Swedish when
    /// neither is asked for, as BankID's own texts are.
    static func language(_ header: String?) -> MessageLanguage {
        guard let header else { return .swedish }
        var best: (MessageLanguage, Double)?
        for part in header.split(separator: ",") {
            let fields = part.split(separator: ";").map { $0.trimmingWhitespace() }
            guard let tag = fields.first?.lowercased() else { continue }
            let primary = tag.split(separator: "-").first.map(String.init) ?? tag
            guard let language = MessageLanguage(rawValue: primary) else { continue }
            var weight = 1.0
            for field in fields.dropFirst() where field.hasPrefix("q=") {
                weight = Double(field.dropFirst(2)) ?? 0
            }
            if weight > 0, weight > (best?.1 ?? 0) { best = (language, weight) }
        }
        return best?.0 ?? .swedish
    }
}

// MARK: Bodies

/// An order to start: `device` is `other` (a QR code) and `client` is `web` unless given. A
/// native client names its app and device (`appIdentifier` from `bankid.appIdentifiers`,
/// `deviceOS`, `deviceModelName`, `deviceIdentifier`); a sign may carry `userNonVisibleData`.
struct StartBody: Decodable {
    let intent: BankIDOrderIntent
    let device: BankIDDevice?
    let userVisibleData: String?
    let client: ClientKind?
    let userNonVisibleData: String?
    let appIdentifier: String?
    let deviceOS: String?
    let deviceModelName: String?
    let deviceIdentifier: String?
}

struct StartResponse: Codable {
    let orderId: String
    let autoStartToken: String?
    let launchUrl: String?
    let qrData: String?
    let qrSvg: String?
    let clientBinding: String?
}

struct MessageView: Codable {
    let code: String
    let text: String
}

struct ResultView: Codable {
    let code: String
    let user: UserView?
    let session: SessionGrant?
    let suggestPasskey: Bool?
    let steppedUpUntil: String?
    let signupAvailable: Bool?
    /// Recovery: the one-time token for POST /v1/passkeys/registration/initialize.
    let enrollmentToken: String?
    /// A result that opened a session: the account's passkeys and names, for the Signal API.
    let signals: SignalsView?

    init(_ result: BankIDFlowResult) {
        enrollmentToken = result.enrollmentToken
        code = result.code.rawValue
        user = result.user.map(UserView.init)
        session = result.session.map { SessionGrant($0, client: result.clientKind) }
        suggestPasskey = result.suggestPasskey ? true : nil
        steppedUpUntil = result.steppedUpUntil.map(UTCTimestamp.string)
        signupAvailable = result.code == .noAccount ? result.signupAvailable : nil
        signals = result.signals.map(SignalsView.init)
    }
}

struct StatusResponse: Codable {
    let status: String
    let hintCode: String?
    let message: MessageView?
    let qrData: String?
    let qrSvg: String?
    let result: ResultView?
    /// Complete in the app; the result waits for the poll with BankID's return nonce.
    let awaitingReturn: Bool?
}

extension SessionTransport {
    /// The BankID binding cookie's name: `__Host-` prefixed when the session cookie is Secure.
    var bankIDBindingCookie: String { cookieSecure ? "__Host-portvakt_bankid" : "portvakt_bankid" }
    /// The BankID device cookie's name: `__Host-` prefixed when the session cookie is Secure.
    var bankIDDeviceCookie: String { cookieSecure ? "__Host-portvakt_device" : "portvakt_device" }
}

extension HTTPRequest {
    /// The BankID binding value the client sent: the header (native clients), else the cookie.
    func bankIDBinding(_ transport: SessionTransport) -> String? {
        headers[BankIDAPI.bindingHeader] ?? cookie(transport.bankIDBindingCookie)
    }
}
