public import CryptoCore
public import FoundationEssentials
public import Kernel

/// One access-token signing key as the database keeps it: the public half in the clear, the
/// private half sealed (AES-256-GCM, its `kid` as associated data) under the key-encryption key.
public struct SigningKeyRecord: Sendable, Equatable {
    /// The key's id: its RFC 7638 thumbprint, the `kid` of every token it signs.
    public let kid: String
    /// The JWS algorithm; always `ES256` (ECDSA P-256 with SHA-256).
    public let algorithm: String
    /// The public half, DER SubjectPublicKeyInfo.
    public let publicKey: [UInt8]
    /// The PKCS#8 private half sealed under the key-encryption key: nonce ‖ ciphertext ‖ tag.
    public let sealedPrivateKey: [UInt8]
    /// Which key-encryption key sealed it (`SigningKeyEncryptionKey.id`).
    public let kekID: String
    /// When it was made.
    public let createdAt: Date
    /// From when it signs (before that it is only published, so verifiers know it in time).
    public let activatesAt: Date
    /// From when it no longer signs: its successor's activation; nil while it is the newest.
    public let retiredAt: Date?
    /// Until when it is published: past the last token it signed; nil while it may still sign.
    public let publishUntil: Date?

    /// The only algorithm Portvakt signs access tokens with.
    public static let es256 = "ES256"

    /// Creates the value as read from storage.
    public init(
        kid: String, algorithm: String = SigningKeyRecord.es256, publicKey: [UInt8],
        sealedPrivateKey: [UInt8],
        kekID: String, createdAt: Date, activatesAt: Date, retiredAt: Date? = nil, publishUntil: Date? = nil
    ) {
        self.kid = kid
        self.algorithm = algorithm
        self.publicKey = publicKey
        self.sealedPrivateKey = sealedPrivateKey
        self.kekID = kekID
        self.createdAt = createdAt
        self.activatesAt = activatesAt
        self.retiredAt = retiredAt
        self.publishUntil = publishUntil
    }

    /// A fresh P-256 key, sealed under `kek`, that signs from `activatesAt`.
    /// - Throws: `SigningKeyError(.keyUnavailable)` when no key can be made or sealed (OpenSSL or
    ///   the random source failed).
    public static func generate(
        kek: SigningKeyEncryptionKey, at now: Date, activatesAt: Date, random: any RandomSource
    )
        throws(SigningKeyError) -> SigningKeyRecord
    {
        do {
            let key = try SigningKey.generate(.p256)
            let publicKey = key.subjectPublicKeyInfo
            let kid = try P256PublicJWK(subjectPublicKeyInfo: publicKey).thumbprint
            let sealed = try SealedBox.seal(
                key.pkcs8DER, key: kek.bytes, nonce: try random.bytes(SealedBox.nonceByteCount),
                associatedData: Array(kid.utf8))
            return SigningKeyRecord(
                kid: kid, publicKey: publicKey, sealedPrivateKey: sealed, kekID: kek.id, createdAt: now,
                activatesAt: activatesAt)
        } catch {
            throw SigningKeyError(.keyUnavailable, "a new signing key could not be made")
        }
    }

    /// Whether the key is published at `now`.
    public func isPublished(at now: Date) -> Bool { publishUntil.map { $0 > now } ?? true }

    /// Whether the key signs at `now`: active and not yet retired (and still published).
    public func signs(at now: Date) -> Bool {
        activatesAt <= now && (retiredAt.map { $0 > now } ?? true) && isPublished(at: now)
    }
}

/// Where the signing keys live, shared by every instance (Storage implements it on both engines).
public protocol SigningKeyRepository: Sendable {
    /// The keys published at `now` (`publish_until` null or later), oldest activation first;
    /// every key when `now` is nil.
    func signingKeys(publishedAt now: Date?) throws -> [SigningKeyRecord]
    /// Stores `key` unless a published key exists at `now`; whether it was stored. Instances
    /// starting together store one key between them.
    func insertInitialSigningKeyIfNone(_ key: SigningKeyRecord, at now: Date) throws -> Bool
    /// In one write: retires every key not yet retired (`retired_at` = `key.activatesAt`,
    /// `publish_until` = `retiredUntil`), sets `publish_until` = `unpublishingAt` on every
    /// published key when given (their tokens stop verifying), and stores `key`. With
    /// `onlyIfCurrentActivatedBefore`, does nothing and answers false when the newest
    /// unretired key activated at or after that instant: two instances rotating on the same
    /// schedule then make one new key, never two.
    func rotateSigningKey(
        to key: SigningKeyRecord, retiredUntil: Date, unpublishingAt: Date?,
        onlyIfCurrentActivatedBefore: Date?
    ) throws -> Bool
    /// Deletes the keys whose `publish_until` is at or before `cutoff`; how many.
    func deleteSigningKeys(unpublishedBefore cutoff: Date) throws -> Int
}

/// The key-encryption key (`PORTVAKT_ACCESS_TOKEN_KEY`): 32 bytes that seal the signing keys'
/// private halves. It never reaches the database; its `id` does, so a wrong key is told apart
/// from a damaged row.
public struct SigningKeyEncryptionKey: Sendable, CustomStringConvertible {
    /// The AES-256 key.
    let bytes: [UInt8]
    /// The first 8 bytes of SHA-256 of the key, in hex: names the key, reveals nothing of it.
    public let id: String

    /// The key from its base64 text (standard alphabet, padded): exactly 32 bytes.
    /// - Returns: nil for anything else.
    public init?(base64 text: String) {
        guard let bytes = Base64.decode(text), bytes.count == SealedBox.keyByteCount else { return nil }
        self.init(bytes: bytes)
    }

