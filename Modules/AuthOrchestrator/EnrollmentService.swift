import CryptoCore
public import FoundationEssentials
public import Kernel
public import SessionCore
public import Storage

/// A token just issued: the secret is here once and nowhere else.
public struct IssuedEnrollment: Sendable {
    /// The stored record (hash only).
    public let record: EnrollmentTokenRecord
    /// The secret, `pve_` + 256 bits in base64url.
    public let token: String

    /// The token's public id.
    public var id: String { record.id }
    /// When it stops being accepted.
    public var expiresAt: Date { record.expiresAt }
}

/// What a recovery does to the rest of the account once the new passkey exists.
public struct RecoveryPolicy: Sendable, Equatable {
    /// End the account's other sessions (default): whoever holds a lost device is signed out.
    public var revokeOtherSessions: Bool
    /// Remove the account's older passkeys (default off: a lost phone's passkey may sync back).
    public var revokeOldPasskeys: Bool
    /// How long the recovery's enrollment token may be used: 10 minutes.
    public var tokenLifetime: TimeInterval

    /// Creates a policy with the documented defaults.
    public init(
        revokeOtherSessions: Bool = true, revokeOldPasskeys: Bool = false, tokenLifetime: TimeInterval = 600
    ) {
        self.revokeOtherSessions = revokeOtherSessions
        self.revokeOldPasskeys = revokeOldPasskeys
        self.tokenLifetime = tokenLifetime
    }
}

/// One-time passkey enrollment tokens: an administrator's enrollment link, and BankID recovery's
/// token. A token adds one passkey to one account and opens a session.
///
/// Single use holds under races: the token is spent by the same transaction that stores the
/// passkey (`EnrollmentTokenStore.redeemEnrollmentToken`), so two ceremonies started with one
/// token can both get options, but only one ends with a passkey.
public struct EnrollmentService: Sendable {
    /// The stores enrollment runs over.
    public typealias Stores = EnrollmentTokenStore & AccountStore & AuditStore & ChallengeStore

    let store: any Stores
    let passkeys: PasskeyService
    let sessions: SessionService
    let clock: any WallClock
    let random: any RandomSource
    /// Where the webhook events about enrolled passkeys and recoveries go.
    let feed: ChangeFeed
    /// What a recovery enrollment revokes.
    public let recoveryPolicy: RecoveryPolicy

    /// The purpose of tokens handed out by BankID recovery.
    public static let recoveryPurpose = "recovery"

    /// Enrollment tokens start with this, so secret scanners recognise them.
    public static let prefix = "pve_"
    /// The lifetime when none is asked for: 24 hours.
    public static let defaultLifetime: TimeInterval = 86_400
    /// The lifetimes that may be asked for: 5 minutes to 7 days.
    public static let allowedLifetimes: ClosedRange<TimeInterval> = 300...(7 * 86_400)

    /// Creates the service over its stores and the passkey use cases it shares verification with.
    public init(
        store: any Stores, passkeys: PasskeyService, sessions: SessionService,
        recoveryPolicy: RecoveryPolicy = RecoveryPolicy(), clock: any WallClock, random: any RandomSource,
        feed: ChangeFeed = .off
    ) {
        self.feed = feed
        self.store = store
        self.passkeys = passkeys
        self.sessions = sessions
        self.recoveryPolicy = recoveryPolicy
        self.clock = clock
        self.random = random
    }

