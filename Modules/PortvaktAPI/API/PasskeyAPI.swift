public import AuthOrchestrator
import CryptoCore
import FoundationEssentials
public import HTTPEngine
import Kernel
import PasskeyCore
import SessionCore

/// What the /.well-known documents publish, from configuration.
public struct WellKnownDocuments: Sendable {
    /// One Android app: its package name and signing-certificate fingerprints.
    public struct AndroidApp: Sendable {
        /// The application id.
        public var package: String
        /// SHA-256 fingerprints, "AB:CD:…".
        public var sha256Fingerprints: [String]

        /// Creates an entry.
        public init(package: String, sha256Fingerprints: [String]) {
            self.package = package
            self.sha256Fingerprints = sha256Fingerprints
        }
    }

    /// "TEAMID.bundle.id" for apple-app-site-association webcredentials.
    public var appleAppIDs: [String]
    /// Apps for assetlinks.json.
    public var androidApps: [AndroidApp]
    /// Origins for /.well-known/webauthn (Related Origin Requests).
    public var relatedOrigins: [String]

    /// Creates the documents' content; empty lists make the documents 404.
    public init(appleAppIDs: [String] = [], androidApps: [AndroidApp] = [], relatedOrigins: [String] = []) {
        self.appleAppIDs = appleAppIDs
        self.androidApps = androidApps
        self.relatedOrigins = relatedOrigins
    }
}

/// The passkey routes: the two ceremonies, the signed-in user's passkeys, the methods list and
/// the well-known documents. Handlers translate HTTP to the passkey use cases and back.
public struct PasskeyAPI: Sendable {
    let registration: PasskeyRegistration
    let passkeys: PasskeyService
    let access: AccountSessionService
    let transport: SessionTransport
    let wellKnown: WellKnownDocuments
    /// BankID's switches, reported by GET /v1/methods beside the passkey ones; nil omits them.
    let bankIDPolicy: BankIDPolicy?

    /// Creates the API over the passkey use cases.
    /// - Parameter bankIDPolicy: BankID's switches for GET /v1/methods; nil when BankID is off.
    public init(
        registration: PasskeyRegistration, passkeys: PasskeyService, access: AccountSessionService,
        transport: SessionTransport, wellKnown: WellKnownDocuments, bankIDPolicy: BankIDPolicy?
    ) {
        self.registration = registration
        self.passkeys = passkeys
        self.access = access
        self.transport = transport
        self.wellKnown = wellKnown
        self.bankIDPolicy = bankIDPolicy
    }

