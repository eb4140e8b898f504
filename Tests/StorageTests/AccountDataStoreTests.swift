import BankIDCore
import CryptoCore
import Foundation
import Kernel
import SessionCore
import Storage
import TestSupport
import Testing

/// A session's proof of presence, the export's listings, the account deletion and the audit
/// trail's retention: identical on SQLite and PostgreSQL.
@Suite("Account data store")
struct AccountDataStoreTests {
    private func reauthentication(
        sessions: [String], userID: String = "u1", credential: [UInt8] = [1, 2, 3], at time: Date
    ) -> PasskeyReauthenticationRecord {
        PasskeyReauthenticationRecord(
            credentialID: credential, signCount: 9, backupState: false, userID: userID, sessionIDs: sessions,
            event: AuditEvent(
                at: time, action: .passkeyReauthenticated, actor: .user(userID), userID: userID),
            at: time)
    }

    @Test(
        "a session's proof of presence reads back; it is its sign-in unless given",
        arguments: StoreKind.tested)
    func authenticatedAtRoundTrip(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertSession(makeSession("s1", userID: "u1", createdAt: at(5)))
        #expect(try fixture.store.session(id: "s1")?.authenticatedAt == at(5))
        var proved = makeSession("s2", userID: "u1", createdAt: at(5))
        proved.authenticatedAt = at(7.5)
        try fixture.store.insertSession(proved)
        #expect(try fixture.store.session(id: "s2") == proved)
    }

