import BankIDCore
import CryptoCore
import Foundation
import Kernel
import SessionCore
import Storage
import Synchronization
import TestSupport
import Testing

/// The BankID identity store (links, flows, the once-only completion, step-ups), identical for
/// SQLite on a real file and PostgreSQL.
@Suite("Identity store")
struct IdentityStoreTests {

    static func digest(_ byte: UInt8, key: String = "k1") -> IdentityDigest {
        IdentityDigest(keyID: key, value: Array(repeating: byte, count: 32))
    }

    static func flow(_ byte: UInt8, ref: String? = nil, intent: BankIDOrderIntent = .login) -> BankIDFlow {
        BankIDFlow(
            idHash: Digest.sha256("order-\(byte)"), orderRef: ref ?? "ref-\(byte)", intent: intent,
            sameDevice: byte % 2 == 0, clientKind: byte % 3 == 0 ? .native : .web,
            bindingHash: Digest.sha256("binding-\(byte)"), returnNonce: "nonce",
            userVisibleText: intent == .sign ? "Pay 10 kr" : nil, createdAt: at(1))
    }

    @Test(
        "a flow reads back by its id hash with every field; a repeated id or orderRef conflicts",
        arguments: StoreKind.tested)
    func flowRoundTrip(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        var flow = Self.flow(2, intent: .sign)
        flow.userID = "u1"
        flow.sessionID = "s1"
        try fixture.store.insertBankIDFlow(flow)
        #expect(try fixture.store.bankIDFlow(idHash: flow.idHash) == flow)
        #expect(try fixture.store.bankIDFlow(idHash: Digest.sha256("other")) == nil)
        #expect(throws: StorageError(.conflict, "")) { try fixture.store.insertBankIDFlow(flow) }
        #expect(throws: StorageError(.conflict, "")) {
            try fixture.store.insertBankIDFlow(Self.flow(3, ref: "ref-2"))
        }
    }

    @Test(
        "sign-up commits the account, its identity, a session and the audit at once, exactly once",
        arguments: StoreKind.tested)
    func signupOnce(kind: StoreKind) throws {
        let fixture = try kind.make()
        let flow = Self.flow(1, intent: .signup)
        try fixture.store.insertBankIDFlow(flow)
        let user = makeUser("u1")
        let record = BankIDCompletionRecord(
            flowIDHash: flow.idHash, outcome: "bankid.account_created", at: at(5), newUser: user,
            link: LinkedIdentity(userID: "u1", digest: Self.digest(7), name: "Tolvan", linkedAt: at(5)),
            session: makeSession("s1", userID: "u1"),
            events: [AuditEvent(at: at(5), action: .bankIDSignup, actor: .user("u1"), userID: "u1")])
        #expect(try fixture.store.commitBankIDCompletion(record))
        #expect(try fixture.store.user(id: "u1") != nil)
        #expect(try fixture.store.session(id: "s1") != nil)
        #expect(try fixture.store.linkedIdentity(userID: "u1")?.name == "Tolvan")
        #expect(
            try fixture.store.linkedIdentity(matching: [Self.digest(7, key: "k0"), Self.digest(7)])?
                .userID
                == "u1")
        #expect(try fixture.store.linkedIdentity(matching: [Self.digest(8)]) == nil)
        let consumed = try #require(try fixture.store.bankIDFlow(idHash: flow.idHash))
        #expect(consumed.consumedAt == at(5) && consumed.outcome == "bankid.account_created")
        #expect(try fixture.store.auditEvents(userID: "u1", beforeID: nil, limit: 10).count == 1)

        // A second commit of the same completion changes nothing.
        var again = record
        again.session = makeSession("s2", userID: "u1")
        again.newUser = nil
        again.link = nil
        #expect(try !fixture.store.commitBankIDCompletion(again))
        #expect(try fixture.store.session(id: "s2") == nil)
    }

    @Test(
        "an identity is unique across users: linking it elsewhere conflicts and consumes nothing",
        arguments: StoreKind.tested)
    func identityUnique(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertUser(makeUser("u2"))
        let first = Self.flow(1, intent: .link)
        let second = Self.flow(3, intent: .link)
        try fixture.store.insertBankIDFlow(first)
        try fixture.store.insertBankIDFlow(second)
        #expect(
            try fixture.store.commitBankIDCompletion(
                BankIDCompletionRecord(
                    flowIDHash: first.idHash, outcome: "bankid.linked", at: at(2),
                    link: LinkedIdentity(userID: "u1", digest: Self.digest(9), name: "A", linkedAt: at(2)))))
        #expect(throws: StorageError(.conflict, "")) {
            try fixture.store.commitBankIDCompletion(
                BankIDCompletionRecord(
                    flowIDHash: second.idHash, outcome: "bankid.linked", at: at(3),
                    link: LinkedIdentity(userID: "u2", digest: Self.digest(9), name: "B", linkedAt: at(3))))
        }
        #expect(try fixture.store.linkedIdentity(userID: "u2") == nil)
        #expect(try fixture.store.bankIDFlow(idHash: second.idHash)?.consumedAt == nil)
    }

    @Test(
        "of 16 threads racing to consume one completion, exactly one commits a session",
        arguments: StoreKind.tested)
    func racingConsumers(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        let flow = Self.flow(4)
        try fixture.store.insertBankIDFlow(flow)
        let wins = Atomic<Int>(0)
        let identities = fixture.store
        onThreads(16) { index in
            let record = BankIDCompletionRecord(
                flowIDHash: flow.idHash, outcome: "bankid.signed_in", at: at(2),
                session: makeSession("s\(index)", userID: "u1"))
            if (try? identities.commitBankIDCompletion(record)) == true { wins.add(1, ordering: .relaxed) }
        }
        #expect(wins.load(ordering: .relaxed) == 1)
        #expect(try fixture.store.sessions(userID: "u1", liveAt: at(3)).count == 1)
    }

    @Test(
        "a signature steps its session up (a newer one replaces it) and keeps its evidence; flows purge by age",
        arguments: StoreKind.tested)
    func stepUpsAndPurge(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        try fixture.store.insertUser(makeUser("u2"))
        try fixture.store.insertSession(makeSession("s1", userID: "u1"))
        for (byte, text) in [(UInt8(6), "first"), (UInt8(8), "second")] {
            let flow = Self.flow(byte, intent: .sign)
            try fixture.store.insertBankIDFlow(flow)
            let stepUp = SessionStepUp(
                sessionID: "s1", signedAt: at(Double(byte)), validUntil: at(Double(byte) + 600),
                userVisibleText: text)
            // The first keeps the signature, the second only its digest and no optional facts.
            let evidence = BankIDSignatureEvidence(
                id: "e\(byte)", userID: "u1", sessionID: "s1", signedAt: at(Double(byte)),
                userVisibleText: text,
                signatureSHA256: [UInt8](repeating: byte, count: 32), signature: byte == 6 ? "PD94bWw+" : nil,
                ocspResponse: byte == 6 ? "MII=" : nil, bankIDIssueDate: byte == 6 ? "2020-02-01" : nil,
                mrtd: byte == 6 ? true : nil, risk: byte == 6 ? "low" : nil)
            #expect(
                try fixture.store.commitBankIDCompletion(
                    BankIDCompletionRecord(
                        flowIDHash: flow.idHash, outcome: "bankid.signed", at: at(Double(byte)),
                        stepUp: stepUp, evidence: evidence)))
        }
        let kept = try #require(try fixture.store.stepUp(sessionID: "s1"))
        #expect(kept.userVisibleText == "second" && kept.validUntil == at(608))
        // Both signatures' evidence stays, newest first, exactly as written.
        let evidence = try fixture.store.bankIDSignatures(userID: "u1")
        #expect(evidence.map(\.id) == ["e8", "e6"])
        let first = try #require(try fixture.store.bankIDSignature(id: "e6"))
        #expect(first.signature == "PD94bWw+" && first.ocspResponse == "MII=" && first.mrtd == true)
        #expect(first.bankIDIssueDate == "2020-02-01" && first.risk == "low" && first.signedAt == at(6))
        #expect(first.signatureSHA256 == [UInt8](repeating: 6, count: 32) && first.userVisibleText == "first")
        let second = try #require(try fixture.store.bankIDSignature(id: "e8"))
        #expect(second.signature == nil && second.mrtd == nil && second.risk == nil)
        #expect(try fixture.store.bankIDSignatures(userID: "u2").isEmpty)
        #expect(try fixture.store.bankIDSignature(id: "nope") == nil)
        // The evidence outlives the session, not the account.
        #expect(try fixture.store.purgeSessions(endedBefore: at(90_000)) == 1)
        #expect(try fixture.store.bankIDSignatures(userID: "u1").count == 2)
        #expect(try fixture.store.deleteUser(id: "u1"))
        #expect(try fixture.store.bankIDSignature(id: "e6") == nil)
        #expect(try fixture.store.purgeBankIDFlows(createdBefore: at(1)) == 0)
        #expect(try fixture.store.purgeBankIDFlows(createdBefore: at(2)) == 2)
        #expect(try fixture.store.bankIDFlow(idHash: Self.flow(6).idHash) == nil)
    }
}
