import BankIDCore
import CryptoCore
import FoundationEssentials
import Kernel
import Storage

/// A step-up signature: the signed-in user reads a text in the BankID app and signs it, and
/// their session counts as stepped up for the policy's lifetime.
///
/// Rules: only a signed-in session may start one, with a text of 1 to
/// `maximumTextLength` characters (trimmed). At completion the signer must be the account's
/// linked identity (`bankid.identity_mismatch` otherwise, audited `bankid.sign_refused`), so
/// link first. `bankid.signed` steps the session up (`session_step_ups`) and keeps the
/// signature's evidence (`bankid_signatures`: the text, BankID's OCSP response and completion
/// facts, the signature's SHA-256, and the signature itself only when `keepsSignatures`, since
/// it names the signer); the audit event holds the SHA-256 of the text and of the signature and
/// names the evidence, never either of them. The risk ceiling does not apply: the signer is
/// already signed in.
struct BankIDSignJourney: BankIDJourney {
    let accounts: any UserStore
    let ledger: BankIDLedger
    /// How long a signature keeps the session stepped up.
    let stepUpLifetime: TimeInterval
    /// Whether the evidence keeps BankID's signature itself, or only its digest.
    let keepsSignatures: Bool

    /// The longest text a step-up may ask the user to sign, in characters.
    static let maximumTextLength = 4_000

    var orderKind: BankIDOrderKind { .sign }
    var checksRisk: Bool { false }

    func admit(_ requester: BankIDRequester, userVisibleText: String?) throws(AuthError) -> String? {
        guard requester.signedIn != nil else {
            throw AuthError(.signInRequired, "linking and signing need a signed-in session")
        }
        let trimmed = userVisibleText?.trimmingWhitespaceAndNewlines() ?? ""
        guard !trimmed.isEmpty, trimmed.count <= Self.maximumTextLength else {
            throw AuthError(
                .bankIDInvalidRequest,
                "userVisibleData: 1 to \(Self.maximumTextLength) characters are required to sign")
        }
        return trimmed
    }

    func complete(_ order: BankIDCompletedOrder) throws -> BankIDFlowResult {
        var order = order
        let clientKind = order.flow.clientKind
        guard let userID = order.flow.userID, let sessionID = order.flow.sessionID,
            let text = order.flow.userVisibleText, let user = try accounts.user(id: userID)
        else { return try ledger.commit(.unchanged(.signInRequired, clientKind: clientKind), for: order) }
        // A step-up proves the account's own person signed: the signer must be the linked identity.
        guard let linked = order.linked, linked.userID == userID else {
            order.record(.bankIDSignRefused, userID: userID)
            return try ledger.commit(
                .unchanged(.identityMismatch, user: user, clientKind: clientKind), for: order)
        }
        // A sign order's completion always carries the signature; without one nothing was signed.
        guard let signature = order.completion.signature else {
            order.record(.bankIDSignRefused, userID: userID)
            return try ledger.commit(
                .unchanged(.identityMismatch, user: user, clientKind: clientKind), for: order)
        }
        let until = order.now.addingTimeInterval(stepUpLifetime)
        let signatureDigest = Digest.sha256(Array(signature.utf8))
        // One flow, one signature: the evidence is named by the flow (its id's digest), which no
        // client can use to reach the order.
        let evidenceID = Base64URL.encode(Array(order.flow.idHash.prefix(16)))
        // The audit keeps digests: the text may be long and the signature names the signer.
        order.record(
            .bankIDStepUp, userID: userID,
            adding: [
                "sessionId": sessionID, "textSha256": Hex.encode(Digest.sha256(text)),
                "signatureSha256": Hex.encode(signatureDigest), "steppedUpUntil": UTCTimestamp.string(until),
                "evidenceId": evidenceID,
            ])
        let completion = order.completion
        return try ledger.commit(
            .signed(user, until: until, clientKind: clientKind), for: order,
            stepUp: SessionStepUp(
                sessionID: sessionID, signedAt: order.now, validUntil: until, userVisibleText: text),
            evidence: BankIDSignatureEvidence(
                id: evidenceID, userID: userID, sessionID: sessionID, signedAt: order.now,
                userVisibleText: text,
                signatureSHA256: signatureDigest, signature: keepsSignatures ? signature : nil,
                ocspResponse: completion.ocspResponse, bankIDIssueDate: completion.bankIdIssueDate,
                mrtd: completion.stepUpMRTD, risk: completion.risk))
    }
}
