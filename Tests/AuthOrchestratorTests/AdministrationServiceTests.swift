import AuthOrchestrator
import CryptoCore
import Dispatch
import Foundation
import Kernel
import PasskeyCore
import SessionCore
import Storage
import Synchronization
import TestSupport
import Testing

/// Administration and enrollment over one real store.
final class AdminFixture: @unchecked Sendable {
    let clock = FixedClock()
    /// The one database behind every store the services use; it lives as long as the fixture.
    let storage: TestStore
    var store: SQLStore { storage.store }
    let administration: AccountAdministration
    let enrollment: EnrollmentService
    let sessions: SessionService
    let authenticator = SoftwareAuthenticator()
    let origin = "https://login.example.com"
    let admin = AdminPrincipal(tokenID: "adt_1", name: "ops", scope: .write)

    init() throws {
        storage = try TestStore(.sqlite, clock: clock)
        let store = storage.store
        let random = SeededRandom(seed: "administration")
        sessions = SessionService(repository: store, policy: SessionPolicy(), clock: clock, random: random)
        let passkeys = PasskeyService(
            accounts: store, challenges: store, audit: store, logins: store, identities: store,
            sessions: sessions,
            policy: PasskeyPolicy(
                relyingParty: RelyingParty(id: "example.com", name: "Example", allowedOrigins: [origin])),
            clock: clock, random: random)
        administration = AccountAdministration(store: store, clock: clock, random: random)
        enrollment = EnrollmentService(
            store: store, passkeys: passkeys, sessions: sessions, clock: clock, random: random)
    }

    /// Starts an enrollment ceremony and answers it with a new credential.
    func enroll(_ token: String) throws -> CompletedRegistration? {
        let issued = try enrollment.startRegistration(token: token)
        return try finish(issued)
    }

    func finish(_ issued: IssuedChallenge) throws -> CompletedRegistration? {
        let options = try #require(
            JSONSerialization.jsonObject(with: Data(issued.optionsJSON)) as? [String: Any])
        let challenge = try #require((options["challenge"] as? String).flatMap(Base64URL.decode))
        let handleText = try #require((options["user"] as? [String: Any])?["id"] as? String)
        let handle = try #require(Base64URL.decode(handleText))
        let credential = authenticator.makeCredential(
            algorithm: .es256, rpID: "example.com", userHandle: handle)
        return try enrollment.finishRegistration(
            challengeID: issued.challengeID,
            response: authenticator.register(credential, challenge: challenge, origin: origin).json(),
            name: nil,
            clientKind: .native, context: ClientContext())
    }
}

