import BankIDCore
import CryptoCore
import Foundation
import Kernel
import Storage
import TestSupport
import Testing

@testable import AuthOrchestrator

/// The support desk's phone check against a BankID that answers whatever the test says, so the
/// rule "verified only when the completing person is the linked identity and the stated one" is
/// checked even where the real BankID would not let it be broken.
@Suite("BankID phone verification rules")
struct BankIDPhoneVerificationTests {
    let fixture: BankIDJourneyFixture
    let service: BankIDPhoneVerificationService
    let agent = AdminPrincipal(tokenID: "adt_1", name: "support-anna", scope: .write)

    init() throws {
        fixture = try BankIDJourneyFixture()
        service = BankIDPhoneVerificationService(
            coordinator: fixture.coordinator, store: fixture.store,
            identities: IdentityDirectory(store: fixture.store, hasher: fixture.hasher), clock: fixture.clock,
            random: fixture.random)
    }

    /// Starts a check of `user` for the stated `number`, lets BankID complete it as `completer`,
    /// and polls until it has ended.
    private func check(_ user: User, stated number: String, completedBy completer: String?) async throws
        -> BankIDPhoneVerificationStatus
    {
        let started = try await service.start(
            userID: user.id, kind: .auth, callInitiator: .user, personalNumber: number, userVisibleText: nil,
            by: agent, context: fixture.context)
        #expect(started.status == .pending && !started.verified)
        let orderRef = try #require(try fixture.store.bankIDPhoneVerification(id: started.id)).orderRef
        fixture.bankID.answer(
            orderRef,
            completer.map { .complete(number: $0, name: "Someone", ip: "192.0.2.1", risk: nil) }
                ?? .failed(hint: "userDeclinedCall"))
        for _ in 0..<5 {
            fixture.clock.advance(by: 3)
            _ = try await fixture.coordinator.poll(orderRef: orderRef)
            let status = try service.status(id: started.id, context: fixture.context)
            if status.status != .pending { return status }
        }
        Issue.record("the verification stayed pending")
        return started
    }

    @Test(
        "the stated number, linked to the account, completes: verified; the request named the stated number")
    func verified() async throws {
        let user = try await fixture.signedUp(BankIDJourneyFixture.karl)
        let status = try await check(
            user, stated: BankIDJourneyFixture.karl, completedBy: BankIDJourneyFixture.karl)
        #expect(status.status == .complete && status.verified)
        let phone = fixture.bankIDRequests("/phone/auth")
        #expect(phone.count == 1 && phone.first?["personalNumber"] as? String == BankIDJourneyFixture.karl)
        #expect(phone.first?["callInitiator"] as? String == "user")
    }

    @Test(
        "the linked person completes an order for another stated number: not verified (the stated binding holds)"
    )
    func linkedButNotStated() async throws {
        let user = try await fixture.signedUp(BankIDJourneyFixture.karl)
        let status = try await check(
            user, stated: BankIDJourneyFixture.other, completedBy: BankIDJourneyFixture.karl)
        #expect(status.status == .complete && !status.verified)
    }

    @Test("the stated person completes, but is not the account's linked identity: not verified")
    func statedButNotLinked() async throws {
        let user = try await fixture.signedUp(BankIDJourneyFixture.karl)
        let status = try await check(
            user, stated: BankIDJourneyFixture.other, completedBy: BankIDJourneyFixture.other)
        #expect(status.status == .complete && !status.verified)
        let events = try fixture.events().filter { $0.action == .adminBankIDPhoneNotVerified }
        #expect(events.count == 1 && events.first?.actor == .admin(tokenName: "support-anna"))
        #expect(events.first?.details.values.contains { $0.contains(BankIDJourneyFixture.other) } == false)
    }

    @Test("a declined call is failed with its reason; an account without BankID is refused before any call")
    func declinedAndUnlinked() async throws {
        let user = try await fixture.signedUp(BankIDJourneyFixture.karl)
        let status = try await check(user, stated: BankIDJourneyFixture.karl, completedBy: nil)
        #expect(status.status == .failed && status.reason == .declinedCall && !status.verified)
        let plain = try fixture.makeUser("plain")
        let before = fixture.bankID.count("/phone/auth")
        await #expect(throws: AuthError(.bankIDNotLinked, "")) {
            _ = try await service.start(
                userID: plain.id, kind: .auth, callInitiator: .rp, personalNumber: BankIDJourneyFixture.karl,
                userVisibleText: nil, by: agent, context: fixture.context)
        }
        await #expect(throws: AuthError(.invalidParameter, "")) {
            _ = try await service.start(
                userID: user.id, kind: .auth, callInitiator: .rp, personalNumber: "198112289875",
                userVisibleText: nil, by: agent, context: fixture.context)
        }
        #expect(fixture.bankID.count("/phone/auth") == before)
    }

    @Test("BankID refuses the start (alreadyInProgress): the refusal is audited and answered as RFA4")
    func refusedStart() async throws {
        let user = try await fixture.signedUp(BankIDJourneyFixture.karl)
        fixture.bankID.refuseStarts((400, "alreadyInProgress"))
        await #expect(throws: AuthError(.alreadyInProgress, "")) {
            _ = try await service.start(
                userID: user.id, kind: .auth, callInitiator: .rp, personalNumber: BankIDJourneyFixture.karl,
                userVisibleText: nil, by: agent, context: fixture.context)
        }
        #expect(try fixture.actions().last == "admin.bankid.phone_failed_to_start")
    }

    @Test("failure reasons follow BankID's final hint codes")
    func reasons() {
        #expect(BankIDPhoneFailureReason.allCases.count == 6)
        let table: [(String?, BankIDPhoneFailureReason)] = [
            ("userDeclinedCall", .declinedCall), ("expiredTransaction", .timedOut),
            ("userCancel", .userCancelled),
            ("cancelled", .cancelled), ("certificateErr", .refused), ("somethingNew", .refused),
            (nil, .refused),
        ]
        for (hint, reason) in table {
            let verification = BankIDPhoneVerification(
                id: "bpv_x", orderRef: "r", kind: .auth, userID: "u", callInitiator: .rp,
                statedIdentity: IdentityDigest(keyID: "k", value: []), startedBy: "a", startedByTokenID: "t",
                createdAt: Date(), finishedAt: Date(), outcome: .failed, hintCode: hint)
            #expect(BankIDPhoneVerificationService.view(verification).reason == reason, "\(hint ?? "nil")")
        }
    }
}

extension BankIDJourneyFixture {
    /// The bodies of the requests sent to `path`.
    func bankIDRequests(_ path: String) -> [[String: Any]] { bankID.bodies(path) }
}
