public import FoundationEssentials
public import Kernel
import SessionCore
public import Storage

/// How recent a proof of presence the acts that cannot be undone ask for, and which ways of
/// giving a new one this deployment offers.
public struct ReauthenticationPolicy: Sendable {
    /// How long a proof counts, in seconds (`account.reauthenticationSeconds`, default 300).
    public var window: TimeInterval
    /// Whether passkeys are on here (`methods.passkey.enabled`): a passkey ceremony can then prove
    /// presence for a user who has one.
    public var passkey: Bool
    /// Whether BankID signing is on here (BankID enabled and `methods.bankid.sign`): a signature by
    /// the account's linked identity can then prove presence.
    public var bankIDSign: Bool

    /// Creates a policy with the documented default window.
    public init(window: TimeInterval = 300, passkey: Bool = true, bankIDSign: Bool = false) {
        self.window = window
        self.passkey = passkey
        self.bankIDSign = bankIDSign
    }
}

/// A signed-in request whose session proved presence within the policy's window. Only
/// `RecentAuthentication.require(_:)` makes one, and every use case that cannot be undone or that
/// weakens the account takes one instead of a user id: such an act cannot be written without the
/// check.
public struct RecentlyAuthenticated: Sendable {
    /// The request's account and session.
    public let signedIn: SignedIn

    fileprivate init(_ signedIn: SignedIn) { self.signedIn = signedIn }
}

/// The rule of "sudo mode", kept here once: deleting the account, removing a passkey, unlinking
/// BankID, ending every other session need a proof of presence (the sign-in, a passkey re-authentication, a BankID
/// signature) younger than `ReauthenticationPolicy.window`; without one they are refused with
/// `reauthentication_required` and the ways this user can give one.
public struct RecentAuthentication: Sendable {
    /// The window and the offered ways.
    public let policy: ReauthenticationPolicy
    /// Who has a passkey.
    let passkeys: any PasskeyStore
    /// Who has a linked BankID identity.
    let identities: any BankIDIdentityStore
    let clock: any WallClock

    /// Creates the rule.
    public init(
        policy: ReauthenticationPolicy, passkeys: any PasskeyStore, identities: any BankIDIdentityStore,
        clock: any WallClock
    ) {
        self.policy = policy
        self.passkeys = passkeys
        self.identities = identities
        self.clock = clock
    }

    /// `signedIn` when its session proved presence within the window.
    /// - Throws: `AuthError(.reauthenticationRequired)` with `reauthenticationMethods` otherwise.
    public func require(_ signedIn: SignedIn) throws -> RecentlyAuthenticated {
        // A rotation's new session keeps the presented one's proof; a re-authentication in
        // either counts.
        let proved = max(signedIn.session.authenticatedAt, signedIn.current.authenticatedAt)
        // Strictly inside the window; a proof that reads as slightly in the future (another
        // instance's clock) is recent.
        guard clock.now().timeIntervalSince(proved) < policy.window else {
            var error = AuthError(
                .reauthenticationRequired,
                "this needs a sign-in from the last \(Int(policy.window)) seconds; re-authenticate first")
            error.reauthenticationMethods = try methods(for: signedIn.user)
            throw error
        }
        return RecentlyAuthenticated(signedIn)
    }

    /// How `user` can re-authenticate here: a passkey when passkeys are on and they have one,
    /// BankID when signing is on and their identity is linked. Empty when neither: signing out and
    /// in again is then the way (a new session's sign-in is its proof).
    public func methods(for user: User) throws -> [AuthMethod] {
        var methods: [AuthMethod] = []
        if policy.passkey, try passkeys.passkeyCount(userID: user.id) > 0 { methods.append(.passkey) }
        if policy.bankIDSign, try identities.linkedIdentity(userID: user.id) != nil {
            methods.append(.bankid)
        }
        return methods
    }
}
