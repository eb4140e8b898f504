public import Foundation
public import Kernel
public import SessionCore
import Synchronization

/// Every store in memory, with the same semantics as `SQLiteStore` (conflicts, the cascade from
/// users to sessions and passkeys, ordering, millisecond times), for tests of the layers above
/// Storage. One lock guards everything, so each method is one atomic step, as a transaction is.
public final class MemoryStore: Sendable {
    private struct State {
        var users: [String: User] = [:]
        /// username → user id, the UNIQUE index.
        var usernames: [String: String] = [:]
        /// user handle → user id, the UNIQUE index.
        var userHandles: [[UInt8]: String] = [:]
        /// credential id → passkey, the primary key.
        var passkeys: [[UInt8]: StoredPasskey] = [:]
        var challenges: [String: StoredChallenge] = [:]
        /// Used sealed challenges (their bytes) and when each expires.
        var usedChallenges: [[UInt8]: Date] = [:]
        var sessions: [String: Session] = [:]
        /// token hash → session id, the UNIQUE index.
        var sessionIDsByTokenHash: [[UInt8]: String] = [:]
        var audit: [AuditEvent] = []
        /// Ids only grow and are never reused, as in SQLite, where audit events are never
        /// deleted and a new one gets max(id) + 1.
        var lastAuditID: Int64 = 0
        var settings: [String: [UInt8]] = [:]

        /// Records a sealed challenge's use, as SQLiteStore's used_challenges key does.
        mutating func useSealedChallenge(_ challenge: [UInt8], expiresAt: Date, at now: Date) -> Bool {
            let expiresAt = expiresAt.storagePrecision
            guard expiresAt > now.storagePrecision, usedChallenges[challenge] == nil else { return false }
            usedChallenges[challenge] = expiresAt
            return true
        }

        mutating func insertSession(_ session: Session) throws(StorageError) {
            guard users[session.userID] != nil else {
                throw StorageError(.constraint, "FOREIGN KEY constraint failed")
            }
            guard sessions[session.id] == nil, sessionIDsByTokenHash[session.tokenHash] == nil
            else {
                throw StorageError(.conflict, "a session with this id or token hash already exists")
            }
            sessions[session.id] = session.normalised
            sessionIDsByTokenHash[session.tokenHash] = session.id
        }

        /// A login with the passkey: never backwards, as in SQLiteStore, so racing logins leave
        /// the higher counter and the later time.
        mutating func recordPasskeyUse(credentialID: [UInt8], signCount: UInt32, backupState: Bool, at: Date)
            throws(StorageError)
        {
            guard var passkey = passkeys[credentialID] else {
                throw StorageError(.notFound, "no such passkey")
            }
            let at = at.storagePrecision
            passkey.signCount = max(passkey.signCount, signCount)
            passkey.backupState = backupState
            passkey.lastUsedAt = max(passkey.lastUsedAt ?? at, at)
            passkeys[credentialID] = passkey
        }

        mutating func insertUser(_ user: User) throws(StorageError) {
            // Check every unique key before changing anything, as one INSERT would.
            guard users[user.id] == nil else {
                throw StorageError(.conflict, "a user with this id already exists")
            }
            if let username = user.username, usernames[username] != nil {
                throw StorageError(.conflict, "a user with this username already exists")
            }
            guard (1...64).contains(user.userHandle.count) else {
                throw StorageError(.constraint, "users.user_handle must be 1 to 64 bytes")
            }
            guard userHandles[user.userHandle] == nil else {
                throw StorageError(.conflict, "a user with this user handle already exists")
            }
            if let username = user.username { usernames[username] = user.id }
            userHandles[user.userHandle] = user.id
            users[user.id] = user.normalised
        }

        mutating func insertPasskey(_ passkey: StoredPasskey) throws(StorageError) {
            guard users[passkey.userID] != nil else {
                throw StorageError(.constraint, "FOREIGN KEY constraint failed")
            }
            guard passkeys[passkey.credentialID] == nil else {
                throw StorageError(.conflict, "a passkey with this credential id already exists")
            }
            passkeys[passkey.credentialID] = passkey.normalised
        }

