public import FoundationEssentials
public import Kernel
public import SessionCore

/// A one-time passkey enrollment token as stored: never the secret, only its SHA-256.
public struct EnrollmentTokenRecord: Sendable, Equatable {
    /// Random, public identifier (audit events name it).
    public var id: String
    /// The account a passkey enrolled with it is added to.
    public var userID: String
    /// SHA-256 of the secret token.
    public var tokenHash: [UInt8]
    /// Why it was issued, e.g. "admin" for an enrollment link, "recovery" for BankID recovery.
    public var purpose: String
    /// Who issued it (an audit actor such as `admin:ops`).
    public var createdBy: String
    /// When it was issued.
    public var createdAt: Date
    /// The first instant it is no longer accepted.
    public var expiresAt: Date
    /// When a passkey was enrolled with it; nil while unused.
    public var usedAt: Date?
    /// The SHA-256 of the client binding it is good for (a recovery's: the BankID order's
    /// client); nil when any holder of the secret may use it (an administrator's link).
    public var bindingHash: [UInt8]?

    /// Creates a record.
    public init(
        id: String, userID: String, tokenHash: [UInt8], purpose: String, createdBy: String, createdAt: Date,
        expiresAt: Date, usedAt: Date? = nil, bindingHash: [UInt8]? = nil
    ) {
        self.id = id
        self.userID = userID
        self.tokenHash = tokenHash
        self.purpose = purpose
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.usedAt = usedAt
        self.bindingHash = bindingHash
    }
}

/// One-time enrollment tokens and the registration challenges issued for them.
public protocol EnrollmentTokenStore: Sendable {
    /// Stores a new token.
    /// - Throws: `StorageError(.conflict)` when the id or hash is taken, `.constraint` when the user
    ///   does not exist.
    func insertEnrollmentToken(_ token: EnrollmentTokenRecord) throws
    /// The token whose secret hashes to `hash`, used or expired ones included; nil when none.
    func enrollmentToken(hash: [UInt8]) throws -> EnrollmentTokenRecord?
    /// The token with this id (the record, never the secret); nil when none.
    func enrollmentToken(id: String) throws -> EnrollmentTokenRecord?
    /// Records that a registration challenge was issued for a token.
    func linkEnrollmentChallenge(challengeID: String, tokenID: String) throws
    /// The token a registration challenge was issued for; nil for an ordinary challenge.
    func enrollmentTokenID(challengeID: String) throws -> String?
    /// In one transaction: marks the token used when it is unused and unexpired at `now`, stores
    /// `passkey` and `session` for the token's user, applies `recovery` (a recovery's policy); and
    /// writes the record `recording` makes of what the redemption did. Of any number of
    /// concurrent redemptions of one token exactly one returns the redemption; the others return
    /// nil and write nothing.
    /// - Throws: `StorageError(.conflict)` when the credential id is already registered or the
    ///   session collides; nothing is written then and the token stays unused.
    func redeemEnrollmentToken(
        id: String, passkey: StoredPasskey, session: Session, at now: Date, recovery: RecoveryChanges,
        record: ChangeRecording<EnrollmentRedemption>
    ) throws -> EnrollmentRedemption?
}

/// What a recovery's redemption (an enrollment token whose purpose is recovery) does beside
/// storing the new passkey and session, as its policy says.
public struct RecoveryChanges: Sendable, Equatable {
    /// End the account's other sessions.
    public var revokeOtherSessions: Bool
    /// Delete the account's other passkeys.
    public var deleteOtherPasskeys: Bool

    /// Nothing beside the new passkey and session (an ordinary enrollment).
    public static let none = RecoveryChanges(revokeOtherSessions: false, deleteOtherPasskeys: false)

    /// Creates the changes.
    public init(revokeOtherSessions: Bool, deleteOtherPasskeys: Bool) {
        self.revokeOtherSessions = revokeOtherSessions
        self.deleteOtherPasskeys = deleteOtherPasskeys
    }
}

/// What one redemption of an enrollment token did beside storing the passkey and the session.
public struct EnrollmentRedemption: Sendable, Equatable {
    /// The sessions a recovery revoked.
    public var revokedSessionIDs: [String]
    /// The credential ids of the passkeys a recovery deleted.
    public var deletedCredentialIDs: [[UInt8]]

    /// Creates the value.
    public init(revokedSessionIDs: [String] = [], deletedCredentialIDs: [[UInt8]] = []) {
        self.revokedSessionIDs = revokedSessionIDs
        self.deletedCredentialIDs = deletedCredentialIDs
    }
}

