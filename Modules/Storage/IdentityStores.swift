public import BankIDCore
public import FoundationEssentials
public import Kernel
public import SessionCore
import Synchronization

/// A BankID identity linked to an account: the person only as a keyed digest, never the number.
public struct LinkedIdentity: Sendable, Equatable {
    /// The account.
    public var userID: String
    /// The keyed HMAC of the personal number, with the id of the key that made it.
    public var digest: IdentityDigest
    /// The name BankID gave when the identity was linked.
    public var name: String
    /// When it was linked.
    public var linkedAt: Date

    /// Creates a link.
    public init(userID: String, digest: IdentityDigest, name: String, linkedAt: Date) {
        self.userID = userID
        self.digest = digest
        self.name = name
        self.linkedAt = linkedAt
    }
}

/// One BankID order as Portvakt's client knows it: our own `orderId` capability (stored only as
/// its SHA-256), the client it is bound to, and BankID's orderRef, which never leaves the server.
public struct BankIDFlow: Sendable, Equatable {
    /// SHA-256 of the order id handed to the client.
    public var idHash: [UInt8]
    /// BankID's reference (the key of `bankid_orders`).
    public var orderRef: String
    /// What the order is for.
    public var intent: BankIDOrderIntent
    /// Whether the client launched the app on its own device (autostart) rather than a QR code.
    public var sameDevice: Bool
    /// Where the session a completion opens goes: a cookie (web) or the body (native).
    public var clientKind: ClientKind
    /// SHA-256 of the client binding (a session, or a binding cookie) the order belongs to.
    public var bindingHash: [UInt8]
    /// The signed-in user who started it (link, sign), if any.
    public var userID: String?
    /// The session it was started from (link, sign), if any.
    public var sessionID: String?
    /// The digest of the nonce in the returnUrl sent to BankID (a web client's same device).
    public var returnNonce: String?
    /// The text the user signs (sign).
    public var userVisibleText: String?
    /// When it was started.
    public var createdAt: Date
    /// When its completion was consumed (at most once).
    public var consumedAt: Date?
    /// The result code the consumption produced.
    public var outcome: String?

    /// Creates a flow.
    public init(
        idHash: [UInt8], orderRef: String, intent: BankIDOrderIntent, sameDevice: Bool,
        clientKind: ClientKind = .web, bindingHash: [UInt8],
        userID: String? = nil, sessionID: String? = nil, returnNonce: String? = nil,
        userVisibleText: String? = nil, createdAt: Date, consumedAt: Date? = nil, outcome: String? = nil
    ) {
        self.idHash = idHash
        self.orderRef = orderRef
        self.intent = intent
        self.sameDevice = sameDevice
        self.clientKind = clientKind
        self.bindingHash = bindingHash
        self.userID = userID
        self.sessionID = sessionID
        self.returnNonce = returnNonce
        self.userVisibleText = userVisibleText
        self.createdAt = createdAt
        self.consumedAt = consumedAt
        self.outcome = outcome
    }
}

/// A completed BankID signature as the session it stepped up knows it (the evidence is a
/// `BankIDSignatureEvidence`).
public struct SessionStepUp: Sendable, Equatable {
    /// The session.
    public var sessionID: String
    /// When the signature completed.
    public var signedAt: Date
    /// Until when the session counts as stepped up.
    public var validUntil: Date
    /// The text the user signed.
    public var userVisibleText: String

    /// Creates a step-up record.
    public init(sessionID: String, signedAt: Date, validUntil: Date, userVisibleText: String) {
        self.sessionID = sessionID
        self.signedAt = signedAt
        self.validUntil = validUntil
        self.userVisibleText = userVisibleText
    }
}

