import AuthOrchestrator
import BankIDCore
import Kernel
import SessionCore
import Storage
import TestSupport
import Testing

@Suite("BankID recovery journey (no HTTP)")
struct BankIDRecoveryTests {
    @Test(
        "a linked identity recovers: bankid.recovery_verified with a one-time enrollment token bound to this client"
    )
    func recovers() async throws {
        let fixture = try BankIDJourneyFixture()
        let user = try await fixture.signedUp()
        let order = try await fixture.start(.recovery)
        try await fixture.identify(order)
        let result = try fixture.result(order)
        #expect(result.code == .recoveryVerified && result.user?.id == user.id && result.session == nil)
        let token = try #require(result.enrollmentToken)
        #expect(try fixture.actions().suffix(2) == ["enrollment.issued", "bankid.recovery_verified"])

        // Only the client the order was bound to may use the token.
        let stranger = BankIDRequester(binding: String(repeating: "B", count: 43))
        #expect(
            await authErrorCode {
                _ = try fixture.enrollment.startRegistration(token: token, client: stranger)
            } == .enrollmentInvalid)
        _ = try fixture.enrollment.startRegistration(token: token, client: order.requester)

        // Delivered once: a second poll never sees the token again.
        let again = try fixture.result(order)
        #expect(again.code == .resultDelivered && again.enrollmentToken == nil)
    }

    @Test("no account has the identity: bankid.no_account, no token, audited recovery_no_account")
    func noAccount() async throws {
        let fixture = try BankIDJourneyFixture()
        let order = try await fixture.start(.recovery)
        try await fixture.identify(order)
        let result = try fixture.result(order)
        #expect(result.code == .noAccount && result.enrollmentToken == nil && result.user == nil)
        #expect(try fixture.actions().last == "bankid.recovery_no_account")
        #expect(!(try fixture.actions()).contains("enrollment.issued"))
    }

    @Test(
        "a disabled account is refused through AccountAccess.admit: account.disabled, no token, recovery_failed audited"
    )
    func disabledAccount() async throws {
        let fixture = try BankIDJourneyFixture()
        let user = try await fixture.signedUp()
        try fixture.disable(user)
        let order = try await fixture.start(.recovery)
        try await fixture.identify(order)
        let result = try fixture.result(order)
        #expect(result.code == .accountDisabled && result.enrollmentToken == nil)
        let event = try #require(try fixture.events().last)
        #expect(event.action == .bankIDRecoveryFailed && event.details["code"] == "account.disabled")
        #expect(!(try fixture.actions()).contains("enrollment.issued"))
    }

    @Test("without a token issuer, recovery orders are refused as bankid.intent_not_supported")
    func notWired() async throws {
        let fixture = try BankIDJourneyFixture(recoveryWired: false)
        #expect(await authErrorCode { _ = try await fixture.start(.recovery) } == .intentNotSupported)
        #expect(fixture.bankID.starts.isEmpty)
    }
}