    /// Adds the routes to `router`. The four ceremony routes are in the `auth` rate class, so
    /// issuing challenges is limited per client address.
    public func register(on router: inout Router) {
        router.addBlocking(
            .POST, "/v1/passkeys/registration/initialize", rateClass: .auth,
            summary: "Creation options: a new passkey for the signed-in user, or a new account",
            contract: RouteContract(
                body: .json(RegistrationInitializeBody.self, required: false),
                responses: [.json(described: CreationOptionsSchema.self)],
                problems: Problems.signedIn(.POST)
                    + Problems.auth(
                        .passkeyDisabled, .signupDisabled, .idSwitchingRefused, .invalidUsername,
                        .invalidDisplayName, .usernameTaken, .enrollmentInvalid, .conditionalNotAllowed),
                security: .optionalSession)
        ) { request in
            let body = try request.decodeOptionalJSON(RegistrationInitializeBody.self)
            return Self.optionsResponse(
                try registration.start(
                    RegistrationRequest(
                        username: body.username, displayName: body.displayName,
                        enrollmentToken: body.enrollmentToken, conditional: body.mediation == .conditional),
                    by: registrant(request)))
        }
        router.addBlocking(
            .POST, "/v1/passkeys/registration/finalize", rateClass: .auth,
            summary: "Verify a RegistrationResponseJSON; a session when the account is new",
            contract: RouteContract(
                body: .json(described: RegistrationFinalizeSchema.self),
                responses: [
                    .json(
                        RegistrationResponse.self, status: 201, "The new passkey; a session for a new account"
                    )
                ],
                problems: Problems.signedIn(.POST) + Problems.passkeyVerification
                    + Problems.auth(
                        .passkeyDisabled, .signupDisabled, .challengeInvalid, .credentialExists,
                        .usernameTaken,
                        .invalidPasskeyName, .enrollmentInvalid),
                security: .optionalSession)
        ) { request in
            let body = try FinalizeBody(request)
            let completed = try registration.finish(
                challengeID: body.challengeID, response: body.credential, name: body.name,
                clientKind: body.client,
                by: registrant(request), context: request.clientContext)
            var response = try HTTPResponse.json(
                RegistrationResponse(
                    user: UserView(completed.user), passkey: PasskeyView(completed.passkey),
                    session: completed.session.map { SessionGrant($0, client: body.client) },
                    recovery: completed.recovery.map(RecoveryView.init),
                    signals: completed.signals.map(SignalsView.init)),
                status: 201)
            if let session = completed.session, body.client == .web { setCookie(session, on: &response) }
            return response
        }
        router.add(
            .POST, "/v1/passkeys/login/initialize", rateClass: .auth,
            summary: "Request options: {} for discoverable and autofill login, or a username",
            contract: RouteContract(
                body: .json(LoginInitializeBody.self, required: false),
                responses: [.json(described: RequestOptionsSchema.self)],
                problems: Problems.auth(.passkeyDisabled, .invalidUsername))
        ) { request in
            let body = try request.decodeOptionalJSON(LoginInitializeBody.self)
            return Self.optionsResponse(try passkeys.startLogin(username: body.username))
        }
        router.addAsync(
            .POST, "/v1/passkeys/login/finalize", rateClass: .auth,
            summary: "Verify an AuthenticationResponseJSON and open a session",
            contract: RouteContract(
                body: .json(described: LoginFinalizeSchema.self),
                responses: [.json(LoginResponse.self, "The user and the new session")],
                problems: Problems.passkeyVerification
                    + Problems.auth(.passkeyDisabled, .challengeInvalid, .loginFailed, .accountDisabled),
                security: .optionalSession)
        ) { request in
            // Async for its commit: on a worker pool the request is suspended until the group
            // commit that includes it, instead of holding the worker (GroupCommit.writeAsync).
            // The credential is built by the envelope's parse and read from that value: parsed once.
            let body = try FinalizeBody(request, buildingCredential: true)
            let replacing = try transport.optionallySignedIn(request, access: access).signedIn?.current.id
            let completed = try await passkeys.finishLogin(
                challengeID: body.challengeID, credential: body.credentialJSON, clientKind: body.client,
                replacingSessionID: replacing, context: request.clientContext)
            var response = HTTPResponse.json(
                writing: LoginResponse(
                    user: UserView(completed.user),
                    session: SessionGrant(completed.session, client: body.client),
                    signals: completed.signals.map(SignalsView.init)))
            if body.client == .web { setCookie(completed.session, on: &response) }
            return response
        }
        router.addSignedIn(
            .GET, "/v1/me/passkeys", summary: "The signed-in user's passkeys",
            contract: RouteContract(responses: [.json(PasskeysResponse.self)]), transport: transport,
            access: access
        ) { _, auth in
            let user = auth.signedIn.user
            let list = try passkeys.listPasskeys(userID: user.id)
            return try .json(
                PasskeysResponse(
                    passkeys: list.map(PasskeyView.init),
                    signals: SignalsView(
                        passkeys.signals.acceptedCredentials(
                            user, credentialIDs: list.map(\.credentialID), withDetails: true))))
        }
        router.addSignedIn(
            .PATCH, "/v1/me/passkeys/{id}", summary: "Rename one of the signed-in user's passkeys",
            contract: RouteContract(
                body: .json(RenameBody.self), responses: [.json(PasskeyView.self)],
                problems: Problems.auth(.passkeyNotFound, .invalidPasskeyName)),
            transport: transport, access: access, commits: true
        ) { request, auth in
            let body = try request.decodeJSON(RenameBody.self)
            let renamed = try passkeys.renamePasskey(
                userID: auth.signedIn.user.id, credentialID: request.pathParameters["id"] ?? "",
                name: body.name,
                context: request.clientContext)
            return try .json(PasskeyView(renamed))
        }
        router.addSignedIn(
            .DELETE, "/v1/me/passkeys/{id}",
            summary: "Remove one of the signed-in user's passkeys (never the last; needs a recent sign-in)",
            contract: RouteContract(
                responses: [.json(SignalsResponse.self, "The passkeys left, for the Signal API")],
                problems: Problems.auth(.passkeyNotFound, .lastPasskey, .reauthenticationRequired)),
            transport: transport, access: access, commits: true
        ) { request, auth in
            let left = try passkeys.deletePasskey(
                try access.recentlyAuthenticated(auth.signedIn),
                credentialID: request.pathParameters["id"] ?? "",
                context: request.clientContext)
            return try .json(SignalsResponse(signals: left.map(SignalsView.init)))
        }
        let policy = passkeys.policy
        let bankID = bankIDPolicy.map(MethodsResponse.BankIDSwitches.init)
        router.add(
            .GET, "/v1/methods", rateClass: .standard, summary: "The sign-in methods this deployment offers",
            contract: RouteContract(responses: [.json(MethodsResponse.self)])
        ) { _ in
            try .json(
                MethodsResponse(
                    passkey: .init(enabled: policy.enabled, signup: policy.enabled && policy.signupEnabled),
                    bankid: bankID))
        }
        registerWellKnown(on: &router)
    }

