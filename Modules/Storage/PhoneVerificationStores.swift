public import BankIDCore
public import FoundationEssentials
public import Kernel

/// How a phone verification ended, once it has.
public enum BankIDPhoneVerificationOutcome: String, Sendable, CaseIterable {
    /// Completed by the account's linked BankID identity (and the number the caller stated).
    case verified
    /// Completed by someone else, or the account's identity changed meanwhile.
    case notVerified = "not_verified"
    /// BankID ended it without a completion (declined call, timeout, the user cancelled, …).
    case failed
    /// The agent cancelled it.
    case cancelled
    /// Portvakt lost sight of the order before its end was seen (its result was purged).
    case expired
}

/// A support agent's BankID phone order for one account, as stored: never the personal number,
/// never the name or the signature of whoever completed it — only the keyed digest of the number
/// the caller stated, and, once over, whether the completing person was the linked identity.
public struct BankIDPhoneVerification: Sendable, Equatable {
    /// Portvakt's id for it (`bpv_` + 256 random bits), as the admin API shows it.
    public var id: String
    /// BankID's reference (the key of `bankid_orders`); never shown.
    public var orderRef: String
    /// Identification or signature.
    public var kind: BankIDPhoneVerificationKind
    /// The account the caller claims to own.
    public var userID: String
    /// Who called whom.
    public var callInitiator: CallInitiator
    /// The keyed digest of the personal number the caller stated (sent to BankID, not kept).
    public var statedIdentity: IdentityDigest
    /// The name of the admin token that started it.
    public var startedBy: String
    /// That token's id.
    public var startedByTokenID: String
    /// When it was started.
    public var createdAt: Date
    /// When its end was recorded (at most once).
    public var finishedAt: Date?
    /// How it ended.
    public var outcome: BankIDPhoneVerificationOutcome?
    /// BankID's final hint code when it failed (or `cancelled`).
    public var hintCode: String?
    /// Whether a completed signature order carried BankID's signature (the XML is not kept here).
    public var signatureReceived: Bool

    /// Creates a record.
    public init(
        id: String, orderRef: String, kind: BankIDPhoneVerificationKind, userID: String,
        callInitiator: CallInitiator, statedIdentity: IdentityDigest, startedBy: String,
        startedByTokenID: String, createdAt: Date, finishedAt: Date? = nil,
        outcome: BankIDPhoneVerificationOutcome? = nil, hintCode: String? = nil,
        signatureReceived: Bool = false
    ) {
        self.id = id
        self.orderRef = orderRef
        self.kind = kind
        self.userID = userID
        self.callInitiator = callInitiator
        self.statedIdentity = statedIdentity
        self.startedBy = startedBy
        self.startedByTokenID = startedByTokenID
        self.createdAt = createdAt
        self.finishedAt = finishedAt
        self.outcome = outcome
        self.hintCode = hintCode
        self.signatureReceived = signatureReceived
    }
}

/// How one phone verification ended, with its audit events, recorded by
/// ``BankIDPhoneVerificationStore/finishBankIDPhoneVerification(_:)`` at most once.
public struct BankIDPhoneVerificationEnd: Sendable {
    /// The verification.
    public var id: String
    /// How it ended.
    public var outcome: BankIDPhoneVerificationOutcome
    /// BankID's final hint code, if any.
    public var hintCode: String?
    /// Whether a signature came with the completion.
    public var signatureReceived: Bool
    /// When.
    public var at: Date
    /// The audit events, appended in the same transaction.
    public var events: [AuditEvent]

    /// Creates an end record.
    public init(
        id: String, outcome: BankIDPhoneVerificationOutcome, hintCode: String? = nil,
        signatureReceived: Bool = false, at: Date, events: [AuditEvent]
    ) {
        self.id = id
        self.outcome = outcome
        self.hintCode = hintCode
        self.signatureReceived = signatureReceived
        self.at = at
        self.events = events
    }
}

/// The support desk's BankID phone verifications, shared by every instance. Each method is
/// atomic on its own.
public protocol BankIDPhoneVerificationStore: Sendable {
    /// Stores a newly started verification.
    /// - Throws: `StorageError(.conflict)` when the id or orderRef exists, `.constraint` for an
    ///   unknown user.
    func insertBankIDPhoneVerification(_ verification: BankIDPhoneVerification) throws
    /// The verification with this id; nil when none.
    func bankIDPhoneVerification(id: String) throws -> BankIDPhoneVerification?
    /// Records how the verification ended and appends its events, in one transaction, when it has
    /// not ended yet: false (and no change) otherwise, so of racing polls exactly one records it.
    func finishBankIDPhoneVerification(_ end: BankIDPhoneVerificationEnd) throws -> Bool
    /// Deletes verifications created before `cutoff`; returns how many.
    func purgeBankIDPhoneVerifications(createdBefore cutoff: Date) throws -> Int
}

