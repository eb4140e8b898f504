import CryptoCore
import Foundation
import Kernel
import SessionCore
import TestSupport
import Testing

@testable import Storage

/// Every account change commits with its record (its audit events and its webhook outbox
/// entries) or not at all, and a conditional change records exactly what it did, on each engine.
@Suite("Change records: a change, its audit and its outbox in one transaction")
struct ChangeRecordTests {
    /// An outbox entry for one endpoint with a fixed body.
    static func entry(_ id: String, _ type: ChangeEventType = .userCreated) -> OutboxEntry {
        OutboxEntry(
            id: id, type: type, occurredAt: epoch, payload: Array(#"{"type":"\#(type)"}"#.utf8),
            deliveries: [.init(id: "whd_\(id)", endpoint: "app")], createdAt: epoch, giveUpAt: at(86_400))
    }

    static func audit(_ action: AuditAction, userID: String) -> AuditEvent {
        AuditEvent(at: epoch, action: action, actor: .cli, userID: userID, details: ["k": "v"])
    }

    static func record(_ eventID: String, _ action: AuditAction = .adminUserCreated, userID: String = "u1")
        -> ChangeRecord
    {
        ChangeRecord(audit(action, userID: userID), outbox: [entry(eventID)])
    }

    /// The outbox's event ids, sorted.
    static func eventIDs(_ fixture: TestStore) throws -> [String] {
        try fixture.engine.read { connection in
            try connection.query("SELECT id FROM webhook_events ORDER BY id") { try $0.string(0) }
        }
    }

    static func actions(_ fixture: TestStore, userID: String) throws -> [AuditAction] {
        try fixture.store.auditEvents(userID: userID, beforeID: nil, limit: 50).map(\.action)
    }

    @Test("the change, its audit events and its outbox entries land together", arguments: StoreKind.tested)
    func together(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1", username: "ada"), record: Self.record("evt_1"))
        #expect(try fixture.store.user(id: "u1") != nil)
        #expect(try Self.actions(fixture, userID: "u1") == [.adminUserCreated])
        let stored = try #require(try fixture.store.auditEvents(userID: "u1", beforeID: nil, limit: 1).first)
        #expect(stored.details == ["k": "v"])
        #expect(try Self.eventIDs(fixture) == ["evt_1"])
    }

    @Test("a change that fails writes neither its audit nor its outbox", arguments: StoreKind.tested)
    func failedChange(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1", username: "ada"))
        #expect(throws: StorageError(.conflict, "")) {
            try fixture.store.insertUser(
                makeUser("u2", username: "ada"), record: Self.record("evt_1", userID: "u2"))
        }
        #expect(try Self.actions(fixture, userID: "u2").isEmpty)
        #expect(try Self.eventIDs(fixture).isEmpty)
    }

