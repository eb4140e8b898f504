import AuthOrchestrator
import BankIDCore
import CryptoCore
import Foundation
import Kernel
import SessionCore
import Storage
import TestSupport
import Testing

@Suite("BankID step-up (sign) journey (no HTTP)")
struct BankIDStepUpTests {
    @Test(
        "the account's own person signs: /sign with the text, the session stepped up, signature kept, digests audited"
    )
    func signs() async throws {
        let fixture = try BankIDJourneyFixture(policy: BankIDPolicy(stepUpLifetime: 300))
        let user = try await fixture.signedUp()
        let signedIn = try fixture.signedIn(user)
        let order = try await fixture.start(.sign, text: "  Pay 100 kr to Bob\n", as: signedIn)
        let start = try #require(fixture.bankID.starts.last)
        #expect(start.path == "/sign")
        #expect(start.body["userVisibleData"] as? String == Base64.encode(Array("Pay 100 kr to Bob".utf8)))
        try await fixture.identify(order)
        let result = try fixture.result(order)
        #expect(result.code == .signed && result.session == nil && result.user?.id == user.id)
        #expect(result.steppedUpUntil == fixture.clock.now().addingTimeInterval(300))
        let sessionID = try #require(signedIn.session).id
        let stepUp = try #require(try fixture.store.stepUp(sessionID: sessionID))
        #expect(stepUp.userVisibleText == "Pay 100 kr to Bob")
        let event = try #require(try fixture.events().last)
        #expect(event.action == .bankIDStepUp && event.details["sessionId"] == sessionID)
        // The evidence keeps the signature's digest, not the signature (the default).
        let evidence = try #require(try fixture.store.bankIDSignature(id: event.details["evidenceId"] ?? ""))
        #expect(evidence.signature == nil && evidence.signatureSHA256 == Digest.sha256("PHNpZ25hdHVyZT4="))
        #expect(event.details["textSha256"] == Hex.encode(Digest.sha256("Pay 100 kr to Bob")))
        #expect(event.details["signatureSha256"] == Hex.encode(Digest.sha256("PHNpZ25hdHVyZT4=")))
        #expect(!event.details.values.contains { $0.contains("Pay 100") || $0.contains("PHNpZ25") })
    }

    @Test("signing needs a session and a text of 1 to 4000 characters, checked before BankID is called")
    func startRules() async throws {
        let fixture = try BankIDJourneyFixture()
        let signedIn = try fixture.signedIn(try fixture.makeUser("ada"))
        #expect(await authErrorCode { _ = try await fixture.start(.sign, text: "Pay") } == .signInRequired)
        #expect(
            await authErrorCode { _ = try await fixture.start(.sign, as: signedIn) } == .bankIDInvalidRequest)
        #expect(
            await authErrorCode { _ = try await fixture.start(.sign, text: " \n ", as: signedIn) }
                == .bankIDInvalidRequest)
        let long = String(repeating: "a", count: BankIDService.maximumSignTextLength + 1)
        #expect(
            await authErrorCode { _ = try await fixture.start(.sign, text: long, as: signedIn) }
                == .bankIDInvalidRequest)
        #expect(fixture.bankID.starts.isEmpty)
        _ = try await fixture.start(.sign, text: String(long.dropFirst()), as: signedIn)
    }

    @Test(
        "someone other than the linked identity signs: bankid.identity_mismatch, audited sign_refused, no step-up"
    )
    func identityMismatch() async throws {
        let fixture = try BankIDJourneyFixture()
        let user = try await fixture.signedUp(BankIDJourneyFixture.karl)
        let signedIn = try fixture.signedIn(user)
        let order = try await fixture.start(.sign, text: "Pay 100 kr", as: signedIn)
        try await fixture.identify(order, as: BankIDJourneyFixture.other)
        let result = try fixture.result(order)
        #expect(result.code == .identityMismatch && result.steppedUpUntil == nil)
        #expect(try fixture.store.stepUp(sessionID: try #require(signedIn.session).id) == nil)
        #expect(try fixture.actions().last == "bankid.sign_refused")

        // An account with no identity linked cannot step up either: link first.
        let unlinked = try fixture.signedIn(try fixture.makeUser("ada"))
        let unlinkedOrder = try await fixture.start(.sign, text: "Pay 100 kr", as: unlinked)
        try await fixture.identify(unlinkedOrder)
        #expect(try fixture.result(unlinkedOrder).code == .identityMismatch)
    }

    @Test("the risk ceiling does not gate a signature by the signed-in account's own person")
    func riskCeilingNotApplied() async throws {
        let fixture = try BankIDJourneyFixture(policy: BankIDPolicy(returnRisk: true, riskCeiling: .low))
        let user = try await fixture.signedUpWithRisk()
        let order = try await fixture.start(.sign, text: "Pay 100 kr", as: try fixture.signedIn(user))
        try await fixture.identify(order, risk: "high")
        #expect(try fixture.result(order).code == .signed)
    }
}
