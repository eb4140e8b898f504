import BankIDCore
public import FoundationEssentials
public import Kernel
public import SessionCore
public import Storage

/// A change of an account's names, checked by sign-up's rules: the one way both the user's own
/// `PATCH /v1/me` and an administrator's rename go.
struct Rename {
    /// The account with its new names.
    var user: User
    /// What changed, for the audit event (`username`, `displayName`: `changed`); never the names.
    var details: [String: String]

    /// `user` with `username` and `displayName` normalised as at sign-up and applied where they
    /// differ; nil members stay. Every name is checked before anything changes, so a bad one
    /// changes nothing.
    /// - Throws: `user.invalid_username`, `user.invalid_display_name`.
    init(_ user: User, username rawUsername: String?, displayName rawDisplayName: String?) throws(AuthError) {
        let username = try rawUsername.map { raw throws(AuthError) in try Names.normaliseUsername(raw) }
        let displayName = try rawDisplayName.map { raw throws(AuthError) in try Names.displayName(raw) }
        self.user = user
        details = [:]
        if let username, username != user.username {
            self.user.username = username
            details["username"] = "changed"
        }
        if let displayName, displayName != user.displayName {
            self.user.displayName = displayName
            details["displayName"] = "changed"
        }
    }

    /// Whether any name differs from the stored one.
    var changesAnything: Bool { !details.isEmpty }

    /// Stores the new names with `record`.
    /// - Throws: `user.username_taken` when someone else has the username; `StorageError` else.
    func store(in users: any UserStore, record: ChangeRecord) throws {
        do {
            try users.updateUser(user, record: record)
        } catch let error as StorageError where error.code == .conflict {
            throw AuthError(.usernameTaken, "the username is taken", underlying: error)
        }
    }
}

/// Everything Portvakt holds about one account, for its owner to download (GDPR Art. 15 and 20).
/// What must never leave (token hashes, the identity's keyed digest, the number a support agent
/// was told) is not in these values, except the sessions' token hashes, which the document the API
/// writes from this leaves out.
public struct AccountExport: Sendable {
    /// When the export was made.
    public let exportedAt: Date
    /// The account.
    public let user: User
    /// Whether it is the sandboxed app-store review account.
    public let reviewAccount: Bool
    /// Its passkeys, oldest first.
    public let passkeys: [StoredPasskey]
    /// Every stored session (live, ended and not yet purged), newest first.
    public let sessions: [Session]
    /// The linked BankID identity's name and link time; nil when none.
    public let bankID: BankIDLink?
    /// The evidence of each BankID signature, newest first.
    public let signatures: [BankIDSignatureEvidence]
    /// The support desk's BankID phone checks of the account, oldest first.
    public let phoneVerifications: [PhoneVerification]
    /// The enrollment tokens issued for the account, oldest first.
    public let enrollmentTokens: [EnrollmentToken]
    /// The audit events about the account, oldest first.
    public let auditEvents: [AuditEvent]

    /// A support agent's BankID phone check of the account: never the number the caller stated
    /// (kept only as a keyed digest, which stays out).
    public struct PhoneVerification: Sendable, Equatable {
        /// Portvakt's id for it.
        public let id: String
        /// `auth` or `sign`.
        public let kind: String
        /// `RP` (the agent called) or `user` (the user called).
        public let callInitiator: String
        /// The agent's admin token name.
        public let startedBy: String
        /// When the agent started it.
        public let createdAt: Date
        /// When its end was recorded; nil while running.
        public let finishedAt: Date?
        /// How it ended (`verified`, `not_verified`, …); nil while running.
        public let outcome: String?
        /// BankID's last hint code.
        public let hintCode: String?

        init(_ stored: BankIDPhoneVerification) {
            id = stored.id
            kind = stored.kind.rawValue
            callInitiator = stored.callInitiator.rawValue
            startedBy = stored.startedBy
            createdAt = stored.createdAt
            finishedAt = stored.finishedAt
            outcome = stored.outcome?.rawValue
            hintCode = stored.hintCode
        }
    }

    /// A one-time enrollment token issued for the account: never the token or its hash.
    public struct EnrollmentToken: Sendable, Equatable {
        /// Its public id (audit events name it).
        public let id: String
        /// `admin` (an enrollment link) or `recovery`.
        public let purpose: String
        /// Who issued it (an audit actor such as `admin:ops`, or `bankid`).
        public let createdBy: String
        /// When it was issued.
        public let createdAt: Date
        /// The first instant it is no longer accepted.
        public let expiresAt: Date
        /// When a passkey was enrolled with it; nil while unused.
        public let usedAt: Date?

        init(_ stored: EnrollmentTokenRecord) {
            id = stored.id
            purpose = stored.purpose
            createdBy = stored.createdBy
            createdAt = stored.createdAt
            expiresAt = stored.expiresAt
            usedAt = stored.usedAt
        }
    }
}

/// The signed-in user's own account: rename it, download what is held about it, delete it. Each
/// act is audited with the user as the actor; deleting needs a recent proof of presence.
public struct OwnAccountService: Sendable {
    /// The stores the account's data is in: one SQL store serves them all.
    public typealias Stores = AccountStore & AccountDataStore & BankIDIdentityStore & ReviewAccountStore
        & AuditStore