/// Everything one BankID completion changes, committed at once by
/// ``BankIDIdentityStore/commitBankIDCompletion(_:)``.
public struct BankIDCompletionRecord: Sendable {
    /// The flow whose completion is consumed.
    public var flowIDHash: [UInt8]
    /// The result code kept on the flow.
    public var outcome: String
    /// When.
    public var at: Date
    /// A new account (sign-up), inserted before the link and the session.
    public var newUser: User?
    /// An identity to link (sign-up, link).
    public var link: LinkedIdentity?
    /// A new session (login, sign-up).
    public var session: Session?
    /// The session the client came with, revoked once the new one exists.
    public var replacedSessionID: String?
    /// A signature to keep with its session (sign).
    public var stepUp: SessionStepUp?
    /// The signature's evidence (sign).
    public var evidence: BankIDSignatureEvidence?
    /// The audit events.
    public var events: [AuditEvent]
    /// The webhook events about the new account and the link.
    public var outbox: [OutboxEntry] = []
    /// The webhook events about the replaced session's end, made from its owner's id (it may be
    /// another account's session than the one signing in) and enqueued only when this commit did
    /// end it; nil when nobody subscribes. Called inside the write, so it must only build values.
    public var replacedSessionOutbox: (@Sendable (_ ownerID: String) -> [OutboxEntry])?

    /// Creates a record.
    public init(
        flowIDHash: [UInt8], outcome: String, at: Date, newUser: User? = nil, link: LinkedIdentity? = nil,
        session: Session? = nil, replacedSessionID: String? = nil, stepUp: SessionStepUp? = nil,
        evidence: BankIDSignatureEvidence? = nil, events: [AuditEvent] = []
    ) {
        self.flowIDHash = flowIDHash
        self.outcome = outcome
        self.at = at
        self.newUser = newUser
        self.link = link
        self.session = session
        self.replacedSessionID = replacedSessionID
        self.stepUp = stepUp
        self.evidence = evidence
        self.events = events
    }
}

/// Linked BankID identities, the client side of BankID orders, and step-ups. Each method is
/// atomic on its own.
public protocol BankIDIdentityStore: Sendable {
    /// The identity linked to the user; nil when none.
    func linkedIdentity(userID: String) throws -> LinkedIdentity?
    /// The identity stored under any of `digests` (the same number under each configured key); nil when none.
    func linkedIdentity(matching digests: [IdentityDigest]) throws -> LinkedIdentity?
    /// Moves a user's linked identity to its digest under the current key (after a key rotation),
    /// keeping its name and link time. Nothing happens when the user has no linked identity.
    /// - Throws: `StorageError(.conflict)` when another user holds that digest.
    func rekeyLinkedIdentity(userID: String, to digest: IdentityDigest) throws
    /// Removes the user's linked identity and writes `record` with it, in one transaction; false
    /// (and nothing written) when the user had none.
    func unlinkIdentity(userID: String, record: ChangeRecord) throws -> Bool
    /// Stores a new order's flow.
    /// - Throws: `StorageError(.conflict)` when the id hash or orderRef exists.
    func insertBankIDFlow(_ flow: BankIDFlow) throws
    /// The flow with this id hash; nil when none.
    func bankIDFlow(idHash: [UInt8]) throws -> BankIDFlow?
    /// Consumes the flow's completion and applies the record in one transaction: false (and no
    /// change) when it was consumed already, so of any number of racing polls exactly one commits.
    /// - Throws: `StorageError(.conflict)` when the identity is linked to another account, or the
    ///   user already has one; nothing changes then.
    func commitBankIDCompletion(_ record: BankIDCompletionRecord) throws -> Bool
    /// The session's step-up; nil when none.
    func stepUp(sessionID: String) throws -> SessionStepUp?
    /// The user's signature evidence, newest first.
    func bankIDSignatures(userID: String) throws -> [BankIDSignatureEvidence]
    /// The evidence with this id; nil when none.
    func bankIDSignature(id: String) throws -> BankIDSignatureEvidence?
    /// Deletes flows created before `cutoff`; returns how many.
    func purgeBankIDFlows(createdBefore cutoff: Date) throws -> Int
}

// MARK: SQLite

extension SQLStore: BankIDIdentityStore {

    fileprivate static func identity(_ row: any SQLRow) throws -> LinkedIdentity {
        LinkedIdentity(
            userID: try row.string(0),
            digest: IdentityDigest(keyID: try row.string(1), value: try row.blob(2)),
            name: try row.string(3), linkedAt: try row.date(4))
    }

