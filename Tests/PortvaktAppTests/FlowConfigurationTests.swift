import CryptoCore
import Kernel
import TestSupport
import Testing

@testable import PortvaktApp

/// The journey keys: `methods.bankid`, BankID risk and step-up, `recovery`, `reviewAccount`,
/// and the contradictions refused at start.
@Suite("Configuration: BankID journeys")
struct FlowConfigurationTests {
    /// The reviewer's code, from the environment as in production.
    static let reviewCode = ["PORTVAKT_REVIEW_CODE": "a-review-code-of-24-chars"]

    func parse(_ json: String, environment: [String: String] = [:]) throws -> PortvaktConfiguration {
        try PortvaktConfiguration.parse(json: Array(json.utf8), environment: environment)
    }

    func issues(_ json: String) -> [ConfigurationIssue] {
        do throws(ConfigurationError) {
            _ = try PortvaktConfiguration.parse(json: Array(json.utf8), environment: [:])
            Issue.record("expected \(json) to be refused")
            return []
        } catch {
            return error.issues
        }
    }

    @Test(
        "defaults: every BankID journey on, no risk ceiling, 600 s step-up, recovery revokes sessions only, no review account"
    )
    func defaults() throws {
        let c = try parse("{}")
        let bankid = c.methods.bankid
        #expect(
            bankid.enabled && bankid.login && bankid.signup && bankid.recovery && bankid.link && bankid.sign)
        #expect(c.bankid.flows == PortvaktConfiguration.BankIDFlowSettings())
        #expect(c.bankid.flows.riskCeiling == nil && c.bankid.flows.stepUpSeconds == 600)
        #expect(c.recovery.revokeOtherSessions && !c.recovery.revokeOldPasskeys)
        #expect(!c.reviewAccount.enabled)
    }

    @Test("every key is read, shown by effectiveJSON, and round-trips")
    func everyKey() throws {
        let c = try parse(
            #"""
            {"methods": {"bankid": {"login": true, "signup": false, "recovery": false, "link": true, "sign": false}},
             "bankid": {"returnRisk": true, "riskCeiling": "low", "stepUpSeconds": 120},
             "recovery": {"revokeOtherSessions": false, "revokeOldPasskeys": true},
             "reviewAccount": {"enabled": true, "username": "appreview", "displayName": "Reviewer"}}
            """#, environment: Self.reviewCode)
        #expect(c.methods.bankid.login && !c.methods.bankid.signup && !c.methods.bankid.sign)
        #expect(
            c.bankid.flows.riskCeiling == .low && c.bankid.flows.returnRisk
                && c.bankid.flows.stepUpSeconds == 120)
        #expect(!c.recovery.revokeOtherSessions && c.recovery.revokeOldPasskeys)
        #expect(
            c.reviewAccount
                == .init(
                    enabled: true, username: "appreview", displayName: "Reviewer",
                    code: .init(Self.reviewCode.values.first!)))
        let shown = c.effectiveJSON()
        #expect(shown.contains("\"riskCeiling\": \"low\""))
        #expect(!shown.contains(Self.reviewCode.values.first!), "the code is never shown")
        #expect(try parse(shown, environment: Self.reviewCode) == c)
    }

    @Test(
        "BankID off turns every journey off; a journey switched on explicitly is a contradiction naming its key"
    )
    func bankIDOff() throws {
        let off = try parse(#"{"methods": {"bankid": {"enabled": false}}}"#)
        #expect(!off.methods.bankid.login && !off.methods.bankid.recovery && !off.methods.bankid.sign)
        let found = issues(#"{"methods": {"bankid": {"enabled": false, "recovery": true}}}"#)
        #expect(found.map(\.path) == ["methods.bankid.recovery"])
        #expect(found.first?.code == .conflict)
    }

    @Test(
        "recovery needs passkeys; a risk ceiling needs returnRisk; an enabled review account needs its username and code"
    )
    func contradictions() {
        #expect(
            issues(#"{"methods": {"passkey": {"enabled": false}}}"#).map(\.path) == [
                "methods.bankid.recovery"
            ])
        #expect(issues(#"{"bankid": {"riskCeiling": "moderate"}}"#).map(\.path) == ["bankid.riskCeiling"])
        #expect(
            issues(#"{"bankid": {"returnRisk": true, "riskCeiling": "extreme"}}"#).map(\.path) == [
                "bankid.riskCeiling"
            ])
        #expect(
            issues(#"{"reviewAccount": {"enabled": true}}"#).map(\.path) == [
                "reviewAccount.username", "PORTVAKT_REVIEW_CODE",
            ])
        #expect(
            issues(#"{"recovery": {"revokeEverything": true}}"#).map(\.path) == ["recovery.revokeEverything"])
    }
}
