public import FoundationEssentials
public import Kernel
public import SessionCore

/// Sessions together with the accounts they belong to, for the check every signed-in request
/// makes (`AccountSessionService.signedIn`: `/v1/me`, forward auth, introspection and the rest).
///
/// A protocol of its own (rather than a method on `SessionRepository`, which SessionCore owns and
/// which knows no accounts) because only a store that holds both can read them in one statement.
public protocol SessionAccessStore: UserStore, SessionRepository {
    /// The session whose token hashes to `tokenHash`, revoked or not, together with the user it
    /// belongs to, read in one statement (one snapshot): the signed-in hot path. Nil when there is
    /// no such session. A session always has its user: deleting a user deletes their sessions.
    func sessionWithOwner(tokenHash: [UInt8]) throws -> (session: Session, owner: User)?

    /// Revokes sessions of `userID` and writes the record `recording` makes of the ids it
    /// revoked, in one transaction: the sessions in `ids` when given (whatever their expiry),
    /// otherwise every live one (not revoked, not past its absolute expiry at `at`) except
    /// `exceptID`. A session of another user is never touched, and one already revoked is not
    /// revoked again, so the record names only what this call ended (`recording` sees an empty
    /// list when it ended none, and may record nothing then).
    /// - Returns: the ids of the sessions this call revoked.
    func revokeSessions(
        ofUser userID: String, ids: [String]?, except exceptID: String?, at: Date,
        record: ChangeRecording<[String]>
    ) throws -> [String]
}