    /// The key from its 32 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == SealedBox.keyByteCount else { return nil }
        self.bytes = bytes
        id = Hex.encode(Array(Digest.sha256(bytes).prefix(8)))
    }

    public var description: String { "SigningKeyEncryptionKey(\(id))" }
}

/// Why no access token can be signed. A 503: the deployment, not the caller, must act.
public struct SigningKeyError: CodedError {
    /// The stable codes.
    public enum Code: String, Sendable, CaseIterable {
        /// No signing key can be used: none is active, or the current one was sealed under
        /// another key-encryption key (a wrong `PORTVAKT_ACCESS_TOKEN_KEY`) or does not open.
        case keyUnavailable = "access_token.key_unavailable"
    }

    /// What went wrong.
    public let code: Code
    /// A readable explanation; never key material.
    public let message: String
    /// The source file that raised the error.
    public let file: String
    /// The source line that raised the error.
    public let line: Int

    /// Creates an error at the caller's location.
    public init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
    }
}

/// Every instance's view of the signing keys: the key that signs now and the public keys to
/// publish, reloaded from the repository at most every `refreshInterval` (so a rotation made on
/// another instance, or by `portvakt admin keys rotate`, is picked up within seconds, with no
/// restart), and each private half unsealed once per process.
public final class SigningKeyRing: Sendable {
    /// How old a loaded view may get before the next use reloads it.
    public static let refreshInterval: TimeInterval = 5
    /// How long a retired key stays published after its successor activates: the longest token
    /// lifetime (3600 s) plus a minute of clock skew, whatever lifetime each instance has.
    public static let retiredPublication: TimeInterval = 3600 + 60

    private struct Snapshot {
        let loadedAt: Date
        let published: [SigningKeyRecord]
        let jwks: [UInt8]
    }

    private let repository: any SigningKeyRepository
    private let kek: SigningKeyEncryptionKey
    private let clock: any WallClock
    private let snapshot = Locked<Snapshot?>(nil)
    /// Unsealed private halves by kid; a key's private half never changes.
    private let unsealed = Locked<[String: SigningKey]>([:])

    /// Creates the ring; nothing is read until first use.
    public init(repository: any SigningKeyRepository, kek: SigningKeyEncryptionKey, clock: any WallClock) {
        self.repository = repository
        self.kek = kek
        self.clock = clock
    }

    /// The key that signs now: the published key with the latest activation at or before now
    /// that is not retired.
    /// - Throws: `SigningKeyError(.keyUnavailable)` when there is none, or it was sealed under
    ///   another key-encryption key, or does not open; the repository's error when it fails.
    public func currentKey() throws -> (kid: String, key: SigningKey) {
        let now = clock.now()
        let view = try current(at: now)
        guard let record = view.published.last(where: { $0.signs(at: now) }) else {
            throw SigningKeyError(.keyUnavailable, "no signing key is active")
        }
        return (record.kid, try unseal(record))
    }

    /// The JSON Web Key Set of the published keys (`{"keys":[…]}`), rendered once per reload.
    public func jwks() throws -> [UInt8] { try current(at: clock.now()).jwks }

    /// The published keys as loaded.
    public func publishedKeys() throws -> [SigningKeyRecord] { try current(at: clock.now()).published }

    /// Forgets the loaded view, so the next use reads the repository (after this instance itself
    /// rotated).
    public func invalidate() { snapshot.withLock { $0 = nil } }

    private func current(at now: Date) throws -> Snapshot {
        if let view = snapshot.withLock({ $0 }),
            now >= view.loadedAt, now.timeIntervalSince(view.loadedAt) < Self.refreshInterval
        {
            return view
        }
        // Read outside the lock: a slow database holds up only the requests that need the reload.
        let published = try repository.signingKeys(publishedAt: now).filter {
            $0.algorithm == SigningKeyRecord.es256
        }
        let view = Snapshot(loadedAt: now, published: published, jwks: Self.render(published))
        snapshot.withLock { $0 = view }
        return view
    }

    private func unseal(_ record: SigningKeyRecord) throws(SigningKeyError) -> SigningKey {
        if let key = unsealed.withLock({ $0[record.kid] }) { return key }
        guard record.kekID == kek.id else {
            throw SigningKeyError(
                .keyUnavailable,
                "signing key \(record.kid) was sealed under key-encryption key \(record.kekID), not \(kek.id)"
            )
        }
        let key: SigningKey
        do {
            let der = try SealedBox.open(
                record.sealedPrivateKey, key: kek.bytes, associatedData: Array(record.kid.utf8))
            key = try SigningKey(pkcs8DER: der)
        } catch {
            throw SigningKeyError(.keyUnavailable, "signing key \(record.kid) does not open")
        }
        unsealed.withLock { $0[record.kid] = key }
        return key
    }

    /// `{"keys":[{"kty","crv","x","y","kid","alg","use"}, …]}`; a key whose public half cannot
    /// be read is left out rather than published wrong.
    static func render(_ keys: [SigningKeyRecord]) -> [UInt8] {
        var writer = JSONWriter()
        writer.object { object in
            object.key("keys")
            object.array { array in
                for record in keys {
                    guard let jwk = try? P256PublicJWK(subjectPublicKeyInfo: record.publicKey) else {
                        continue
                    }
                    array.object { key in
                        key.member("kty", "EC")
                        key.member("crv", "P-256")
                        key.member("x", jwk.x)
                        key.member("y", jwk.y)
                        key.member("kid", record.kid)
                        key.member("alg", SigningKeyRecord.es256)
                        key.member("use", "sig")
                    }
                }
            }
        }
        return writer.bytes
    }
}
