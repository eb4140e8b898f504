import TestSupport
import Testing

@testable import PortvaktApp

/// `bankid.appIdentifiers`, `bankid.texts` and `bankid.requirements`: read, shown, round-tripped,
/// and every problem named by its path.
@Suite("Configuration: what BankID orders carry")
struct BankIDOrderConfigurationTests {
    func parse(_ json: String) throws -> PortvaktConfiguration {
        try PortvaktConfiguration.parse(json: Array(json.utf8), environment: [:])
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

    @Test("defaults: no app identifiers (native orders refused), built-in texts, no requirements")
    func defaults() throws {
        #expect(try parse("{}").bankid.orders == PortvaktConfiguration.BankIDOrderSettings())
    }

    @Test("every key is read, shown by config show (effectiveJSON), and round-trips")
    func everyKey() throws {
        let c = try parse(
            #"""
            {"bankid": {"appIdentifiers": ["se.example.app", "com.example.android"],
              "texts": {"login": {"sv": "# Logga in\nPå *Exempel*.", "en": "# Log in", "format": "simpleMarkdownV1"},
                        "recovery": {"en": "Recover your account."}},
              "requirements": {"recovery": {"mrtd": true, "pinCode": true},
                               "login": {"certificatePolicies": ["1.2.752.78.1.5"], "cardReader": "class1"}}}}
            """#)
        let orders = c.bankid.orders
        #expect(orders.appIdentifiers == ["se.example.app", "com.example.android"])
        #expect(
            orders.texts[.login]?.format == .simpleMarkdownV1 && orders.texts[.login]?.english == "# Log in")
        #expect(orders.texts[.recovery] == .init(english: "Recover your account."))
        #expect(orders.requirements[.recovery] == .init(pinCode: true, mrtd: true))
        #expect(orders.requirements[.login]?.certificatePolicies == ["1.2.752.78.1.5"])
        let shown = c.effectiveJSON()
        #expect(shown.contains("\"appIdentifiers\"") && shown.contains("\"mrtd\": true"))
        #expect(shown.contains("simpleMarkdownV1"))
        #expect(try parse(shown) == c)
    }

    @Test(
        "problems are named by path: unknown keys, a sign text, bad app ids, markdown outside the subset, policies BankID does not document",
        arguments: [
            (#"{"bankid": {"texts": {"login": {"sv": "x", "fr": "y"}}}}"#, "bankid.texts.login.fr"),
            (#"{"bankid": {"texts": {"logon": {"sv": "x"}}}}"#, "bankid.texts.logon"),
            (#"{"bankid": {"texts": {"sign": {"sv": "x"}}}}"#, "bankid.texts.sign"),
            (#"{"bankid": {"texts": {"login": {"format": "plaintext"}}}}"#, "bankid.texts.login"),
            (#"{"bankid": {"texts": {"login": {"sv": "  "}}}}"#, "bankid.texts.login.sv"),
            (
                #"{"bankid": {"texts": {"login": {"en": "[x](https://e.se)", "format": "simpleMarkdownV1"}}}}"#,
                "bankid.texts.login.en"
            ),
            (
                #"{"bankid": {"texts": {"login": {"sv": "x", "format": "html"}}}}"#,
                "bankid.texts.login.format"
            ),
            (#"{"bankid": {"appIdentifiers": ["nodots"]}}"#, "bankid.appIdentifiers[0]"),
            (#"{"bankid": {"appIdentifiers": ["se.ex", "se.ex"]}}"#, "bankid.appIdentifiers"),
            (#"{"bankid": {"appIdentifiers": "se.example.app"}}"#, "bankid.appIdentifiers"),
            (
                #"{"bankid": {"requirements": {"recovery": {"mrtd": "yes"}}}}"#,
                "bankid.requirements.recovery.mrtd"
            ),
            (#"{"bankid": {"requirements": {"login": {"risk": "low"}}}}"#, "bankid.requirements.login.risk"),
            (
                #"{"bankid": {"requirements": {"login": {"cardReader": "class3"}}}}"#,
                "bankid.requirements.login.cardReader"
            ),
            (
                #"{"bankid": {"requirements": {"login": {"certificatePolicies": ["1.2.3"]}}}}"#,
                "bankid.requirements.login.certificatePolicies[0]"
            ),
            (
                #"{"bankid": {"requirements": {"login": {"certificatePolicies": []}}}}"#,
                "bankid.requirements.login.certificatePolicies"
            ),
        ])
    func refused(json: String, path: String) {
        let found = issues(json)
        #expect(found.contains { $0.path == path }, "\(found)")
    }

    @Test("production takes only production certificate policies; test only test ones")
    func policiesPerEnvironment() {
        let production = issues(
            #"{"bankid": {"environment": "production", "requirements": {"login": {"certificatePolicies": ["1.2.3.4.25"]}}}}"#
        )
        #expect(production.contains { $0.path == "bankid.requirements.login.certificatePolicies[0]" })
        let test = issues(
            #"{"bankid": {"environment": "test", "requirements": {"login": {"certificatePolicies": ["1.2.752.78.1.5"]}}}}"#
        )
        #expect(test.contains { $0.path == "bankid.requirements.login.certificatePolicies[0]" })
    }
}