    @Test("a record that cannot be written rolls its change back", arguments: StoreKind.tested)
    func failedRecord(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.enqueue([Self.entry("evt_taken")])
        #expect(throws: StorageError(.conflict, "")) {
            try fixture.store.insertUser(makeUser("u1", username: "ada"), record: Self.record("evt_taken"))
        }
        #expect(try fixture.store.user(id: "u1") == nil, "the user went with the record")
        #expect(try Self.actions(fixture, userID: "u1").isEmpty)
    }

    @Test("a conditional change that did nothing records nothing", arguments: StoreKind.tested)
    func nothingHappened(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertUser(makeUser("u2"))
        try fixture.store.insertPasskey(makePasskey([1], userID: "u1"))
        #expect(try !fixture.store.deleteUser(id: "nobody", record: Self.record("evt_1")))
        // Another user's passkey is neither deleted nor recorded.
        #expect(
            try !fixture.store.deletePasskey(credentialID: [1], userID: "u2", record: Self.record("evt_2")))
        #expect(
            try fixture.store.deletePasskeyUnlessLast(
                credentialID: [1], userID: "u1", record: Self.record("evt_3"))
                == .lastPasskey)
        #expect(try Self.eventIDs(fixture).isEmpty)
        #expect(try fixture.store.passkey(credentialID: [1]) != nil)

        try fixture.store.insertPasskey(makePasskey([2], userID: "u1"), record: Self.record("evt_4"))
        #expect(
            try fixture.store.deletePasskeyUnlessLast(
                credentialID: [1], userID: "u1", record: Self.record("evt_5"))
                == .deleted)
        #expect(try fixture.store.deleteUser(id: "u1", record: Self.record("evt_6", .adminUserDeleted)))
        #expect(try Self.eventIDs(fixture) == ["evt_4", "evt_5", "evt_6"])
    }

    @Test(
        "revoking sessions ends only the user's own, never one twice, and records the ids it ended",
        arguments: StoreKind.tested)
    func revokeSessions(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertUser(makeUser("u2"))
        for (id, user) in [("s1", "u1"), ("s2", "u1"), ("s3", "u1"), ("b1", "u2")] {
            try fixture.store.insertSession(makeSession(id, userID: user))
        }
        try fixture.store.insertSession(makeSession("old", userID: "u1", expiresAt: at(10)))

        var seen: [[String]] = []
        let ended = try fixture.store.revokeSessions(
            ofUser: "u1", ids: ["s1", "b1", "missing"], except: nil, at: at(1)
        ) {
            seen.append($0)
            return $0.isEmpty ? .none : Self.record("evt_1", .sessionRevokedByUser)
        }
        #expect(ended == ["s1"] && seen.last == ["s1"])
        #expect(try fixture.store.session(id: "b1")?.revokedAt == nil, "another user's session is untouched")

        // Already revoked: nothing ended, and the record says so.
        let again = try fixture.store.revokeSessions(ofUser: "u1", ids: ["s1"], except: nil, at: at(2)) {
            seen.append($0)
            return $0.isEmpty ? .none : Self.record("evt_2", .sessionRevokedByUser)
        }
        #expect(again.isEmpty && seen.last == [])

        // Every live one but the kept one; the expired one is not live at `at(20)`.
        let rest = try fixture.store.revokeSessions(ofUser: "u1", ids: nil, except: "s3", at: at(20)) { _ in
            .none
        }
        #expect(rest == ["s2"])
        #expect(try fixture.store.session(id: "s3")?.revokedAt == nil)
        #expect(try fixture.store.session(id: "old")?.revokedAt == nil)
        #expect(try Self.eventIDs(fixture) == ["evt_1"])
    }

    @Test(
        "disabling records the sessions it revoked; a missing user records nothing",
        arguments: StoreKind.tested)
    func disable(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertSession(makeSession("s1", userID: "u1"))
        try fixture.store.insertSession(makeSession("s2", userID: "u1", revokedAt: at(0)))
        var revoked: [String] = []
        #expect(
            try fixture.store.setUserDisabled(id: "u1", at: at(1), now: at(1)) {
                revoked = $0
                return Self.record("evt_1", .adminUserDisabled)
            } == 1)
        #expect(revoked == ["s1"])
        #expect(throws: StorageError(.notFound, "")) {
            try fixture.store.setUserDisabled(id: "nobody", at: at(1), now: at(1)) { _ in Self.record("evt_2")
            }
        }
        #expect(try Self.eventIDs(fixture) == ["evt_1"])
    }

    @Test(
        "a recovery's redemption stores the passkey and session, revokes and deletes the rest, once",
        arguments: StoreKind.tested)
    func recovery(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertPasskey(makePasskey([1], userID: "u1"))
        try fixture.store.insertSession(makeSession("lost", userID: "u1"))
        try fixture.store.insertEnrollmentToken(
            EnrollmentTokenRecord(
                id: "enr_1", userID: "u1", tokenHash: Digest.sha256("pve_1"), purpose: "recovery",
                createdBy: "bankid",
                createdAt: epoch, expiresAt: at(600)))
        let changes = RecoveryChanges(revokeOtherSessions: true, deleteOtherPasskeys: true)
        var recorded: EnrollmentRedemption?
        let redemption = try fixture.store.redeemEnrollmentToken(
            id: "enr_1", passkey: makePasskey([2], userID: "u1"), session: makeSession("new", userID: "u1"),
            at: at(1), recovery: changes
        ) {
            recorded = $0
            return Self.record("evt_1", .accountRecovered)
        }
        #expect(redemption == EnrollmentRedemption(revokedSessionIDs: ["lost"], deletedCredentialIDs: [[1]]))
        #expect(recorded == redemption)
        #expect(try fixture.store.passkeys(userID: "u1").map(\.credentialID) == [[2]])
        #expect(try fixture.store.session(id: "new")?.revokedAt == nil)
        #expect(try fixture.store.session(id: "lost")?.revokedAt != nil)

        let second = try fixture.store.redeemEnrollmentToken(
            id: "enr_1", passkey: makePasskey([3], userID: "u1"), session: makeSession("again", userID: "u1"),
            at: at(2), recovery: changes
        ) { _ in Self.record("evt_2") }
        #expect(second == nil)
        #expect(
            try fixture.store.session(id: "again") == nil && fixture.store.passkey(credentialID: [3]) == nil)
        #expect(try Self.eventIDs(fixture) == ["evt_1"])
    }

    @Test(
        "a sign-in's replaced session is recorded under its own owner, only when the sign-in ended it",
        arguments: StoreKind.tested)
    func replacedSession(kind: StoreKind) async throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertUser(makeUser("u2"))
        try fixture.store.insertPasskey(makePasskey([1], userID: "u1"))
        // The client came with another account's session.
        try fixture.store.insertSession(makeSession("theirs", userID: "u2"))
        func login(_ challenge: UInt8, session: String) -> PasskeyLoginRecord {
            var record = PasskeyLoginRecord(
                challenge: .sealed(challenge: Array(repeating: challenge, count: 32), expiresAt: at(300)),
                credentialID: [1], signCount: UInt32(challenge), backupState: true,
                session: makeSession(session, userID: "u1"), replacedSessionID: "theirs",
                event: Self.audit(.passkeyLogin, userID: "u1"), at: at(1))
            record.replacedSessionOutbox = { owner in [Self.entry("evt_\(owner)_\(session)", .sessionRevoked)]
            }
            return record
        }
        #expect(try await fixture.store.commitPasskeyLogin(login(1, session: "first")) != nil)
        #expect(try await fixture.store.commitPasskeyLogin(login(2, session: "second")) != nil)
        #expect(try Self.eventIDs(fixture) == ["evt_u2_first"], "the second login found it ended already")
    }
}