    /// The well-known documents, encoded once; a document with nothing to say is a 404.
    private func registerWellKnown(on router: inout Router) {
        let apple =
            wellKnown.appleAppIDs.isEmpty
            ? nil : try? JSONCoding.encoder.encode(AppleAppSiteAssociation(apps: wellKnown.appleAppIDs))
        let assetLinks =
            wellKnown.androidApps.isEmpty
            ? nil : try? JSONCoding.encoder.encode(wellKnown.androidApps.map(AssetLink.init))
        let related =
            wellKnown.relatedOrigins.isEmpty
            ? nil : try? JSONCoding.encoder.encode(RelatedOrigins(origins: wellKnown.relatedOrigins))
        for (path, document, summary, answer) in [
            (
                "/.well-known/apple-app-site-association", apple, "iOS associated domains (webcredentials)",
                RouteContract.Response.json(AppleAppSiteAssociation.self)
            ),
            (
                "/.well-known/assetlinks.json", assetLinks, "Android Digital Asset Links (get_login_creds)",
                .json([AssetLink].self)
            ),
            ("/.well-known/webauthn", related, "WebAuthn related origins", .json(RelatedOrigins.self)),
        ] {
            let bytes = document.map { [UInt8]($0) }
            let contract = RouteContract(
                responses: [answer], problems: [RouteContract.Problem(HTTPError.notFound())])
            router.add(.GET, path, rateClass: .standard, summary: summary, contract: contract) { _ in
                guard let bytes else { throw HTTPError.notFound() }
                return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: bytes)
            }
        }
    }

    // MARK: Helpers

    /// Who a registration request comes from: its usable session (or why its session failed)
    /// and its BankID binding value.
    private func registrant(_ request: HTTPRequest) throws -> Registrant {
        let (signedIn, failure) = try transport.optionallySignedIn(request, access: access)
        return Registrant(
            signedIn: signedIn, sessionFailure: failure, binding: request.bankIDBinding(transport))
    }

    private func setCookie(_ issued: IssuedSession, on response: inout HTTPResponse) {
        response.headers.add("Set-Cookie", transport.setCookie(for: issued))
    }

    /// `{"challengeId": …, "publicKey": <options JSON>}`: the options are PasskeyCore's bytes,
    /// passed through unchanged.
    static func optionsResponse(_ issued: IssuedChallenge) -> HTTPResponse {
        let head = #"{"challengeId":""#
        let middle = #"","publicKey":"#
        // One buffer of the final size: concatenating five arrays reallocated it on the way.
        var body: [UInt8] = []
        body.reserveCapacity(
            head.utf8.count + issued.challengeID.utf8.count + middle.utf8.count + issued.optionsJSON.count + 1
        )
        body.append(contentsOf: head.utf8)
        body.append(contentsOf: issued.challengeID.utf8)
        body.append(contentsOf: middle.utf8)
        body.append(contentsOf: issued.optionsJSON)
        body.append(UInt8(ascii: "}"))
        return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: body)
    }
}

// MARK: Bodies

struct RegistrationInitializeBody: OptionalJSONBody {
    var username: String?
    var displayName: String?
    var enrollmentToken: String?
    /// `conditional`: the client runs the options with `mediation: "conditional"` (an automatic
    /// passkey upgrade); absent for every other registration.
    var mediation: RegistrationMediation?
}

/// The one `mediation` a registration may ask for; any other value is a malformed body.
enum RegistrationMediation: String, Codable, CaseIterable {
    case conditional
}

