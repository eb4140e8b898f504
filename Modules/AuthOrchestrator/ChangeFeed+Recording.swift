import FoundationEssentials
import Kernel
import Storage

/// How the use cases hand their records to the stores.
extension ChangeFeed {
    /// Runs `call`, a store call whose record is made inside its transaction from what the change
    /// did (the sessions a disable revoked, what a recovery removed), with `make` as that record,
    /// then wakes delivery for what the committed record enqueued.
    func recording<Outcome, Result>(
        _ call: (ChangeRecording<Outcome>) throws -> Result, _ make: (Outcome) -> ChangeRecord
    ) throws -> Result {
        var outbox: [OutboxEntry] = []
        // `make` runs only while `call` does (inside its transaction).
        let result = try withoutActuallyEscaping(make) { make in
            try call { outcome in
                let record = make(outcome)
                // The last attempt's: PostgreSQL may run a transaction's body more than once.
                outbox = record.outbox
                return record
            }
        }
        committed(outbox)
        return result
    }

    /// The outbox entries for the end of the session a sign-in replaced, made inside the sign-in's
    /// commit from the session's owner (the request may have come with another account's
    /// session); nil when there is no such session or nobody subscribes to `session.revoked`, so
    /// the commit stays as it was. The dispatcher's next poll (within a second) finds them.
    func replacedSessionOutbox(_ sessionID: String?, at now: Date) -> (@Sendable (String) -> [OutboxEntry])? {
        guard let sessionID, wants(.sessionRevoked) else { return nil }
        return { owner in
            self.entries([.sessionRevoked(userID: owner, sessionID: sessionID, reason: .replaced, at: now)])
        }
    }
}
