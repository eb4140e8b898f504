import AuthOrchestrator
import CryptoCore
import Foundation
import Kernel
import SessionCore
import Storage
import Synchronization
import TestSupport
import Testing

/// The signing keys' life as the use case runs it: the first key, the schedule (one rotation per
/// interval, published ten minutes ahead), the operator's rotation, deletion once no token can
/// need a key, and the audit trail.
@Suite("Access token service")
struct AccessTokenServiceTests {
    let clock = FixedClock()
    let storage: TestStore
    var store: SQLStore { storage.store }
    let kek = SigningKeyEncryptionKey(bytes: [UInt8](repeating: 0x24, count: 32))!

    init() throws { storage = try TestStore(.sqlite, clock: clock) }

    func service(rotationDays: Double = 30) -> AccessTokenService {
        let ring = SigningKeyRing(repository: store, kek: kek, clock: clock)
        return AccessTokenService(
            issuer: AccessTokenIssuer(
                ring: ring, issuer: "https://id.example.se", audience: ["api"], lifetime: 300, clock: clock,
                random: SystemRandom()),
            ring: ring, keys: store, audit: store, kek: kek, rotationInterval: rotationDays * 86_400,
            clock: clock, random: SystemRandom())
    }

    func rotations() throws -> [AuditEvent] {
        try store.auditEvents(userID: nil, beforeID: nil, limit: 50).filter {
            $0.action == .signingKeyRotated
        }
    }

    @Test(
        "The first key is made once; the schedule rotates once per interval, ten minutes ahead, and deletes a key once its last token has expired"
    )
    func schedule() throws {
        let service = service()
        #expect(try service.ensureKey())
        #expect(try !service.ensureKey())
        let first = try #require(try service.allKeys().first)
        // Young: the upkeep does nothing.
        clock.advance(by: 29 * 86_400)
        #expect(try service.maintain().rotated == nil)
        #expect(try service.allKeys().count == 1)
        // Due: one rotation, however many instances run the upkeep.
        clock.advance(by: 86_400 + 1)
        let rotated = try #require(try service.maintain().rotated)
        #expect(try self.service().maintain().rotated == nil)
        #expect(rotated.activatesAt == clock.now().addingTimeInterval(AccessTokenService.scheduledLead))
        let retired = try #require(try service.allKeys().first { $0.kid == first.kid })
        #expect(retired.retiredAt == rotated.activatesAt)
        #expect(retired.publishUntil == rotated.activatesAt.addingTimeInterval(3660))
        let events = try rotations()
        #expect(events.count == 1 && events.first?.actor == .system)
        #expect(events.first?.details["trigger"] == "schedule" && events.first?.details["kid"] == rotated.kid)
        // The old key signs until the new one activates, then the new one does.
        let session = Session(
            id: "ses_1", userID: "usr_1", tokenHash: [], clientKind: .native, authMethod: .passkey,
            createdAt: clock.now(), lastSeenAt: clock.now(), expiresAt: clock.now().addingTimeInterval(86_400)
        )
        let signedIn = SignedIn(
            session: session,
            user: User(id: "usr_1", username: nil, displayName: "A", createdAt: clock.now()), rotated: nil)
        #expect(try Self.kid(service.issue(for: signedIn).token) == first.kid)
        clock.advance(by: AccessTokenService.scheduledLead)
        #expect(try Self.kid(service.issue(for: signedIn).token) == rotated.kid)
        // Deleted by the first upkeep at or after its publication's end.
        clock.set(try #require(retired.publishUntil).addingTimeInterval(-1))
        #expect(try service.maintain().deleted == 0)
        clock.advance(by: 1)
        #expect(try service.maintain().deleted == 1)
        #expect(try service.allKeys().map(\.kid) == [rotated.kid])
    }

    @Test(
        "An operator's rotation signs in 10 s, at once when asked; retiring the current key unpublishes every older one; both audited"
    )
    func manual() throws {
        let service = service()
        try service.ensureKey()
        let first = try #require(try service.allKeys().first)
        let later = try service.rotate(immediately: false, retireCurrent: false, actor: .cli)
        #expect(later.key.activatesAt == clock.now().addingTimeInterval(10) && !later.retiredCurrent)
        let now = try service.rotate(immediately: true, retireCurrent: false, actor: .cli)
        #expect(now.key.activatesAt == clock.now())
        let retired = try service.rotate(immediately: false, retireCurrent: true, actor: .cli)
        #expect(retired.key.activatesAt == clock.now() && retired.retiredCurrent)
        let published = try store.signingKeys(publishedAt: clock.now()).map(\.kid)
        #expect(published == [retired.key.kid])
        #expect(try service.allKeys().count == 4 && first.kid != retired.key.kid)
        let events = try rotations()
        #expect(
            events.count == 3 && events.allSatisfy { $0.actor == .cli && $0.details["trigger"] == "manual" })
        #expect(events.filter { $0.details["retiredCurrent"] == "true" }.count == 1)
        #expect(!"\(events)".contains("sealed"))
    }