struct LoginInitializeBody: OptionalJSONBody {
    var username: String?
}

struct RenameBody: Decodable {
    let name: String
}

/// A finalize body: the challenge id, the credential as raw JSON for PasskeyCore's strict parser
/// (or, for the login, as the value the envelope's parse built), an optional passkey name and the
/// client kind ("web" by default).
struct FinalizeBody {
    let challengeID: String
    let credential: [UInt8]
    let credentialJSON: CredentialJSON
    let name: String?
    let client: ClientKind

    /// - Parameter buildingCredential: build the credential's value in the envelope's parse (for
    ///   `AuthenticationResponseJSON(_:)`) instead of only checking it; the same bodies are refused.
    init(_ request: HTTPRequest, buildingCredential: Bool = false) throws(HTTPError) {
        try request.requireJSONBody()
        // The envelope is read by the same strict parser as decodeJSON's (Kernel's StrictJSON, via
        // PasskeyCore), so a repeated member, in the envelope or in the credential, is refused here too.
        let envelope: CredentialEnvelope
        do {
            envelope = try CredentialEnvelope(json: request.body, buildingCredential: buildingCredential)
        } catch {
            throw HTTPError.malformedJSON(
                detail: "Expected {\"challengeId\": string, \"credential\": object, \"name\"?, \"client\"?}.")
        }
        guard let challengeID = envelope.strings["challengeId"] else {
            throw HTTPError.malformedJSON(detail: "\"challengeId\" is required.")
        }
        guard let kind = ClientKind(rawValue: envelope.strings["client"] ?? "web") else {
            throw HTTPError.malformedJSON(detail: "\"client\" is \"web\" or \"native\".")
        }
        self.challengeID = challengeID
        self.credential = envelope.credential
        self.credentialJSON = envelope.credentialJSON
        self.name = envelope.strings["name"]
        self.client = kind
    }
}

/// A body whose members are all optional, so that no body and `{}` mean the same: `init()`.
protocol OptionalJSONBody: Decodable {
    init()
}

extension HTTPRequest {
    /// Decodes a JSON body where an empty body means `{}`.
    ///
    /// `{}` itself (the discoverable login's body) skips the decoder: it is the most common body
    /// on the sign-in path.
    func decodeOptionalJSON<T: OptionalJSONBody>(_ type: T.Type) throws(HTTPError) -> T {
        if body.isEmpty { return T() }
        if body.count <= 16, Self.isJSONMediaType(headers["Content-Type"]), Self.isEmptyObject(body) {
            return T()
        }
        return try decodeJSON(type)
    }

    /// Whether `body` is `{}` with JSON whitespace (space, tab, LF, CR) anywhere around or inside;
    /// read in place, where filtering it built two arrays per login.
    static func isEmptyObject(_ body: [UInt8]) -> Bool {
        // 0: nothing yet, 1: the `{`, 2: the `}` too.
        var seen = 0
        for byte in body {
            switch byte {
            case 0x20, 0x09, 0x0a, 0x0d: continue
            case UInt8(ascii: "{") where seen == 0: seen = 1
            case UInt8(ascii: "}") where seen == 1: seen = 2
            default: return false
            }
        }
        return seen == 2
    }
}

// MARK: Views

/// A passkey as its owner sees it: never the public key.
struct PasskeyView: Codable {
    let id: String
    let name: String
    let provider: String?
    let aaguid: String
    let createdAt: String
    let lastUsedAt: String?
    let backupEligible: Bool
    let backedUp: Bool
    let transports: [String]
    let attestationFormat: String

    init(_ passkey: StoredPasskey) {
        id = Base64URL.encode(passkey.credentialID)
        name = passkey.name
        provider = passkey.providerName
        aaguid = passkey.aaguid
        createdAt = UTCTimestamp.string(passkey.createdAt)
        lastUsedAt = passkey.lastUsedAt.map(UTCTimestamp.string)
        backupEligible = passkey.backupEligible
        backedUp = passkey.backupState
        transports = passkey.transports
        attestationFormat = passkey.attestationFormat
    }

