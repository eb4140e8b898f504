import AuthOrchestrator
import Foundation
import Kernel
import SessionCore
import Storage
import Synchronization
import TestSupport
import Testing

/// A SessionAccessStore over a real store that records every call made to it, by name.
private final class RecordingAccessStore: SessionAccessStore {
    let base: SQLStore
    private let log = Mutex<[String]>([])

    init(_ base: SQLStore) { self.base = base }

    /// The calls since the last `take()`, oldest first.
    func take() -> [String] {
        log.withLock { calls in
            defer { calls = [] }
            return calls
        }
    }

    private func record(_ name: String) { log.withLock { $0.append(name) } }

    func sessionWithOwner(tokenHash: [UInt8]) throws -> (session: Session, owner: User)? {
        record("sessionWithOwner")
        return try base.sessionWithOwner(tokenHash: tokenHash)
    }

    func insertUser(_ user: User, record change: ChangeRecord) throws {
        record("insertUser")
        try base.insertUser(user, record: change)
    }
    func user(id: String) throws -> User? {
        record("user(id:)")
        return try base.user(id: id)
    }
    func user(username: String) throws -> User? {
        record("user(username:)")
        return try base.user(username: username)
    }
    func user(handle: [UInt8]) throws -> User? {
        record("user(handle:)")
        return try base.user(handle: handle)
    }
    func updateUser(_ user: User, record change: ChangeRecord) throws {
        record("updateUser")
        try base.updateUser(user, record: change)
    }
    func deleteUser(id: String, record change: ChangeRecord) throws -> Bool {
        record("deleteUser")
        return try base.deleteUser(id: id, record: change)
    }
    func users(afterID: String?, limit: Int) throws -> [User] {
        record("users")
        return try base.users(afterID: afterID, limit: limit)
    }
    func userCount() throws -> Int {
        record("userCount")
        return try base.userCount()
    }
    func insertSession(_ session: Session) throws {
        record("insertSession")
        try base.insertSession(session)
    }
    func session(tokenHash: [UInt8]) throws -> Session? {
        record("session(tokenHash:)")
        return try base.session(tokenHash: tokenHash)
    }
    func session(id: String) throws -> Session? {
        record("session(id:)")
        return try base.session(id: id)
    }
    func touchSession(id: String, at: Date) throws {
        record("touchSession")
        try base.touchSession(id: id, at: at)
    }
    func revokeSessions(
        ofUser userID: String, ids: [String]?, except exceptID: String?, at: Date,
        record recording: ChangeRecording<[String]>
    ) throws -> [String] {
        record("revokeSessions(ofUser:)")
        return try base.revokeSessions(ofUser: userID, ids: ids, except: exceptID, at: at, record: recording)
    }
    func sessions(userID: String, liveAt now: Date) throws -> [Session] {
        record("sessions")
        return try base.sessions(userID: userID, liveAt: now)
    }
    func rotateSession(oldID: String, replacement: Session, at: Date) throws {
        record("rotateSession")
        try base.rotateSession(oldID: oldID, replacement: replacement, at: at)
    }
    func rotateSession(oldID: String, replacement: Session, oldExpiresAt: Date) throws -> Bool {
        record("rotateSession(grace)")
        return try base.rotateSession(oldID: oldID, replacement: replacement, oldExpiresAt: oldExpiresAt)
    }
    func purgeSessions(endedBefore cutoff: Date) throws -> Int {
        record("purgeSessions")
        return try base.purgeSessions(endedBefore: cutoff)
    }
}

/// The check every signed-in request makes (`/v1/me`, forward auth, introspection) is one read:
/// the session and its account in one statement, plus the idle touch when one is due.
@Suite("AccountSessionService: the signed-in check is one read")
struct SignedInReadTests {
    /// The service with every session and account access going through `recorder`.
    private func access(_ f: ServiceFixture, _ recorder: RecordingAccessStore) -> AccountSessionService {
        AccountSessionService(
            sessions: SessionService(repository: recorder, policy: f.sessions.policy, clock: f.clock),
            users: recorder, bankID: nil,
            recentAuthentication: RecentAuthentication(
                policy: ReauthenticationPolicy(), passkeys: f.store, identities: f.store, clock: f.clock),
            clock: f.clock)
    }