    let store: any Stores
    let clock: any WallClock
    /// Where the `user.deleted` webhook event goes.
    let feed: ChangeFeed
    /// Whether passkeys can sign in here (`methods.passkey.enabled`): then an account with one
    /// keeps a way in without its BankID identity.
    let passkeyLogin: Bool

    /// Creates the service.
    /// - Parameter passkeyLogin: whether passkeys can sign in here (`methods.passkey.enabled`).
    public init(store: any Stores, clock: any WallClock, passkeyLogin: Bool, feed: ChangeFeed = .off) {
        self.store = store
        self.clock = clock
        self.passkeyLogin = passkeyLogin
        self.feed = feed
    }

    /// Changes the user's username and display name (nil members stay), normalised and checked as
    /// at sign-up, audited `account.renamed` when anything changed. No webhook event: the event
    /// list has none for a rename (Docs/webhooks.md), and names never go to webhooks anyway.
    /// - Returns: the account as it now is.
    /// - Throws: `user.invalid_username`, `user.invalid_display_name`, `user.username_taken`;
    ///   `review.sandboxed` for a new username of the app-store review account (the reviewer
    ///   login finds it by the username the configuration names).
    public func rename(
        _ signedIn: SignedIn, username: String?, displayName: String?, context: ClientContext
    ) throws -> User {
        let rename = try Rename(signedIn.user, username: username, displayName: displayName)
        guard rename.changesAnything else { return signedIn.user }
        let userID = signedIn.user.id
        if rename.details["username"] != nil, try store.isReviewAccount(userID: userID) {
            throw AuthError(.sandboxed, "the review account keeps the username the configuration names")
        }
        try rename.store(
            in: store,
            record: ChangeRecord(
                AuditEvent(
                    .accountRenamed, userID: userID, context: context, details: rename.details,
                    at: clock.now())))
        return rename.user
    }

    /// Everything held about the user, audited `account.exported` (a download of personal data
    /// leaves a trail, as an administrator's reading of a signature does).
    public func export(_ signedIn: SignedIn, context: ClientContext) throws -> AccountExport {
        let userID = signedIn.user.id
        let now = clock.now()
        // Audited first, so the export lists its own event too.
        _ = try store.appendAudit(AuditEvent(.accountExported, userID: userID, context: context, at: now))
        return AccountExport(
            exportedAt: now, user: signedIn.user, reviewAccount: try store.isReviewAccount(userID: userID),
            passkeys: try store.passkeys(userID: userID), sessions: try store.allSessions(userID: userID),
            bankID: try store.linkedIdentity(userID: userID).map(BankIDLink.init),
            signatures: try store.bankIDSignatures(userID: userID),
            phoneVerifications: try store.bankIDPhoneVerifications(userID: userID).map(
                AccountExport.PhoneVerification.init),
            enrollmentTokens: try store.enrollmentTokens(userID: userID).map(
                AccountExport.EnrollmentToken.init),
            auditEvents: try store.allAuditEvents(userID: userID))
    }

    /// Removes the account's linked BankID identity, audited `bankid.unlinked` (no webhook event:
    /// the event list has only `bankid.linked`). It takes BankID login, recovery and signing away
    /// from the account, so it needs a recent proof of presence, and it is refused when no
    /// passkey would be left to sign in with.
    /// - Throws: `bankid.not_linked`; `bankid.last_way_in` when the account has no passkey or
    ///   passkeys are off here.
    public func unlinkBankID(_ proof: RecentlyAuthenticated, context: ClientContext) throws {
        let userID = proof.signedIn.user.id
        guard try store.linkedIdentity(userID: userID) != nil else {
            throw AuthError(.bankIDNotLinkedToAccount, "the account has no BankID identity linked")
        }
        guard passkeyLogin, try store.passkeyCount(userID: userID) > 0 else {
            throw AuthError(
                .lastWayIn,
                "without its BankID identity the account would have no way in; add a passkey first")
        }
        let record = ChangeRecord(
            AuditEvent(.bankIDUnlinked, userID: userID, context: context, at: clock.now()))
        // A concurrent unlink won: the same answer as none linked.
        guard try store.unlinkIdentity(userID: userID, record: record) else {
            throw AuthError(.bankIDNotLinkedToAccount, "the account has no BankID identity linked")
        }
    }

    /// Deletes the account with everything that names it but the audit trail (the store's one
    /// deletion, which the administrators' delete uses too), in one transaction with the
    /// `account.deleted` event and the `user.deleted` webhook event. Cannot be undone, so it needs
    /// a recent proof of presence.
    /// - Throws: `review.deletion_refused` for the app-store review account (the reviewer's
    ///   sandbox, recreated at every start); `session.unknown` when the account is already gone.
    public func delete(_ proof: RecentlyAuthenticated, context: ClientContext) throws {
        let userID = proof.signedIn.user.id
        guard try !store.isReviewAccount(userID: userID) else {
            throw AuthError(
                .reviewAccountDeletion,
                "the app-store review account cannot be deleted; it is recreated at start")
        }
        let now = clock.now()
        let record = ChangeRecord(
            AuditEvent(
                .accountDeleted, userID: userID, context: context,
                details: ["sessionId": proof.signedIn.current.id], at: now),
            outbox: feed.entries([.userDeleted(userID: userID, at: now)]))
        guard try store.deleteUser(id: userID, record: record) else {
            // A concurrent deletion won: this session's account no longer exists.
            throw SessionError(.unknown, "the session token is not known")
        }
        feed.committed(record.outbox)
    }
}