extension SQLStore: BankIDPhoneVerificationStore {
    private static let phoneVerificationColumns = """
        id, order_ref, kind, user_id, call_initiator, stated_key_id, stated_digest, started_by, \
        started_by_token_id, created_at, finished_at, outcome, hint_code, signature_received
        """

    fileprivate static func phoneVerification(_ row: any SQLRow) throws -> BankIDPhoneVerification {
        guard let kind = BankIDPhoneVerificationKind(rawValue: try row.string(2)),
            let initiator = CallInitiator(rawValue: try row.string(4))
        else { throw StorageError(.corrupt, "a phone verification has an unknown kind or call initiator") }
        var outcome: BankIDPhoneVerificationOutcome?
        if let text = try row.optionalString(11) {
            guard let known = BankIDPhoneVerificationOutcome(rawValue: text) else {
                throw StorageError(.corrupt, "a phone verification has an unknown outcome")
            }
            outcome = known
        }
        return BankIDPhoneVerification(
            id: try row.string(0), orderRef: try row.string(1), kind: kind, userID: try row.string(3),
            callInitiator: initiator,
            statedIdentity: IdentityDigest(keyID: try row.string(5), value: try row.blob(6)),
            startedBy: try row.string(7), startedByTokenID: try row.string(8), createdAt: try row.date(9),
            finishedAt: try row.optionalDate(10), outcome: outcome, hintCode: try row.optionalString(12),
            signatureReceived: try row.bool(13))
    }

    public func insertBankIDPhoneVerification(_ verification: BankIDPhoneVerification) throws {
        try engine.write { connection in
            try connection.execute(
                """
                INSERT INTO bankid_phone_verifications (\(Self.phoneVerificationColumns))
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
                """,
                [
                    verification.id, verification.orderRef, verification.kind.rawValue, verification.userID,
                    verification.callInitiator.rawValue, verification.statedIdentity.keyID,
                    verification.statedIdentity.value, verification.startedBy, verification.startedByTokenID,
                    verification.createdAt, verification.finishedAt, verification.outcome?.rawValue,
                    verification.hintCode, verification.signatureReceived,
                ])
        }
    }

    public func bankIDPhoneVerification(id: String) throws -> BankIDPhoneVerification? {
        try engine.read { connection in
            try connection.queryFirst(
                "SELECT \(Self.phoneVerificationColumns) FROM bankid_phone_verifications WHERE id = ?1", [id],
                Self.phoneVerification)
        }
    }

    public func finishBankIDPhoneVerification(_ end: BankIDPhoneVerificationEnd) throws -> Bool {
        // JSON is encoded before the transaction: on PostgreSQL its body may run more than once.
        let details = end.events.map { AuditDetails.encode($0.details) }
        return try engine.write { connection in
            // The conditional UPDATE is the once-only gate: a second poll finds finished_at set.
            let changed = try connection.execute(
                """
                UPDATE bankid_phone_verifications
                SET finished_at = ?2, outcome = ?3, hint_code = ?4, signature_received = ?5
                WHERE id = ?1 AND finished_at IS NULL
                """, [end.id, end.at, end.outcome.rawValue, end.hintCode, end.signatureReceived])
            guard changed > 0 else { return false }
            for (event, encoded) in zip(end.events, details) {
                try Self.insert(event, details: encoded, on: connection)
            }
            return true
        }
    }

    public func bankIDPhoneVerifications(userID: String) throws -> [BankIDPhoneVerification] {
        try engine.read { connection in
            try connection.query(
                """
                SELECT \(Self.phoneVerificationColumns) FROM bankid_phone_verifications WHERE user_id = ?1
                ORDER BY created_at, id
                """, [userID], Self.phoneVerification)
        }
    }

    public func purgeBankIDPhoneVerifications(createdBefore cutoff: Date) throws -> Int {
        try engine.write { connection in
            try connection.execute("DELETE FROM bankid_phone_verifications WHERE created_at < ?1", [cutoff])
        }
    }
}
