public import AuthOrchestrator
import CryptoCore
import FoundationEssentials
public import HTTPEngine
import Kernel
import PasskeyCore
import SessionCore

/// The signed-in user's own account: rename it, download what is held about it, delete it, end
/// every other session, and re-authenticate with a passkey for the acts that cannot be undone
/// (Docs/api.md, "Your own account"). Handlers translate HTTP to the use cases and back.
public struct AccountAPI: Sendable {
    let account: OwnAccountService
    let passkeys: PasskeyService
    let access: AccountSessionService
    let transport: SessionTransport

    /// Creates the API over the account's use cases.
    public init(
        account: OwnAccountService, passkeys: PasskeyService, access: AccountSessionService,
        transport: SessionTransport
    ) {
        self.account = account
        self.passkeys = passkeys
        self.access = access
        self.transport = transport
    }

    /// Adds the routes to `router`.
    public func register(on router: inout Router) {
        router.addSignedIn(
            .PATCH, "/v1/me", summary: "Change the signed-in user's username or display name",
            contract: RouteContract(
                body: .json(ProfileBody.self), responses: [.json(ProfileResponse.self)],
                problems: Problems.auth(.invalidUsername, .invalidDisplayName, .usernameTaken, .sandboxed)),
            transport: transport, access: access, commits: true
        ) { request, auth in
            let body = try request.decodeJSON(ProfileBody.self)
            let user = try account.rename(
                auth.signedIn, username: body.username, displayName: body.displayName,
                context: request.clientContext)
            return try .json(
                ProfileResponse(
                    user: UserView(user), signals: SignalsView(passkeys.signals.currentUserDetails(user))))
        }
        router.addSignedIn(
            .DELETE, "/v1/me",
            summary: "Delete the signed-in user's account (needs a recent sign-in or re-authentication)",
            contract: RouteContract(
                responses: [.noContent],
                problems: Problems.auth(.reauthenticationRequired, .reviewAccountDeletion)),
            transport: transport, access: access, rotating: false, commits: true
        ) { request, auth in
            try account.delete(
                try access.recentlyAuthenticated(auth.signedIn), context: request.clientContext)
            var response = HTTPResponse.noContent
            if auth.source == .cookie { response.headers.add("Set-Cookie", transport.clearCookie) }
            return response
        }
        router.addSignedIn(
            .GET, "/v1/me/export",
            summary: "Everything Portvakt holds about the signed-in user, as a download",
            contract: RouteContract(responses: [.json(AccountExportView.self)]),
            transport: transport, access: access, rateClass: .export, commits: true
        ) { request, auth in
            let export = try account.export(auth.signedIn, context: request.clientContext)
            var response = try HTTPResponse.json(AccountExportView(export))
            // A date, never a name: the file name must not carry personal data into a download list.
            let day = UTCTimestamp.string(export.exportedAt).prefix(10)
            response.headers.add(
                "Content-Disposition", "attachment; filename=\"portvakt-account-\(day).json\"")
            return response
        }
        router.addSignedIn(
            .DELETE, "/v1/me/sessions",
            summary:
                "End every other session of the signed-in user (needs a recent sign-in or re-authentication)",
            contract: RouteContract(
                responses: [.json(RevokedSessionsResponse.self)],
                problems: Problems.auth(.reauthenticationRequired)),
            transport: transport, access: access, commits: true
        ) { request, auth in
            let ended = try access.revokeOtherSessions(
                try access.recentlyAuthenticated(auth.signedIn), context: request.clientContext)
            return try .json(RevokedSessionsResponse(revoked: ended))
        }
        router.addSignedIn(
            .DELETE, "/v1/me/bankid",
            summary:
                "Remove the signed-in user's linked BankID identity (needs a recent sign-in or re-authentication)",
            contract: RouteContract(
                responses: [.noContent],
                problems: Problems.auth(.reauthenticationRequired, .bankIDNotLinkedToAccount, .lastWayIn)),
            transport: transport, access: access, commits: true
        ) { request, auth in
            try account.unlinkBankID(
                try access.recentlyAuthenticated(auth.signedIn), context: request.clientContext)
            return .noContent
        }
        // The ceremony routes never rotate, as the login's: a new token could be lost with them.
        router.addSignedIn(
            .POST, "/v1/me/reauthenticate/initialize",
            summary: "Request options for the signed-in user to prove presence with one of their passkeys",
            contract: RouteContract(
                responses: [.json(described: RequestOptionsSchema.self)],
                problems: Problems.auth(.passkeyDisabled, .reauthenticationFailed)),
            transport: transport, access: access, rotating: false, rateClass: .auth, commits: true
        ) { _, auth in
            PasskeyAPI.optionsResponse(try passkeys.startReauthentication(auth.signedIn))
        }
        router.addSignedIn(
            .POST, "/v1/me/reauthenticate/finalize",
            summary: "Verify the signed-in user's AuthenticationResponseJSON; no new session",
            contract: RouteContract(
                body: .json(described: LoginFinalizeSchema.self),
                responses: [.json(ReauthenticationResponse.self)],
                problems: Problems.passkeyVerification
                    + Problems.auth(.passkeyDisabled, .challengeInvalid, .reauthenticationFailed)),
            transport: transport, access: access, rotating: false, rateClass: .auth, commits: true
        ) { request, auth in
            let body = try FinalizeBody(request, buildingCredential: true)
            let at = try passkeys.finishReauthentication(
                auth.signedIn, challengeID: body.challengeID, credential: body.credentialJSON,
                context: request.clientContext)
            let window = access.recentAuthentication.policy.window
            return try .json(
                ReauthenticationResponse(
                    authenticatedAt: UTCTimestamp.string(at),
                    validUntil: UTCTimestamp.string(at.addingTimeInterval(window))))
        }
    }
}

