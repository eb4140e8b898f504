public import BankIDCore
import CryptoCore
public import FoundationEssentials
public import Kernel
public import SessionCore
public import Storage

/// Where linked BankID identities are kept, with the hasher that turns a personal number into
/// the keyed digests they are found by.
public struct IdentityDirectory: Sendable {
    /// The identities.
    public let store: any BankIDIdentityStore
    /// The configured identity keys.
    public let hasher: IdentityHasher

    /// Creates a directory.
    public init(store: any BankIDIdentityStore, hasher: IdentityHasher) {
        self.store = store
        self.hasher = hasher
    }
}

/// One page of a listing and the cursor for the next; nil when this page is the last.
public struct AdminPage<Item: Sendable>: Sendable {
    /// The items of this page.
    public let items: [Item]
    /// Opaque; pass it back as `cursor` for the next page.
    public let nextCursor: String?
}

/// A user with everything support needs on one screen.
public struct UserDetail: Sendable {
    /// The account.
    public let user: User
    /// Its passkeys, oldest first.
    public let passkeys: [StoredPasskey]
    /// Its live sessions, newest first.
    public let sessions: [Session]
    /// Its latest audit events, newest first.
    public let recentEvents: [AuditEvent]
    /// Its linked BankID identity (the name BankID gave and when it was linked; never a number).
    public let identity: BankIDLink?
    /// Whether it is the sandboxed app-store review account.
    public let reviewAccount: Bool
}

/// What a PATCH of a user asks to change; nil members stay as they are.
public struct UserChanges: Sendable {
    /// true disables (revoking every session at once), false enables.
    public var disabled: Bool?
    /// A new username, with sign-up's normalisation and uniqueness.
    public var username: String?
    /// A new display name, with sign-up's rules.
    public var displayName: String?

    /// Creates a change set.
    public init(disabled: Bool? = nil, username: String? = nil, displayName: String? = nil) {
        self.disabled = disabled
        self.username = username
        self.displayName = displayName
    }
}

/// The administrators' use cases over accounts, passkeys, sessions and the audit trail. Every
/// change is an audit event whose actor names the admin token (`admin:<name>`).
public struct AccountAdministration: Sendable {
    /// The stores administration runs over: one SQLite store serves them all.
    public typealias Stores = AccountStore & AdministrationStore & AuditStore & SessionAccessStore
        & ReviewAccountStore

    let store: any Stores
    let clock: any WallClock
    let random: any RandomSource
    /// Linked BankID identities; nil when BankID is not configured (a personal-number search
    /// then finds nobody and details show no identity).
    let identities: IdentityDirectory?
    /// Where the webhook events about each change go.
    let feed: ChangeFeed

    /// The page size when none is asked for.
    public static let defaultLimit = 50
    /// The largest page that may be asked for.
    public static let maximumLimit = 500
    /// How many audit events a user's detail shows.
    public static let recentEventCount = 20

    /// Creates the service with injected time and randomness.
    public init(
        store: any Stores, clock: any WallClock, random: any RandomSource,
        identities: IdentityDirectory? = nil, feed: ChangeFeed = .off
    ) {
        self.store = store
        self.clock = clock
        self.random = random
        self.identities = identities
        self.feed = feed
    }

    // MARK: Users

