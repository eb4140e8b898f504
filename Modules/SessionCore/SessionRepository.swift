public import FoundationEssentials

/// The persistence SessionCore needs; Storage's `SQLStore` provides it on SQLite and PostgreSQL.
/// Every method is atomic on its own. Ending a session is not here: it is a user's or an
/// administrator's act and is audited in the same write, so it goes through Storage's
/// `SessionAccessStore.revokeSessions(ofUser:ids:except:at:record:)`, which AuthOrchestrator calls.
public protocol SessionRepository: Sendable {
    /// Stores a new session.
    func insertSession(_ session: Session) throws
    /// The session whose token hashes to `tokenHash`, revoked or not; nil when none.
    func session(tokenHash: [UInt8]) throws -> Session?
    /// The session with this public id; nil when none.
    func session(id: String) throws -> Session?
    /// Records activity.
    func touchSession(id: String, at: Date) throws
    /// The user's sessions that are neither revoked nor past `now`'s absolute expiry, newest first.
    func sessions(userID: String, liveAt now: Date) throws -> [Session]
    /// Revokes `oldID` and stores `replacement` in one transaction (token rotation).
    func rotateSession(oldID: String, replacement: Session, at: Date) throws
    /// Rotation with a grace: in one transaction, brings `oldID`'s expiry forward to
    /// `oldExpiresAt` and stores `replacement`, only when `oldID` is unrevoked and still expires
    /// after `oldExpiresAt` (so a session is rotated once, however many requests race); false,
    /// with nothing changed, when it is not.
    func rotateSession(oldID: String, replacement: Session, oldExpiresAt: Date) throws -> Bool
    /// Deletes sessions that ended (expired or revoked) before `cutoff`; returns how many.
    func purgeSessions(endedBefore cutoff: Date) throws -> Int
}
