public import Foundation
public import Kernel
import Synchronization

/// The enrollment tables of a `MemoryStore`.
struct MemoryEnrollments {
    var tokens: [String: EnrollmentTokenRecord] = [:]
    var challenges: [String: String] = [:]
}

/// Administration over the in-memory store, built on its public methods: fine for tests, which
/// is all `MemoryStore` is for. `setUserDisabled` is two steps here (SQLite makes it one
/// transaction); nothing else writes between them in a test.
extension MemoryStore: AdministrationStore {
    public func searchUsers(_ search: String?, afterID: String?, limit: Int) throws -> [User] {
        guard limit > 0 else { return [] }
        let needle = search.flatMap { $0.isEmpty ? nil : $0.lowercased() }
        var found: [User] = []
        var after = afterID
        // Page through in id order until enough match.
        while found.count < limit {
            let page = try users(afterID: after, limit: 500)
            guard let last = page.last else { break }
            for user in page {
                guard let needle else {
                    found.append(user)
                    continue
                }
                if user.id == search || user.username?.lowercased().contains(needle) == true
                    || user.displayName.lowercased().contains(needle)
                {
                    found.append(user)
                }
            }
            after = last.id
        }
        return Array(found.prefix(limit))
    }

    public func setUserDisabled(id: String, at: Date?, now: Date) throws -> Int {
        guard var user = try user(id: id) else { throw StorageError(.notFound, "no such user") }
        user.disabledAt = at
        try updateUser(user)
        return at == nil ? 0 : try revokeSessions(userID: id, exceptID: nil, at: now)
    }

    public func searchAudit(_ query: AuditQuery, beforeID: Int64?, limit: Int) throws -> [AuditEvent] {
        guard limit > 0 else { return [] }
        let from = query.from?.storagePrecision
        let until = query.until?.storagePrecision
        return Array(
            try auditEvents(userID: query.userID, beforeID: beforeID, limit: Int.max).filter { event in
                (query.action.map { event.action == $0 } ?? true) && (from.map { event.at >= $0 } ?? true)
                    && (until.map { event.at < $0 } ?? true)
            }.prefix(limit))
    }

    public func liveSessionCount(at now: Date) throws -> Int {
        var count = 0
        var after: String?
        while true {
            let page = try users(afterID: after, limit: 500)
            guard let last = page.last else { return count }
            for user in page { count += try sessions(userID: user.id, liveAt: now).count }
            after = last.id
        }
    }
}

extension MemoryStore: EnrollmentTokenStore {
    public func insertEnrollmentToken(_ token: EnrollmentTokenRecord) throws {
        try enrollments.withLock { enrollments in
            guard try user(id: token.userID) != nil else {
                throw StorageError(.constraint, "FOREIGN KEY constraint failed")
            }
            guard enrollments.tokens[token.id] == nil,
                !enrollments.tokens.values.contains(where: { $0.tokenHash == token.tokenHash })
            else { throw StorageError(.conflict, "an enrollment token with this id or hash exists") }
            var stored = token
            stored.createdAt = token.createdAt.storagePrecision
            stored.expiresAt = token.expiresAt.storagePrecision
            stored.usedAt = token.usedAt?.storagePrecision
            enrollments.tokens[token.id] = stored
        }
    }

    public func enrollmentToken(hash: [UInt8]) throws -> EnrollmentTokenRecord? {
        // A deleted user's tokens go with them, as ON DELETE CASCADE does.
        guard let token = enrollments.withLock({ $0.tokens.values.first { $0.tokenHash == hash } }),
            try user(id: token.userID) != nil
        else { return nil }
        return token
    }

    public func enrollmentToken(id: String) throws -> EnrollmentTokenRecord? {
        guard let token = enrollments.withLock({ $0.tokens[id] }), try user(id: token.userID) != nil else {
            return nil
        }
        return token
    }

    public func linkEnrollmentChallenge(challengeID: String, tokenID: String) throws {
        try enrollments.withLock { enrollments throws(StorageError) in
            guard enrollments.tokens[tokenID] != nil else {
                throw StorageError(.constraint, "FOREIGN KEY constraint failed")
            }
            guard enrollments.challenges[challengeID] == nil else {
                throw StorageError(.conflict, "the challenge is already linked")
            }
            enrollments.challenges[challengeID] = tokenID
        }
    }

    public func enrollmentTokenID(challengeID: String) throws -> String? {
        enrollments.withLock { $0.challenges[challengeID] }
    }

    public func redeemEnrollmentToken(id: String, passkey: StoredPasskey, at now: Date) throws -> Bool {
        // The enrollment lock is held across the passkey insert, so of two redemptions only the
        // first sees the token unused, as the conditional UPDATE does in SQLite.
        try enrollments.withLock { enrollments in
            guard let token = enrollments.tokens[id], token.usedAt == nil, token.expiresAt > now,
                token.userID == passkey.userID
            else { return false }
            try insertPasskey(passkey)
            enrollments.tokens[id]?.usedAt = now.storagePrecision
            return true
        }
    }
}
