public import Kernel

/// The rule every way into an account passes, kept here once: an account an administrator has
/// disabled cannot get in, by any method (passkey, BankID, an enrollment or recovery token, a
/// session it already holds, an enrollment link sent to it).
public enum AccountAccess {
    /// Passes an account that may get in.
    /// - Throws: `AuthError(.accountDisabled)` for a disabled one.
    public static func admit(_ user: User) throws(AuthError) {
        guard !user.isDisabled else {
            throw AuthError(.accountDisabled, "the account has been disabled by an administrator")
        }
    }
}
