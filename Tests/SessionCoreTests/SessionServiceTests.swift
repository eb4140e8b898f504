import CryptoCore
import Foundation
import Kernel
import SessionCore
import Storage
import TestSupport
import Testing

/// SessionService over a real SQLite store, with a fixed clock.
@Suite("SessionService")
struct SessionServiceTests {
    let clock = FixedClock()
    let storage: TestStore
    var store: SQLStore { storage.store }
    let service: SessionService

    init() throws {
        storage = try TestStore(.sqlite, clock: clock)
        let store = storage.store
        try store.insertUser(User(id: "u1", username: "ada", displayName: "Ada", createdAt: clock.now()))
        try store.insertUser(User(id: "u2", username: "bob", displayName: "Bob", createdAt: clock.now()))
        service = SessionService(
            repository: store,
            policy: SessionPolicy(
                absoluteLifetime: 3600, idleTimeout: 600, rotationInterval: 1800, touchInterval: 60),
            clock: clock)
    }

    @Test("a token is its creation time and 256 random bits behind a prefix; its time and hash are stored")
    func tokenShape() throws {
        let issued = try service.issue(userID: "u1", clientKind: .native, authMethod: .passkey)
        #expect(issued.token.hasPrefix("pvs_"))
        let bytes = try #require(Base64URL.decode(issued.token.dropFirst(4)))
        #expect(bytes.count == 38)
        let milliseconds = UInt64(clock.now().timeIntervalSince1970 * 1000)
        #expect(
            Array(bytes.prefix(6))
                == (0..<6).map { UInt8(truncatingIfNeeded: milliseconds >> (8 * (5 - $0))) })
        let stored = try #require(try store.session(id: issued.session.id))
        #expect(stored.tokenHash == Array(bytes.prefix(6)) + Digest.sha256(issued.token))
        #expect(try SessionService.lookupHash(token: issued.token) == stored.tokenHash)
    }

    @Test(
        "session ids and stored token forms sort in the order the sessions began, whatever their random part")
    func orderedKeys() throws {
        var sessions: [Session] = []
        for step in 0..<40 {
            // Milliseconds apart, and once a year apart: the order holds at every scale of time.
            clock.advance(by: step == 20 ? 365 * 86400 : 0.001)
            sessions.append(try service.issue(userID: "u1", clientKind: .web, authMethod: .passkey).session)
        }
        #expect(sessions.map(\.id) == sessions.map(\.id).sorted())
        // Base64url's characters, as ids have always had (in another order, so not decodable as base64url).
        let characters = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        #expect(
            sessions.map(\.id).allSatisfy { $0.utf8.count == 22 && $0.utf8.allSatisfy(characters.contains) })
        let keys = sessions.map(\.tokenHash)
        #expect(keys == keys.sorted { $0.lexicographicallyPrecedes($1) })
        // Two sessions begun in the same millisecond still differ.
        let twin = try service.issue(userID: "u1", clientKind: .web, authMethod: .passkey).session
        let other = try service.issue(userID: "u1", clientKind: .web, authMethod: .passkey).session
        #expect(twin.id != other.id && twin.tokenHash != other.tokenHash)
    }

    @Test("a token issued before tokens carried their time still opens its session, stored as its SHA-256")
    func timelessToken() throws {
        let token = SessionService.tokenPrefix + Base64URL.encode([UInt8](repeating: 7, count: 32))
        #expect(try SessionService.lookupHash(token: token) == Digest.sha256(token))
        try store.insertSession(
            Session(
                id: "Zq8x1tYbT5cU0aVwQe3rLg", userID: "u1", tokenHash: Digest.sha256(token),
                clientKind: .native,
                authMethod: .passkey, createdAt: clock.now(), lastSeenAt: clock.now(),
                expiresAt: clock.now().addingTimeInterval(3600), authenticatedAt: clock.now()))
        #expect(try service.authenticate(token: token).id == "Zq8x1tYbT5cU0aVwQe3rLg")
    }

    @Test("a new session's proof of presence is its sign-in; a rotation keeps the old one, never a new one")
    func proofOfPresence() throws {
        let issued = try service.issue(userID: "u1", clientKind: .native, authMethod: .passkey)
        #expect(issued.session.authenticatedAt == issued.session.createdAt)
        // Past the rotation interval, used within the idle timeout all along.
        for _ in 0..<4 {
            clock.advance(by: 500)
            _ = try service.authenticate(token: issued.token)
        }
        let rotated = try #require(try service.rotateIfDue(try service.authenticate(token: issued.token)))
        #expect(rotated.session.authenticatedAt == issued.session.authenticatedAt)
        #expect(try store.session(id: rotated.session.id)?.authenticatedAt == issued.session.authenticatedAt)
        let replaced = try service.rotate(token: rotated.token)
        #expect(replaced.session.authenticatedAt == issued.session.authenticatedAt)
    }

    @Test(
        "a rotation due on a thread that must not block throws WouldBlock and changes nothing; where waiting is allowed it rotates"
    )
    func rotationWouldBlock() throws {
        let issued = try service.issue(userID: "u1", clientKind: .native, authMethod: .passkey)
        for _ in 0..<4 {
            clock.advance(by: 500)
            _ = try service.authenticate(token: issued.token)
        }
        let session = try service.authenticate(token: issued.token)
        var refused = false
        InlineExecutor.drain(mayBlock: false) {
            do {
                _ = try service.rotateIfDue(session)
            } catch is InlineExecutor.WouldBlock {
                refused = true
            } catch {}
        }
        #expect(refused)
        #expect(try store.session(id: session.id)?.expiresAt == session.expiresAt, "not rotated")
        #expect(try service.rotateIfDue(session) != nil)
    }

    @Test(
        "a use to record on a thread that must not block throws WouldBlock and writes nothing; a session not due is judged there as anywhere"
    )
    func touchWouldBlock() throws {
        let issued = try service.issue(userID: "u1", clientKind: .native, authMethod: .passkey)
        var outcomes: [String] = []
        InlineExecutor.drain(mayBlock: false) {
            // Just issued: nothing to record, so nothing waits.
            outcomes.append((try? service.authenticate(token: issued.token)) != nil ? "judged" : "failed")
            clock.advance(by: 120)
            do {
                _ = try service.authenticate(token: issued.token)
                outcomes.append("judged")
            } catch is InlineExecutor.WouldBlock {
                outcomes.append("would block")
            } catch {
                outcomes.append("\(error)")
            }
        }
        #expect(outcomes == ["judged", "would block"])
        #expect(
            try store.session(id: issued.session.id)?.lastSeenAt == issued.session.lastSeenAt, "not touched")
        #expect(try service.authenticate(token: issued.token).lastSeenAt == clock.now())
    }

    @Test("the issued token authenticates its session")
    func authenticates() throws {
        let issued = try service.issue(userID: "u1", clientKind: .web, authMethod: .passkey)
        #expect(try service.authenticate(token: issued.token).userID == "u1")
    }

    @Test("a malformed or unknown token is refused with its own code")
    func unknownToken() throws {
        #expect(throws: SessionError(.missing, "")) { try service.authenticate(token: "nonsense") }
        for length in [0, 42, 44, 50, 52] {
            let misshapen = SessionService.tokenPrefix + String(repeating: "A", count: length)
            #expect(throws: SessionError(.missing, "")) { try service.authenticate(token: misshapen) }
        }
        // A time that is not base64url cannot be one of ours either.
        let badTime = SessionService.tokenPrefix + "AAAAAA*A" + String(repeating: "A", count: 43)
        #expect(throws: SessionError(.missing, "")) { try service.authenticate(token: badTime) }
        for length in [43, 51] {
            let other = SessionService.tokenPrefix + String(repeating: "A", count: length)
            #expect(throws: SessionError(.unknown, "")) { try service.authenticate(token: other) }
        }
    }

    @Test("the absolute lifetime ends a session however active it is")
    func absoluteExpiry() throws {
        let issued = try service.issue(userID: "u1", clientKind: .web, authMethod: .passkey)
        for _ in 0..<12 {
            clock.advance(by: 300)
            if clock.now() < issued.session.expiresAt {
                _ = try service.authenticate(token: issued.token)
            }
        }
        #expect(throws: SessionError(.expired, "")) { try service.authenticate(token: issued.token) }
    }

    @Test("an idle session expires, and activity keeps it alive")
    func idleExpiry() throws {
        let active = try service.issue(userID: "u1", clientKind: .web, authMethod: .passkey)
        let idle = try service.issue(userID: "u1", clientKind: .web, authMethod: .passkey)
        clock.advance(by: 500)
        _ = try service.authenticate(token: active.token)
        clock.advance(by: 200)
        #expect(try service.authenticate(token: active.token).lastSeenAt == clock.now())
        #expect(throws: SessionError(.idleExpired, "")) { try service.authenticate(token: idle.token) }
    }

    @Test("touching: false writes nothing but judges the session the same")
    func withoutTouching() throws {
        let issued = try service.issue(userID: "u1", clientKind: .native, authMethod: .passkey)
        let start = issued.session.lastSeenAt
        clock.advance(by: 500)
        #expect(try service.authenticate(token: issued.token, touching: false).lastSeenAt == start)
        #expect(try store.session(id: issued.session.id)?.lastSeenAt == start)
        // Unused for longer than the idle timeout: refused, as it would be with a touch.
        clock.advance(by: 200)
        #expect(throws: SessionError(.idleExpired, "")) {
            try service.authenticate(token: issued.token, touching: false)
        }
        #expect(throws: SessionError(.idleExpired, "")) { try service.authenticate(token: issued.token) }
        let revoked = try service.issue(userID: "u1", clientKind: .native, authMethod: .passkey)
        try store.endSession(revoked.session.id, ofUser: "u1", at: clock.now())
        #expect(throws: SessionError(.revoked, "")) {
            try service.authenticate(token: revoked.token, touching: false)
        }
    }

    @Test("a revoked token is refused at once")
    func revoked() throws {
        let issued = try service.issue(userID: "u1", clientKind: .native, authMethod: .passkey)
        try store.endSession(issued.session.id, ofUser: "u1", at: clock.now())
        #expect(throws: SessionError(.revoked, "")) { try service.authenticate(token: issued.token) }
    }

    @Test("rotation retires the old token and keeps the absolute expiry")
    func rotation() throws {
        let issued = try service.issue(userID: "u1", clientKind: .web, authMethod: .passkey)
        clock.advance(by: 120)
        let fresh = try service.rotate(token: issued.token)
        #expect(fresh.token != issued.token)
        #expect(fresh.session.expiresAt == issued.session.expiresAt)
        #expect(throws: SessionError(.revoked, "")) { try service.authenticate(token: issued.token) }
        #expect(try service.authenticate(token: fresh.token).id == fresh.session.id)
    }

    /// The session `token` opens, and its rotation when due, as a signed-in request sees them.
    private func authenticateRotating(_ service: SessionService, token: String) throws -> (
        session: Session, replacement: IssuedSession?
    ) {
        let session = try service.authenticate(token: token)
        return (session, try service.rotateIfDue(session))
    }

    /// A service whose sessions go idle only at their absolute end, so rotation is seen alone.
    private var rotating: SessionService {
        SessionService(
            repository: store,
            policy: SessionPolicy(
                absoluteLifetime: 3600, idleTimeout: 3600, rotationInterval: 1800, rotationGrace: 60,
                touchInterval: 60),
            clock: clock)
    }

    @Test("a token younger than the rotation interval is not rotated")
    func noRotationBeforeInterval() throws {
        let issued = try rotating.issue(userID: "u1", clientKind: .web, authMethod: .passkey)
        clock.advance(by: 1799)
        let (session, replacement) = try authenticateRotating(rotating, token: issued.token)
        #expect(session.id == issued.session.id && replacement == nil)
    }

    @Test("past the rotation interval the token is exchanged once; the old one works for the grace, then not")
    func rotationWithGrace() throws {
        let issued = try rotating.issue(userID: "u1", clientKind: .native, authMethod: .bankid)
        clock.advance(by: 1800)
        let (presented, rotated) = try authenticateRotating(rotating, token: issued.token)
        let fresh = try #require(rotated)
        #expect(presented.id == issued.session.id)
        #expect(fresh.token != issued.token && fresh.session.id != issued.session.id)
        // Same holder, same method, same absolute end: rotation never extends a session.
        #expect(fresh.session.userID == "u1" && fresh.session.clientKind == .native)
        #expect(fresh.session.authMethod == .bankid && fresh.session.expiresAt == issued.session.expiresAt)
        // A request racing the rotation with the old token gets through, and rotates nothing more.
        clock.advance(by: 59)
        let (again, second) = try authenticateRotating(rotating, token: issued.token)
        #expect(again.id == issued.session.id && second == nil)
        clock.advance(by: 1)
        #expect(throws: SessionError(.expired, "")) { try rotating.authenticate(token: issued.token) }
        #expect(try rotating.authenticate(token: fresh.token).id == fresh.session.id)
    }

    @Test("a session within the grace of its absolute end is not rotated: there is nothing to rotate to")
    func noRotationNearTheEnd() throws {
        let issued = try rotating.issue(userID: "u1", clientKind: .web, authMethod: .passkey)
        clock.advance(by: 3600 - 60)
        let (_, replacement) = try authenticateRotating(rotating, token: issued.token)
        #expect(replacement == nil)
    }

    @Test("a session rotated out still ends with revoke-all, at once")
    func rotatedOutSessionIsRevoked() throws {
        let issued = try rotating.issue(userID: "u1", clientKind: .web, authMethod: .passkey)
        clock.advance(by: 1800)
        let fresh = try #require(try authenticateRotating(rotating, token: issued.token).replacement)
        #expect(
            try store.revokeSessions(ofUser: "u1", ids: nil, except: nil, at: clock.now()) { _ in .none }
                .count == 2)
        #expect(throws: SessionError(.revoked, "")) { try rotating.authenticate(token: issued.token) }
        #expect(throws: SessionError(.revoked, "")) { try rotating.authenticate(token: fresh.token) }
    }

    @Test("the sessions list holds only the user's live sessions, newest first")
    func list() throws {
        let first = try service.issue(userID: "u1", clientKind: .web, authMethod: .passkey)
        clock.advance(by: 10)
        let second = try service.issue(userID: "u1", clientKind: .native, authMethod: .passkey)
        let gone = try service.issue(userID: "u1", clientKind: .native, authMethod: .passkey)
        _ = try service.issue(userID: "u2", clientKind: .web, authMethod: .passkey)
        try store.endSession(gone.session.id, ofUser: "u1", at: clock.now())
        #expect(try service.list(userID: "u1").map(\.id) == [second.session.id, first.session.id])
        clock.advance(by: 700)
        #expect(try service.list(userID: "u1").isEmpty)
    }

    @Test("purge deletes sessions that ended before the retention window")
    func purge() throws {
        let old = try service.issue(userID: "u1", clientKind: .web, authMethod: .passkey)
        try store.endSession(old.session.id, ofUser: "u1", at: clock.now())
        clock.advance(by: 4000)
        let live = try service.issue(userID: "u1", clientKind: .web, authMethod: .passkey)
        #expect(try service.purge(retention: 60) == 1)
        #expect(try store.session(id: old.session.id) == nil)
        #expect(try store.session(id: live.session.id) != nil)
    }

    /// General sessions live 3600 s (idle 3000 s); BankID sessions 1200 s (idle 300 s).
    private var perMethod: SessionService {
        SessionService(
            repository: store,
            policy: SessionPolicy(
                absoluteLifetime: 3600, idleTimeout: 3000, rotationInterval: 600, rotationGrace: 60,
                touchInterval: 60, methodLifetimes: [.bankid: SessionLifetime(absolute: 1200, idle: 300)]),
            clock: clock)
    }

    @Test("a BankID session ends at its own absolute lifetime; a passkey session at the general one")
    func methodAbsoluteLifetime() throws {
        let service = perMethod
        let bankID = try service.issue(userID: "u1", clientKind: .web, authMethod: .bankid)
        let passkey = try service.issue(userID: "u1", clientKind: .web, authMethod: .passkey)
        #expect(bankID.session.expiresAt == clock.now().addingTimeInterval(1200))
        #expect(passkey.session.expiresAt == clock.now().addingTimeInterval(3600))
        // Kept active, each well inside the idle timeout.
        for _ in 0..<3 {
            clock.advance(by: 250)
            _ = try service.authenticate(token: bankID.token)
            _ = try service.authenticate(token: passkey.token)
        }
        clock.advance(by: 450)  // 1200 s after sign-in
        #expect(throws: SessionError(.expired, "")) { try service.authenticate(token: bankID.token) }
        #expect(try service.authenticate(token: passkey.token).id == passkey.session.id)
    }

    @Test("a BankID session goes idle after its own idle timeout; a passkey session does not")
    func methodIdleTimeout() throws {
        let service = perMethod
        let bankID = try service.issue(userID: "u1", clientKind: .native, authMethod: .bankid)
        let passkey = try service.issue(userID: "u1", clientKind: .native, authMethod: .passkey)
        clock.advance(by: 299)
        _ = try service.authenticate(token: bankID.token)  // activity restarts the idle clock
        clock.advance(by: 300)
        #expect(throws: SessionError(.idleExpired, "")) { try service.authenticate(token: bankID.token) }
        #expect(try service.authenticate(token: passkey.token).id == passkey.session.id)
        #expect(
            try service.list(userID: "u1").map(\.id) == [passkey.session.id], "the idle one is not listed")
    }

    @Test("rotating a BankID session keeps its own end and its own idle timeout")
    func methodRotation() throws {
        let service = perMethod
        let issued = try service.issue(userID: "u1", clientKind: .web, authMethod: .bankid)
        clock.advance(by: 200)
        _ = try service.authenticate(token: issued.token)
        clock.advance(by: 200)
        _ = try service.authenticate(token: issued.token)
        clock.advance(by: 200)
        let session = try service.authenticate(token: issued.token)
        let fresh = try #require(try service.rotateIfDue(session), "due after 600 s")
        #expect(fresh.session.authMethod == .bankid)
        #expect(fresh.session.expiresAt == issued.session.expiresAt, "never past the BankID lifetime")
        clock.advance(by: 300)
        #expect(throws: SessionError(.idleExpired, "")) { try service.authenticate(token: fresh.token) }
    }

    @Test("a method without its own lifetime has the general one")
    func generalLifetimeByDefault() {
        let policy = SessionPolicy(
            absoluteLifetime: 3600, idleTimeout: 600,
            methodLifetimes: [.bankid: SessionLifetime(absolute: 1200, idle: 300)])
        #expect(policy.lifetime(for: .passkey) == SessionLifetime(absolute: 3600, idle: 600))
        #expect(policy.lifetime(for: .enrollment) == SessionLifetime(absolute: 3600, idle: 600))
        #expect(policy.lifetime(for: .bankid) == SessionLifetime(absolute: 1200, idle: 300))
    }
}