    @Test(
        "a re-authentication records the passkey's use, the proof on the user's live sessions only, and its event, together",
        arguments: StoreKind.tested)
    func reauthenticationCommits(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.createUser(makeUser("u1"), firstPasskey: makePasskey([1, 2, 3], userID: "u1"))
        try fixture.store.insertUser(makeUser("u2"))
        try fixture.store.insertSession(makeSession("mine", userID: "u1"))
        try fixture.store.insertSession(makeSession("ended", userID: "u1", revokedAt: at(1)))
        try fixture.store.insertSession(makeSession("theirs", userID: "u2"))

        #expect(
            try fixture.store.commitPasskeyReauthentication(
                reauthentication(sessions: ["mine", "ended", "theirs"], at: at(60))))
        #expect(try fixture.store.session(id: "mine")?.authenticatedAt == at(60))
        #expect(
            try fixture.store.session(id: "ended")?.authenticatedAt == epoch,
            "a revoked session is not proved")
        #expect(
            try fixture.store.session(id: "theirs")?.authenticatedAt == epoch,
            "another user's is never touched")
        let passkey = try #require(try fixture.store.passkey(credentialID: [1, 2, 3]))
        #expect(passkey.signCount == 9 && passkey.lastUsedAt == at(60))
        #expect(try fixture.store.allAuditEvents(userID: "u1").map(\.action) == [.passkeyReauthenticated])

        // Only forwards: a late commit leaves the newer proof.
        #expect(
            try fixture.store.commitPasskeyReauthentication(reauthentication(sessions: ["mine"], at: at(30))))
        #expect(try fixture.store.session(id: "mine")?.authenticatedAt == at(60))

        // With no live session of the user there is nowhere to put the proof: nothing is written.
        #expect(
            try !fixture.store.commitPasskeyReauthentication(
                reauthentication(sessions: ["ended"], at: at(90))))
        #expect(try fixture.store.passkey(credentialID: [1, 2, 3])?.lastUsedAt == at(60))
        #expect(try fixture.store.allAuditEvents(userID: "u1").count == 2)

        // A passkey that is gone rolls the proof back with it.
        #expect(throws: StorageError(.notFound, "")) {
            try fixture.store.commitPasskeyReauthentication(
                reauthentication(sessions: ["mine"], credential: [9], at: at(120)))
        }
        #expect(try fixture.store.session(id: "mine")?.authenticatedAt == at(60))
    }

    @Test(
        "the export's listings: every stored session, every enrollment token, every audit event oldest first",
        arguments: StoreKind.tested)
    func listings(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertUser(makeUser("u2"))
        try fixture.store.insertSession(makeSession("a", userID: "u1", createdAt: at(1)))
        try fixture.store.insertSession(makeSession("b", userID: "u1", createdAt: at(2), revokedAt: at(3)))
        try fixture.store.insertSession(makeSession("c", userID: "u1", createdAt: at(3), expiresAt: at(4)))
        try fixture.store.insertSession(makeSession("x", userID: "u2"))
        #expect(try fixture.store.allSessions(userID: "u1").map(\.id) == ["c", "b", "a"])
        #expect(try fixture.store.sessions(userID: "u1", liveAt: at(10)).map(\.id) == ["a"])

        for (id, time) in [("t2", at(2)), ("t1", at(1))] {
            try fixture.store.insertEnrollmentToken(
                EnrollmentTokenRecord(
                    id: id, userID: "u1", tokenHash: Digest.sha256(id), purpose: "admin",
                    createdBy: "admin:ops",
                    createdAt: time, expiresAt: time.addingTimeInterval(600)))
        }
        #expect(try fixture.store.enrollmentTokens(userID: "u1").map(\.id) == ["t1", "t2"])
        #expect(try fixture.store.enrollmentTokens(userID: "u2").isEmpty)

        for action in [AuditAction.passkeyLogin, .sessionLogout] {
            _ = try fixture.store.appendAudit(
                AuditEvent(at: at(5), action: action, actor: .user("u1"), userID: "u1"))
        }
        _ = try fixture.store.appendAudit(
            AuditEvent(at: at(5), action: .passkeyLogin, actor: .user("u2"), userID: "u2"))
        #expect(
            try fixture.store.allAuditEvents(userID: "u1").map(\.action) == [.passkeyLogin, .sessionLogout])
        #expect(try fixture.store.bankIDPhoneVerifications(userID: "u1").isEmpty)
    }

    @Test(
        "unlinking removes the user's identity with its record, once; another user's stays",
        arguments: StoreKind.tested)
    func unlink(kind: StoreKind) throws {
        let fixture = try kind.make()
        for (user, byte) in [("u1", UInt8(1)), ("u2", 2)] {
            try fixture.store.insertUser(makeUser(user))
            let flow = BankIDFlow(
                idHash: Digest.sha256("flow-\(user)"), orderRef: "ref-\(user)", intent: .link,
                sameDevice: false,
                bindingHash: Digest.sha256("binding"), userID: user, createdAt: epoch)
            try fixture.store.insertBankIDFlow(flow)
            #expect(
                try fixture.store.commitBankIDCompletion(
                    BankIDCompletionRecord(
                        flowIDHash: flow.idHash, outcome: "bankid.linked", at: epoch,
                        link: LinkedIdentity(
                            userID: user,
                            digest: IdentityDigest(keyID: "k1", value: Array(repeating: byte, count: 32)),
                            name: "Name", linkedAt: epoch))))
        }
        let record = ChangeRecord(
            AuditEvent(at: at(1), action: .bankIDUnlinked, actor: .user("u1"), userID: "u1"))
        #expect(try fixture.store.unlinkIdentity(userID: "u1", record: record))
        #expect(try fixture.store.linkedIdentity(userID: "u1") == nil)
        #expect(try fixture.store.linkedIdentity(userID: "u2") != nil)
        #expect(try !fixture.store.unlinkIdentity(userID: "u1", record: record))
        #expect(
            try fixture.store.allAuditEvents(userID: "u1").map(\.action) == [.bankIDUnlinked], "recorded once"
        )
    }

    @Test(
        "deleting a user removes their challenges with the rest; another user's and a sign-up's stay",
        arguments: StoreKind.tested)
    func deleteRemovesChallenges(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertUser(makeUser("u2"))
        var mine = makeChallenge("mine")
        mine.userID = "u1"
        var theirs = makeChallenge("theirs")
        theirs.userID = "u2"
        try fixture.store.insertChallenge(mine)
        try fixture.store.insertChallenge(theirs)
        try fixture.store.insertChallenge(makeChallenge("signup", purpose: .registration))
        #expect(try fixture.store.deleteUser(id: "u1"))
        #expect(try fixture.store.challenge(id: "mine", purpose: .login, at: at(1)) == nil)
        #expect(try fixture.store.challengeCount() == 2)
    }

    @Test(
        "the audit purge deletes events older than the cutoff, keeps younger ones and always the newest",
        arguments: StoreKind.tested)
    func auditRetention(kind: StoreKind) throws {
        let fixture = try kind.make()
        var ids: [Int64] = []
        for second in [1.0, 2, 3, 10, 11] {
            ids.append(
                try fixture.store.appendAudit(
                    AuditEvent(at: at(second), action: .sessionLogout, actor: .user("u1"), userID: "u1")))
        }
        #expect(try fixture.store.purgeAuditEvents(before: at(5)) == 3)
        #expect(try fixture.store.allAuditEvents(userID: "u1").map(\.id) == Array(ids.suffix(2)))
        #expect(try fixture.store.purgeAuditEvents(before: at(5)) == 0)

        // Everything old: all but the newest goes, and the next event's id is still higher.
        #expect(try fixture.store.purgeAuditEvents(before: at(100)) == 1)
        #expect(try fixture.store.allAuditEvents(userID: "u1").map(\.id) == [ids[4]])
        let next = try fixture.store.appendAudit(
            AuditEvent(at: at(200), action: .sessionLogout, actor: .user("u1"), userID: "u1"))
        #expect(next > ids[4])
    }
}