    /// A page of users ordered by id, optionally only those whose id is `search` or whose
    /// username or display name contains it (case-insensitive for ASCII).
    /// - Throws: `admin.invalid_cursor`, `admin.invalid_parameter` (a limit outside 1...500).
    public func listUsers(search: String?, cursor: String?, limit: Int?) throws -> AdminPage<User> {
        // A search that is twelve digits is a personal number: it finds the account its BankID
        // identity is linked to (by keyed digest), never a text match on the number.
        if let search, Self.looksLikePersonalNumber(search) {
            return AdminPage(items: try user(personalNumber: search).map { [$0] } ?? [], nextCursor: nil)
        }
        // No name, id or display name holds a control character (sign-up refuses them), and
        // PostgreSQL's text cannot hold NUL at all: such a search is malformed, not a store failure.
        if let search, search.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw AuthError(.invalidParameter, "search: control characters are not allowed")
        }
        let limit = try Self.checkLimit(limit)
        let after = try cursor.map { try Cursor.decode($0, kind: "u") }
        // One more than asked tells whether another page exists, so the last page has no cursor.
        let found = try store.searchUsers(search, afterID: after, limit: limit + 1)
        let page = Array(found.prefix(limit))
        return AdminPage(
            items: page,
            nextCursor: found.count > limit ? page.last.map { Cursor.encode($0.id, kind: "u") } : nil)
    }

    /// Whether a search is a personal number (twelve digits) rather than text.
    static func looksLikePersonalNumber(_ text: String) -> Bool {
        text.utf8.count == 12 && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// The account whose linked BankID identity is this personal number, or nil.
    ///
    /// The number is checked (12 digits, check digit), turned into its keyed digest under every
    /// configured identity key (so identities linked before a key rotation are found too) and
    /// looked up; it is never stored, logged or put in an error.
    /// - Throws: `admin.invalid_parameter` for a malformed number.
    public func user(personalNumber: String) throws -> User? {
        let number: PersonalNumber
        do {
            number = try PersonalNumber(personalNumber)
        } catch {
            throw AuthError(.invalidParameter, "personalNumber: expected 12 digits with a valid check digit")
        }
        guard let identities,
            let linked = try identities.store.linkedIdentity(matching: identities.hasher.candidates(number))
        else { return nil }
        return try store.user(id: linked.userID)
    }

    /// Creates an account without any way in yet, to hand its owner an enrollment link.
    /// - Parameters:
    ///   - username: Optional; normalised and unique as at sign-up.
    ///   - displayName: Defaults to the username; one of the two is required.
    /// - Throws: `user.invalid_username`, `user.invalid_display_name`, `user.username_taken`,
    ///   `admin.invalid_parameter` when neither name is given.
    public func createUser(
        username rawUsername: String?, displayName rawDisplayName: String?, by admin: AdminPrincipal,
        context: ClientContext
    ) throws -> User {
        let username = try rawUsername.map { raw throws(AuthError) in try Names.normaliseUsername(raw) }
        guard let shown = rawDisplayName ?? username else {
            throw AuthError(.invalidParameter, "a new user needs a username or a displayName")
        }
        let displayName = try Names.displayName(shown)
        let user = User(
            id: try random.secureToken(16), username: username, displayName: displayName,
            createdAt: clock.now(),
            userHandle: try random.secureBytes(User.handleByteCount))
        let record = record(
            .adminUserCreated, userID: user.id, by: admin, context: context,
            changes: [.userCreated(userID: user.id, method: .admin, at: user.createdAt)])
        do {
            try store.insertUser(user, record: record)
        } catch let error as StorageError where error.code == .conflict {
            throw AuthError(.usernameTaken, "the username is taken", underlying: error)
        }
        feed.committed(record.outbox)
        return user
    }

    /// The user with passkeys, live sessions and recent audit events.
    /// - Throws: `admin.user_not_found`.
    public func userDetail(id: String) throws -> UserDetail {
        let user = try requireUser(id)
        return UserDetail(
            user: user, passkeys: try store.passkeys(userID: id),
            sessions: try store.sessions(userID: id, liveAt: clock.now()),
            recentEvents: try store.auditEvents(userID: id, beforeID: nil, limit: Self.recentEventCount),
            identity: try identities?.store.linkedIdentity(userID: id).map(BankIDLink.init),
            reviewAccount: try store.isReviewAccount(userID: id))
    }

    /// Renames, disables or enables a user. Disabling revokes every live session in the same
    /// transaction, and passkey logins are refused from then on (`account.disabled`).
    /// - Throws: `admin.user_not_found`, `user.invalid_username`, `user.invalid_display_name`,
    ///   `user.username_taken`.
    public func updateUser(id: String, changes: UserChanges, by admin: AdminPrincipal, context: ClientContext)
        throws -> User
    {
        var user = try requireUser(id)
        // Every name is checked before anything is written, so a bad one changes nothing.
        if changes.username != nil || changes.displayName != nil {
            let rename = try Rename(user, username: changes.username, displayName: changes.displayName)
            user = rename.user
            do {
                try rename.store(
                    in: store,
                    record: record(
                        .adminUserRenamed, userID: id, by: admin, context: context, details: rename.details))
            } catch let error as StorageError where error.code == .notFound {
                throw AuthError(.userNotFound, "no user has this id", underlying: error)
            }
        }
        if let disabled = changes.disabled, disabled != user.isDisabled {
            let now = clock.now()
            do {
                // The record is made inside the write, from the sessions it did revoke.
                _ = try feed.recording({
                    try store.setUserDisabled(id: id, at: disabled ? now : nil, now: now, record: $0)
                }) { revoked in
                    disabled
                        ? record(
                            .adminUserDisabled, userID: id, by: admin, context: context,
                            details: ["sessionsRevoked": String(revoked.count)],
                            changes: [.userDisabled(userID: id, sessionsRevoked: revoked.count, at: now)]
                                + revoked.map {
                                    .sessionRevoked(userID: id, sessionID: $0, reason: .userDisabled, at: now)
                                })
                        : record(
                            .adminUserEnabled, userID: id, by: admin, context: context,
                            changes: [.userEnabled(userID: id, at: now)])
                }
            } catch let error as StorageError where error.code == .notFound {
                throw AuthError(.userNotFound, "no user has this id", underlying: error)
            }
            user.disabledAt = disabled ? now.storagePrecisionForAdmin : nil
        }
        return user
    }

    /// Deletes the user with every passkey and session (the audit trail stays).
    /// - Throws: `admin.user_not_found`.
    public func deleteUser(id: String, by admin: AdminPrincipal, context: ClientContext) throws {
        let record = record(
            .adminUserDeleted, userID: id, by: admin, context: context,
            changes: [.userDeleted(userID: id, at: clock.now())])
        guard try store.deleteUser(id: id, record: record) else {
            throw AuthError(.userNotFound, "no user has this id")
        }
        feed.committed(record.outbox)
    }

    // MARK: Passkeys

    /// The user's passkeys, oldest first.
    /// - Throws: `admin.user_not_found`.
    public func passkeys(userID: String) throws -> [StoredPasskey] {
        _ = try requireUser(userID)
        return try store.passkeys(userID: userID)
    }

    /// One of the user's passkeys by its credential id (base64url).
    /// - Throws: `admin.user_not_found`, `admin.passkey_not_found`.
    public func passkey(userID: String, credentialID: String) throws -> StoredPasskey {
        _ = try requireUser(userID)
        guard let id = Base64URL.decode(credentialID), let passkey = try store.passkey(credentialID: id),
            passkey.userID == userID
        else { throw AuthError(.adminPasskeyNotFound, "no such passkey for this user") }
        return passkey
    }

    /// Deletes one of the user's passkeys, the last one included (an administrator acting on a
    /// lost device; the user gets back in with an enrollment link).
    /// - Throws: `admin.user_not_found`, `admin.passkey_not_found`.
    public func deletePasskey(
        userID: String, credentialID: String, by admin: AdminPrincipal, context: ClientContext
    )
        throws
    {
        _ = try requireUser(userID)
        guard let id = Base64URL.decode(credentialID) else {
            throw AuthError(.adminPasskeyNotFound, "no such passkey for this user")
        }
        let record = record(
            .adminPasskeyDeleted, userID: userID, by: admin, context: context,
            details: ["credentialId": credentialID],
            changes: [.passkeyRemoved(userID: userID, credentialID: id, by: .admin, at: clock.now())])
        guard try store.deletePasskey(credentialID: id, userID: userID, record: record) else {
            throw AuthError(.adminPasskeyNotFound, "no such passkey for this user")
        }
        feed.committed(record.outbox)
    }

    // MARK: Sessions

    /// The user's live sessions, newest first.
    /// - Throws: `admin.user_not_found`.
    public func sessions(userID: String) throws -> [Session] {
        _ = try requireUser(userID)
        return try store.sessions(userID: userID, liveAt: clock.now())
    }

    /// Ends every live session of the user; returns how many.
    /// - Throws: `admin.user_not_found`.
    @discardableResult
    public func revokeSessions(userID: String, by admin: AdminPrincipal, context: ClientContext) throws -> Int
    {
        _ = try requireUser(userID)
        let now = clock.now()
        let revoked = try feed.recording({
            try store.revokeSessions(ofUser: userID, ids: nil, except: nil, at: now, record: $0)
        }) {
            revoked in
            record(
                .adminSessionsRevoked, userID: userID, by: admin, context: context,
                details: ["count": String(revoked.count)],
                changes: revoked.map {
                    .sessionRevoked(userID: userID, sessionID: $0, reason: .admin, at: now)
                })
        }
        return revoked.count
    }

    /// Ends one live session of the user.
    /// - Throws: `admin.user_not_found`, `admin.session_not_found` (also for another user's, or
    ///   one already ended).
    public func revokeSession(
        userID: String, sessionID: String, by admin: AdminPrincipal, context: ClientContext
    )
        throws
    {
        _ = try requireUser(userID)
        let now = clock.now()
        let record = record(
            .adminSessionRevoked, userID: userID, by: admin, context: context,
            details: ["sessionId": sessionID],
            changes: [.sessionRevoked(userID: userID, sessionID: sessionID, reason: .admin, at: now)])
        // Another user's session, or one already ended, is not revoked and records nothing.
        let ended = try store.revokeSessions(ofUser: userID, ids: [sessionID], except: nil, at: now) {
            $0.isEmpty ? .none : record
        }
        guard !ended.isEmpty else {
            throw AuthError(.sessionNotFound, "no live session with this id for this user")
        }
        feed.committed(record.outbox)
    }

    // MARK: Enrollment links

    /// Issues a one-time passkey enrollment token for the user (an enrollment link), audited as
    /// issued by the admin token.
    /// - Throws: `admin.user_not_found`, `account.disabled`, `enrollment.invalid_lifetime`.
    public func issueEnrollment(
        userID: String, lifetime: TimeInterval?, using enrollment: EnrollmentService,
        by admin: AdminPrincipal,
        context: ClientContext
    ) throws -> IssuedEnrollment {
        let user = try requireUser(userID)
        // A link for a disabled account could only fail at its end; say so now.
        try AccountAccess.admit(user)
        return try enrollment.issue(
            userID: userID, lifetime: lifetime, purpose: "admin", actor: admin.actor, context: context)
    }

    // MARK: Audit

    /// A page of audit events matching `query`, newest first.
    /// - Throws: `admin.invalid_cursor`, `admin.invalid_parameter`.
    public func auditEvents(_ query: AuditQuery, cursor: String?, limit: Int?) throws -> AdminPage<AuditEvent>
    {
        let limit = try Self.checkLimit(limit)
        var before: Int64?
        if let cursor {
            guard let id = Int64(try Cursor.decode(cursor, kind: "a")) else {
                throw AuthError(.invalidCursor, "the cursor is not one this server handed out")
            }
            before = id
        }
        let found = try store.searchAudit(query, beforeID: before, limit: limit + 1)
        let page = Array(found.prefix(limit))
        return AdminPage(
            items: page,
            nextCursor: found.count > limit
                ? page.last.flatMap(\.id).map { Cursor.encode(String($0), kind: "a") } : nil)
    }

    // MARK: Helpers

    // MARK: BankID signatures

    /// The user's BankID signature evidence, newest first (none while BankID is off).
    /// - Throws: `admin.user_not_found`.
    public func signatures(userID: String) throws -> [BankIDSignatureEvidence] {
        _ = try requireUser(userID)
        return try identities?.store.bankIDSignatures(userID: userID) ?? []
    }

    /// One signature's evidence. Audited: it may hold the signature, which names the signer.
    /// - Throws: `admin.signature_not_found`.
    public func signature(id: String, by admin: AdminPrincipal, context: ClientContext) throws
        -> BankIDSignatureEvidence
    {
        guard let evidence = try identities?.store.bankIDSignature(id: id) else {
            throw AuthError(.signatureNotFound, "no BankID signature has this id")
        }
        _ = try store.appendAudit(
            auditEvent(
                .adminBankIDSignatureViewed, userID: evidence.userID, by: admin, context: context,
                details: ["evidenceId": id]))
        return evidence
    }

    private func requireUser(_ id: String) throws -> User {
        guard let user = try store.user(id: id) else {
            throw AuthError(.userNotFound, "no user has this id")
        }
        return user
    }

    static func checkLimit(_ limit: Int?) throws(AuthError) -> Int {
        guard let limit else { return defaultLimit }
        guard (1...maximumLimit).contains(limit) else {
            throw AuthError(.invalidParameter, "limit must be 1 to \(maximumLimit)")
        }
        return limit
    }

    /// The audit event of an administrator's act, naming the admin token.
    private func auditEvent(
        _ action: AuditAction, userID: String?, by admin: AdminPrincipal, context: ClientContext,
        details: [String: String] = [:]
    ) -> AuditEvent {
        var details = details
        details["adminTokenId"] = admin.tokenID
        return AuditEvent(
            action, by: admin.actor, userID: userID, context: context, details: details, at: clock.now())
    }

    /// What an administrator's change writes beside itself: its audit event and the webhook events
    /// about it.
    private func record(
        _ action: AuditAction, userID: String?, by admin: AdminPrincipal, context: ClientContext,
        details: [String: String] = [:], changes: [ChangeEvent] = []
    ) -> ChangeRecord {
        ChangeRecord(
            auditEvent(action, userID: userID, by: admin, context: context, details: details),
            outbox: feed.entries(changes))
    }

}

/// Opaque pagination cursors: a kind letter and the last key of a page, base64url-encoded. The
/// listing is ordered by that key, so a cursor stays valid while rows come and go around it.
enum Cursor {
    static func encode(_ key: String, kind: String) -> String {
        Base64URL.encode(Array("\(kind):\(key)".utf8))
    }

    static func decode(_ cursor: String, kind: String) throws(AuthError) -> String {
        guard let bytes = Base64URL.decode(cursor), let text = String(validating: bytes, as: UTF8.self),
            text.hasPrefix("\(kind):")
        else { throw AuthError(.invalidCursor, "the cursor is not one this server handed out") }
        return String(text.dropFirst(kind.count + 1))
    }
}

extension Date {
    /// Whole milliseconds, as the stores keep times, so a returned user equals a re-read one.
    fileprivate var storagePrecisionForAdmin: Date {
        Date(timeIntervalSince1970: (timeIntervalSince1970 * 1000).rounded() / 1000)
    }
}
