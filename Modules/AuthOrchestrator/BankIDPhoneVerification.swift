public import BankIDCore
import CryptoCore
public import FoundationEssentials
public import Kernel
public import Storage

/// Why a phone verification ended without a completion, as the support agent is told.
public enum BankIDPhoneFailureReason: String, Sendable, CaseIterable, Codable {
    /// The user declined the call in the BankID app (userDeclinedCall).
    case declinedCall = "declined_call"
    /// Nobody answered before BankID gave the order up (expiredTransaction).
    case timedOut = "timed_out"
    /// The user cancelled in the BankID app (userCancel).
    case userCancelled = "user_cancelled"
    /// The order was cancelled: by the agent, or by BankID because another order started for the
    /// person.
    case cancelled
    /// BankID refused it (certificateErr, startFailed, notSupportedByUserApp,
    /// transactionRiskBlocked, or a code this release does not know).
    case refused
    /// Portvakt no longer had the order's result when the end was looked for.
    case expired

    /// The reason for BankID's final hint code.
    static func forHint(_ hint: String?) -> Self {
        switch hint {
        case "userDeclinedCall": .declinedCall
        case "expiredTransaction": .timedOut
        case "userCancel": .userCancelled
        case "cancelled": .cancelled
        default: .refused
        }
    }
}

/// Where a phone verification stands, as the admin API shows it: never a personal number, a
/// name or a signature of whoever completed it.
public struct BankIDPhoneVerificationStatus: Sendable, Equatable {
    /// Portvakt's id for it.
    public var id: String
    /// Identification or signature.
    public var kind: BankIDPhoneVerificationKind
    /// The account.
    public var userID: String
    /// Who called whom.
    public var callInitiator: CallInitiator
    /// pending, complete, failed or cancelled.
    public var status: BankIDOrderStatus
    /// True only when it completed and the completing person is the account's linked identity
    /// (and the person whose number the caller stated).
    public var verified: Bool
    /// BankID's last hint code.
    public var hintCode: String?
    /// BankID's recommended message for the hint (pending and failed), to read to the caller.
    public var message: RecommendedMessage?
    /// Why it failed (failed and cancelled only).
    public var reason: BankIDPhoneFailureReason?
    /// Signatures: whether BankID's signature came with the completion (kept nowhere here).
    public var signatureReceived: Bool?
    /// When it was started.
    public var startedAt: Date
    /// When its end was recorded.
    public var finishedAt: Date?
    /// The admin token that started it.
    public var startedBy: String
}

/// The support desk's identity check by phone: an agent on a call starts a BankID /phone/auth
/// (or /phone/sign, to have a text confirmed) for an account, polls it, and learns only whether
/// the person who completed it is the BankID identity linked to that account.
///
/// Portvakt keeps linked identities only as keyed HMACs of the personal number, which cannot be
/// turned back into the number, and BankID v6 requires `personalNumber` on phone orders. So the
/// agent passes on the number the caller states; it goes to BankID (who calls, or is called by,
/// that person) and is otherwise kept only as its keyed digest. The verification is `verified`
/// only when the completing person's digest equals both the account's linked identity and the
/// stated number's: a caller who states someone else's number, or whose number is not linked to
/// the account, is `not verified`, and the agent is never told who completed it.
///
/// Every step is an audit event with the agent's token (`admin:<name>`) as actor. The state lives
/// in the database (`bankid_phone_verifications` beside `bankid_orders`), so any instance can
/// answer any poll; the end is recorded once, by the poll that sees it.
public struct BankIDPhoneVerificationService: Sendable {
    /// The stores the service runs over.
    public typealias Stores = BankIDPhoneVerificationStore & UserStore & AuditStore

    let coordinator: BankIDCollectCoordinator
    let store: any Stores
    let identities: IdentityDirectory
    let clock: any WallClock
    let random: any RandomSource

    /// The longest text a phone signature may ask the user to confirm, in characters.
    public static let maximumTextLength = BankIDSignJourney.maximumTextLength
    /// How long a verification is kept after it started (its end is in the audit trail for good).
    public static let retention: TimeInterval = 86_400

    /// Creates the service with every collaborator.
    /// - Parameters:
    ///   - coordinator: runs the phone orders at BankID (shared by every instance).
    ///   - identities: the linked identities and the identity keys.
    public init(
        coordinator: BankIDCollectCoordinator, store: any Stores, identities: IdentityDirectory,
        clock: any WallClock, random: any RandomSource
    ) {
        self.coordinator = coordinator
        self.store = store
        self.identities = identities
        self.clock = clock
        self.random = random
    }

