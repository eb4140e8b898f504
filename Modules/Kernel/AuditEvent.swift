public import FoundationEssentials

/// One entry of the audit trail: who did what to whom, and when.
public struct AuditEvent: Sendable, Equatable {
    /// Assigned by the store on append (increasing, never reused); nil before that.
    public var id: Int64?
    /// When it happened.
    public var at: Date
    /// What happened.
    public var action: AuditAction
    /// Who did it.
    public var actor: AuditActor
    /// The user the event concerns, if any. Kept after the user is deleted.
    public var userID: String?
    /// The request that caused it, to correlate with logs.
    public var requestID: String?
    /// The client address, when the event came from a request.
    public var ipAddress: String?
    /// Extra facts. Never secrets or personal numbers.
    public var details: [String: String]

    /// Creates an event; leave `id` nil when appending.
    public init(
        id: Int64? = nil, at: Date, action: AuditAction, actor: AuditActor, userID: String? = nil,
        requestID: String? = nil, ipAddress: String? = nil, details: [String: String] = [:]
    ) {
        self.id = id
        self.at = at
        self.action = action
        self.actor = actor
        self.userID = userID
        self.requestID = requestID
        self.ipAddress = ipAddress
        self.details = details
    }

    /// An event a user's own request caused: the user is the actor (`anonymous` when nobody is
    /// known yet), with the request's id and client address from `context`.
    public init(
        _ action: AuditAction, userID: String?, context: ClientContext, details: [String: String] = [:],
        at: Date
    ) {
        self.init(
            at: at, action: action, actor: userID.map(AuditActor.user) ?? .anonymous, userID: userID,
            requestID: context.requestID, ipAddress: context.ipAddress, details: details)
    }

    /// An event an administrator (or the command line, or the system) caused about `userID`.
    public init(
        _ action: AuditAction, by actor: AuditActor, userID: String?, context: ClientContext,
        details: [String: String] = [:], at: Date
    ) {
        self.init(
            at: at, action: action, actor: actor, userID: userID, requestID: context.requestID,
            ipAddress: context.ipAddress, details: details)
    }
}

/// Who caused an audit event. Stored as text: `user:<id>`, `admin:<token name>`, `anonymous`,
/// `system`, `cli`, `bankid`.
public enum AuditActor: Sendable, Hashable, RawRepresentable {
    /// The signed-in (or just identified) user with this id.
    case user(String)
    /// An administrator, by the name of the admin token used (names are unique).
    case admin(tokenName: String)
    /// Nobody known yet: a failed sign-in for no account.
    case anonymous
    /// Portvakt itself (the first admin token, the review account).
    case system
    /// `portvakt admin …` on the server's own machine.
    case cli
    /// A BankID identification (a recovery's enrollment token).
    case bankID

    public init?(rawValue: String) {
        switch rawValue {
        case "anonymous": self = .anonymous
        case "system": self = .system
        case "cli": self = .cli
        case "bankid": self = .bankID
        default:
            if rawValue.hasPrefix("user:") {
                self = .user(String(rawValue.dropFirst(5)))
            } else if rawValue.hasPrefix("admin:") {
                self = .admin(tokenName: String(rawValue.dropFirst(6)))
            } else {
                return nil
            }
        }
    }

    public var rawValue: String {
        switch self {
        case .user(let id): "user:" + id
        case .admin(let name): "admin:" + name
        case .anonymous: "anonymous"
        case .system: "system"
        case .cli: "cli"
        case .bankID: "bankid"
        }
    }
}

/// What an audit event records, as a stable dotted name `<method>.<what>` (Docs/admin-api.md).
///
/// An open enumeration, as swift-certificates' `ErrorCode` is: the events this release writes are
/// the static members, so writing one with a typo is a compile error, while an event a newer
/// release wrote (a rolling upgrade shares one database) is still read back under its own name.
public struct AuditAction: Sendable, Hashable, RawRepresentable, CustomStringConvertible {
    /// The stable dotted name, as stored and as `GET /admin/v1/audit?type=` takes it.
    public let rawValue: String