    /// Issues a token for an existing account.
    /// - Parameters:
    ///   - userID: The account.
    ///   - lifetime: Seconds it stays good (default 24 h, 5 min to 7 days).
    ///   - purpose: "admin", "recovery", …
    ///   - actor: Who issued it, for the record and the audit trail.
    ///   - bindingHash: The client binding it is good for (a recovery's BankID order's); nil
    ///     lets any holder of the secret use it (an administrator's enrollment link).
    ///   - context: The request, for the audit trail.
    /// - Throws: `enrollment.invalid_lifetime`; `StorageError(.constraint)` for an unknown user.
    public func issue(
        userID: String, lifetime: TimeInterval?, purpose: String, actor: AuditActor,
        bindingHash: [UInt8]? = nil,
        context: ClientContext
    ) throws -> IssuedEnrollment {
        let lifetime = lifetime ?? Self.defaultLifetime
        guard Self.allowedLifetimes.contains(lifetime) else {
            throw AuthError(.enrollmentInvalidLifetime, "an enrollment token lives 300 seconds to 7 days")
        }
        let now = clock.now()
        let token = Self.prefix + (try random.secureToken(32))
        let record = EnrollmentTokenRecord(
            id: "enr_" + (try random.secureToken(12)), userID: userID, tokenHash: Digest.sha256(token),
            purpose: purpose, createdBy: actor.rawValue, createdAt: now, expiresAt: now + lifetime,
            bindingHash: bindingHash)
        try store.insertEnrollmentToken(record)
        _ = try store.appendAudit(
            AuditEvent(
                .enrollmentIssued, by: actor, userID: userID, context: context,
                details: [
                    "tokenId": record.id, "purpose": purpose,
                    "expiresAt": String(Int(record.expiresAt.timeIntervalSince1970)),
                ], at: now))
        return IssuedEnrollment(record: record, token: token)
    }

    /// A recovery's token for `userID`: short-lived (the policy's lifetime), single use, purpose
    /// "recovery", issued by BankID, good only for the client bound by `bindingHash`.
    public func issueRecoveryToken(userID: String, bindingHash: [UInt8], context: ClientContext) throws
        -> String
    {
        try issue(
            userID: userID, lifetime: recoveryPolicy.tokenLifetime, purpose: Self.recoveryPurpose,
            actor: .bankID, bindingHash: bindingHash, context: context
        ).token
    }

    /// Creation options for the token's account. The token stays unused until a passkey is
    /// stored with it, so a failed ceremony can be retried.
    /// - Parameter client: who presents the token; a token bound to a client (a recovery's) is
    ///   refused for any other, with the same code as an unknown one.
    /// - Throws: `enrollment.invalid`, `account.disabled`, `passkey.disabled`.
    public func startRegistration(token: String, client: BankIDRequester = BankIDRequester()) throws
        -> IssuedChallenge
    {
        let (record, user) = try usable(token)
        if let bound = record.bindingHash, !client.isBound(to: bound) {
            throw AuthError(.enrollmentInvalid, "the enrollment token is unknown, used or expired")
        }
        let issued = try passkeys.startRegistration(.signedIn(user))
        try store.linkEnrollmentChallenge(challengeID: issued.challengeID, tokenID: record.id)
        return issued
    }

    /// Finishes a registration whose challenge was issued for an enrollment token: verifies it,
    /// then in one transaction spends the token, stores the passkey, opens a session and, for a
    /// recovery, applies the recovery policy, with the audit and webhook events of all of it.
    /// - Returns: nil when the challenge was not issued for an enrollment token (the ordinary
    ///   registration handles it).
    /// - Throws: `enrollment.invalid` (used meanwhile or expired), `passkey.challenge_invalid`,
    ///   `passkey.credential_exists`, `passkey.invalid_name`, `account.disabled`, or the failing
    ///   step's `PasskeyError`.
    public func finishRegistration(
        challengeID: String, response: [UInt8], name: String?, clientKind: ClientKind, context: ClientContext
    ) throws -> CompletedRegistration? {
        guard let tokenID = try store.enrollmentTokenID(challengeID: challengeID) else { return nil }
        // Switched off since the challenge was issued (a restart with new configuration).
        guard passkeys.policy.enabled else {
            throw AuthError(.passkeyDisabled, "passkeys are not enabled here")
        }
        let chosenName = try name.map { raw throws(AuthError) in try Names.passkeyName(raw) }
        let now = clock.now()
        guard let challenge = try store.consumeChallenge(id: challengeID, purpose: .registration, at: now),
            let userID = challenge.userID
        else {
            throw AuthError(
                .challengeInvalid, "the challenge is unknown, used, expired or for another ceremony")
        }
        guard let user = try store.user(id: userID) else {
            throw AuthError(.enrollmentInvalid, "the enrollment token is unknown, used or expired")
        }
        try AccountAccess.admit(user)
        let passkey = try passkeys.verifiedPasskey(
            response: response, challenge: challenge, userID: userID, name: chosenName, at: now)
        // The purpose never changes, so it is read before the one write that spends the token.
        let isRecovery = try store.enrollmentToken(id: tokenID)?.purpose == Self.recoveryPurpose
        let session = try sessions.prepare(
            userID: userID, clientKind: clientKind, authMethod: .enrollment, userAgent: context.userAgent,
            ipAddress: context.ipAddress)
        let recovery =
            isRecovery
            ? RecoveryChanges(
                revokeOtherSessions: recoveryPolicy.revokeOtherSessions,
                deleteOtherPasskeys: recoveryPolicy.revokeOldPasskeys) : .none
        let redemption: EnrollmentRedemption?
        do {
            redemption = try feed.recording({
                try store.redeemEnrollmentToken(
                    id: tokenID, passkey: passkey, session: session.session, at: now, recovery: recovery,
                    record: $0)
            }) { redemption in
                record(
                    redemption, tokenID: tokenID, passkey: passkey, sessionID: session.session.id,
                    isRecovery: isRecovery, context: context, at: now)
            }
        } catch let error as StorageError where error.code == .conflict {
            throw AuthError(.credentialExists, "this passkey is already registered", underlying: error)
        }
        guard let redemption else {
            throw AuthError(.enrollmentInvalid, "the enrollment token is unknown, used or expired")
        }
        var completed = CompletedRegistration(user: user, passkey: passkey, session: session)
        if isRecovery {
            completed.recovery = RecoveryOutcome(
                sessionsRevoked: redemption.revokedSessionIDs.count,
                passkeysRevoked: redemption.deletedCredentialIDs.count)
        }
        return completed
    }