extension SQLStore: EnrollmentTokenStore {

    public func insertEnrollmentToken(_ token: EnrollmentTokenRecord) throws {
        try engine.write { connection in
            try connection.execute(
                "INSERT INTO enrollment_tokens (\(StoreSQL.enrollmentColumns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                [
                    token.id, token.userID, token.tokenHash, token.purpose, token.createdBy, token.createdAt,
                    token.expiresAt, token.usedAt, token.bindingHash,
                ])
        }
    }

    public func enrollmentToken(hash: [UInt8]) throws -> EnrollmentTokenRecord? {
        try enrollmentToken(where: "token_hash", is: hash)
    }

    public func enrollmentToken(id: String) throws -> EnrollmentTokenRecord? {
        try enrollmentToken(where: "id", is: id)
    }

    /// The token whose `column` (a unique one) holds `value`.
    private func enrollmentToken(where column: String, is value: any SQLBindable) throws
        -> EnrollmentTokenRecord?
    {
        try engine.read { connection in
            try connection.queryFirst(
                "SELECT \(StoreSQL.enrollmentColumns) FROM enrollment_tokens WHERE \(column) = ?1", [value],
                Self.enrollmentToken)
        }
    }

    public func enrollmentTokens(userID: String) throws -> [EnrollmentTokenRecord] {
        try engine.read { connection in
            try connection.query(
                """
                SELECT \(StoreSQL.enrollmentColumns) FROM enrollment_tokens WHERE user_id = ?1
                ORDER BY created_at, id
                """, [userID], Self.enrollmentToken)
        }
    }

    private static func enrollmentToken(_ row: any SQLRow) throws -> EnrollmentTokenRecord {
        EnrollmentTokenRecord(
            id: try row.string(0), userID: try row.string(1), tokenHash: try row.blob(2),
            purpose: try row.string(3),
            createdBy: try row.string(4), createdAt: try row.date(5), expiresAt: try row.date(6),
            usedAt: try row.optionalDate(7), bindingHash: try row.optionalBlob(8))
    }

    public func linkEnrollmentChallenge(challengeID: String, tokenID: String) throws {
        try engine.write { connection in
            try connection.execute(
                "INSERT INTO enrollment_challenges (challenge_id, token_id) VALUES (?1, ?2)",
                [challengeID, tokenID])
        }
    }

    public func enrollmentTokenID(challengeID: String) throws -> String? {
        try engine.read { connection in
            try connection.queryFirst(
                "SELECT token_id FROM enrollment_challenges WHERE challenge_id = ?1", [challengeID]
            ) { try $0.string(0) }
        }
    }

    public func redeemEnrollmentToken(
        id: String, passkey: StoredPasskey, session: Session, at now: Date, recovery: RecoveryChanges,
        record: ChangeRecording<EnrollmentRedemption>
    ) throws -> EnrollmentRedemption? {
        guard session.userID == passkey.userID else {
            throw StorageError(.invalidArgument, "the session must belong to the passkey's user")
        }
        return try write(recording: { $0.map(record) ?? .none }) { connection -> EnrollmentRedemption? in
            // The conditional UPDATE is the single-use guarantee: under the one writer, only the
            // first redemption finds used_at still NULL.
            let changed = try connection.execute(
                """
                UPDATE enrollment_tokens SET used_at = ?2
                WHERE id = ?1 AND used_at IS NULL AND expires_at > ?2 AND user_id = ?3
                """, [id, now, passkey.userID])
            guard changed > 0 else { return nil }
            try Self.insert(passkey, on: connection)
            try Self.insert(session, on: connection)
            var redemption = EnrollmentRedemption()
            if recovery.revokeOtherSessions {
                redemption.revokedSessionIDs = try Self.revokeSessions(
                    ofUser: passkey.userID, ids: nil, except: session.id, at: now, on: connection)
            }
            if recovery.deleteOtherPasskeys {
                redemption.deletedCredentialIDs = try connection.query(
                    "DELETE FROM passkeys WHERE user_id = ?1 AND credential_id <> ?2 RETURNING credential_id",
                    [passkey.userID, passkey.credentialID]
                ) { try $0.blob(0) }
            }
            // The token's challenge links stay (they go with the token), so a concurrent finalize
            // still recognises its challenge as an enrollment and is told the token is spent.
            return redemption
        }
    }
}

/// The column lists and statements the stores above share.
extension StoreSQL {
    fileprivate static let enrollmentColumns =
        "id, user_id, token_hash, purpose, created_by, created_at, expires_at, used_at, binding_hash"
}