// MARK: Bodies and answers

struct ProfileBody: Decodable {
    let username: String?
    let displayName: String?
}

struct ProfileResponse: Codable {
    let user: UserView
    /// `currentUserDetails`, so the password manager shows the new name (the Signal API).
    let signals: SignalsView
}

struct RevokedSessionsResponse: Codable {
    /// How many sessions ended.
    let revoked: Int
}

struct ReauthenticationResponse: Codable {
    /// The session's new proof of presence.
    let authenticatedAt: String
    /// Until when it lets the acts that cannot be undone through.
    let validUntil: String
}

/// The export document: every value `AccountExport` holds, and nothing secret. Left out by design
/// (Docs/api.md): session and enrollment token hashes, the BankID identity's keyed digest and its
/// key, the number a support agent was told (its digest), BankID's signature and OCSP response
/// (they name the person by personal number), challenges.
struct AccountExportView: Codable {
    /// This document's format, for whoever reads it later.
    let format: String
    let exportedAt: String
    let user: UserPart
    let passkeys: [PasskeyPart]
    /// As the sessions list shows them, with `revokedAt` for the ended ones.
    let sessions: [SessionView]
    let bankId: BankIDPart?
    let bankIdSignatures: [SignaturePart]
    let bankIdPhoneVerifications: [PhoneVerificationPart]
    let enrollmentTokens: [EnrollmentTokenPart]
    let auditEvents: [AuditEventPart]

    init(_ export: AccountExport) {
        format = "portvakt.account-export.v1"
        exportedAt = UTCTimestamp.string(export.exportedAt)
        user = UserPart(export.user, reviewAccount: export.reviewAccount)
        passkeys = export.passkeys.map(PasskeyPart.init)
        sessions = export.sessions.map { SessionView($0) }
        bankId = export.bankID.map(BankIDPart.init)
        bankIdSignatures = export.signatures.map(SignaturePart.init)
        bankIdPhoneVerifications = export.phoneVerifications.map(PhoneVerificationPart.init)
        enrollmentTokens = export.enrollmentTokens.map(EnrollmentTokenPart.init)
        auditEvents = export.auditEvents.map(AuditEventPart.init)
    }

    struct UserPart: Codable {
        let id: String
        let username: String?
        let displayName: String
        let createdAt: String
        let disabledAt: String?
        /// The WebAuthn user handle passkeys store (base64url): an identifier, not a secret.
        let userHandle: String
        let reviewAccount: Bool

