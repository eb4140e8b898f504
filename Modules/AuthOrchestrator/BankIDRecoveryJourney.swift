import BankIDCore
public import Kernel
import Storage

/// Issues the one-time enrollment token a verified recovery hands out. Declared here, by its one
/// consumer; `EnrollmentService` is the implementation.
public protocol BankIDRecoveryTokenIssuer: Sendable {
    /// A short-lived, single-use enrollment token for `userID`, good only for the client bound
    /// by `bindingHash` (the order's); audited by the issuer.
    func issueRecoveryToken(userID: String, bindingHash: [UInt8], context: ClientContext) throws -> String
}

extension EnrollmentService: BankIDRecoveryTokenIssuer {}

/// Recovery after losing every device: the person proves who they are with BankID, and their
/// account gets a one-time, short-lived enrollment token for a new passkey, handed only to the
/// client bound to this order. What the new passkey revokes (other sessions, older passkeys) is
/// the recovery policy's, applied when the token is used (`EnrollmentService`).
///
/// Rules: refused as `bankid.intent_not_supported` without a token issuer. At completion, no
/// linked account is `bankid.no_account` (audited `bankid.recovery_no_account`, no token); an
/// account `AccountAccess.admit` refuses is `account.disabled` (audited `bankid.recovery_failed`);
/// otherwise `bankid.recovery_verified` with the token (audited `bankid.recovery_verified`).
struct BankIDRecoveryJourney: BankIDJourney {
    let accounts: any UserStore
    /// Nil when recovery is not wired: its orders are refused.
    let tokens: (any BankIDRecoveryTokenIssuer)?
    let ledger: BankIDLedger
    /// Whether BankID sign-up is on, for the client to offer it after `bankid.no_account`.
    let signupAvailable: Bool

    func admit(_ requester: BankIDRequester, userVisibleText: String?) throws(AuthError) -> String? {
        guard tokens != nil else {
            throw AuthError(.intentNotSupported, "BankID recovery is not available here")
        }
        try refuseText(userVisibleText)
        return nil
    }

    func complete(_ order: BankIDCompletedOrder) throws -> BankIDFlowResult {
        var order = order
        let clientKind = order.flow.clientKind
        guard let linked = order.linked, let user = try accounts.user(id: linked.userID), let tokens else {
            order.record(.bankIDRecoveryNoAccount, userID: nil)
            return try ledger.commit(
                .noAccount(signupAvailable: signupAvailable, clientKind: clientKind), for: order)
        }
        do {
            try AccountAccess.admit(user)
        } catch {
            // A refusal this journey has no outcome for fails the request instead.
            guard error.code == .accountDisabled else { throw error }
            order.record(.bankIDRecoveryFailed, userID: user.id, adding: ["code": error.code.rawValue])
            return try ledger.commit(.unchanged(.accountDisabled, clientKind: clientKind), for: order)
        }
        // Issued before the commit: if another poll consumed the completion meanwhile, this token
        // is never delivered and simply expires unused.
        let token = try tokens.issueRecoveryToken(
            userID: user.id, bindingHash: order.flow.bindingHash, context: order.context)
        order.record(.bankIDRecoveryVerified, userID: user.id)
        return try ledger.commit(
            .recoveryVerified(user, enrollmentToken: token, clientKind: clientKind), for: order)
    }
}