    /// Every member always present: `provider` and `lastUsedAt` are null when unknown.
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(name, forKey: .name)
        try c.encode(provider, forKey: .provider)
        try c.encode(aaguid, forKey: .aaguid)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(lastUsedAt, forKey: .lastUsedAt)
        try c.encode(backupEligible, forKey: .backupEligible)
        try c.encode(backedUp, forKey: .backedUp)
        try c.encode(transports, forKey: .transports)
        try c.encode(attestationFormat, forKey: .attestationFormat)
    }

    enum CodingKeys: String, CodingKey {
        case id, name, provider, aaguid, createdAt, lastUsedAt, backupEligible, backedUp, transports
        case attestationFormat
    }
}

/// A new session as the ceremony hands it out: the token only to native clients (web clients
/// get it in the HttpOnly cookie, out of reach of scripts).
struct SessionGrant: JSONWritable, Decodable {
    let id: String
    let expiresAt: String
    let token: String?

    init(_ issued: IssuedSession, client: ClientKind) {
        id = issued.session.id
        expiresAt = UTCTimestamp.string(issued.session.expiresAt)
        token = client == .native ? issued.token : nil
    }

    func write(to writer: inout JSONWriter) {
        writer.object { object in
            object.member("id", id)
            object.member("expiresAt", expiresAt)
            if let token { object.member("token", token) }
        }
    }
}

struct RegistrationResponse: Codable {
    let user: UserView
    let passkey: PasskeyView
    let session: SessionGrant?
    /// After a BankID recovery: what the new passkey revoked, so the user sees what happened.
    var recovery: RecoveryView? = nil
    /// The account's passkeys and names, for the Signal API.
    var signals: SignalsView? = nil
}

struct RecoveryView: Codable {
    let sessionsRevoked: Int
    let passkeysRevoked: Int

    init(_ outcome: RecoveryOutcome) {
        sessionsRevoked = outcome.sessionsRevoked
        passkeysRevoked = outcome.passkeysRevoked
    }
}

struct LoginResponse: JSONWritable, Decodable {
    let user: UserView
    let session: SessionGrant
    /// The account's passkeys and names, for the Signal API (not for the review account's login).
    var signals: SignalsView? = nil

    func write(to writer: inout JSONWriter) {
        writer.object { object in
            object.key("user")
            user.write(to: &object)
            object.key("session")
            session.write(to: &object)
            if let signals {
                object.key("signals")
                signals.write(to: &object)
            }
        }
    }
}

struct PasskeysResponse: Codable {
    let passkeys: [PasskeyView]
    /// The same list (and the account's names) for the Signal API.
    let signals: SignalsView
}

/// An answer that carries only Signal API data (a removed passkey's: the ones left).
struct SignalsResponse: Codable {
    /// Absent when the list could not be read after the change, which stands.
    let signals: SignalsView?
}

struct MethodsResponse: Codable {
    struct Switches: Codable {
        let enabled: Bool
        let signup: Bool
    }
    /// BankID's journeys.
    struct BankIDSwitches: Codable {
        let enabled: Bool
        let login: Bool
        let signup: Bool
        let recovery: Bool
        let link: Bool
        let sign: Bool
        /// Whether a session BankID opened may add a passkey (and a BankID result offers one);
        /// false where BankID's rule against ID switching is kept.
        let passkeyAfterBankID: Bool

        init(_ policy: BankIDPolicy) {
            login = policy.login
            signup = policy.signup
            recovery = policy.recovery
            link = policy.link
            sign = policy.sign
            passkeyAfterBankID = policy.idSwitchingFeatures.contains(.passkeyAfterBankID)
            enabled = login || signup || recovery || link || sign
        }
    }
    let passkey: Switches
    let bankid: BankIDSwitches?
}

struct AppleAppSiteAssociation: Codable {
    struct WebCredentials: Codable { let apps: [String] }
    let webcredentials: WebCredentials

    init(apps: [String]) { webcredentials = WebCredentials(apps: apps) }
}

struct AssetLink: Codable {
    struct Target: Codable {
        let namespace: String
        let package_name: String
        let sha256_cert_fingerprints: [String]
    }
    let relation: [String]
    let target: Target

    init(_ app: WellKnownDocuments.AndroidApp) {
        relation = ["delegate_permission/common.get_login_creds"]
        target = Target(
            namespace: "android_app", package_name: app.package,
            sha256_cert_fingerprints: app.sha256Fingerprints)
    }
}

/// /.well-known/webauthn: the origins allowed to use this RP ID (Related Origin Requests).
struct RelatedOrigins: Codable {
    let origins: [String]
}
