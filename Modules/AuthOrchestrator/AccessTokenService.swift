public import FoundationEssentials
public import Kernel
public import SessionCore
public import Storage
import Synchronization

/// Signed access tokens for the app's own servers, and the life of the keys that sign them.
///
/// A token is issued only to a request that passed the signed-in rule (`AccountSessionService`),
/// for the session it acts as, and never outlives that session. The keys live in the database
/// (every instance signs with the same current key and publishes the same set); this use case
/// makes the first one, rotates on a schedule and on an operator's command, and deletes a key
/// once no token it signed can still be valid.
public struct AccessTokenService: Sendable {
    /// How much earlier than its activation a scheduled key is published: twice the JWKS
    /// `max-age`, so a verifier that honours the cache lifetime has refetched before it sees a
    /// token signed with the new key.
    public static let scheduledLead: TimeInterval = 600
    /// How much earlier a manual rotation's key is published: twice the ring's refresh, so
    /// every instance publishes it before any signs with it.
    public static let manualLead: TimeInterval = 2 * SigningKeyRing.refreshInterval

    let issuer: AccessTokenIssuer
    let ring: SigningKeyRing
    let keys: any SigningKeyRepository
    let audit: any AuditStore
    let kek: SigningKeyEncryptionKey
    let rotationInterval: TimeInterval
    let clock: any WallClock
    let random: any RandomSource
    let onUnavailable: (@Sendable (String) -> Void)?
    /// Whether the current outage was reported, so a failing key is told once, not per request.
    private let reported = ReportedFlag()

    /// Creates the use case.
    /// - Parameters:
    ///   - rotationInterval: how old the current key may get before the schedule replaces it
    ///     (`accessTokens.rotationDays`).
    ///   - onUnavailable: told why, once, when tokens stop being signable (a key another
    ///     instance made under another key-encryption key), and again only after they were
    ///     signable in between; for the log.
    public init(
        issuer: AccessTokenIssuer, ring: SigningKeyRing, keys: any SigningKeyRepository,
        audit: any AuditStore, kek: SigningKeyEncryptionKey, rotationInterval: TimeInterval,
        clock: any WallClock, random: any RandomSource, onUnavailable: (@Sendable (String) -> Void)? = nil
    ) {
        self.issuer = issuer
        self.ring = ring
        self.keys = keys
        self.audit = audit
        self.kek = kek
        self.rotationInterval = rotationInterval
        self.clock = clock
        self.random = random
        self.onUnavailable = onUnavailable
    }

    /// An access token for the session the signed-in request acts as (the rotated one when the
    /// request rotated it).
    /// - Throws: `AuthError(.accessTokenKeyUnavailable)` when no key can sign; `StorageError`
    ///   when the keys cannot be read.
    public func issue(for signedIn: SignedIn) throws -> IssuedAccessToken {
        do {
            let issued = try issuer.issue(for: signedIn.current)
            reported.clear()
            return issued
        } catch let error as SigningKeyError {
            if reported.set() { onUnavailable?(error.message) }
            throw AuthError(.accessTokenKeyUnavailable, error.message, underlying: error)
        }
    }

    /// The published keys as a JSON Web Key Set.
    public func jwks() throws -> [UInt8] { try ring.jwks() }

    /// Whether the current key can sign with this instance's key-encryption key; the reason when
    /// not (never key material), also told to `onUnavailable` unless this outage already was.
    /// The server checks this once at start.
    @discardableResult
    public func checkSigning() -> String? {
        let problem: String
        do {
            _ = try ring.currentKey()
            reported.clear()
            return nil
        } catch let error as SigningKeyError {
            problem = error.message
        } catch {
            problem = "the signing keys could not be read"
        }
        if reported.set() { onUnavailable?(problem) }
        return problem
    }

    /// Makes the first key when the database holds no published one (the first start with
    /// access tokens on); instances starting together make one between them.
    /// - Returns: whether this call made it.
    @discardableResult
    public func ensureKey() throws -> Bool {
        let now = clock.now()
        let made = try keys.insertInitialSigningKeyIfNone(try newKey(at: now, activatesAt: now), at: now)
        if made { ring.invalidate() }
        return made
    }

