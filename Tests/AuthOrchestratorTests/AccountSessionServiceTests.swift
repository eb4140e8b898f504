import AuthOrchestrator
import BankIDCore
import CryptoCore
import Foundation
import Kernel
import SessionCore
import Storage
import TestSupport
import Testing

/// The rules every signed-in request passes, and the user's own acts on their sessions, without
/// HTTP: they used to live in the API's handlers.
@Suite("AccountSessionService: signed-in rules, overview, logout")
struct AccountSessionServiceTests {
    /// The service over a fixture's store; BankID's store when `bankID` is on.
    private func access(_ f: ServiceFixture, bankID: Bool = true) -> AccountSessionService {
        AccountSessionService(
            sessions: f.sessions, users: f.store, bankID: bankID ? f.store : nil,
            recentAuthentication: RecentAuthentication(
                policy: ReauthenticationPolicy(), passkeys: f.store, identities: f.store, clock: f.clock),
            clock: f.clock)
    }

    @Test("no token is session.missing, an unknown one session.unknown")
    func missingAndUnknown() throws {
        let f = try ServiceFixture()
        #expect(throws: SessionError(.missing, "")) { try access(f).signedIn(token: nil, rotating: true) }
        #expect(throws: SessionError(.unknown, "")) {
            try access(f).signedIn(token: "pvs_" + String(repeating: "A", count: 43), rotating: true)
        }
    }

    @Test("a disabled account's session is refused with account.disabled")
    func disabledAccount() throws {
        let f = try ServiceFixture()
        let (signedUp, _) = try f.signUp("ada")
        let token = try #require(signedUp.session?.token)
        #expect(try access(f).signedIn(token: token, rotating: false).user.id == signedUp.user.id)
        var user = signedUp.user
        user.disabledAt = f.clock.now()
        try f.store.updateUser(user)
        #expect(throws: AuthError(.accountDisabled, "")) {
            try access(f).signedIn(token: token, rotating: false)
        }
        // Past the rotation interval a refused account's token is not exchanged: no new session.
        f.clock.advance(by: 86_400)
        #expect(throws: AuthError(.accountDisabled, "")) {
            try access(f).signedIn(token: token, rotating: true)
        }
        #expect(try f.sessions.list(userID: user.id).count == 1)
    }

    @Test("a token past the rotation interval is exchanged when rotating, never otherwise")
    func rotation() throws {
        let f = try ServiceFixture()
        let (signedUp, _) = try f.signUp("ada")
        let token = try #require(signedUp.session?.token)
        // The fixture's policy: rotation after a day; keep the session active on the way there.
        for _ in 0..<24 {
            f.clock.advance(by: 3_600)
            _ = try access(f).signedIn(token: token, rotating: false)
        }
        let kept = try access(f).signedIn(token: token, rotating: false)
        #expect(kept.rotated == nil && kept.current.id == signedUp.session?.session.id)
        let rotated = try access(f).signedIn(token: token, rotating: true)
        let fresh = try #require(rotated.rotated)
        #expect(rotated.current.id == fresh.session.id && rotated.session.id == signedUp.session?.session.id)
        #expect(try access(f).signedIn(token: fresh.token, rotating: true).rotated == nil)
    }

    @Test("the overview shows a step-up only while its window is open, and BankID only when on")
    func overviewStepUp() throws {
        let f = try ServiceFixture()
        let (signedUp, _) = try f.signUp("ada")
        let session = try #require(signedUp.session?.session)
        let signedIn = SignedIn(session: session, user: signedUp.user)
        #expect(try access(f).overview(signedIn).steppedUpUntil == nil)
        #expect(try access(f).overview(signedIn).bankID?.link == nil)
        #expect(try access(f, bankID: false).overview(signedIn).bankID == nil)

        let now = f.clock.now()
        let flow = BankIDFlow(
            idHash: Digest.sha256("order-sign"), orderRef: "ref-sign", intent: .sign, sameDevice: false,
            bindingHash: Digest.sha256("binding"), userID: signedUp.user.id, sessionID: session.id,
            createdAt: now)
        try f.store.insertBankIDFlow(flow)
        #expect(
            try f.store.commitBankIDCompletion(
                BankIDCompletionRecord(
                    flowIDHash: flow.idHash, outcome: "bankid.signed", at: now,
                    stepUp: SessionStepUp(
                        sessionID: session.id, signedAt: now, validUntil: now.addingTimeInterval(600),
                        userVisibleText: "Pay 10 kr"))))
        #expect(
            try access(f).overview(signedIn).steppedUpUntil
                == now.addingTimeInterval(600).storagePrecisionForTests)
        f.clock.advance(by: 600)
        #expect(try access(f).overview(signedIn).steppedUpUntil == nil)
    }

    @Test("logout ends the session and audits session.logout; ending another's session is not found")
    func logoutAndRevoke() throws {
        let f = try ServiceFixture()
        let (ada, _) = try f.signUp("ada")
        let (bob, _) = try f.signUp("bob")
        let adaSession = try #require(ada.session)
        let bobSession = try #require(bob.session)
        let second = try f.sessions.issue(userID: ada.user.id, clientKind: .web, authMethod: .passkey)
        let signedIn = try access(f).signedIn(token: adaSession.token, rotating: false)
        let context = ClientContext(requestID: "r-7", ipAddress: "192.0.2.7")

        #expect(throws: SessionError(.notFound, "")) {
            try access(f).revoke(sessionID: bobSession.session.id, of: signedIn, context: context)
        }
        try access(f).revoke(sessionID: second.session.id, of: signedIn, context: context)
        #expect(throws: SessionError(.revoked, "")) { try f.sessions.authenticate(token: second.token) }
        try access(f).logout(signedIn, context: context)
        #expect(throws: SessionError(.revoked, "")) { try f.sessions.authenticate(token: adaSession.token) }
        #expect(try f.sessions.authenticate(token: bobSession.token).userID == bob.user.id)

        let events = try f.store.auditEvents(userID: ada.user.id, beforeID: nil, limit: 10)
        #expect(events.prefix(2).map(\.action) == [.sessionLogout, .sessionRevokedByUser])
        #expect(events.first?.actor == .user(ada.user.id) && events.first?.requestID == "r-7")
        #expect(events.first?.details["sessionId"] == adaSession.session.id)
    }
}