    @Test(
        "Another instance's key-encryption key is access_token.key_unavailable, reported once per outage")
    func wrongKEK() throws {
        let reports = Reports()
        try service().ensureKey()
        let ring = SigningKeyRing(
            repository: store, kek: SigningKeyEncryptionKey(bytes: [UInt8](repeating: 1, count: 32))!,
            clock: clock)
        let other = AccessTokenService(
            issuer: AccessTokenIssuer(
                ring: ring, issuer: "https://id.example.se", audience: ["api"], lifetime: 300, clock: clock,
                random: SystemRandom()),
            ring: ring, keys: store, audit: store,
            kek: SigningKeyEncryptionKey(bytes: [UInt8](repeating: 1, count: 32))!, rotationInterval: 86_400,
            clock: clock, random: SystemRandom(), onUnavailable: { reports.add($0) })
        #expect(other.checkSigning()?.contains("sealed under key-encryption key \(kek.id)") == true)
        #expect(service().checkSigning() == nil)
        let session = Session(
            id: "ses_1", userID: "usr_1", tokenHash: [], clientKind: .native, authMethod: .passkey,
            createdAt: clock.now(), lastSeenAt: clock.now(), expiresAt: clock.now().addingTimeInterval(600))
        let signedIn = SignedIn(
            session: session,
            user: User(id: "usr_1", username: nil, displayName: "A", createdAt: clock.now()), rotated: nil)
        #expect(throws: AuthError(.accessTokenKeyUnavailable, "")) { try other.issue(for: signedIn) }
        #expect(throws: AuthError(.accessTokenKeyUnavailable, "")) { try other.issue(for: signedIn) }
        // The start-up check and two failed requests: one report.
        #expect(reports.all.count == 1 && reports.all.first?.contains(kek.id) == true)
        // A key this instance can open ends the outage; the next one is reported again.
        let own = try SigningKeyRecord.generate(
            kek: SigningKeyEncryptionKey(bytes: [UInt8](repeating: 1, count: 32))!, at: clock.now(),
            activatesAt: clock.now(), random: SystemRandom())
        _ = try store.rotateSigningKey(
            to: own, retiredUntil: clock.now().addingTimeInterval(3660), unpublishingAt: nil,
            onlyIfCurrentActivatedBefore: nil)
        ring.invalidate()
        _ = try other.issue(for: signedIn)
        _ = try service().rotate(immediately: true, retireCurrent: false, actor: .cli)
        ring.invalidate()
        #expect(throws: AuthError(.accessTokenKeyUnavailable, "")) { try other.issue(for: signedIn) }
        #expect(reports.all.count == 2)
    }

    static func kid(_ token: String) throws -> String? {
        let part = try #require(token.split(separator: ".").first)
        let header = try #require(Base64URL.decode(part))
        return (try JSONSerialization.jsonObject(with: Data(header)) as? [String: Any])?["kid"] as? String
    }
}

/// What `onUnavailable` was told.
private final class Reports: Sendable {
    private let lines = Mutex<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}
