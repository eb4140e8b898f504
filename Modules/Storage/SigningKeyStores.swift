public import FoundationEssentials
public import SessionCore

/// The access-token signing keys (`signing_keys`), one SQL text for both engines. Each write is
/// one transaction: on SQLite the single writer orders rotations, on PostgreSQL SERIALIZABLE
/// retries the loser of two racing ones, which then sees the winner's key and (with its
/// condition) does nothing.
extension SQLStore: SigningKeyRepository {
    private static let signingKeyColumns =
        "kid, algorithm, public_key, sealed_private_key, kek_id, created_at, activates_at, retired_at, publish_until"

    private static func signingKey(_ row: any SQLRow) throws -> SigningKeyRecord {
        SigningKeyRecord(
            kid: try row.string(0), algorithm: try row.string(1), publicKey: try row.blob(2),
            sealedPrivateKey: try row.blob(3), kekID: try row.string(4), createdAt: try row.date(5),
            activatesAt: try row.date(6), retiredAt: try row.optionalDate(7),
            publishUntil: try row.optionalDate(8))
    }

    private static func insert(_ key: SigningKeyRecord, on connection: any SQLConnection) throws {
        try connection.execute(
            "INSERT INTO signing_keys (\(signingKeyColumns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            [
                key.kid, key.algorithm, key.publicKey, key.sealedPrivateKey, key.kekID, key.createdAt,
                key.activatesAt, key.retiredAt, key.publishUntil,
            ])
    }

    public func signingKeys(publishedAt now: Date?) throws -> [SigningKeyRecord] {
        try engine.read { connection in
            if let now {
                return try connection.query(
                    """
                    SELECT \(Self.signingKeyColumns) FROM signing_keys
                    WHERE publish_until IS NULL OR publish_until > ?1 ORDER BY activates_at, kid
                    """, [now], Self.signingKey)
            }
            return try connection.query(
                "SELECT \(Self.signingKeyColumns) FROM signing_keys ORDER BY activates_at, kid", [],
                Self.signingKey)
        }
    }

    public func insertInitialSigningKeyIfNone(_ key: SigningKeyRecord, at now: Date) throws -> Bool {
        try engine.write { connection in
            let published = try connection.queryFirst(
                "SELECT 1 FROM signing_keys WHERE publish_until IS NULL OR publish_until > ?1 LIMIT 1", [now]
            ) { _ in true }
            guard published == nil else { return false }
            try Self.insert(key, on: connection)
            return true
        }
    }

    public func rotateSigningKey(
        to key: SigningKeyRecord, retiredUntil: Date, unpublishingAt: Date?,
        onlyIfCurrentActivatedBefore: Date?
    ) throws -> Bool {
        try engine.write { connection in
            if let threshold = onlyIfCurrentActivatedBefore {
                let newest = try connection.queryFirst(
                    "SELECT max(activates_at) FROM signing_keys WHERE retired_at IS NULL", []
                ) { try $0.optionalDate(0) }
                if let newest = newest ?? nil, newest >= threshold { return false }
            }
            _ = try connection.execute(
                "UPDATE signing_keys SET retired_at = ?1, publish_until = ?2 WHERE retired_at IS NULL",
                [key.activatesAt, retiredUntil])
            if let unpublishingAt {
                _ = try connection.execute(
                    "UPDATE signing_keys SET publish_until = ?1 WHERE publish_until IS NULL OR publish_until > ?1",
                    [unpublishingAt])
            }
            try Self.insert(key, on: connection)
            return true
        }
    }

    public func deleteSigningKeys(unpublishedBefore cutoff: Date) throws -> Int {
        try engine.write { connection in
            try connection.execute("DELETE FROM signing_keys WHERE publish_until <= ?1", [cutoff])
        }
    }
}