    /// What a redemption writes beside itself: `passkey.enrolled` and, for a recovery,
    /// `account.recovered` with what the policy revoked; the webhook events of each.
    private func record(
        _ redemption: EnrollmentRedemption, tokenID: String, passkey: StoredPasskey, sessionID: String,
        isRecovery: Bool, context: ClientContext, at now: Date
    ) -> ChangeRecord {
        let userID = passkey.userID
        let credentialID = Base64URL.encode(passkey.credentialID)
        var audit = [
            AuditEvent(
                .passkeyEnrolled, userID: userID, context: context,
                details: ["tokenId": tokenID, "credentialId": credentialID, "sessionId": sessionID], at: now)
        ]
        var changes: [ChangeEvent] = [
            .passkeyAdded(
                userID: userID, credentialID: passkey.credentialID, via: isRecovery ? .recovery : .enrollment,
                at: now)
        ]
        if isRecovery {
            let sessionsRevoked = redemption.revokedSessionIDs.count
            let passkeysRevoked = redemption.deletedCredentialIDs.count
            audit.append(
                AuditEvent(
                    .accountRecovered, userID: userID, context: context,
                    details: [
                        "sessionsRevoked": String(sessionsRevoked),
                        "passkeysRevoked": String(passkeysRevoked),
                        "credentialId": credentialID,
                    ], at: now))
            changes += redemption.revokedSessionIDs.map {
                .sessionRevoked(userID: userID, sessionID: $0, reason: .recovery, at: now)
            }
            changes += redemption.deletedCredentialIDs.map {
                .passkeyRemoved(userID: userID, credentialID: $0, by: .recovery, at: now)
            }
            changes.append(
                .recoveryCompleted(
                    userID: userID, credentialID: passkey.credentialID, sessionsRevoked: sessionsRevoked,
                    passkeysRevoked: passkeysRevoked, at: now))
        }
        return ChangeRecord(audit: audit, outbox: feed.entries(changes))
    }

    /// The token's record and account when it can still be used.
    private func usable(_ token: String) throws -> (EnrollmentTokenRecord, User) {
        let hash = Digest.sha256(token)
        // Found by the hash of a 256-bit secret; the bytes are compared again in constant time.
        guard let record = try store.enrollmentToken(hash: hash), ConstantTime.equals(record.tokenHash, hash),
            record.usedAt == nil, record.expiresAt > clock.now(), let user = try store.user(id: record.userID)
        else { throw AuthError(.enrollmentInvalid, "the enrollment token is unknown, used or expired") }
        try AccountAccess.admit(user)
        return (record, user)
    }
}