        /// The passkey when it exists and belongs to `userID`.
        func ownedPasskey(_ credentialID: [UInt8], userID: String) -> StoredPasskey? {
            passkeys[credentialID].flatMap { $0.userID == userID ? $0 : nil }
        }

        mutating func removeSession(id: String) {
            guard let session = sessions.removeValue(forKey: id) else { return }
            sessionIDsByTokenHash[session.tokenHash] = nil
        }
    }

    private let state = Mutex(State())
    /// Enrollment tokens and their challenge links (MemoryAdminStores.swift); taken before `state`
    /// when both are needed, never after.
    let enrollments = Mutex(MemoryEnrollments())
    /// The review accounts' user ids (ReviewAccountStores.swift); taken before `state`.
    let reviewAccounts = Mutex(Set<String>())

    /// Creates an empty store.
    public init() {}
}

extension MemoryStore: UserStore {
    public func insertUser(_ user: User) throws {
        try state.withLock { state throws(StorageError) in try state.insertUser(user) }
    }

    public func user(id: String) throws -> User? {
        state.withLock { $0.users[id] }
    }

    public func user(username: String) throws -> User? {
        state.withLock { state in state.usernames[username].flatMap { state.users[$0] } }
    }

    public func user(handle: [UInt8]) throws -> User? {
        state.withLock { state in state.userHandles[handle].flatMap { state.users[$0] } }
    }

    public func updateUser(_ user: User) throws {
        try state.withLock { state throws(StorageError) in
            guard var stored = state.users[user.id] else {
                throw StorageError(.notFound, "no such user")
            }
            if let username = user.username, let owner = state.usernames[username], owner != user.id {
                throw StorageError(.conflict, "a user with this username already exists")
            }
            if let old = stored.username { state.usernames[old] = nil }
            if let new = user.username { state.usernames[new] = user.id }
            // The creation time is not the caller's to change, as in SQLiteStore.
            stored.username = user.username
            stored.displayName = user.displayName
            stored.disabledAt = user.disabledAt?.storagePrecision
            state.users[user.id] = stored
        }
    }

    public func deleteUser(id: String) throws -> Bool {
        state.withLock { state in
            guard let user = state.users.removeValue(forKey: id) else { return false }
            if let username = user.username { state.usernames[username] = nil }
            state.userHandles[user.userHandle] = nil
            // The cascade SQLite performs through ON DELETE CASCADE.
            for session in state.sessions.values where session.userID == id {
                state.removeSession(id: session.id)
            }
            state.passkeys = state.passkeys.filter { $0.value.userID != id }
            return true
        }
    }

    public func users(afterID: String?, limit: Int) throws -> [User] {
        guard limit > 0 else { return [] }
        return state.withLock { state in
            // Byte order, which is what SQLite's BINARY collation sorts by.
            state.users.values
                .filter { user in afterID.map { bytewiseLess($0, user.id) } ?? true }
                .sorted { bytewiseLess($0.id, $1.id) }
                .prefix(limit)
                .map { $0 }
        }
    }

    public func userCount() throws -> Int {
        state.withLock { $0.users.count }
    }
}

extension MemoryStore: SessionRepository {
    public func insertSession(_ session: Session) throws {
        try state.withLock { state throws(StorageError) in try state.insertSession(session) }
    }

    public func session(tokenHash: [UInt8]) throws -> Session? {
        state.withLock { state in
            state.sessionIDsByTokenHash[tokenHash].flatMap { state.sessions[$0] }
        }
    }

    public func session(id: String) throws -> Session? {
        state.withLock { $0.sessions[id] }
    }

    public func touchSession(id: String, at: Date) throws {
        let at = at.storagePrecision
        state.withLock { state in
            guard let session = state.sessions[id] else { return }
            state.sessions[id]?.lastSeenAt = max(session.lastSeenAt, at)
        }
    }

    public func revokeSession(id: String, at: Date) throws -> Bool {
        let at = at.storagePrecision
        return state.withLock { state in
            guard let session = state.sessions[id], session.revokedAt == nil else { return false }
            state.sessions[id]?.revokedAt = at
            return true
        }
    }