    /// What a rotation did.
    public struct Rotation: Sendable {
        /// The new key.
        public let key: SigningKeyRecord
        /// Whether the old keys were unpublished at once (their tokens no longer verify).
        public let retiredCurrent: Bool
    }

    /// An operator's rotation (`portvakt admin keys rotate`): a new key that signs from
    /// `manualLead` from now (at once with `immediately`), the old one published until its last
    /// token expired, or unpublished now with `retireCurrent` (after a compromise; it implies
    /// `immediately`, or nothing would sign in between).
    public func rotate(immediately: Bool, retireCurrent: Bool, actor: AuditActor) throws -> Rotation {
        let now = clock.now()
        let activatesAt = immediately || retireCurrent ? now : now.addingTimeInterval(Self.manualLead)
        let key = try newKey(at: now, activatesAt: activatesAt)
        _ = try keys.rotateSigningKey(
            to: key, retiredUntil: activatesAt.addingTimeInterval(SigningKeyRing.retiredPublication),
            unpublishingAt: retireCurrent ? now : nil, onlyIfCurrentActivatedBefore: nil)
        ring.invalidate()
        try record(key, trigger: "manual", retiredCurrent: retireCurrent, actor: actor, at: now)
        return Rotation(key: key, retiredCurrent: retireCurrent)
    }

    /// The hourly upkeep: the first key if none, a scheduled rotation when the current key is
    /// older than the rotation interval (once across instances), and the deletion of keys past
    /// their publication.
    /// - Returns: the new key when this call rotated, and how many keys were deleted.
    public func maintain() throws -> (rotated: SigningKeyRecord?, deleted: Int) {
        try ensureKey()
        let now = clock.now()
        let activatesAt = now.addingTimeInterval(Self.scheduledLead)
        let key = try newKey(at: now, activatesAt: activatesAt)
        let rotated = try keys.rotateSigningKey(
            to: key, retiredUntil: activatesAt.addingTimeInterval(SigningKeyRing.retiredPublication),
            unpublishingAt: nil, onlyIfCurrentActivatedBefore: now.addingTimeInterval(-rotationInterval))
        if rotated {
            try record(key, trigger: "schedule", retiredCurrent: false, actor: .system, at: now)
        }
        let deleted = try keys.deleteSigningKeys(unpublishedBefore: now)
        if rotated || deleted > 0 { ring.invalidate() }
        return (rotated ? key : nil, deleted)
    }

    /// Every key in the database, oldest first (`portvakt admin keys list`).
    public func allKeys() throws -> [SigningKeyRecord] { try keys.signingKeys(publishedAt: nil) }

    private func newKey(at now: Date, activatesAt: Date) throws -> SigningKeyRecord {
        do {
            return try SigningKeyRecord.generate(kek: kek, at: now, activatesAt: activatesAt, random: random)
        } catch {
            throw AuthError(.accessTokenKeyUnavailable, error.message, underlying: error)
        }
    }

    private func record(
        _ key: SigningKeyRecord, trigger: String, retiredCurrent: Bool, actor: AuditActor, at now: Date
    ) throws {
        var details = [
            "kid": key.kid, "activatesAt": key.activatesAt.formatted(.iso8601), "trigger": trigger,
        ]
        if retiredCurrent { details["retiredCurrent"] = "true" }
        _ = try audit.appendAudit(
            AuditEvent(at: now, action: .signingKeyRotated, actor: actor, details: details))
    }
}

/// One flag shared by every copy of the use case.
private final class ReportedFlag: Sendable {
    private let value = Atomic<Bool>(false)

    /// Sets the flag; whether it was clear (so this caller reports).
    func set() -> Bool { !value.exchange(true, ordering: .relaxed) }

    /// Clears it, writing only when it was set (the common case is a plain load).
    func clear() {
        if value.load(ordering: .relaxed) { value.store(false, ordering: .relaxed) }
    }
}
