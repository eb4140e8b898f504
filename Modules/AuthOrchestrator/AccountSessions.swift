import BankIDCore
public import FoundationEssentials
public import Kernel
public import SessionCore
public import Storage

/// A request's live session and the account it belongs to, once the account may get in.
public struct SignedIn: Sendable {
    /// The session the presented token opened.
    public let session: Session
    /// Its account (not disabled).
    public let user: User
    /// The presented token was older than the rotation interval: its replacement, to hand to the
    /// client. The presented token keeps working only for the rotation grace.
    public let rotated: IssuedSession?

    /// The session the request acts as: the rotation's new one, or the presented one.
    public var current: Session { rotated?.session ?? session }

    /// Creates the value; `AccountSessionService.signedIn(token:rotating:)` is the usual way.
    public init(session: Session, user: User, rotated: IssuedSession? = nil) {
        self.session = session
        self.user = user
        self.rotated = rotated
    }
}

/// A BankID identity linked to an account, as its owner or an administrator may see it: the
/// name BankID gave and when, never the personal number or its digest.
public struct BankIDLink: Sendable, Equatable {
    /// The name BankID gave when the identity was linked.
    public let name: String
    /// When it was linked.
    public let linkedAt: Date
    /// The id of the identity key its digest was made with (not secret: it names a key).
    public let keyID: String

    init(_ identity: LinkedIdentity) {
        name = identity.name
        linkedAt = identity.linkedAt
        keyID = identity.digest.keyID
    }
}

/// What GET /v1/me shows: the account, the current session, its step-up and the BankID link.
public struct AccountOverview: Sendable {
    /// The account.
    public let user: User
    /// The session the request acts as.
    public let session: Session
    /// Until when a BankID signature made in this session steps it up; nil when none is in force.
    public let steppedUpUntil: Date?
    /// Whether BankID is on here, and the linked identity when there is one (nil when BankID is
    /// off, so clients draw no BankID controls).
    public let bankID: BankIDLinkState?

    /// Whether an account has a BankID identity linked.
    public struct BankIDLinkState: Sendable {
        /// The link, or nil when none.
        public let link: BankIDLink?
    }
}

/// The signed-in user's own sessions: who is behind a token, what the account overview says,
/// and ending sessions. The rules every signed-in request passes live here once: the token must
/// open a live session, its account must still exist and may not be disabled, and a token older
/// than the rotation interval is exchanged for a new one.
public struct AccountSessionService: Sendable {
    let sessions: SessionService
    /// The sessions (SessionService's repository) with their accounts, read together.
    let users: any SessionAccessStore
    /// Where the webhook events about ended sessions go.
    let feed: ChangeFeed
    /// Step-ups and linked identities; nil when BankID is off.
    let bankID: (any BankIDIdentityStore)?
    /// The rule for the acts that cannot be undone.
    public let recentAuthentication: RecentAuthentication
    let clock: any WallClock

    /// Creates the service.
    /// - Parameters:
    ///   - bankID: BankID's step-ups and linked identities; nil when BankID is switched off.
    ///   - recentAuthentication: the rule that asks a recent proof of presence of the acts that
    ///     cannot be undone (`recentlyAuthenticated(_:)`).
    public init(
        sessions: SessionService, users: any SessionAccessStore, bankID: (any BankIDIdentityStore)?,
        recentAuthentication: RecentAuthentication, clock: any WallClock, feed: ChangeFeed = .off
    ) {
        self.sessions = sessions
        self.users = users
        self.feed = feed
        self.bankID = bankID
        self.recentAuthentication = recentAuthentication
        self.clock = clock
    }

    /// `signedIn`, when its session proved presence recently enough for an act that cannot be
    /// undone (`RecentAuthentication`).
    /// - Throws: `AuthError(.reauthenticationRequired)` with the ways to re-authenticate.
    public func recentlyAuthenticated(_ signedIn: SignedIn) throws -> RecentlyAuthenticated {
        try recentAuthentication.require(signedIn)
    }

    /// The session `token` opens and its account.
    /// - Parameters:
    ///   - token: the presented token; nil when the request carried none.
    ///   - rotating: exchange a token older than the rotation interval (routes that hand the
    ///     response to the token's holder); false where a new token could not be delivered.
    ///   - touching: count this as use of the session for the idle timeout; false where someone
    ///     other than the holder asks (session introspection, unless configured otherwise).
    /// - Throws: `SessionError` (`session.missing`, `.unknown`, `.revoked`, `.expired`,
    ///   `.idle_expired`; `.unknown` too when the account no longer exists),
    ///   `AuthError(.accountDisabled)`.
    public func signedIn(token: String?, rotating: Bool, touching: Bool = true) throws -> SignedIn {
        guard let token else { throw SessionError(.missing, "no session token was presented") }
        let hash = try SessionService.lookupHash(token: token)
        // One read for the session and its account (a session without its account cannot be
        // stored: deleting a user deletes their sessions), then SessionService's policy, as
        // `authenticate` applies it.
        guard let found = try users.sessionWithOwner(tokenHash: hash) else {
            throw SessionError(.unknown, "the session token is not known")
        }
        let session = try sessions.judge(found.session, presentedHash: hash, touching: touching)
        let user = found.owner
        try AccountAccess.admit(user)
        // Only a session that may be used is rotated: a refused one gets no new token.
        return SignedIn(
            session: session, user: user, rotated: rotating ? try sessions.rotateIfDue(session) : nil)
    }