    // MARK: Start

    /// Starts a phone order for the account, to the person whose number the caller states.
    /// - Parameters:
    ///   - userID: the account the caller claims.
    ///   - kind: identification or signature.
    ///   - callInitiator: who called whom.
    ///   - personalNumber: the number the caller states (12 digits, valid check digit); sent to
    ///     BankID, never stored, logged or returned.
    ///   - userVisibleText: the text to confirm (signatures only; required there).
    /// - Throws: `AuthError`: `admin.invalid_parameter` (the number), `admin.user_not_found`,
    ///   `admin.bankid_not_linked`, `bankid.invalid_request` (the text),
    ///   `bankid.already_in_progress`, `bankid.unavailable`.
    public func start(
        userID: String, kind: BankIDPhoneVerificationKind, callInitiator: CallInitiator,
        personalNumber: String, userVisibleText: String?, by admin: AdminPrincipal, context: ClientContext
    ) async throws(AuthError) -> BankIDPhoneVerificationStatus {
        let number: PersonalNumber
        do {
            number = try PersonalNumber(personalNumber)
        } catch {
            throw AuthError(.invalidParameter, "personalNumber: expected 12 digits with a valid check digit")
        }
        let text = try Self.text(userVisibleText, kind: kind)
        let linked: LinkedIdentity?
        do {
            guard try store.user(id: userID) != nil else {
                throw AuthError(.userNotFound, "no user has this id")
            }
            linked = try identities.store.linkedIdentity(userID: userID)
        } catch let error as AuthError {
            throw error
        } catch {
            throw Self.storeError(error)
        }
        // Nobody could be verified as the owner: say so before anyone's phone rings.
        guard linked != nil else {
            throw AuthError(.bankIDNotLinked, "the account has no linked BankID identity to verify against")
        }
        // Before BankID is asked: a random source that fails must not leave an order behind.
        let id = "bpv_" + (try random.secureToken(32))
        let request = BankIDPhoneRequest(
            callInitiator: callInitiator, personalNumber: number, userVisibleData: text)
        let started: BankIDStartedOrder
        do {
            started = try await coordinator.startPhone(
                kind == .auth ? .phoneAuth : .phoneSign, request, intent: kind == .auth ? .login : .sign)
        } catch {
            try record(
                .adminBankIDPhoneFailedToStart, userID: userID, by: admin, context: context,
                details: ["kind": kind.rawValue, "code": error.code.rawValue])
            throw BankIDService.flowError(error)
        }
        let verification = BankIDPhoneVerification(
            id: id, orderRef: started.orderRef, kind: kind, userID: userID,
            callInitiator: callInitiator, statedIdentity: identities.hasher.digest(number),
            startedBy: admin.name, startedByTokenID: admin.tokenID, createdAt: clock.now())
        do {
            try store.insertBankIDPhoneVerification(verification)
        } catch {
            // BankID has an order nobody will follow: end it, so the person's app stops asking.
            _ = try? await coordinator.cancel(orderRef: started.orderRef)
            throw Self.storeError(error)
        }
        var details = [
            "verificationId": verification.id, "kind": kind.rawValue, "callInitiator": callInitiator.rawValue,
        ]
        if let text { details["textSha256"] = Hex.encode(Digest.sha256(text)) }
        try record(.adminBankIDPhoneStarted, userID: userID, by: admin, context: context, details: details)
        return Self.pending(verification, hintCode: nil, message: .rfa1)
    }

    // MARK: Status

    /// Where the verification stands, answered without waiting on BankID (a due collect runs in
    /// the background; the next poll sees it). The first poll that sees the end records it.
    /// - Throws: `admin.verification_not_found`, `bankid.unavailable`.
    public func status(id: String, context: ClientContext) throws(AuthError) -> BankIDPhoneVerificationStatus
    {
        let verification = try find(id)
        if verification.outcome != nil { return Self.view(verification) }
        let snapshot: BankIDOrderSnapshot
        do {
            snapshot = try coordinator.snapshot(orderRef: verification.orderRef)
        } catch  where error.code == .orderNotFound || error.code == .orderExpired {
            // The order's result is gone (purged) before anyone saw its end: fail closed.
            return try finish(verification, outcome: .expired, hintCode: nil, context: context)
        } catch {
            throw BankIDService.flowError(error)
        }
        switch snapshot.status {
        case .pending:
            let messageContext = MessageContext(autoStartAttempted: false, usesQRCode: false, device: .mobile)
            let message =
                snapshot.hintCode == nil && !snapshot.collectFailing
                ? RecommendedMessage.rfa1 : snapshot.message(messageContext)
            return Self.pending(verification, hintCode: snapshot.hintCode?.rawValue, message: message)
        case .complete:
            guard let completion = snapshot.completion else {
                return try finish(verification, outcome: .expired, hintCode: nil, context: context)
            }
            let verified = try isLinkedIdentity(completion, of: verification)
            return try finish(
                verification, outcome: verified ? .verified : .notVerified, hintCode: nil,
                signature: completion.signature, context: context)
        case .failed:
            return try finish(
                verification, outcome: .failed, hintCode: snapshot.hintCode?.rawValue, context: context)
        case .cancelled:
            return try finish(
                verification, outcome: .cancelled, hintCode: snapshot.hintCode?.rawValue, context: context)
        }
    }

