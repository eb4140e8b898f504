import BankIDCore
import Foundation
import Kernel
import Storage
import Synchronization
import TestSupport
import Testing

/// The support desk's BankID phone verifications: identical for SQLite on a real file and
/// PostgreSQL.
@Suite("Phone verification store")
struct PhoneVerificationStoreTests {
    static func verification(_ id: String, ref: String? = nil, kind: BankIDPhoneVerificationKind = .auth)
        -> BankIDPhoneVerification
    {
        BankIDPhoneVerification(
            id: id, orderRef: ref ?? "ref-" + id, kind: kind, userID: "u1", callInitiator: .rp,
            statedIdentity: IdentityDigest(keyID: "k1", value: Array(repeating: 7, count: 32)),
            startedBy: "support", startedByTokenID: "adt_1", createdAt: at(1))
    }

    static func event(_ action: AuditAction, _ id: String) -> AuditEvent {
        AuditEvent(
            at: at(5), action: action, actor: .admin(tokenName: "support"), userID: "u1",
            details: ["verificationId": id])
    }

    @Test(
        "a verification reads back with every field; a repeated id or orderRef conflicts; an unknown user is refused",
        arguments: StoreKind.tested)
    func roundTrip(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        let verification = Self.verification("bpv_1", kind: .sign)
        try fixture.store.insertBankIDPhoneVerification(verification)
        #expect(try fixture.store.bankIDPhoneVerification(id: "bpv_1") == verification)
        #expect(try fixture.store.bankIDPhoneVerification(id: "bpv_2") == nil)
        #expect(throws: StorageError(.conflict, "")) {
            try fixture.store.insertBankIDPhoneVerification(verification)
        }
        #expect(throws: StorageError(.conflict, "")) {
            try fixture.store.insertBankIDPhoneVerification(Self.verification("bpv_2", ref: "ref-bpv_1"))
        }
        var stranger = Self.verification("bpv_3")
        stranger.userID = "nobody"
        #expect(throws: StorageError.self) { try fixture.store.insertBankIDPhoneVerification(stranger) }
    }

    @Test(
        "the end is recorded once with its audit event, however many racing polls; the user's deletion takes it along",
        arguments: StoreKind.tested)
    func finishOnce(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertBankIDPhoneVerification(Self.verification("bpv_1", kind: .sign))
        let wins = Atomic<Int>(0)
        let store = fixture.store
        onThreads(8) { index in
            let end = BankIDPhoneVerificationEnd(
                id: "bpv_1", outcome: index % 2 == 0 ? .verified : .notVerified, signatureReceived: true,
                at: at(5),
                events: [
                    Self.event(
                        index % 2 == 0 ? .adminBankIDPhoneVerified : .adminBankIDPhoneNotVerified, "bpv_1")
                ])
            if (try? store.finishBankIDPhoneVerification(end)) == true { wins.add(1, ordering: .relaxed) }
        }
        #expect(wins.load(ordering: .relaxed) == 1)
        let stored = try #require(try fixture.store.bankIDPhoneVerification(id: "bpv_1"))
        #expect(stored.finishedAt == at(5) && stored.signatureReceived)
        #expect(stored.outcome == .verified || stored.outcome == .notVerified)
        let events = try fixture.store.auditEvents(userID: "u1", beforeID: nil, limit: 20)
        #expect(events.count == 1)
        #expect(events.first?.details["verificationId"] == "bpv_1")
        #expect(
            events.first?.action
                == (stored.outcome == .verified ? .adminBankIDPhoneVerified : .adminBankIDPhoneNotVerified))

        try fixture.store.insertBankIDPhoneVerification(Self.verification("bpv_2"))
        #expect(
            try fixture.store.finishBankIDPhoneVerification(
                BankIDPhoneVerificationEnd(
                    id: "bpv_2", outcome: .failed, hintCode: "userDeclinedCall", at: at(6),
                    events: [Self.event(.adminBankIDPhoneFailed, "bpv_2")])))
        #expect(try fixture.store.bankIDPhoneVerification(id: "bpv_2")?.hintCode == "userDeclinedCall")
        #expect(try fixture.store.deleteUser(id: "u1"))
        #expect(try fixture.store.bankIDPhoneVerification(id: "bpv_1") == nil)
    }

    @Test("verifications older than the cutoff are purged", arguments: StoreKind.tested)
    func purge(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertBankIDPhoneVerification(Self.verification("bpv_1"))
        var later = Self.verification("bpv_2")
        later.createdAt = at(100)
        try fixture.store.insertBankIDPhoneVerification(later)
        #expect(try fixture.store.purgeBankIDPhoneVerifications(createdBefore: at(50)) == 1)
        #expect(try fixture.store.bankIDPhoneVerification(id: "bpv_1") == nil)
        #expect(try fixture.store.bankIDPhoneVerification(id: "bpv_2") != nil)
    }
}