    public func revokeSessions(userID: String, exceptID: String?, at: Date) throws -> Int {
        let at = at.storagePrecision
        return state.withLock { state in
            let ids = state.sessions.values
                .filter { $0.userID == userID && $0.id != exceptID && $0.isLive(at: at) }
                .map(\.id)
            for id in ids { state.sessions[id]?.revokedAt = at }
            return ids.count
        }
    }

    public func sessions(userID: String, liveAt now: Date) throws -> [Session] {
        let now = now.storagePrecision
        return state.withLock { state in
            state.sessions.values
                .filter { $0.userID == userID && $0.isLive(at: now) }
                .sorted {
                    $0.createdAt != $1.createdAt
                        ? $0.createdAt > $1.createdAt : bytewiseLess($1.id, $0.id)
                }
        }
    }

    public func rotateSession(oldID: String, replacement: Session, at: Date) throws {
        let at = at.storagePrecision
        try state.withLock { state throws(StorageError) in
            guard let old = state.sessions[oldID] else {
                throw StorageError(.notFound, "no such session")
            }
            guard old.revokedAt == nil else {
                throw StorageError(.conflict, "the session was already revoked")
            }
            // Insert first: if the replacement is refused, the old session must stay as it was.
            try state.insertSession(replacement)
            state.sessions[oldID]?.revokedAt = at
        }
    }

    public func rotateSession(oldID: String, replacement: Session, oldExpiresAt: Date) throws -> Bool {
        let oldExpiresAt = oldExpiresAt.storagePrecision
        return try state.withLock { state throws(StorageError) in
            guard let old = state.sessions[oldID], old.revokedAt == nil, old.expiresAt > oldExpiresAt else {
                return false
            }
            try state.insertSession(replacement)
            state.sessions[oldID]?.expiresAt = oldExpiresAt
            return true
        }
    }

    public func purgeSessions(endedBefore cutoff: Date) throws -> Int {
        let cutoff = cutoff.storagePrecision
        return state.withLock { state in
            let ids = state.sessions.values.filter { session in
                session.expiresAt < cutoff || session.revokedAt.map { $0 < cutoff } ?? false
            }.map(\.id)
            for id in ids { state.removeSession(id: id) }
            return ids.count
        }
    }
}

extension MemoryStore: AuditStore {
    public func appendAudit(_ event: AuditEvent) throws -> Int64 {
        state.withLock { state in
            state.lastAuditID += 1
            var stored = event
            stored.id = state.lastAuditID
            stored.at = event.at.storagePrecision
            state.audit.append(stored)
            return state.lastAuditID
        }
    }

    public func auditEvents(userID: String?, beforeID: Int64?, limit: Int) throws -> [AuditEvent] {
        guard limit > 0 else { return [] }
        return state.withLock { state in
            // Appended in id order, so walking backwards is newest first.
            var page: [AuditEvent] = []
            for event in state.audit.reversed() {
                if let beforeID, let id = event.id, id >= beforeID { continue }
                if let userID, event.userID != userID { continue }
                page.append(event)
                if page.count == limit { break }
            }
            return page
        }
    }
}

extension MemoryStore: SettingsStore {
    public func setting(_ key: String) throws -> [UInt8]? {
        state.withLock { $0.settings[key] }
    }

    public func setSetting(_ key: String, value: [UInt8]) throws {
        state.withLock { $0.settings[key] = value }
    }

    public func insertSettingIfAbsent(_ key: String, value: [UInt8]) throws -> Bool {
        state.withLock { state in
            guard state.settings[key] == nil else { return false }
            state.settings[key] = value
            return true
        }
    }
}

extension MemoryStore: AccountStore {
    public func insertPasskey(_ passkey: StoredPasskey) throws {
        try state.withLock { state throws(StorageError) in try state.insertPasskey(passkey) }
    }

    public func passkey(credentialID: [UInt8]) throws -> StoredPasskey? {
        state.withLock { $0.passkeys[credentialID] }
    }