    // MARK: Cancel

    /// Cancels a pending verification (BankID is told); one that has ended is left as it is.
    /// - Throws: `admin.verification_not_found`, `bankid.unavailable`.
    public func cancel(id: String, by admin: AdminPrincipal, context: ClientContext) async throws(AuthError)
        -> BankIDPhoneVerificationStatus
    {
        let verification = try find(id)
        if verification.outcome != nil { return Self.view(verification) }
        do {
            try await coordinator.cancel(orderRef: verification.orderRef)
        } catch  where error.code == .orderNotFound || error.code == .orderExpired {
            // Nothing left at BankID's side to cancel; the status below records the end.
        } catch {
            throw BankIDService.flowError(error)
        }
        // The order is cancelled now, unless BankID ended it first: then that end is recorded.
        let snapshot = try? coordinator.snapshot(orderRef: verification.orderRef)
        guard snapshot == nil || snapshot?.status == .cancelled else {
            return try status(id: id, context: context)
        }
        return try finish(
            verification, outcome: .cancelled, hintCode: "cancelled", by: admin, context: context)
    }

    /// Deletes verifications older than ``retention``; run it with the coordinator's purge.
    @discardableResult
    public func purge() throws -> Int {
        try store.purgeBankIDPhoneVerifications(
            createdBefore: clock.now().addingTimeInterval(-Self.retention))
    }

    // MARK: Helpers

    /// Whether the completing person is both the account's linked identity (as linked now: an
    /// identity unlinked or moved meanwhile does not count) and the number the caller stated.
    /// Digests are compared under the key each names, in constant time.
    private func isLinkedIdentity(_ completion: BankIDCompletion, of verification: BankIDPhoneVerification)
        throws(AuthError) -> Bool
    {
        let completing = [completion.identity] + (completion.previousKeyIdentities ?? [])
        let linked: LinkedIdentity?
        do {
            linked = try identities.store.linkedIdentity(userID: verification.userID)
        } catch {
            throw Self.storeError(error)
        }
        guard let linked else { return false }
        func among(_ digest: IdentityDigest) -> Bool {
            // Every candidate is compared, so the time does not tell which one matched.
            var found = false
            for candidate in completing where candidate.keyID == digest.keyID {
                if ConstantTime.equals(candidate.value, digest.value) { found = true }
            }
            return found
        }
        return among(linked.digest) && among(verification.statedIdentity)
    }

    /// Records the end once, with its audit event (actor: the agent who started it), and answers
    /// the verification as stored afterwards (a racing poll's record when it was first).
    /// - Parameter canceller: the agent whose cancellation this is (the actor of its event).
    private func finish(
        _ verification: BankIDPhoneVerification, outcome: BankIDPhoneVerificationOutcome, hintCode: String?,
        signature: String? = nil, by canceller: AdminPrincipal? = nil, context: ClientContext
    ) throws(AuthError) -> BankIDPhoneVerificationStatus {
        let now = clock.now()
        var details = [
            "verificationId": verification.id, "kind": verification.kind.rawValue,
            "adminTokenId": canceller?.tokenID ?? verification.startedByTokenID,
        ]
        let actor = canceller?.actor ?? .admin(tokenName: verification.startedBy)
        let action: AuditAction
        switch outcome {
        case .verified: action = .adminBankIDPhoneVerified
        case .notVerified: action = .adminBankIDPhoneNotVerified
        case .cancelled: action = .adminBankIDPhoneCancelled
        case .failed, .expired:
            action = .adminBankIDPhoneFailed
            let reason = outcome == .expired ? BankIDPhoneFailureReason.expired : .forHint(hintCode)
            details["reason"] = reason.rawValue
            if let hintCode { details["hintCode"] = hintCode }
        }
        // Only that the signature exists, and its SHA-256 to match it against the evidence kept
        // elsewhere; the XML (which names the signer) is not kept here.
        if let signature { details["signatureSha256"] = Hex.encode(Digest.sha256(signature)) }
        let event = AuditEvent(
            action, by: actor, userID: verification.userID,
            context: context, details: details, at: now)
        let end = BankIDPhoneVerificationEnd(
            id: verification.id, outcome: outcome, hintCode: hintCode, signatureReceived: signature != nil,
            at: now, events: [event])
        do {
            _ = try store.finishBankIDPhoneVerification(end)
        } catch {
            throw Self.storeError(error)
        }
        return Self.view(try find(verification.id))
    }

