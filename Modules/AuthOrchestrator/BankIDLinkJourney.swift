import BankIDCore
import Kernel
import Storage

/// Tells whether an account is sandboxed, and so may never take on a real person's identity
/// (the app-store review account). Declared here, by its one consumer; `ReviewLoginService`
/// is the implementation.
public protocol BankIDSandbox: Sendable {
    /// Whether `userID` is a sandboxed account.
    /// - Throws: when that cannot be told; the link is then refused.
    func isSandboxed(userID: String) throws -> Bool
}

extension ReviewLoginService: BankIDSandbox {
    /// Whether `userID` is the review account, the one sandboxed account.
    public func isSandboxed(userID: String) throws -> Bool { try isReviewAccount(userID: userID) }
}

/// Linking BankID to the signed-in account, so BankID becomes a way into it.
///
/// Rules: only a signed-in session may start one, and never the sandboxed review account
/// (`review.sandboxed`; a sandbox check that fails refuses too). At completion, the identity
/// linked to this account already is `bankid.already_linked` (audited `bankid.link_repeated`);
/// linked to another account, `bankid.identity_linked_elsewhere`; an account with another
/// identity, `bankid.account_has_identity` (both audited `bankid.link_refused`, nothing changes);
/// otherwise `bankid.linked` (audited `bankid.linked`).
struct BankIDLinkJourney: BankIDJourney {
    let accounts: any UserStore
    let identities: any BankIDIdentityStore
    /// The accounts that may not link; nil when there are none.
    let sandbox: (any BankIDSandbox)?
    let ledger: BankIDLedger

    func admit(_ requester: BankIDRequester, userVisibleText: String?) throws(AuthError) -> String? {
        guard let (_, user) = requester.signedIn else {
            throw AuthError(.signInRequired, "linking and signing need a signed-in session")
        }
        if let sandbox {
            let sandboxed: Bool
            do {
                sandboxed = try sandbox.isSandboxed(userID: user.id)
            } catch {
                // Fail closed: an account that cannot be cleared may be the sandbox.
                throw AuthError(
                    .bankIDUnavailable, "whether the account may link could not be checked",
                    userMessage: .rfa22,
                    underlying: error)
            }
            guard !sandboxed else {
                throw AuthError(.sandboxed, "the review account cannot be linked to a BankID identity")
            }
        }
        try refuseText(userVisibleText)
        return nil
    }

    func complete(_ order: BankIDCompletedOrder) throws -> BankIDFlowResult {
        var order = order
        let clientKind = order.flow.clientKind
        // The account or its session may be gone by now (deleted, signed out elsewhere).
        guard let userID = order.flow.userID, let user = try accounts.user(id: userID) else {
            return try ledger.commit(.unchanged(.signInRequired, clientKind: clientKind), for: order)
        }
        if let linked = order.linked {
            let mine = linked.userID == userID
            order.record(mine ? .bankIDLinkRepeated : .bankIDLinkRefused, userID: userID)
            return try ledger.commit(
                .unchanged(
                    mine ? .alreadyLinked : .identityLinkedElsewhere, user: user, clientKind: clientKind),
                for: order)
        }
        if try identities.linkedIdentity(userID: userID) != nil {
            order.record(.bankIDLinkRefused, userID: userID)
            return try ledger.commit(
                .unchanged(.accountHasIdentity, user: user, clientKind: clientKind), for: order)
        }
        var refused = order
        order.record(.bankIDLinked, userID: userID)
        do {
            return try ledger.commit(
                .linked(user, clientKind: clientKind), for: order,
                link: LinkedIdentity(
                    userID: userID, digest: order.completion.identity,
                    name: String(order.completion.name.prefix(BankIDSignupJourney.maximumNameLength)),
                    linkedAt: order.now))
        } catch let error as StorageError where error.code == .conflict {
            // Linked between the check and the commit (this identity elsewhere, or another one
            // here): refused, and nothing changes.
            refused.record(.bankIDLinkRefused, userID: userID)
            return try ledger.commit(
                .unchanged(.identityLinkedElsewhere, user: user, clientKind: clientKind), for: refused)
        }
    }
}
