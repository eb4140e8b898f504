/// What a completed BankID order did, as the API returns it (`result.code`) and the store keeps
/// it on the flow (`bankid_flows.outcome`). The raw values are shipped: they never change.
public enum BankIDOutcome: String, Sendable, Hashable, CaseIterable {
    /// Login (or a sign-up by someone with an account): a session was opened.
    case signedIn = "bankid.signed_in"
    /// No account is linked to the identity (login, recovery): nothing was created.
    case noAccount = "bankid.no_account"
    /// Sign-up: a new account with the identity linked, and a session.
    case accountCreated = "bankid.account_created"
    /// Link: the identity is now the signed-in account's.
    case linked = "bankid.linked"
    /// Link: the identity was this account's already.
    case alreadyLinked = "bankid.already_linked"
    /// Link: the identity belongs to another account; nothing changed.
    case identityLinkedElsewhere = "bankid.identity_linked_elsewhere"
    /// Link: the account has another identity linked; nothing changed.
    case accountHasIdentity = "bankid.account_has_identity"
    /// Step-up: the account's own person signed; the session is stepped up.
    case signed = "bankid.signed"
    /// Step-up: someone other than the account's linked identity signed.
    case identityMismatch = "bankid.identity_mismatch"
    /// BankID's risk assessment was above the policy's ceiling (or missing).
    case riskRefused = "bankid.risk_refused"
    /// Recovery: the account's person identified; a one-time enrollment token was issued.
    case recoveryVerified = "bankid.recovery_verified"
    /// Sign-up by someone who has an account while BankID login is off.
    case accountExists = "bankid.account_exists"
    /// Link or step-up whose account or session is gone by completion.
    case signInRequired = "bankid.sign_in_required"
    /// The order failed at BankID (kept on the flow only; the poll shows the failure).
    case failed = "bankid.failed"
    /// The account is disabled (login, recovery): the account rule (AuthOrchestrator's `AccountAccess.admit`) refused it.
    case accountDisabled = "account.disabled"
    /// Every poll after the one that received the result: what happened, never a session again.
    case resultDelivered = "bankid.result_delivered"
}
