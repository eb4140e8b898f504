import AuthOrchestrator
import BankIDCore
import CryptoCore
import Foundation
import Kernel
import Storage
import TestSupport
import Testing

/// The last-passkey guard counts a linked BankID identity as a way in.
@Suite("Last passkey guard with BankID")
struct LastPasskeyGuardTests {
    /// Links a BankID identity to `userID` through a consumed link flow, as the BankID service does.
    static func link(_ userID: String, in identities: any BankIDIdentityStore, at now: Date) throws {
        let flow = BankIDFlow(
            idHash: Digest.sha256("order-\(userID)"), orderRef: "ref-\(userID)", intent: .link,
            sameDevice: false,
            bindingHash: Digest.sha256("binding"), userID: userID, createdAt: now)
        try identities.insertBankIDFlow(flow)
        let linked = try identities.commitBankIDCompletion(
            BankIDCompletionRecord(
                flowIDHash: flow.idHash, outcome: "bankid.linked", at: now,
                link: LinkedIdentity(
                    userID: userID,
                    digest: IdentityDigest(keyID: "k1", value: Array(repeating: 7, count: 32)),
                    name: "Ada", linkedAt: now)))
        #expect(linked)
    }

    @Test("with a linked identity the last passkey may go (audited); without one it still may not")
    func linkedIdentityCounts() throws {
        let f = try ServiceFixture(bankIDLogin: true)
        let service = f.service
        let identities = f.store
        let (ada, adaKey) = try f.signUp("ada")
        let (bob, bobKey) = try f.signUp("bob")
        try Self.link(ada.user.id, in: identities, at: f.clock.now())

        try service.deletePasskey(
            f.recentlyAuthenticated(ada), credentialID: Base64URL.encode(adaKey.id), context: ClientContext())
        #expect(try f.store.passkeyCount(userID: ada.user.id) == 0)
        let event = try f.store.auditEvents(userID: ada.user.id, beforeID: nil, limit: 5).first
        #expect(event?.action.rawValue == "passkey.deleted" && event?.details["bankidLinked"] == "true")

        #expect(throws: AuthError(.lastPasskey, "")) {
            try service.deletePasskey(
                f.recentlyAuthenticated(bob), credentialID: Base64URL.encode(bobKey.id),
                context: ClientContext())
        }
        // Someone else's passkey is still not found, linked or not.
        #expect(throws: AuthError(.passkeyNotFound, "")) {
            try service.deletePasskey(
                f.recentlyAuthenticated(ada), credentialID: Base64URL.encode(bobKey.id),
                context: ClientContext())
        }
    }

    @Test("with BankID login off a linked identity is no way in: the last passkey still may not go")
    func linkedIdentityNeedsBankIDLogin() throws {
        let f = try ServiceFixture(bankIDLogin: false)
        let (ada, adaKey) = try f.signUp("ada")
        try Self.link(ada.user.id, in: f.store, at: f.clock.now())
        #expect(throws: AuthError(.lastPasskey, "")) {
            try f.service.deletePasskey(
                f.recentlyAuthenticated(ada), credentialID: Base64URL.encode(adaKey.id),
                context: ClientContext())
        }
        #expect(try f.store.passkeyCount(userID: ada.user.id) == 1)
    }
}

/// The administrators' search: a twelve-digit search is a personal number, found by its keyed
/// digest, never matched as text (the rule used to sit in the admin handler).
@Suite("AccountAdministration: searching by personal number")
struct PersonalNumberSearchTests {
    @Test("a personal-number search finds the linked account by digest; text search never matches the number")
    func search() throws {
        let f = try ServiceFixture()
        let (ada, _) = try f.signUp("ada")
        _ = try f.signUp("198112289874")  // a username that is the number's text
        let hasher = try IdentityHasher(
            currentKeyID: "k1", keys: [try IdentityKey(id: "k1", secret: Array(repeating: 9, count: 32))])
        let number = try PersonalNumber("198112289874")
        let flow = BankIDFlow(
            idHash: Digest.sha256("order-ada"), orderRef: "ref-ada", intent: .link, sameDevice: false,
            bindingHash: Digest.sha256("binding"), userID: ada.user.id, createdAt: f.clock.now())
        try f.store.insertBankIDFlow(flow)
        #expect(
            try f.store.commitBankIDCompletion(
                BankIDCompletionRecord(
                    flowIDHash: flow.idHash, outcome: "bankid.linked", at: f.clock.now(),
                    link: LinkedIdentity(
                        userID: ada.user.id, digest: hasher.digest(number), name: "Ada",
                        linkedAt: f.clock.now()))))
        let administration = AccountAdministration(
            store: f.store, clock: f.clock, random: SeededRandom(seed: "search"),
            identities: IdentityDirectory(store: f.store, hasher: hasher))
        let found = try administration.listUsers(search: "198112289874", cursor: nil, limit: nil)
        #expect(found.items.map(\.id) == [ada.user.id] && found.nextCursor == nil)
        // Without BankID there is no identity to find, and the number is still not matched as text.
        let withoutBankID = AccountAdministration(store: f.store, clock: f.clock, random: SeededRandom())
        #expect(try withoutBankID.listUsers(search: "198112289874", cursor: nil, limit: nil).items.isEmpty)
        #expect(
            try administration.listUsers(search: "ada", cursor: nil, limit: nil).items.map(\.id) == [
                ada.user.id
            ])
    }
}