    @Test("a live session costs one read, and a write only when the idle touch is due")
    func oneRead() throws {
        let f = try ServiceFixture()
        let (signedUp, _) = try f.signUp("ada")
        let token = try #require(signedUp.session?.token)
        let recorder = RecordingAccessStore(f.store)
        let access = access(f, recorder)

        let first = try access.signedIn(token: token, rotating: false)
        #expect(first.user.id == signedUp.user.id)
        #expect(first.session.id == signedUp.session?.session.id)
        #expect(recorder.take() == ["sessionWithOwner"])

        // Past the touch interval: the one write the idle timeout needs, then none for a minute.
        f.clock.advance(by: 61)
        let touched = try access.signedIn(token: token, rotating: false)
        #expect(touched.session.lastSeenAt == f.clock.now())
        #expect(recorder.take() == ["sessionWithOwner", "touchSession"])
        #expect(try f.store.session(id: touched.session.id)?.lastSeenAt == f.clock.now())
        _ = try access.signedIn(token: token, rotating: true)
        #expect(recorder.take() == ["sessionWithOwner"])

        // Not touching (introspection): the same judgement, no write.
        f.clock.advance(by: 61)
        _ = try access.signedIn(token: token, rotating: false, touching: false)
        #expect(recorder.take() == ["sessionWithOwner"])
    }

    @Test("refusals cost the same one read; a malformed token none")
    func refusals() throws {
        let f = try ServiceFixture()
        let (signedUp, _) = try f.signUp("ada")
        let token = try #require(signedUp.session?.token)
        let recorder = RecordingAccessStore(f.store)
        let access = access(f, recorder)

        #expect(throws: SessionError(.missing, "")) {
            try access.signedIn(token: "pvs_short", rotating: false)
        }
        #expect(recorder.take() == [])
        #expect(throws: SessionError(.unknown, "")) {
            try access.signedIn(token: "pvs_" + String(repeating: "A", count: 43), rotating: false)
        }
        #expect(recorder.take() == ["sessionWithOwner"])

        var user = signedUp.user
        user.disabledAt = f.clock.now()
        try f.store.updateUser(user)
        #expect(throws: AuthError(.accountDisabled, "")) { try access.signedIn(token: token, rotating: true) }
        #expect(recorder.take() == ["sessionWithOwner"])
        user.disabledAt = nil
        try f.store.updateUser(user)

        // Unused past the idle timeout (a week by default): idle-expired, and nothing written.
        f.clock.advance(by: f.sessions.policy.idleTimeout + 1)
        #expect(throws: SessionError(.idleExpired, "")) { try access.signedIn(token: token, rotating: false) }
        #expect(recorder.take() == ["sessionWithOwner"])
    }

    @Test("a revoked session and a deleted account are refused after the one read")
    func revokedAndDeleted() throws {
        let f = try ServiceFixture()
        let (ada, _) = try f.signUp("ada")
        let (bob, _) = try f.signUp("bob")
        let adaToken = try #require(ada.session?.token)
        let bobToken = try #require(bob.session?.token)
        let recorder = RecordingAccessStore(f.store)
        let access = access(f, recorder)

        try f.store.endSession(try #require(ada.session?.session.id), ofUser: ada.user.id, at: f.clock.now())
        #expect(throws: SessionError(.revoked, "")) { try access.signedIn(token: adaToken, rotating: false) }
        #expect(recorder.take() == ["sessionWithOwner"])

        #expect(try f.store.deleteUser(id: bob.user.id))
        #expect(throws: SessionError(.unknown, "")) { try access.signedIn(token: bobToken, rotating: false) }
        #expect(recorder.take() == ["sessionWithOwner"])
    }
}