    private func find(_ id: String) throws(AuthError) -> BankIDPhoneVerification {
        let found: BankIDPhoneVerification?
        do {
            found = try store.bankIDPhoneVerification(id: id)
        } catch {
            throw Self.storeError(error)
        }
        guard let found else { throw AuthError(.verificationNotFound, "no phone verification has this id") }
        return found
    }

    /// The text a signature asks the user to confirm: required, trimmed, at most the limit.
    static func text(_ text: String?, kind: BankIDPhoneVerificationKind) throws(AuthError) -> String? {
        guard kind == .sign else {
            guard text == nil else {
                throw AuthError(.bankIDInvalidRequest, "userVisibleData: only a phone signature takes a text")
            }
            return nil
        }
        let trimmed = (text ?? "").trimmingWhitespaceAndNewlines()
        guard !trimmed.isEmpty, trimmed.count <= maximumTextLength else {
            throw AuthError(
                .bankIDInvalidRequest,
                "userVisibleData: 1 to \(maximumTextLength) characters are required to sign")
        }
        return trimmed
    }

    private static func pending(
        _ verification: BankIDPhoneVerification, hintCode: String?, message: RecommendedMessage?
    ) -> BankIDPhoneVerificationStatus {
        BankIDPhoneVerificationStatus(
            id: verification.id, kind: verification.kind, userID: verification.userID,
            callInitiator: verification.callInitiator, status: .pending, verified: false, hintCode: hintCode,
            message: message, reason: nil, signatureReceived: nil, startedAt: verification.createdAt,
            finishedAt: nil, startedBy: verification.startedBy)
    }

    /// A verification whose end is recorded, from its row alone.
    static func view(_ verification: BankIDPhoneVerification) -> BankIDPhoneVerificationStatus {
        let outcome = verification.outcome ?? .expired
        let status: BankIDOrderStatus
        var reason: BankIDPhoneFailureReason?
        var message: RecommendedMessage?
        let context = MessageContext(autoStartAttempted: false, usesQRCode: false, device: .mobile)
        switch outcome {
        case .verified, .notVerified: status = .complete
        case .failed, .cancelled:
            status = outcome == .cancelled ? .cancelled : .failed
            reason = .forHint(verification.hintCode)
            message = RecommendedMessage.forFailed(
                verification.hintCode.map { HintCode(rawValue: $0) }, context: context)
        case .expired:
            status = .failed
            reason = .expired
            message = .rfa22
        }
        return BankIDPhoneVerificationStatus(
            id: verification.id, kind: verification.kind, userID: verification.userID,
            callInitiator: verification.callInitiator, status: status, verified: outcome == .verified,
            hintCode: verification.hintCode, message: message, reason: reason,
            signatureReceived: verification.kind == .sign && status == .complete
                ? verification.signatureReceived : nil,
            startedAt: verification.createdAt, finishedAt: verification.finishedAt,
            startedBy: verification.startedBy)
    }

    private func record(
        _ action: AuditAction, userID: String, by admin: AdminPrincipal, context: ClientContext,
        details: [String: String]
    ) throws(AuthError) {
        var details = details
        details["adminTokenId"] = admin.tokenID
        do {
            _ = try store.appendAudit(
                AuditEvent(
                    action, by: admin.actor, userID: userID, context: context, details: details,
                    at: clock.now()))
        } catch {
            throw Self.storeError(error)
        }
    }

    /// A store failure as the use case's: an outage stays visible as the database's (through
    /// `underlying`), never passes silently.
    private static func storeError(_ error: any Error) -> AuthError {
        AuthError(
            .bankIDUnavailable, "the phone verification could not be stored", userMessage: .rfa22,
            underlying: error)
    }
}