/// A refused passkey login that cannot be recorded fails with the storage error: repeated
/// failures must always leave a trail.
@Suite("PasskeyService: a failed login's audit")
struct FailedLoginAuditTests {
    @Test("a refused login whose audit event cannot be written fails with the storage error")
    func unrecordedRefusal() throws {
        let f = try ServiceFixture()
        let (_, credential) = try f.signUp("ada")
        let failing = PasskeyService(
            accounts: f.store, challenges: f.store, audit: FailingAuditStore(), logins: f.store,
            identities: f.store, sessions: f.sessions, policy: f.service.policy, clock: f.clock,
            random: SeededRandom(seed: "failing-audit"))
        let issued = try failing.startLogin(username: nil)
        // Signed for another origin: refused by verification, which must then be audited.
        let assertion = f.authenticator.authenticate(
            credential, challenge: try f.decode(issued).challenge, origin: "https://evil.example")
        #expect(throws: StorageError(.io, "")) {
            try SuspendingCaller.run {
                try await failing.finishLogin(
                    challengeID: issued.challengeID, response: assertion.json(), clientKind: .native,
                    replacingSessionID: nil, context: ClientContext())
            }
        }
    }
}

/// An audit trail that cannot be written to (a full disk).
struct FailingAuditStore: AuditStore {
    func appendAudit(_ event: AuditEvent) throws -> Int64 { throw StorageError(.io, "disk full") }
    func auditEvents(userID: String?, beforeID: Int64?, limit: Int) throws -> [AuditEvent] { [] }
}

extension Date {
    /// This instant at the millisecond precision the stores keep.
    var storagePrecisionForTests: Date {
        Date(timeIntervalSince1970: (timeIntervalSince1970 * 1000).rounded(.down) / 1000)
    }
}
