import Kernel
import SessionCore
import Storage

/// BankID login, the fallback when no passkey is at hand: the identity's linked account gets a
/// session (method `bankid`), replacing the one the client came with.
///
/// Rules: no linked account is `bankid.no_account` (nothing is created; the result says whether
/// a sign-up order is available); an account `AccountAccess.admit` refuses is `account.disabled`
/// (audited `bankid.login_failed`); otherwise `bankid.signed_in` (audited `bankid.login`), with
/// the advice to add a passkey on this device where the policy allows one after BankID.
struct BankIDLoginJourney: BankIDJourney {
    let accounts: any UserStore
    let sessions: SessionService
    let ledger: BankIDLedger
    /// Whether BankID sign-up is on, for the client to offer it after `bankid.no_account`.
    let signupAvailable: Bool
    /// Whether the result offers a passkey (`BankIDPolicy.passkeyAfterBankID`).
    let suggestsPasskey: Bool

    func complete(_ order: BankIDCompletedOrder) throws -> BankIDFlowResult {
        var order = order
        guard let linked = order.linked, let user = try accounts.user(id: linked.userID) else {
            order.record(.bankIDLoginNoAccount, userID: nil)
            return try ledger.commit(
                .noAccount(signupAvailable: signupAvailable, clientKind: order.flow.clientKind), for: order)
        }
        return try signIn(user, order)
    }

    /// Opens a BankID session for `user` when the account may get in. Sign-up uses it too: a
    /// person who already has an account is signed in to it, never given a second one.
    func signIn(_ user: User, _ order: BankIDCompletedOrder) throws -> BankIDFlowResult {
        var order = order
        do {
            try AccountAccess.admit(user)
        } catch {
            // A refusal this journey has no outcome for fails the request instead.
            guard error.code == .accountDisabled else { throw error }
            order.record(.bankIDLoginFailed, userID: user.id, adding: ["code": error.code.rawValue])
            return try ledger.commit(
                .unchanged(.accountDisabled, clientKind: order.flow.clientKind), for: order)
        }
        let issued = try order.prepareSession(for: user, with: sessions)
        order.record(.bankIDLogin, userID: user.id, adding: ["sessionId": issued.session.id])
        return try ledger.commit(
            .signedIn(
                user, session: issued, clientKind: order.flow.clientKind, suggestPasskey: suggestsPasskey),
            for: order,
            session: issued.session, replacing: order.flow.sessionID)
    }
}