    public func passkeyWithOwner(credentialID: [UInt8]) throws -> (passkey: StoredPasskey, owner: User)? {
        state.withLock { state in
            guard let passkey = state.passkeys[credentialID], let owner = state.users[passkey.userID] else {
                return nil
            }
            return (passkey, owner)
        }
    }

    public func passkeys(userID: String) throws -> [StoredPasskey] {
        state.withLock { state in
            // created_at, then the credential id's bytes, as SQLite's ORDER BY sorts them.
            state.passkeys.values.filter { $0.userID == userID }.sorted {
                $0.createdAt != $1.createdAt
                    ? $0.createdAt < $1.createdAt
                    : $0.credentialID.lexicographicallyPrecedes($1.credentialID)
            }
        }
    }

    public func passkeyCount(userID: String) throws -> Int {
        state.withLock { state in state.passkeys.values.count { $0.userID == userID } }
    }

    public func renamePasskey(credentialID: [UInt8], userID: String, name: String) throws -> Bool {
        state.withLock { state in
            guard state.ownedPasskey(credentialID, userID: userID) != nil else { return false }
            state.passkeys[credentialID]?.name = name
            return true
        }
    }

    public func deletePasskey(credentialID: [UInt8], userID: String) throws -> Bool {
        state.withLock { state in
            guard state.ownedPasskey(credentialID, userID: userID) != nil else { return false }
            state.passkeys[credentialID] = nil
            return true
        }
    }

    public func deletePasskeyUnlessLast(credentialID: [UInt8], userID: String) throws
        -> PasskeyDeletion
    {
        state.withLock { state in
            guard state.ownedPasskey(credentialID, userID: userID) != nil else { return .notFound }
            guard
                state.passkeys.values.contains(where: {
                    $0.userID == userID && $0.credentialID != credentialID
                })
            else { return .lastPasskey }
            state.passkeys[credentialID] = nil
            return .deleted
        }
    }

    public func recordPasskeyUse(
        credentialID: [UInt8], signCount: UInt32, backupState: Bool, at: Date
    ) throws {
        try state.withLock { state throws(StorageError) in
            try state.recordPasskeyUse(
                credentialID: credentialID, signCount: signCount, backupState: backupState, at: at)
        }
    }

    public func createUser(_ user: User, firstPasskey: StoredPasskey) throws {
        guard firstPasskey.userID == user.id else {
            throw StorageError(.invalidArgument, "the first passkey must belong to the new user")
        }
        try state.withLock { state throws(StorageError) in
            // Check the passkey before inserting the user, so a refusal leaves nothing behind.
            guard state.passkeys[firstPasskey.credentialID] == nil else {
                throw StorageError(.conflict, "a passkey with this credential id already exists")
            }
            try state.insertUser(user)
            try state.insertPasskey(firstPasskey)
        }
    }
}

extension MemoryStore: ChallengeStore {
    public func insertChallenge(_ challenge: StoredChallenge) throws {
        try state.withLock { state throws(StorageError) in
            guard state.challenges[challenge.id] == nil else {
                throw StorageError(.conflict, "a challenge with this id already exists")
            }
            state.challenges[challenge.id] = challenge.normalised
        }
    }

    public func consumeChallenge(id: String, purpose: ChallengePurpose, at now: Date) throws
        -> StoredChallenge?
    {
        let now = now.storagePrecision
        // Removed whatever the outcome: one attempt per challenge, as in SQLiteStore.
        guard let challenge = state.withLock({ $0.challenges.removeValue(forKey: id) }) else {
            return nil
        }
        return challenge.purpose == purpose && challenge.expiresAt > now ? challenge : nil
    }

    public func challenge(id: String, purpose: ChallengePurpose, at now: Date) throws -> StoredChallenge? {
        let now = now.storagePrecision
        guard let challenge = state.withLock({ $0.challenges[id] }) else { return nil }
        return challenge.purpose == purpose && challenge.expiresAt > now ? challenge : nil
    }

