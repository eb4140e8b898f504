import Foundation
import Kernel
import SessionCore
import TestSupport
import Testing

/// The session lifecycle as a pure function of a session and an instant.
@Suite("SessionPolicy")
struct SessionPolicyTests {
    let start = Date(timeIntervalSince1970: 1_767_225_600)
    let policy = SessionPolicy(
        absoluteLifetime: 1000, idleTimeout: 300, rotationInterval: 500, touchInterval: 60)

    func session(lastSeen: TimeInterval = 0, revoked: Bool = false) -> Session {
        Session(
            id: "s", userID: "u", tokenHash: [1], clientKind: .web, authMethod: .passkey,
            createdAt: start, lastSeenAt: start.addingTimeInterval(lastSeen),
            expiresAt: start.addingTimeInterval(1000), revokedAt: revoked ? start : nil)
    }

    @Test("a fresh session is active and needs neither touch nor rotation")
    func fresh() {
        #expect(policy.evaluate(session(), at: start) == .active(needsTouch: false, rotationDue: false))
    }

    @Test("activity is written back only after the touch interval")
    func touch() {
        #expect(
            policy.evaluate(session(), at: start.addingTimeInterval(59))
                == .active(needsTouch: false, rotationDue: false))
        #expect(
            policy.evaluate(session(), at: start.addingTimeInterval(60))
                == .active(needsTouch: true, rotationDue: false))
    }

    @Test("idle expiry starts at the idle timeout exactly")
    func idle() {
        #expect(policy.evaluate(session(), at: start.addingTimeInterval(299)) != .idleExpired)
        #expect(policy.evaluate(session(), at: start.addingTimeInterval(300)) == .idleExpired)
        #expect(
            policy.evaluate(session(lastSeen: 400), at: start.addingTimeInterval(650))
                == .active(needsTouch: true, rotationDue: true))
    }

    @Test("absolute expiry wins over recent activity")
    func absolute() {
        #expect(policy.evaluate(session(lastSeen: 990), at: start.addingTimeInterval(1000)) == .expired)
    }

    @Test("revocation wins over everything else")
    func revoked() {
        #expect(policy.evaluate(session(revoked: true), at: start) == .revoked)
        #expect(policy.evaluate(session(revoked: true), at: start.addingTimeInterval(5000)) == .revoked)
    }
}