    fileprivate static func flow(_ row: any SQLRow) throws -> BankIDFlow {
        guard let intent = BankIDOrderIntent(rawValue: try row.string(2)),
            let clientKind = ClientKind(rawValue: try row.string(12))
        else { throw StorageError(.corrupt, "a BankID flow has an unknown intent or client kind") }
        return BankIDFlow(
            idHash: try row.blob(0), orderRef: try row.string(1), intent: intent, sameDevice: try row.bool(3),
            clientKind: clientKind, bindingHash: try row.blob(4), userID: try row.optionalString(5),
            sessionID: try row.optionalString(6),
            returnNonce: try row.optionalString(7), userVisibleText: try row.optionalString(8),
            createdAt: try row.date(9), consumedAt: try row.optionalDate(10),
            outcome: try row.optionalString(11))
    }

    public func linkedIdentity(userID: String) throws -> LinkedIdentity? {
        try engine.read { connection in
            try connection.queryFirst(
                "SELECT \(StoreSQL.identityColumns) FROM bankid_identities WHERE user_id = ?1", [userID],
                Self.identity)
        }
    }

    public func linkedIdentity(matching digests: [IdentityDigest]) throws -> LinkedIdentity? {
        try engine.read { connection in
            for digest in digests {
                if let found = try connection.queryFirst(
                    "SELECT \(StoreSQL.identityColumns) FROM bankid_identities WHERE key_id = ?1 AND digest = ?2",
                    [digest.keyID, digest.value], Self.identity)
                {
                    return found
                }
            }
            return nil
        }
    }

    public func rekeyLinkedIdentity(userID: String, to digest: IdentityDigest) throws {
        try engine.write { connection in
            try connection.execute(
                "UPDATE bankid_identities SET key_id = ?2, digest = ?3 WHERE user_id = ?1",
                [userID, digest.keyID, digest.value])
        }
    }

    public func unlinkIdentity(userID: String, record: ChangeRecord) throws -> Bool {
        try write(recording: { $0 ? record : .none }) { connection in
            try connection.execute("DELETE FROM bankid_identities WHERE user_id = ?1", [userID]) > 0
        }
    }

    public func insertBankIDFlow(_ flow: BankIDFlow) throws {
        try engine.write { connection in
            try connection.execute(
                """
                INSERT INTO bankid_flows (\(StoreSQL.flowColumns))
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
                """,
                [
                    flow.idHash, flow.orderRef, flow.intent.rawValue, flow.sameDevice, flow.bindingHash,
                    flow.userID, flow.sessionID, flow.returnNonce, flow.userVisibleText, flow.createdAt,
                    flow.consumedAt, flow.outcome, flow.clientKind.rawValue,
                ])
        }
    }

    public func bankIDFlow(idHash: [UInt8]) throws -> BankIDFlow? {
        try engine.read { connection in
            try connection.queryFirst(
                "SELECT \(StoreSQL.flowColumns) FROM bankid_flows WHERE id_hash = ?1", [idHash], Self.flow)
        }
    }

