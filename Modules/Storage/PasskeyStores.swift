public import FoundationEssentials
public import Kernel
public import SessionCore

/// What `deletePasskeyUnlessLast` did.
public enum PasskeyDeletion: Sendable, Equatable {
    /// The passkey was deleted.
    case deleted
    /// No passkey with that credential id belongs to that user; nothing changed.
    case notFound
    /// It is the user's only passkey, so it was kept.
    case lastPasskey
}

/// The passkeys of every user. Every method is atomic on its own; dates are kept to the millisecond.
public protocol PasskeyStore: Sendable {
    /// Stores a newly registered passkey, and `record` with it.
    /// - Throws: `StorageError(.conflict)` when the credential id is already registered (to anyone),
    ///   `.constraint` when the user does not exist; nothing is written then.
    func insertPasskey(_ passkey: StoredPasskey, record: ChangeRecord) throws
    /// The passkey with this credential id, whoever owns it; nil when none. The login hot path.
    func passkey(credentialID: [UInt8]) throws -> StoredPasskey?
    /// The user's passkeys, oldest first (ties by credential id bytes).
    func passkeys(userID: String) throws -> [StoredPasskey]
    /// The credential ids of the user's passkeys, in `passkeys(userID:)`'s order: what the Signal
    /// API lists after every sign-in, read without decoding the passkeys' other columns.
    func credentialIDs(userID: String) throws -> [[UInt8]]
    /// How many passkeys the user has.
    func passkeyCount(userID: String) throws -> Int
    /// Renames the passkey when it belongs to `userID`.
    /// - Returns: false when there is no such passkey or it belongs to someone else.
    func renamePasskey(credentialID: [UInt8], userID: String, name: String) throws -> Bool
    /// Deletes the passkey when it belongs to `userID`, even when it is their last, and writes
    /// `record` with it.
    /// - Returns: false when there is no such passkey or it belongs to someone else (and nothing
    ///   is written).
    func deletePasskey(credentialID: [UInt8], userID: String, record: ChangeRecord) throws -> Bool
    /// Deletes unless it is the user's last one, in one transaction with `record`; returns
    /// .deleted, .notFound or .lastPasskey (`record` is written only for .deleted).
    ///
    /// Checking and deleting in one transaction means two concurrent deletions of a user's last
    /// two passkeys cannot both succeed.
    func deletePasskeyUnlessLast(credentialID: [UInt8], userID: String, record: ChangeRecord) throws
        -> PasskeyDeletion
    /// Records a successful sign-in: the counter, the BS flag and the time of use.
    ///
    /// Neither the counter nor the last-used time moves backwards (as `touchSession`): two logins
    /// racing with the same passkey leave the higher values. Judging a counter regression is the
    /// verifier's job, before this call.
    /// - Throws: `StorageError(.notFound)` when the passkey no longer exists (deleted meanwhile).
    func recordPasskeyUse(credentialID: [UInt8], signCount: UInt32, backupState: Bool, at: Date)
        throws
}

/// Accounts together with their passkeys, for the one write that needs both: passkey sign-up.
///
/// A protocol of its own (rather than a method on `PasskeyStore`) because only a store that holds
/// both users and passkeys can make the two inserts one transaction.
public protocol AccountStore: UserStore, PasskeyStore {
    /// The passkey with this credential id together with the user who owns it, read in one
    /// lookup (one snapshot): the login hot path. Nil when there is no such passkey.
    func passkeyWithOwner(credentialID: [UInt8]) throws -> (passkey: StoredPasskey, owner: User)?

    /// Creates a user, their first passkey and (sign-up) their first session in one transaction
    /// with `record`, so a failed insert leaves no account behind and a new account is never
    /// without its audit event.
    /// - Throws: `StorageError(.invalidArgument)` when the passkey or the session belongs to
    ///   another user, `.conflict` when the user id, username, user handle, credential id or
    ///   session collides; nothing is stored then.
    func createUser(_ user: User, firstPasskey: StoredPasskey, session: Session?, record: ChangeRecord)
        throws
}

extension PasskeyStore {
    /// Stores a passkey, recording nothing (the tests' and the bench's seeded accounts).
    public func insertPasskey(_ passkey: StoredPasskey) throws { try insertPasskey(passkey, record: .none) }

    /// Deletes a user's passkey, recording nothing.
    public func deletePasskey(credentialID: [UInt8], userID: String) throws -> Bool {
        try deletePasskey(credentialID: credentialID, userID: userID, record: .none)
    }

    /// Deletes a user's passkey unless it is their last, recording nothing.
    public func deletePasskeyUnlessLast(credentialID: [UInt8], userID: String) throws -> PasskeyDeletion {
        try deletePasskeyUnlessLast(credentialID: credentialID, userID: userID, record: .none)
    }
}

