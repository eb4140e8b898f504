import AuthOrchestrator
import BankIDCore
import Kernel
import SessionCore
import Storage
import TestSupport
import Testing

@Suite("BankID login journey (no HTTP)")
struct BankIDLoginTests {
    @Test(
        "a linked identity signs in: a BankID session for its account, the passkey advice, bankid.login audited"
    )
    func signsIn() async throws {
        let fixture = try BankIDJourneyFixture()
        let user = try await fixture.signedUp()
        let order = try await fixture.start(.login)
        try await fixture.identify(order)
        let result = try fixture.result(order)
        #expect(result.code == .signedIn && result.user?.id == user.id && result.suggestPasskey)
        let issued = try #require(result.session)
        let session = try fixture.sessions.authenticate(token: issued.token)
        #expect(session.userID == user.id && session.authMethod == .bankid)
        let event = try #require(try fixture.events().last)
        #expect(event.action == .bankIDLogin && event.details["sessionId"] == session.id)
        #expect(event.details["intent"] == "login" && event.details["device"] == "other")
    }

    @Test("without passkeyAfterBankID neither a login nor a sign-up offers a passkey")
    func noPasskeyOffer() async throws {
        let fixture = try BankIDJourneyFixture(policy: BankIDPolicy(passkeyAfterBankID: false))
        let signup = try await fixture.start(.signup)
        try await fixture.identify(signup)
        let created = try fixture.result(signup)
        #expect(created.code == .accountCreated && !created.suggestPasskey)
        let login = try await fixture.start(.login)
        try await fixture.identify(login)
        let signedIn = try fixture.result(login)
        #expect(signedIn.code == .signedIn && !signedIn.suggestPasskey)
        #expect(fixture.service.policy.idSwitchingFeatures == [.link, .recovery, .supportPhoneCheck])
    }

    @Test("signing in from a session revokes that session once the new one exists")
    func replacesSession() async throws {
        let fixture = try BankIDJourneyFixture()
        let user = try await fixture.signedUp()
        let signedIn = try fixture.signedIn(user)
        let order = try await fixture.start(.login, as: signedIn)
        try await fixture.identify(order)
        #expect(try fixture.result(order).code == .signedIn)
        let live = try fixture.sessions.list(userID: user.id).map(\.id)
        #expect(!live.contains(try #require(signedIn.session).id))
    }

    @Test(
        "no account has the identity: bankid.no_account, nothing created, sign-up offered only when it is on")
    func noAccount() async throws {
        for signup in [true, false] {
            let fixture = try BankIDJourneyFixture(policy: BankIDPolicy(signup: signup))
            let order = try await fixture.start(.login)
            try await fixture.identify(order)
            let result = try fixture.result(order)
            #expect(result.code == .noAccount && result.user == nil && result.session == nil)
            #expect(result.signupAvailable == signup)
            #expect(try fixture.store.userCount() == 0)
            #expect(try fixture.actions().last == "bankid.login_no_account")
        }
    }

    @Test(
        "a disabled account is refused through AccountAccess.admit: account.disabled, no session, login_failed audited"
    )
    func disabledAccount() async throws {
        let fixture = try BankIDJourneyFixture()
        let user = try await fixture.signedUp()
        try fixture.disable(user)
        let before = try fixture.sessions.list(userID: user.id).count
        let order = try await fixture.start(.login)
        try await fixture.identify(order)
        let result = try fixture.result(order)
        #expect(result.code == .accountDisabled && result.session == nil && result.user == nil)
        #expect(try fixture.sessions.list(userID: user.id).count == before)
        let event = try #require(try fixture.events().last)
        #expect(event.action == .bankIDLoginFailed && event.details["code"] == "account.disabled")
    }

    @Test("same device: a completion from another address than the start is audited with both addresses")
    func addressMismatch() async throws {
        let fixture = try BankIDJourneyFixture()
        _ = try await fixture.signedUp()
        let order = try await fixture.start(.login, device: .same, client: .native)
        try await fixture.identify(order, ip: "198.51.100.4")
        #expect(try fixture.result(order).code == .signedIn)
        let mismatch = try #require(try fixture.events().first { $0.action == .bankIDIPMismatch })
        #expect(
            mismatch.details["endUserIp"] == "192.0.2.10" && mismatch.details["deviceIp"] == "198.51.100.4")
    }

    @Test("a login with a risk above the ceiling opens no session")
    func riskRefused() async throws {
        let fixture = try BankIDJourneyFixture(policy: BankIDPolicy(returnRisk: true, riskCeiling: .moderate))
        let user = try await fixture.signedUpWithRisk()
        let before = try fixture.sessions.list(userID: user.id).count
        let order = try await fixture.start(.login)
        try await fixture.identify(order, risk: "high")
        #expect(try fixture.result(order).code == .riskRefused)
        #expect(try fixture.sessions.list(userID: user.id).count == before)
    }
}

extension BankIDJourneyFixture {
    /// A sign-up under a risk ceiling: the person identifies at low risk.
    func signedUpWithRisk() async throws -> User {
        let order = try await start(.signup)
        try await identify(order, risk: "low")
        return try #require(try result(order).user)
    }
}