    public func purgeChallenges(expiredBefore now: Date) throws -> Int {
        let now = now.storagePrecision
        return state.withLock { state in
            let before = state.challenges.count + state.usedChallenges.count
            state.challenges = state.challenges.filter { $0.value.expiresAt > now }
            state.usedChallenges = state.usedChallenges.filter { $0.value > now }
            return before - state.challenges.count - state.usedChallenges.count
        }
    }

    public func useSealedChallenge(_ challenge: [UInt8], expiresAt: Date, at now: Date) throws -> Bool {
        state.withLock { $0.useSealedChallenge(challenge, expiresAt: expiresAt, at: now) }
    }

    public func challengeCount() throws -> Int {
        state.withLock { $0.challenges.count }
    }
}

extension MemoryStore: PasskeyLoginStore {
    public func commitPasskeyLogin(_ record: PasskeyLoginRecord) throws -> Bool {
        let at = record.at.storagePrecision
        return try state.withLock { state throws(StorageError) in
            // Every check before the first change, so a refusal leaves everything as it was,
            // as the rolled-back transaction does in SQLiteStore.
            switch record.challenge {
            case .stored(let id):
                guard let challenge = state.challenges[id] else { return false }
                guard challenge.purpose == .login, challenge.expiresAt > at else {
                    state.challenges[id] = nil
                    return false
                }
            case .sealed(let challenge, let expiresAt):
                guard state.usedChallenges[challenge] == nil, expiresAt.storagePrecision > at else {
                    return false
                }
            }
            guard state.passkeys[record.credentialID] != nil else {
                throw StorageError(.notFound, "no such passkey")
            }
            try state.insertSession(record.session)
            switch record.challenge {
            case .stored(let id):
                state.challenges[id] = nil
            case .sealed(let challenge, let expiresAt):
                _ = state.useSealedChallenge(challenge, expiresAt: expiresAt, at: at)
            }
            try state.recordPasskeyUse(
                credentialID: record.credentialID, signCount: record.signCount,
                backupState: record.backupState, at: at)
            if let replaced = record.replacedSessionID, state.sessions[replaced]?.revokedAt == nil,
                state.sessions[replaced] != nil
            {
                state.sessions[replaced]?.revokedAt = at
            }
            state.lastAuditID += 1
            var event = record.event
            event.id = state.lastAuditID
            event.at = event.at.storagePrecision
            state.audit.append(event)
            return true
        }
    }
}

/// Whether `lhs` sorts before `rhs` byte by byte in UTF-8, as SQLite's BINARY collation does
/// (Swift's `<` on String follows Unicode ordering, which differs outside ASCII).
func bytewiseLess(_ lhs: String, _ rhs: String) -> Bool {
    lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
}

extension User {
    /// This user with times at the precision SQLite keeps.
    fileprivate var normalised: User {
        var user = self
        user.createdAt = createdAt.storagePrecision
        user.disabledAt = disabledAt?.storagePrecision
        return user
    }
}

extension StoredPasskey {
    /// This passkey with times at the precision SQLite keeps.
    fileprivate var normalised: StoredPasskey {
        var passkey = self
        passkey.createdAt = createdAt.storagePrecision
        passkey.lastUsedAt = lastUsedAt?.storagePrecision
        return passkey
    }
}

extension StoredChallenge {
    /// This challenge with times at the precision SQLite keeps.
    fileprivate var normalised: StoredChallenge {
        var challenge = self
        challenge.createdAt = createdAt.storagePrecision
        challenge.expiresAt = expiresAt.storagePrecision
        return challenge
    }
}

extension Session {
    /// This session with times at the precision SQLite keeps.
    fileprivate var normalised: Session {
        Session(
            id: id, userID: userID, tokenHash: tokenHash, clientKind: clientKind,
            authMethod: authMethod, createdAt: createdAt.storagePrecision,
            lastSeenAt: lastSeenAt.storagePrecision, expiresAt: expiresAt.storagePrecision,
            revokedAt: revokedAt?.storagePrecision, userAgent: userAgent, ipAddress: ipAddress)
    }

    /// Neither revoked nor past its absolute expiry at `instant` (the end itself is over).
    fileprivate func isLive(at instant: Date) -> Bool {
        revokedAt == nil && expiresAt > instant
    }
}