    public func commitBankIDCompletion(_ record: BankIDCompletionRecord) throws -> Bool {
        let details = record.events.map { AuditDetails.encode($0.details) }
        return try engine.write { connection in
            // The conditional UPDATE is the once-only gate: a second poll finds consumed_at set.
            let changed = try connection.execute(
                """
                UPDATE bankid_flows SET consumed_at = ?2, outcome = ?3
                WHERE id_hash = ?1 AND consumed_at IS NULL
                """, [record.flowIDHash, record.at, record.outcome])
            guard changed > 0 else { return false }
            if let user = record.newUser { try Self.insert(user, on: connection) }
            if let link = record.link {
                try connection.execute(
                    "INSERT INTO bankid_identities (\(StoreSQL.identityColumns)) VALUES (?1, ?2, ?3, ?4, ?5)",
                    [link.userID, link.digest.keyID, link.digest.value, link.name, link.linkedAt])
            }
            if let session = record.session { try Self.insert(session, on: connection) }
            if let replaced = record.replacedSessionID {
                try Self.endReplacedSession(
                    replaced, at: record.at, outbox: record.replacedSessionOutbox, on: connection)
            }
            if let stepUp = record.stepUp {
                // A newer signature replaces the session's previous one.
                try connection.execute(
                    """
                    INSERT INTO session_step_ups (session_id, signed_at, valid_until, user_visible_text)
                    VALUES (?1, ?2, ?3, ?4)
                    ON CONFLICT (session_id) DO UPDATE SET signed_at = excluded.signed_at,
                      valid_until = excluded.valid_until, user_visible_text = excluded.user_visible_text
                    """,
                    [stepUp.sessionID, stepUp.signedAt, stepUp.validUntil, stepUp.userVisibleText])
                // A signature by the account's own BankID identity proves its user is present.
                if let userID = record.evidence?.userID {
                    _ = try Self.recordAuthentication(
                        sessionIDs: [stepUp.sessionID], userID: userID, at: stepUp.signedAt, on: connection)
                }
            }
            if let evidence = record.evidence {
                try connection.execute(
                    "INSERT INTO bankid_signatures (\(StoreSQL.signatureColumns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                    [
                        evidence.id, evidence.userID, evidence.sessionID, evidence.signedAt,
                        evidence.userVisibleText, evidence.signatureSHA256, evidence.signature,
                        evidence.ocspResponse, evidence.bankIDIssueDate, evidence.mrtd, evidence.risk,
                    ])
            }
            for (event, encoded) in zip(record.events, details) {
                try Self.insert(event, details: encoded, on: connection)
            }
            if !record.outbox.isEmpty { try Self.enqueue(record.outbox, on: connection) }
            return true
        }
    }

    public func stepUp(sessionID: String) throws -> SessionStepUp? {
        try engine.read { connection in
            try connection.queryFirst(
                """
                SELECT session_id, signed_at, valid_until, user_visible_text
                FROM session_step_ups WHERE session_id = ?1
                """, [sessionID]
            ) { row in
                SessionStepUp(
                    sessionID: try row.string(0), signedAt: try row.date(1), validUntil: try row.date(2),
                    userVisibleText: try row.string(3))
            }
        }
    }

    public func bankIDSignatures(userID: String) throws -> [BankIDSignatureEvidence] {
        try engine.read { connection in
            try connection.query(
                """
                SELECT \(StoreSQL.signatureColumns) FROM bankid_signatures WHERE user_id = ?1
                ORDER BY signed_at DESC, id
                """, [userID], Self.evidence)
        }
    }

    public func bankIDSignature(id: String) throws -> BankIDSignatureEvidence? {
        try engine.read { connection in
            try connection.queryFirst(
                "SELECT \(StoreSQL.signatureColumns) FROM bankid_signatures WHERE id = ?1", [id],
                Self.evidence)
        }
    }

    fileprivate static func evidence(_ row: any SQLRow) throws -> BankIDSignatureEvidence {
        BankIDSignatureEvidence(
            id: try row.string(0), userID: try row.string(1), sessionID: try row.string(2),
            signedAt: try row.date(3), userVisibleText: try row.string(4), signatureSHA256: try row.blob(5),
            signature: try row.optionalString(6), ocspResponse: try row.optionalString(7),
            bankIDIssueDate: try row.optionalString(8), mrtd: row.isNull(9) ? nil : try row.bool(9),
            risk: try row.optionalString(10))
    }

    public func purgeBankIDFlows(createdBefore cutoff: Date) throws -> Int {
        try engine.write { connection in
            let changed = try connection.execute("DELETE FROM bankid_flows WHERE created_at < ?1", [cutoff])
            return changed
        }
    }
}

/// The column lists and statements the stores above share.
extension StoreSQL {
    fileprivate static let identityColumns = "user_id, key_id, digest, name, linked_at"

    fileprivate static let signatureColumns = """
        id, user_id, session_id, signed_at, user_visible_text, signature_sha256, signature, \
        ocsp_response, bankid_issue_date, mrtd, risk
        """

    fileprivate static let flowColumns = """
        id_hash, order_ref, intent, same_device, binding_hash, user_id, session_id, return_nonce, \
        user_visible_text, created_at, consumed_at, outcome, client_kind
        """
}
