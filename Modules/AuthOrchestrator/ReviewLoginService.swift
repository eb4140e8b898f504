public import CryptoCore
import FoundationEssentials
public import Kernel
public import SessionCore
public import Storage

/// The app-store review account as a deployment configures it.
public struct ReviewAccountPolicy: Sendable {
    /// The sandboxed account's username, normalised.
    public let username: String
    /// The name the account shows.
    public let displayName: String
    /// The reviewer's code.
    public let code: RedactedSecret

    /// Creates the policy; the username is normalised as sign-up normalises usernames.
    /// - Throws: `user.invalid_username`, `user.invalid_display_name`.
    public init(username: String, displayName: String, code: RedactedSecret) throws(AuthError) {
        self.username = try Names.normaliseUsername(username)
        self.displayName = try Names.displayName(displayName)
        self.code = code
    }
}

/// The reviewer login: an app-store reviewer, who has no Swedish BankID and no passkey of the
/// account, signs in with a username and a code to one sandboxed account.
///
/// It reaches that account only. A login needs the configured username and code (both compared
/// in constant time) and an account listed in `review_accounts`, which only `prepare` creates —
/// so a configuration naming a real person's username makes the server refuse to start, and a
/// real account renamed to the review username later is still refused. The account is
/// sandboxed: it cannot link a BankID identity, so it never stands for a real person.
public struct ReviewLoginService: Sendable {
    /// The stores it runs over.
    public typealias Stores = ReviewAccountStore & UserStore & AuditStore

    let store: any Stores
    let sessions: SessionService
    let clock: any WallClock
    let random: any RandomSource
    /// The configured account; nil when the reviewer login is off.
    public let policy: ReviewAccountPolicy?

    /// Creates the service.
    public init(
        store: any Stores, sessions: SessionService, clock: any WallClock, random: any RandomSource,
        policy: ReviewAccountPolicy?
    ) {
        self.store = store
        self.sessions = sessions
        self.clock = clock
        self.random = random
        self.policy = policy
    }

    /// Creates the review account when it does not exist (run at start).
    /// - Returns: the account; nil when the reviewer login is off.
    /// - Throws: `StorageError(.conflict)` when the username belongs to an account that is not
    ///   the review account.
    @discardableResult
    public func prepare() throws -> User? {
        guard let policy else { return nil }
        let candidate = User(
            id: try random.secureToken(16), username: policy.username, displayName: policy.displayName,
            createdAt: clock.now(), userHandle: try random.secureBytes(User.handleByteCount))
        let account = try store.ensureReviewAccount(candidate)
        if account.id == candidate.id {
            _ = try store.appendAudit(
                AuditEvent(
                    at: clock.now(), action: .reviewAccountCreated, actor: .system, userID: account.id,
                    requestID: nil, ipAddress: nil, details: [:]))
        }
        return account
    }

    /// Signs the reviewer in to the review account.
    /// - Throws: `method_disabled` when off; `review.login_failed` for a wrong username or code,
    ///   an account that is not (or no longer) the review account, or a disabled one.
    public func login(username: String, code: String, clientKind: ClientKind, context: ClientContext)
        throws -> (User, IssuedSession)
    {
        guard let policy else { throw AuthError(.methodDisabled, "the reviewer login is not enabled") }
        let normalised = (try? Names.normaliseUsername(username)) ?? ""
        // Both compared in full, digests for the code so its length does not show.
        let usernameMatches = ConstantTime.equals(Array(normalised.utf8), Array(policy.username.utf8))
        let codeMatches = ConstantTime.equals(
            Digest.sha256(code), Digest.sha256(policy.code.value))
        guard usernameMatches, codeMatches else {
            try refuse("credentials", userID: nil, context: context)
        }
        guard let user = try store.user(username: policy.username), try store.isReviewAccount(userID: user.id)
        else { try refuse("not_review_account", userID: nil, context: context) }
        // A disabled review account is refused like every other failure: one opaque code.
        do {
            try AccountAccess.admit(user)
        } catch {
            try refuse("disabled", userID: user.id, context: context)
        }
        let issued = try sessions.issue(
            userID: user.id, clientKind: clientKind, authMethod: .review, userAgent: context.userAgent,
            ipAddress: context.ipAddress)
        _ = try store.appendAudit(
            AuditEvent(
                .reviewLogin, userID: user.id, context: context, details: ["sessionId": issued.session.id],
                at: clock.now()))
        return (user, issued)
    }

    /// Whether `userID` is the sandboxed review account (for the rules it is kept out of).
    public func isReviewAccount(userID: String) throws -> Bool {
        try store.isReviewAccount(userID: userID)
    }

    private func refuse(_ reason: String, userID: String?, context: ClientContext) throws -> Never {
        _ = try store.appendAudit(
            AuditEvent(
                .reviewLoginFailed, userID: userID, context: context, details: ["reason": reason],
                at: clock.now()))
        throw AuthError(.reviewLoginFailed, "the reviewer login failed")
    }
}
