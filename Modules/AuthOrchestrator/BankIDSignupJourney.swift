import BankIDCore
import CryptoCore
import Kernel
import SessionCore
import Storage

/// BankID-first sign-up: one transaction creates the account (display name from BankID, no
/// username), links the identity and opens the first session.
///
/// Rules: a person whose identity is linked already is signed in to that account through the
/// login journey (`bankid.signed_in`, with its disabled-account rule) when logins are on, and
/// gets `bankid.account_exists` (audited `bankid.signup_existing`) when they are off — never a
/// second account. Otherwise `bankid.account_created` (audited `bankid.signup`).
struct BankIDSignupJourney: BankIDJourney {
    let accounts: any UserStore
    let sessions: SessionService
    let random: any RandomSource
    let ledger: BankIDLedger
    /// The login journey, for a person who has an account already.
    let login: BankIDLoginJourney
    /// Whether BankID login is on.
    let loginAllowed: Bool

    /// The longest display name taken from BankID, in characters.
    static let maximumNameLength = 128

    func complete(_ order: BankIDCompletedOrder) throws -> BankIDFlowResult {
        var order = order
        if let linked = order.linked, let user = try accounts.user(id: linked.userID) {
            guard loginAllowed else {
                order.record(.bankIDSignupExisting, userID: user.id)
                return try ledger.commit(
                    .unchanged(.accountExists, clientKind: order.flow.clientKind), for: order)
            }
            return try login.signIn(user, order)
        }
        let name = String(order.completion.name.prefix(Self.maximumNameLength))
        let user = User(
            id: try random.secureToken(16), username: nil, displayName: name.isEmpty ? "BankID user" : name,
            createdAt: order.now, userHandle: try random.secureBytes(User.handleByteCount))
        let issued = try order.prepareSession(for: user, with: sessions)
        order.record(.bankIDSignup, userID: user.id, adding: ["sessionId": issued.session.id])
        // Another sign-up order of the same person, completed meanwhile, makes this commit fail
        // at the unique link (a storage error): nothing is applied twice.
        return try ledger.commit(
            .accountCreated(
                user, session: issued, clientKind: order.flow.clientKind,
                suggestPasskey: login.suggestsPasskey),
            for: order,
            newUser: user,
            link: LinkedIdentity(
                userID: user.id, digest: order.completion.identity, name: name, linkedAt: order.now),
            session: issued.session)
    }
}