        init(_ user: User, reviewAccount: Bool) {
            id = user.id
            username = user.username
            displayName = user.displayName
            createdAt = UTCTimestamp.string(user.createdAt)
            disabledAt = user.disabledAt.map(UTCTimestamp.string)
            userHandle = Base64URL.encode(user.userHandle)
            self.reviewAccount = reviewAccount
        }
    }

    struct PasskeyPart: Codable {
        let id: String
        let name: String
        /// The provider's name (from the AAGUID's metadata), when known.
        let provider: String?
        let aaguid: String
        /// The COSE public key (base64url); there is no private key here to leave out.
        let publicKey: String
        let algorithm: Int
        let signCount: Int
        let transports: [String]
        let backupEligible: Bool
        let backedUp: Bool
        let attestationFormat: String
        let attestationType: String
        let attestationTrusted: Bool
        let createdAt: String
        let lastUsedAt: String?

        init(_ passkey: StoredPasskey) {
            id = Base64URL.encode(passkey.credentialID)
            name = passkey.name
            provider = passkey.providerName
            aaguid = passkey.aaguid
            publicKey = Base64URL.encode(passkey.publicKey)
            algorithm = passkey.algorithm
            signCount = Int(passkey.signCount)
            transports = passkey.transports
            backupEligible = passkey.backupEligible
            backedUp = passkey.backupState
            attestationFormat = passkey.attestationFormat
            attestationType = passkey.attestationType
            attestationTrusted = passkey.attestationTrusted
            createdAt = UTCTimestamp.string(passkey.createdAt)
            lastUsedAt = passkey.lastUsedAt.map(UTCTimestamp.string)
        }
    }

    struct BankIDPart: Codable {
        /// The name BankID gave when the identity was linked.
        let name: String
        let linkedAt: String

        init(_ link: BankIDLink) {
            name = link.name
            linkedAt = UTCTimestamp.string(link.linkedAt)
        }
    }

    struct SignaturePart: Codable {
        let id: String
        let sessionId: String
        let signedAt: String
        let userVisibleText: String
        let bankIdIssueDate: String?
        let mrtd: Bool?
        let risk: String?
        /// Whether this deployment keeps the signature itself (`bankid.keepSignatures`); it is not
        /// in the export either way, since it names the signer by personal number.
        let signatureKept: Bool

        init(_ evidence: BankIDSignatureEvidence) {
            id = evidence.id
            sessionId = evidence.sessionID
            signedAt = UTCTimestamp.string(evidence.signedAt)
            userVisibleText = evidence.userVisibleText
            bankIdIssueDate = evidence.bankIDIssueDate
            mrtd = evidence.mrtd
            risk = evidence.risk
            signatureKept = evidence.signature != nil
        }
    }

    struct PhoneVerificationPart: Codable {
        let id: String
        let kind: String
        let callInitiator: String
        /// The support agent's admin token name.
        let startedBy: String
        let createdAt: String
        let finishedAt: String?
        let outcome: String?
        let hintCode: String?

        init(_ verification: AccountExport.PhoneVerification) {
            id = verification.id
            kind = verification.kind
            callInitiator = verification.callInitiator
            startedBy = verification.startedBy
            createdAt = UTCTimestamp.string(verification.createdAt)
            finishedAt = verification.finishedAt.map(UTCTimestamp.string)
            outcome = verification.outcome
            hintCode = verification.hintCode
        }
    }

    struct EnrollmentTokenPart: Codable {
        let id: String
        let purpose: String
        let createdBy: String
        let createdAt: String
        let expiresAt: String
        let usedAt: String?

        init(_ token: AccountExport.EnrollmentToken) {
            id = token.id
            purpose = token.purpose
            createdBy = token.createdBy
            createdAt = UTCTimestamp.string(token.createdAt)
            expiresAt = UTCTimestamp.string(token.expiresAt)
            usedAt = token.usedAt.map(UTCTimestamp.string)
        }
    }

    struct AuditEventPart: Codable {
        let id: Int64
        let at: String
        let action: String
        let actor: String
        let requestId: String?
        let ipAddress: String?
        let details: [String: String]

        init(_ event: AuditEvent) {
            id = event.id ?? 0
            at = UTCTimestamp.string(event.at)
            action = event.action.rawValue
            actor = event.actor.rawValue
            requestId = event.requestID
            ipAddress = event.ipAddress
            details = event.details
        }
    }
}