extension AccountStore {
    /// Creates a user with a first passkey, recording nothing.
    public func createUser(_ user: User, firstPasskey: StoredPasskey) throws {
        try createUser(user, firstPasskey: firstPasskey, session: nil, record: .none)
    }
}

/// What a challenge was issued for; a challenge is only accepted for the ceremony it was made for.
public enum ChallengePurpose: String, Sendable {
    /// navigator.credentials.create: sign-up or adding a passkey.
    case registration
    /// navigator.credentials.get: signing in.
    case login
}

/// A WebAuthn challenge waiting for its response: random, single use, short-lived.
public struct StoredChallenge: Sendable, Equatable {
    /// Random, unguessable handle (base64url) the client sends back with its response.
    public var id: String
    /// The challenge bytes the authenticator signs.
    public var challenge: [UInt8]
    /// The ceremony it was issued for.
    public var purpose: ChallengePurpose
    /// The user it is bound to, when known (adding a passkey, login by username).
    public var userID: String?
    /// The username a sign-up asked for (the user does not exist yet).
    public var username: String?
    /// The display name a sign-up asked for.
    public var displayName: String?
    /// The WebAuthn user.id handed to the authenticator at registration.
    public var userHandle: [UInt8]?
    /// When it was issued.
    public var createdAt: Date
    /// The first instant at which it is no longer accepted.
    public var expiresAt: Date
    /// A registration the client runs with `mediation: "conditional"` (an automatic passkey
    /// upgrade): its response may come without user presence (WebAuthn L3 §7.1 step 14).
    public var conditional: Bool

    /// Creates a challenge value.
    public init(
        id: String, challenge: [UInt8], purpose: ChallengePurpose, userID: String? = nil,
        username: String? = nil, displayName: String? = nil, userHandle: [UInt8]? = nil,
        createdAt: Date, expiresAt: Date, conditional: Bool = false
    ) {
        self.id = id
        self.challenge = challenge
        self.purpose = purpose
        self.userID = userID
        self.username = username
        self.displayName = displayName
        self.userHandle = userHandle
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.conditional = conditional
    }
}

/// Outstanding WebAuthn challenges, shared by every instance so any of them can finish a ceremony.
public protocol ChallengeStore: Sendable {
    /// Stores a new challenge.
    /// - Throws: `StorageError(.conflict)` when the id is taken.
    func insertChallenge(_ challenge: StoredChallenge) throws
    /// Atomically removes and returns the challenge when it exists, has `purpose` and has not expired at `now`;
    /// nil otherwise (a consumed, expired or other-purpose challenge is gone or untouched accordingly: an expired one is deleted too). Exactly one of two concurrent consumers gets it.
    ///
    /// Any attempt deletes the challenge, whatever the outcome: one with the wrong purpose is
    /// gone too, not left for a second try. A challenge is good for exactly one verification
    /// attempt, so a response cannot be replayed against the other ceremony and a probe cannot
    /// keep a challenge alive. It has expired when `expiresAt <= now`.
    func consumeChallenge(id: String, purpose: ChallengePurpose, at now: Date) throws
        -> StoredChallenge?
    /// The challenge when it exists, has `purpose` and has not expired at `now`, without
    /// consuming it: a caller can verify against it first and consume it when it commits (see
    /// `PasskeyLoginStore`), so the write lock is never held across the signature check.
    func challenge(id: String, purpose: ChallengePurpose, at now: Date) throws -> StoredChallenge?
    /// Deletes every challenge that has expired at `now` (`expiresAt <= now`, exactly those
    /// `consumeChallenge` would refuse as expired) and returns how many.
    func purgeChallenges(expiredBefore now: Date) throws -> Int
    /// How many challenges are stored, expired or not (for metrics and the issuing limit).
    /// Sealed challenges are not stored, so they are not counted.
    func challengeCount() throws -> Int
    /// Records the use of a sealed challenge (one whose id carries it, MACed, so nothing was
    /// stored when it was issued): true the first time, false when it was already used or has
    /// expired at `now` (`expiresAt <= now`). Exactly one of concurrent callers gets true.
    ///
    /// A use is kept until `expiresAt` and then purged with the expired challenges
    /// (`purgeChallenges`), when the seal refuses the challenge anyway.
    func useSealedChallenge(_ challenge: [UInt8], expiresAt: Date, at now: Date) throws -> Bool
}

/// The login challenge a verified login answered, used up by its commit.
public enum LoginChallengeUse: Sendable, Equatable {
    /// A challenge stored by `ChallengeStore.insertChallenge`, consumed by id.
    case stored(id: String)
    /// A sealed challenge (its bytes and its expiry), recorded as used (see
    /// `ChallengeStore.useSealedChallenge`).
    case sealed(challenge: [UInt8], expiresAt: Date)
}

