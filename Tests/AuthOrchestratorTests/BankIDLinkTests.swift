import AuthOrchestrator
import BankIDCore
import Kernel
import SessionCore
import Storage
import TestSupport
import Testing

@Suite("BankID link journey (no HTTP)")
struct BankIDLinkTests {
    @Test("a signed-in account links its identity (bankid.linked, audited); BankID login then reaches it")
    func links() async throws {
        let fixture = try BankIDJourneyFixture()
        let user = try fixture.makeUser("ada")
        let order = try await fixture.start(.link, as: try fixture.signedIn(user))
        try await fixture.identify(order)
        let result = try fixture.result(order)
        #expect(result.code == .linked && result.user?.id == user.id && result.session == nil)
        #expect(
            try fixture.store.linkedIdentity(userID: user.id)?.digest
                == (try fixture.digest(BankIDJourneyFixture.karl)))
        #expect(try fixture.actions().last == "bankid.linked")

        let login = try await fixture.start(.login)
        try await fixture.identify(login)
        #expect(try fixture.result(login).user?.id == user.id)
    }

    @Test("linking needs a signed-in session: sign_in_required before anything reaches BankID")
    func needsSession() async throws {
        let fixture = try BankIDJourneyFixture()
        #expect(await authErrorCode { _ = try await fixture.start(.link) } == .signInRequired)
        #expect(fixture.bankID.starts.isEmpty)
    }

    @Test(
        "the account's own identity again is bankid.already_linked (audited link_repeated), nothing changes")
    func alreadyLinked() async throws {
        let fixture = try BankIDJourneyFixture()
        let user = try await fixture.signedUp()
        let order = try await fixture.start(.link, as: try fixture.signedIn(user))
        try await fixture.identify(order)
        let result = try fixture.result(order)
        #expect(result.code == .alreadyLinked && result.user?.id == user.id)
        #expect(try fixture.actions().last == "bankid.link_repeated")
    }

    @Test(
        "an identity linked to another account is bankid.identity_linked_elsewhere (audited link_refused); nothing moves"
    )
    func linkedElsewhere() async throws {
        let fixture = try BankIDJourneyFixture()
        let owner = try await fixture.signedUp()
        let other = try fixture.makeUser("eve")
        let order = try await fixture.start(.link, as: try fixture.signedIn(other))
        try await fixture.identify(order)
        #expect(try fixture.result(order).code == .identityLinkedElsewhere)
        #expect(try fixture.store.linkedIdentity(userID: other.id) == nil)
        #expect(try fixture.store.linkedIdentity(userID: owner.id) != nil)
        let event = try #require(try fixture.events().last)
        #expect(event.action == .bankIDLinkRefused && event.userID == other.id)
    }

    @Test(
        "an account with an identity cannot link another: bankid.account_has_identity, audited link_refused")
    func accountHasIdentity() async throws {
        let fixture = try BankIDJourneyFixture()
        let user = try await fixture.signedUp(BankIDJourneyFixture.karl)
        let order = try await fixture.start(.link, as: try fixture.signedIn(user))
        try await fixture.identify(order, as: BankIDJourneyFixture.other)
        #expect(try fixture.result(order).code == .accountHasIdentity)
        #expect(
            try fixture.store.linkedIdentity(userID: user.id)?.digest
                == (try fixture.digest(BankIDJourneyFixture.karl)))
        #expect(
            try fixture.store.linkedIdentity(matching: [try fixture.digest(BankIDJourneyFixture.other)])
                == nil)
        #expect(try fixture.actions().last == "bankid.link_refused")
    }

    @Test(
        "two link orders of one identity for two accounts: the second commit loses at the unique link and is refused"
    )
    func racingLinks() async throws {
        let fixture = try BankIDJourneyFixture()
        let ada = try fixture.makeUser("ada")
        let eve = try fixture.makeUser("eve")
        let first = try await fixture.start(.link, as: try fixture.signedIn(ada))
        let second = try await fixture.start(.link, as: try fixture.signedIn(eve))
        try await fixture.identify(first)
        try await fixture.identify(second)
        #expect(try fixture.result(first).code == .linked)
        #expect(try fixture.result(second).code == .identityLinkedElsewhere)
        #expect(try fixture.store.linkedIdentity(userID: eve.id) == nil)
    }

    @Test("the sandboxed review account cannot start a link; a sandbox check that fails refuses too")
    func sandboxed() async throws {
        let reviewer = User(
            id: "u-reviewer", username: "reviewer", displayName: "Reviewer", createdAt: FixedClock().now())
        let fixture = try BankIDJourneyFixture(sandbox: ListedSandbox(sandboxed: [reviewer.id]))
        try fixture.store.insertUser(reviewer)
        #expect(
            await authErrorCode { _ = try await fixture.start(.link, as: try fixture.signedIn(reviewer)) }
                == .sandboxed)
        let ada = try fixture.makeUser("ada")
        _ = try await fixture.start(.link, as: try fixture.signedIn(ada))

        let broken = try BankIDJourneyFixture(sandbox: ListedSandbox(broken: true))
        let user = try broken.makeUser("ada")
        #expect(
            await authErrorCode { _ = try await broken.start(.link, as: try broken.signedIn(user)) }
                == .bankIDUnavailable)
        #expect(broken.bankID.starts.isEmpty)
    }

    @Test("a link whose account is deleted before completion goes with the account: the order is not found")
    func accountGone() async throws {
        let fixture = try BankIDJourneyFixture()
        let user = try fixture.makeUser("ada")
        let order = try await fixture.start(.link, as: try fixture.signedIn(user))
        #expect(try fixture.store.deleteUser(id: user.id))
        try await fixture.identify(order)
        #expect(await authErrorCode { _ = try fixture.poll(order) } == .orderNotFound)
        #expect(
            try fixture.store.linkedIdentity(matching: [try fixture.digest(BankIDJourneyFixture.karl)]) == nil
        )
    }
}
