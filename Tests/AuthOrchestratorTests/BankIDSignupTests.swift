import AuthOrchestrator
import BankIDCore
import Kernel
import SessionCore
import Storage
import TestSupport
import Testing

@Suite("BankID sign-up journey (no HTTP)")
struct BankIDSignupTests {
    @Test(
        "sign-up creates the account (BankID's name, no username), links the identity and opens a session, in one commit"
    )
    func createsAccount() async throws {
        let fixture = try BankIDJourneyFixture()
        let order = try await fixture.start(.signup)
        try await fixture.identify(order)
        let result = try fixture.result(order)
        #expect(result.code == .accountCreated && result.suggestPasskey)
        let user = try #require(result.user)
        #expect(user.displayName == "Karl Karlsson" && user.username == nil)
        #expect(try fixture.store.user(id: user.id) == user)
        let linked = try fixture.store.linkedIdentity(userID: user.id)
        #expect(
            linked?.digest == (try fixture.digest(BankIDJourneyFixture.karl))
                && linked?.name == "Karl Karlsson")
        let session = try fixture.sessions.authenticate(token: try #require(result.session).token)
        #expect(session.userID == user.id && session.authMethod == .bankid)
        let event = try #require(try fixture.events().last)
        #expect(
            event.action == .bankIDSignup && event.userID == user.id
                && event.details["sessionId"] == session.id)
        #expect(!event.details.values.contains(BankIDJourneyFixture.karl), "no personal number in the audit")
    }

    @Test("a person who has an account is signed in to it, never given a second one")
    func existingSignsIn() async throws {
        let fixture = try BankIDJourneyFixture()
        let user = try await fixture.signedUp()
        let order = try await fixture.start(.signup)
        try await fixture.identify(order)
        let result = try fixture.result(order)
        #expect(result.code == .signedIn && result.user?.id == user.id && result.session != nil)
        #expect(try fixture.store.userCount() == 1)
    }

    @Test(
        "with BankID login off, a person who has an account gets bankid.account_exists, audited signup_existing"
    )
    func existingWithLoginOff() async throws {
        let fixture = try BankIDJourneyFixture(policy: BankIDPolicy(login: false))
        let user = try await fixture.signedUp()
        let sessions = try fixture.sessions.list(userID: user.id).count
        let order = try await fixture.start(.signup)
        try await fixture.identify(order)
        let result = try fixture.result(order)
        #expect(result.code == .accountExists && result.session == nil && result.user == nil)
        #expect(try fixture.store.userCount() == 1)
        #expect(try fixture.sessions.list(userID: user.id).count == sessions)
        #expect(try fixture.actions().last == "bankid.signup_existing")
    }

    @Test("a disabled account's person signing up again is refused by the login rule: account.disabled")
    func existingDisabled() async throws {
        let fixture = try BankIDJourneyFixture()
        let user = try await fixture.signedUp()
        try fixture.disable(user)
        let order = try await fixture.start(.signup)
        try await fixture.identify(order)
        #expect(try fixture.result(order).code == .accountDisabled)
        #expect(try fixture.store.userCount() == 1)
    }

    @Test(
        "an empty name from BankID gives the display name \"BankID user\"; a long one is cut to 128 characters"
    )
    func names() async throws {
        let fixture = try BankIDJourneyFixture()
        let nameless = try await fixture.start(.signup)
        try await fixture.identify(nameless, name: "")
        #expect(try fixture.result(nameless).user?.displayName == "BankID user")
        let long = try await fixture.start(.signup)
        try await fixture.identify(
            long, as: BankIDJourneyFixture.other, name: String(repeating: "å", count: 300))
        let user = try #require(try fixture.result(long).user)
        #expect(try fixture.store.linkedIdentity(userID: user.id)?.name.count == 128)
    }
}
