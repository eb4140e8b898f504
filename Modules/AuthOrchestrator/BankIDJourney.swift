import BankIDCore
import FoundationEssentials
import Kernel
import SessionCore
import Storage

/// One BankID journey (login, sign-up, link, step-up, recovery): what its start demands and what
/// its completion does. `BankIDService` runs the orders (start, status, cancel, the binding, the
/// returnUrl nonce, the risk ceiling, error translation) and hands each completion to the
/// journey of the order's intent, once; each journey's rules live in its own file.
protocol BankIDJourney: Sendable {
    /// The endpoint its orders start at: /auth, or /sign for a signature.
    var orderKind: BankIDOrderKind { get }
    /// Whether the policy's risk ceiling applies to its completions.
    var checksRisk: Bool { get }
    /// Refuses a start the journey does not allow (sign-in needed, a sandboxed account, a text
    /// where none belongs), before anything is sent to BankID.
    /// - Returns: the text the user is asked to sign; nil for journeys that show none.
    func admit(_ requester: BankIDRequester, userVisibleText: String?) throws(AuthError) -> String?
    /// What the completed order does, committed once through the ledger.
    /// - Returns: the result for the poll that consumed the completion, `result_delivered` for
    ///   any poll that lost the race to it.
    /// - Throws: `AuthError`, or the storage error that stopped the commit (nothing is applied).
    func complete(_ order: BankIDCompletedOrder) throws -> BankIDFlowResult
}

extension BankIDJourney {
    var orderKind: BankIDOrderKind { .auth }
    var checksRisk: Bool { true }

    func admit(_ requester: BankIDRequester, userVisibleText: String?) throws(AuthError) -> String? {
        try refuseText(userVisibleText)
        return nil
    }

    /// Refuses a text for an identification: only a signature shows one.
    func refuseText(_ userVisibleText: String?) throws(AuthError) {
        guard userVisibleText == nil else {
            throw AuthError(.bankIDInvalidRequest, "userVisibleData: only a sign order shows a text")
        }
    }
}

/// A completed order as its journey receives it: the flow, BankID's result, the identity's
/// linked account (found under every configured key), and the audit events due so far.
struct BankIDCompletedOrder: Sendable {
    /// The client's side of the order.
    let flow: BankIDFlow
    /// BankID's result: the person only as a keyed digest.
    let completion: BankIDCompletion
    /// The account the identity is linked to, if any.
    let linked: LinkedIdentity?
    /// Intent, device and risk: what every event of this completion says.
    let details: [String: String]
    /// The poll's request id and client address.
    let context: ClientContext
    /// When the completion is applied.
    let now: Date
    /// Events committed with whatever the journey decides (an address mismatch, its own).
    private(set) var events: [AuditEvent] = []

    init(
        flow: BankIDFlow, completion: BankIDCompletion, linked: LinkedIdentity?, details: [String: String],
        context: ClientContext, now: Date
    ) {
        self.flow = flow
        self.completion = completion
        self.linked = linked
        self.details = details
        self.context = context
        self.now = now
    }

    /// Adds an event about `userID` with the order's details and `extra` ones.
    mutating func record(_ action: AuditAction, userID: String?, adding extra: [String: String] = [:]) {
        record(action, userID: userID, details: details.merging(extra) { $1 })
    }

    /// Adds an event about `userID` with exactly `details`.
    mutating func record(_ action: AuditAction, userID: String?, details: [String: String]) {
        events.append(AuditEvent(action, userID: userID, context: context, details: details, at: now))
    }
}

/// The completion commit every journey ends with: one transaction consumes the flow (at most
/// once, whatever races it) and applies what the journey decided, its audit events and the
/// webhook events about it (a new account, a linked identity, a replaced session) included.
struct BankIDLedger: Sendable {
    let identities: any BankIDIdentityStore
    /// Where the webhook events go.
    let feed: ChangeFeed

    /// Consumes `order`'s completion as `result`, applying the changes given.
    /// - Returns: `result` when this poll consumed it; `result_delivered` when another poll had.
    /// - Throws: the storage error (`.conflict` when the link collides); nothing is applied then.
    func commit(
        _ result: BankIDFlowResult, for order: BankIDCompletedOrder, newUser: User? = nil,
        link: LinkedIdentity? = nil, session: Session? = nil, replacing replacedSessionID: String? = nil,
        stepUp: SessionStepUp? = nil, evidence: BankIDSignatureEvidence? = nil
    ) throws -> BankIDFlowResult {
        var record = BankIDCompletionRecord(
            flowIDHash: order.flow.idHash, outcome: result.code.rawValue, at: order.now, newUser: newUser,
            link: link, session: session, replacedSessionID: replacedSessionID, stepUp: stepUp,
            evidence: evidence, events: order.events)
        var changes: [ChangeEvent] = []
        if let newUser { changes.append(.userCreated(userID: newUser.id, method: .bankid, at: order.now)) }
        if let link { changes.append(.bankIDLinked(userID: link.userID, at: order.now)) }
        record.outbox = feed.entries(changes)
        record.replacedSessionOutbox = feed.replacedSessionOutbox(replacedSessionID, at: order.now)
        guard try identities.commitBankIDCompletion(record) else {
            return .delivered(clientKind: order.flow.clientKind)
        }
        // The replaced session's events were made inside the commit; the dispatcher's next poll
        // (within a second) finds them.
        feed.committed(record.outbox)
        return result
    }
}

extension BankIDCompletedOrder {
    /// A BankID session for `user` on the order's client, prepared and not stored: it exists only
    /// if the commit that consumes the completion stores it.
    func prepareSession(for user: User, with sessions: SessionService) throws -> IssuedSession {
        try sessions.prepare(
            userID: user.id, clientKind: flow.clientKind, authMethod: .bankid, userAgent: context.userAgent,
            ipAddress: context.ipAddress)
    }
}
