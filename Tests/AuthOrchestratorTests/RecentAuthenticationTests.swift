import AuthOrchestrator
import Foundation
import Kernel
import SessionCore
import Storage
import TestSupport
import Testing

/// The rule of "sudo mode" without HTTP: the window, and the ways to re-authenticate it offers.
@Suite("RecentAuthentication: the window and the offered methods")
struct RecentAuthenticationTests {
    private func rule(_ f: ServiceFixture, passkey: Bool = true, bankIDSign: Bool = false)
        -> RecentAuthentication
    {
        RecentAuthentication(
            policy: ReauthenticationPolicy(window: 300, passkey: passkey, bankIDSign: bankIDSign),
            passkeys: f.store,
            identities: f.store, clock: f.clock)
    }

    /// The methods a refusal names, or nil when the rule let the request through.
    private func refusal(_ rule: RecentAuthentication, _ signedIn: SignedIn) -> [AuthMethod]? {
        do {
            _ = try rule.require(signedIn)
            return nil
        } catch let error as AuthError {
            #expect(error.code == .reauthenticationRequired)
            return error.reauthenticationMethods
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    @Test("the sign-in counts for the window, not at its end; the methods follow the user and the deployment")
    func windowAndMethods() throws {
        let f = try ServiceFixture()
        let (ada, _) = try f.signUp("ada")
        let signedIn = SignedIn(session: try #require(ada.session).session, user: ada.user)
        f.clock.advance(by: 299.999)
        #expect(refusal(rule(f), signedIn) == nil)
        f.clock.advance(by: 0.001)
        #expect(refusal(rule(f), signedIn) == [.passkey])
        #expect(refusal(rule(f, passkey: false), signedIn) == [], "nothing to offer: sign in again")
        // BankID only once an identity is linked.
        #expect(refusal(rule(f, bankIDSign: true), signedIn) == [.passkey])
        try LastPasskeyGuardTests.link(ada.user.id, in: f.store, at: f.clock.now())
        #expect(refusal(rule(f, bankIDSign: true), signedIn) == [.passkey, .bankid])
        #expect(refusal(rule(f, passkey: false, bankIDSign: true), signedIn) == [.bankid])
    }
}