    /// The account overview for `signedIn`. A step-up counts only while its window is open; one
    /// made in the presented session carries over to its rotation's new one.
    public func overview(_ signedIn: SignedIn) throws -> AccountOverview {
        let steppedUpUntil = try steppedUpUntil(signedIn)
        var linkState: AccountOverview.BankIDLinkState?
        if let bankID {
            linkState = .init(link: try bankID.linkedIdentity(userID: signedIn.user.id).map(BankIDLink.init))
        }
        return AccountOverview(
            user: signedIn.user, session: signedIn.current, steppedUpUntil: steppedUpUntil, bankID: linkState)
    }

    /// Until when a BankID signature made in `signedIn`'s session steps it up; nil when none is in
    /// force or BankID is off. A step-up counts only while its window is open; one made in the
    /// presented session carries over to its rotation's new one.
    public func steppedUpUntil(_ signedIn: SignedIn) throws -> Date? {
        guard let bankID else { return nil }
        let now = clock.now()
        // One read unless this request rotated the session (then the presented one's too).
        let ids =
            signedIn.rotated == nil ? [signedIn.session.id] : [signedIn.current.id, signedIn.session.id]
        let windows = try ids.compactMap { try bankID.stepUp(sessionID: $0)?.validUntil }
        return windows.filter { $0 > now }.max()
    }

    /// The account's live sessions, newest first.
    public func liveSessions(_ signedIn: SignedIn) throws -> [Session] {
        try sessions.list(userID: signedIn.user.id)
    }

    /// Ends the request's session (and the presented one, when this request rotated it: the
    /// rotated-out token would otherwise keep working for its grace) and audits `session.logout`,
    /// in one write. A logout that finds its sessions already ended (a concurrent one) changes
    /// and records nothing.
    public func logout(_ signedIn: SignedIn, context: ClientContext) throws {
        let ids =
            signedIn.rotated == nil ? [signedIn.session.id] : [signedIn.current.id, signedIn.session.id]
        _ = try end(ids, of: signedIn, action: .sessionLogout, reason: .logout, context: context)
    }

    /// Ends one of the account's own sessions and audits `session.revoked_by_user`, in one write.
    /// - Throws: `SessionError(.notFound)` for an id that is not one of its live sessions (another
    ///   user's gets the same answer as a missing one: ids are not an oracle).
    public func revoke(sessionID: String, of signedIn: SignedIn, context: ClientContext) throws {
        guard
            try end([sessionID], of: signedIn, action: .sessionRevokedByUser, reason: .user, context: context)
        else { throw SessionError(.notFound, "no such session") }
    }

    /// Ends every live session of the account except the request's own (a lost or shared device),
    /// audited `session.others_revoked_by_user`, with a `session.revoked` webhook event for each,
    /// in one write. It signs the user out everywhere else, so it needs a recent proof of presence.
    /// - Returns: how many ended.
    @discardableResult
    public func revokeOtherSessions(_ proof: RecentlyAuthenticated, context: ClientContext) throws -> Int {
        let signedIn = proof.signedIn
        let userID = signedIn.user.id
        let now = clock.now()
        // The request's session stays (the rotation's new one when this request rotated it: the
        // token it presented was being retired anyway).
        let kept = signedIn.current.id
        let ended = try feed.recording({
            try users.revokeSessions(ofUser: userID, ids: nil, except: kept, at: now, record: $0)
        }) { ended in
            ChangeRecord(
                AuditEvent(
                    .sessionOthersRevokedByUser, userID: userID, context: context,
                    details: ["sessionId": kept, "count": String(ended.count)], at: now),
                outbox: feed.entries(
                    ended.map { .sessionRevoked(userID: userID, sessionID: $0, reason: .user, at: now) }))
        }
        return ended.count
    }

    /// Revokes those of `ids` that are the user's and not yet revoked, with the audit event (a
    /// user's own act on their sessions must leave a trail: a failed write fails the request) and
    /// a `session.revoked` webhook event for each one ended; false when none was.
    private func end(
        _ ids: [String], of signedIn: SignedIn, action: AuditAction, reason: ChangeEvent.RevocationReason,
        context: ClientContext
    ) throws -> Bool {
        let userID = signedIn.user.id
        let now = clock.now()
        let ended = try feed.recording({
            try users.revokeSessions(ofUser: userID, ids: ids, except: nil, at: now, record: $0)
        }) {
            ended in
            ended.isEmpty
                ? .none
                : ChangeRecord(
                    AuditEvent(
                        action, userID: userID, context: context, details: ["sessionId": ids[0]], at: now),
                    outbox: feed.entries(
                        ended.map { .sessionRevoked(userID: userID, sessionID: $0, reason: reason, at: now) })
                )
        }
        return !ended.isEmpty
    }
}