    /// An action by its stored name; only Storage reading the trail back and filters need this.
    public init(rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    // Sessions.
    /// The user ended the current session (POST /v1/logout).
    public static let sessionLogout = Self(rawValue: "session.logout")
    /// The user ended one of their sessions (DELETE /v1/me/sessions/{id}).
    public static let sessionRevokedByUser = Self(rawValue: "session.revoked_by_user")
    /// The user ended every other session of theirs (DELETE /v1/me/sessions; `details.count`).
    public static let sessionOthersRevokedByUser = Self(rawValue: "session.others_revoked_by_user")

    // Passkeys.
    /// A passkey was registered: a sign-up or an added passkey.
    public static let passkeyRegistered = Self(rawValue: "passkey.registered")
    /// A passkey sign-in.
    public static let passkeyLogin = Self(rawValue: "passkey.login")
    /// A passkey sign-in was refused (`details.code`).
    public static let passkeyLoginFailed = Self(rawValue: "passkey.login_failed")
    /// A passkey was renamed by its owner.
    public static let passkeyRenamed = Self(rawValue: "passkey.renamed")
    /// A passkey was removed by its owner.
    public static let passkeyDeleted = Self(rawValue: "passkey.deleted")
    /// A passkey was enrolled with an enrollment or recovery token.
    public static let passkeyEnrolled = Self(rawValue: "passkey.enrolled")
    /// The signed-in user proved presence with a passkey (POST /v1/me/reauthenticate/finalize).
    public static let passkeyReauthenticated = Self(rawValue: "passkey.reauthenticated")
    /// A re-authentication was refused (`details.code`).
    public static let passkeyReauthenticationFailed = Self(rawValue: "passkey.reauthentication_failed")

    // BankID.
    /// An order was started.
    public static let bankIDOrderStarted = Self(rawValue: "bankid.order_started")
    /// BankID refused or failed to start an order.
    public static let bankIDOrderFailedToStart = Self(rawValue: "bankid.order_failed_to_start")
    /// A BankID sign-in opened a session.
    public static let bankIDLogin = Self(rawValue: "bankid.login")
    /// A BankID sign-in was refused (`details.code`).
    public static let bankIDLoginFailed = Self(rawValue: "bankid.login_failed")
    /// A BankID sign-in for an identity no account is linked to.
    public static let bankIDLoginNoAccount = Self(rawValue: "bankid.login_no_account")
    /// A BankID-first sign-up created an account.
    public static let bankIDSignup = Self(rawValue: "bankid.signup")
    /// A BankID sign-up by a person who already has an account, with login switched off.
    public static let bankIDSignupExisting = Self(rawValue: "bankid.signup_existing")
    /// An identity was linked to the signed-in account.
    public static let bankIDLinked = Self(rawValue: "bankid.linked")
    /// The user removed their account's linked identity (DELETE /v1/me/bankid).
    public static let bankIDUnlinked = Self(rawValue: "bankid.unlinked")
    /// A link was refused (the identity or the account is linked already).
    public static let bankIDLinkRefused = Self(rawValue: "bankid.link_refused")
    /// The account's own identity was linked again: nothing changed.
    public static let bankIDLinkRepeated = Self(rawValue: "bankid.link_repeated")
    /// A BankID signature stepped the session up.
    public static let bankIDStepUp = Self(rawValue: "bankid.step_up")
    /// A signature by someone other than the account's linked identity.
    public static let bankIDSignRefused = Self(rawValue: "bankid.sign_refused")
    /// A recovery identified the account's person: an enrollment token was issued.
    public static let bankIDRecoveryVerified = Self(rawValue: "bankid.recovery_verified")
    /// A recovery for an identity no account is linked to.
    public static let bankIDRecoveryNoAccount = Self(rawValue: "bankid.recovery_no_account")
    /// A recovery was refused (`details.code`).
    public static let bankIDRecoveryFailed = Self(rawValue: "bankid.recovery_failed")
    /// BankID's risk assessment was above the configured ceiling.
    public static let bankIDRiskRefused = Self(rawValue: "bankid.risk_refused")
    /// A same-device order completed from another address than it started from.
    public static let bankIDIPMismatch = Self(rawValue: "bankid.ip_mismatch")
    /// A poll carried a return nonce that is not the order's.
    public static let bankIDReturnMismatch = Self(rawValue: "bankid.return_mismatch")
    /// The order failed at BankID (`details.hintCode`).
    public static let bankIDOrderFailed = Self(rawValue: "bankid.order_failed")
    /// The client cancelled the order.
    public static let bankIDOrderCancelled = Self(rawValue: "bankid.order_cancelled")

    // The app-store reviewer.
    /// The sandboxed review account was created.
    public static let reviewAccountCreated = Self(rawValue: "review.account_created")
    /// The reviewer signed in.
    public static let reviewLogin = Self(rawValue: "review.login")
    /// A reviewer sign-in was refused (`details.reason`).
    public static let reviewLoginFailed = Self(rawValue: "review.login_failed")

    // The account.
    /// A recovery's new passkey revoked what the recovery policy says.
    public static let accountRecovered = Self(rawValue: "account.recovered")
    /// The user changed their own username or display name (`details.username`, `displayName`:
    /// `changed`; never the names).
    public static let accountRenamed = Self(rawValue: "account.renamed")
    /// The user downloaded everything Portvakt holds about them (GET /v1/me/export).
    public static let accountExported = Self(rawValue: "account.exported")
    /// The user deleted their own account; the audit trail about them stays.
    public static let accountDeleted = Self(rawValue: "account.deleted")
    /// A one-time enrollment token was issued.
    public static let enrollmentIssued = Self(rawValue: "enrollment.issued")

    // Administration.
    /// An administrator created a user.
    public static let adminUserCreated = Self(rawValue: "admin.user.created")
    /// An administrator asked for a webhook delivery to be sent again (details: deliveryId, eventId).
    public static let adminWebhookRedelivered = Self(rawValue: "admin.webhook.redelivered")
    /// An administrator renamed a user.
    public static let adminUserRenamed = Self(rawValue: "admin.user.renamed")
    /// An administrator disabled a user (`details.sessionsRevoked`).
    public static let adminUserDisabled = Self(rawValue: "admin.user.disabled")
    /// An administrator enabled a user.
    public static let adminUserEnabled = Self(rawValue: "admin.user.enabled")
    /// An administrator deleted a user.
    public static let adminUserDeleted = Self(rawValue: "admin.user.deleted")
    /// An administrator removed a passkey.
    public static let adminPasskeyDeleted = Self(rawValue: "admin.passkey.deleted")
    /// An administrator ended every session of a user.
    public static let adminSessionsRevoked = Self(rawValue: "admin.sessions.revoked")
    /// An administrator ended one session.
    public static let adminSessionRevoked = Self(rawValue: "admin.session.revoked")
    /// An admin token was created.
    public static let adminTokenCreated = Self(rawValue: "admin.token.created")
    /// An admin token was revoked.
    public static let adminTokenRevoked = Self(rawValue: "admin.token.revoked")
    /// The access-token signing key was rotated (`details.kid`, `activatesAt`, `trigger`:
    /// `schedule` or `manual`, and `retiredCurrent` when the old keys stopped verifying at once).
    public static let signingKeyRotated = Self(rawValue: "signing_key.rotated")
    /// An administrator read a BankID signature's evidence (which may hold the signature).
    public static let adminBankIDSignatureViewed = Self(rawValue: "admin.bankid_signature.viewed")

    // The support desk's BankID phone check (an agent on a call with the user).
    /// An agent started a BankID phone identification or signature for an account
    /// (`details.verificationId`, `kind`, `callInitiator`).
    public static let adminBankIDPhoneStarted = Self(rawValue: "admin.bankid.phone_started")
    /// BankID refused or failed to start the agent's phone order (`details.code`).
    public static let adminBankIDPhoneFailedToStart = Self(rawValue: "admin.bankid.phone_failed_to_start")
    /// The person who completed the phone order is the account's linked BankID identity.
    public static let adminBankIDPhoneVerified = Self(rawValue: "admin.bankid.phone_verified")
    /// Someone completed the phone order who is not the account's linked identity (never who).
    public static let adminBankIDPhoneNotVerified = Self(rawValue: "admin.bankid.phone_not_verified")
    /// The phone order ended without a completion (`details.reason`, `hintCode`).
    public static let adminBankIDPhoneFailed = Self(rawValue: "admin.bankid.phone_failed")
    /// An agent cancelled the phone order.
    public static let adminBankIDPhoneCancelled = Self(rawValue: "admin.bankid.phone_cancelled")
}