/// Everything a verified passkey login changes, committed together by `PasskeyLoginStore`.
public struct PasskeyLoginRecord: Sendable {
    /// The login challenge the response answered; used up by the commit.
    public var challenge: LoginChallengeUse
    /// The passkey that signed.
    public var credentialID: [UInt8]
    /// The authenticator's new signature counter.
    public var signCount: UInt32
    /// The authenticator's backup state flag in this assertion.
    public var backupState: Bool
    /// The session the login opens.
    public var session: Session
    /// The session the request came with, ended by signing in; nil when there was none.
    public var replacedSessionID: String?
    /// The audit event recording the login.
    public var event: AuditEvent
    /// The webhook events about the replaced session's end, made from its owner's id (it may be
    /// another account's session than the one signing in) and enqueued only when this commit did
    /// end it; nil when nobody subscribes. Called inside the write, so it must only build values.
    public var replacedSessionOutbox: (@Sendable (_ ownerID: String) -> [OutboxEntry])?
    /// When the login happened.
    public var at: Date

    /// Creates a record for a login that answered a stored challenge.
    public init(
        challengeID: String, credentialID: [UInt8], signCount: UInt32, backupState: Bool, session: Session,
        replacedSessionID: String?, event: AuditEvent, at: Date
    ) {
        self.init(
            challenge: .stored(id: challengeID), credentialID: credentialID, signCount: signCount,
            backupState: backupState, session: session, replacedSessionID: replacedSessionID, event: event,
            at: at)
    }

    /// Creates a record.
    public init(
        challenge: LoginChallengeUse, credentialID: [UInt8], signCount: UInt32, backupState: Bool,
        session: Session, replacedSessionID: String?, event: AuditEvent, at: Date
    ) {
        self.challenge = challenge
        self.credentialID = credentialID
        self.signCount = signCount
        self.backupState = backupState
        self.session = session
        self.replacedSessionID = replacedSessionID
        self.event = event
        self.at = at
    }
}

/// Everything a verified passkey re-authentication changes, committed together by
/// `PasskeyLoginStore.commitPasskeyReauthentication(_:)`: no session is opened, the signed-in
/// one records the proof.
public struct PasskeyReauthenticationRecord: Sendable {
    /// The passkey that signed (the signed-in user's).
    public var credentialID: [UInt8]
    /// The authenticator's new signature counter.
    public var signCount: UInt32
    /// The authenticator's backup state flag in this assertion.
    public var backupState: Bool
    /// The signed-in user.
    public var userID: String
    /// The request's session (and the one it presented, when the request rotated it).
    public var sessionIDs: [String]
    /// The audit event recording the re-authentication.
    public var event: AuditEvent
    /// When it happened: the new proof of presence.
    public var at: Date

    /// Creates a record.
    public init(
        credentialID: [UInt8], signCount: UInt32, backupState: Bool, userID: String, sessionIDs: [String],
        event: AuditEvent, at: Date
    ) {
        self.credentialID = credentialID
        self.signCount = signCount
        self.backupState = backupState
        self.userID = userID
        self.sessionIDs = sessionIDs
        self.event = event
        self.at = at
    }
}

/// The one write of a passkey login: a store that holds challenges, passkeys, sessions and the
/// audit log commits a verified login as a single transaction.
///
/// One transaction instead of four keeps a sign-in to one turn of the single writer, and makes
/// the login all or nothing: a session never exists without its consumed challenge and its audit
/// event.
public protocol PasskeyLoginStore: Sendable {
    /// Consumes the login challenge (a stored one by id, a sealed one by recording its use) and,
    /// when it was still good, records the passkey's use (as `recordPasskeyUse`), stores the
    /// session, revokes the replaced one and appends the event.
    ///
    /// - Returns: The credential ids of the session user's passkeys as the commit left them (in
    ///   `credentialIDs(userID:)`'s order: what the Signal API lists after the sign-in, read in
    ///   the same transaction rather than in a read of its own after it); nil when the challenge
    ///   was already used, has expired or is for another purpose: the challenge is gone and
    ///   nothing else was written. Of two concurrent commits for one challenge exactly one
    ///   returns a list.
    /// - Throws: `StorageError(.notFound)` when the passkey no longer exists, `.conflict` when
    ///   the session collides; nothing is written then (the challenge stays).
    ///
    /// Async so that a caller on a thread serving other connections (an HTTP worker) is
    /// suspended until the commit instead of holding the thread (SQLite; see
    /// `StorageEngine.writeAsync`); anywhere else it waits as every other write does.
    func commitPasskeyLogin(_ record: PasskeyLoginRecord) async throws -> [[UInt8]]?

    /// Records the passkey's use (as `recordPasskeyUse`), the proof of presence on those of the
    /// record's sessions that are the user's and not revoked, and the event, in one transaction.
    /// - Returns: false, with nothing written, when none of the sessions is live any more (it was
    ///   revoked meanwhile: the proof has nowhere to go).
    /// - Throws: `StorageError(.notFound)` when the passkey no longer exists; nothing is written.
    func commitPasskeyReauthentication(_ record: PasskeyReauthenticationRecord) throws -> Bool
}