@Suite("AccountAdministration and EnrollmentService over real stores")
struct AdministrationServiceTests {
    @Test("list and search page through users by id with an opaque cursor")
    func listing() throws {
        let fixture = try AdminFixture()
        for index in 0..<25 {
            _ = try fixture.administration.createUser(
                username: "user\(index)", displayName: index % 5 == 0 ? "Five \(index)" : nil,
                by: fixture.admin,
                context: ClientContext())
        }
        var seen: [String] = []
        var cursor: String?
        repeat {
            let page = try fixture.administration.listUsers(search: nil, cursor: cursor, limit: 7)
            seen += page.items.map(\.id)
            cursor = page.nextCursor
        } while cursor != nil
        #expect(
            seen.count == 25
                && seen == seen.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        let fives = try fixture.administration.listUsers(search: "FIVE", cursor: nil, limit: 2)
        #expect(fives.items.count == 2 && fives.nextCursor != nil)
        let rest = try fixture.administration.listUsers(search: "FIVE", cursor: fives.nextCursor, limit: 10)
        #expect(rest.items.count == 3 && rest.nextCursor == nil)
        #expect(throws: AuthError(.invalidCursor, "")) {
            try fixture.administration.listUsers(search: nil, cursor: "bad!", limit: nil)
        }
        #expect(throws: AuthError(.invalidParameter, "")) {
            try fixture.administration.listUsers(search: nil, cursor: nil, limit: 0)
        }
    }

    @Test("disabling ends every session and is audited as the admin token; the audit search filters")
    func disableAndAudit() throws {
        let fixture = try AdminFixture()
        let user = try fixture.administration.createUser(
            username: "ada", displayName: nil, by: fixture.admin, context: ClientContext(requestID: "r-1"))
        _ = try fixture.sessions.issue(userID: user.id, clientKind: .native, authMethod: .passkey)
        _ = try fixture.sessions.issue(userID: user.id, clientKind: .web, authMethod: .passkey)
        #expect(try fixture.store.liveSessionCount(at: fixture.clock.now()) == 2)
        fixture.clock.advance(by: 60)
        let disabled = try fixture.administration.updateUser(
            id: user.id, changes: UserChanges(disabled: true), by: fixture.admin, context: ClientContext())
        #expect(disabled.disabledAt != nil)
        #expect(try fixture.administration.sessions(userID: user.id).isEmpty)
        #expect(try fixture.store.liveSessionCount(at: fixture.clock.now()) == 0)
        let events = try fixture.administration.auditEvents(
            AuditQuery(userID: user.id, action: .adminUserDisabled), cursor: nil, limit: nil)
        #expect(events.items.map(\.actor.rawValue) == ["admin:ops"])
        #expect(events.items.first?.details == ["adminTokenId": "adt_1", "sessionsRevoked": "2"])
        let before = try fixture.administration.auditEvents(
            AuditQuery(userID: user.id, until: fixture.clock.now()), cursor: nil, limit: nil)
        #expect(before.items.map(\.action.rawValue) == ["admin.user.created"])
        #expect(throws: AuthError(.userNotFound, "")) {
            try fixture.administration.updateUser(
                id: "nobody", changes: UserChanges(disabled: true), by: fixture.admin,
                context: ClientContext())
        }
    }

    @Test("an enrollment token adds one passkey and a session, once; it expires")
    func enrollment() throws {
        let fixture = try AdminFixture()
        let user = try fixture.administration.createUser(
            username: "bob", displayName: nil, by: fixture.admin, context: ClientContext())
        let issued = try fixture.administration.issueEnrollment(
            userID: user.id, lifetime: nil, using: fixture.enrollment, by: fixture.admin,
            context: ClientContext())
        #expect(issued.record.expiresAt == fixture.clock.now() + 86_400)
        let first = try fixture.enrollment.startRegistration(token: issued.token)
        let second = try fixture.enrollment.startRegistration(token: issued.token)
        let completed = try #require(try fixture.finish(first))
        #expect(completed.user.id == user.id && completed.session != nil)
        #expect(throws: AuthError(.enrollmentInvalid, "")) { try fixture.finish(second) }
        #expect(throws: AuthError(.enrollmentInvalid, "")) { try fixture.enroll(issued.token) }
        #expect(try fixture.store.passkeys(userID: user.id).count == 1)

        let later = try fixture.administration.issueEnrollment(
            userID: user.id, lifetime: 300, using: fixture.enrollment, by: fixture.admin,
            context: ClientContext())
        fixture.clock.advance(by: 300)
        #expect(throws: AuthError(.enrollmentInvalid, "")) { try fixture.enroll(later.token) }
        #expect(throws: AuthError(.enrollmentInvalidLifetime, "")) {
            try fixture.administration.issueEnrollment(
                userID: user.id, lifetime: 299, using: fixture.enrollment, by: fixture.admin,
                context: ClientContext())
        }
    }

    @Test("racing redemptions of one token store exactly one passkey")
    func race() throws {
        let fixture = try AdminFixture()
        let user = try fixture.administration.createUser(
            username: "cyd", displayName: nil, by: fixture.admin, context: ClientContext())
        let issued = try fixture.enrollment.issue(
            userID: user.id, lifetime: nil, purpose: "recovery", actor: .system, context: ClientContext())
        let challenges = try (0..<6).map { _ in try fixture.enrollment.startRegistration(token: issued.token)
        }
        let successes = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: challenges.count) { index in
            if (try? fixture.finish(challenges[index])) != nil { successes.add(1, ordering: .relaxed) }
        }
        #expect(successes.load(ordering: .relaxed) == 1)
        #expect(try fixture.store.passkeys(userID: user.id).count == 1)
    }
}
