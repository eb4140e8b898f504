import BankIDCore
import Testing

/// The checks behind what Portvakt puts in an order: simpleMarkdownV1 texts, device fields and the
/// User-Agent cut to BankID's field limit.
@Suite("Order texts and device fields")
struct OrderTextTests {
    @Test(
        "simpleMarkdownV1: headings to ###, emphasis, tables, lines and escapes pass",
        arguments: [
            "# Logga in\nPå *Exempel*.", "## Del\n**Fet** och *kursiv*", "### Tre",
            "| a | b |\n|---|---|\n| 1 | 2 |",
            "---", "Pris: 5 \\* 3", "Vanlig text utan markeringar.",
        ])
    func markdownAccepted(text: String) {
        #expect(SimpleMarkdownV1.problem(text) == nil, "\(text)")
    }

    @Test(
        "simpleMarkdownV1: what lies outside the subset is refused, naming the line",
        arguments: [
            ("#### Fyra", "line 1"), ("#Rubrik", "line 1"), ("ok\n[länk](https://example.se)", "line 2"),
            ("![bild](x.png)", "line 1"), ("`kod`", "line 1"), ("<b>html</b>", "line 1"),
            ("*öppen", "line 1"),
            ("| a | b", "line 1"),
        ])
    func markdownRefused(text: String, line: String) {
        let problem = SimpleMarkdownV1.problem(text)
        #expect(problem?.hasPrefix(line) == true, "\(text): \(problem ?? "accepted")")
    }

    @Test("device fields: 1 to 256 bytes without control characters")
    func deviceFields() {
        #expect(BankIDValidation.deviceFieldProblem("Mozilla/5.0") == nil)
        #expect(BankIDValidation.deviceFieldProblem(String(repeating: "a", count: 256)) == nil)
        #expect(BankIDValidation.deviceFieldProblem(String(repeating: "a", count: 257)) != nil)
        #expect(BankIDValidation.deviceFieldProblem("") != nil)
        #expect(BankIDValidation.deviceFieldProblem("a\u{7}b") != nil)
        #expect(BankIDValidation.deviceFieldProblem("a\nb") != nil)
    }

    @Test("a User-Agent is cut to the byte limit on a character boundary")
    func truncation() {
        #expect(BankIDValidation.truncated("abc", toBytes: 256) == "abc")
        let cut = BankIDValidation.truncated(String(repeating: "å", count: 200), toBytes: 255)
        #expect(cut.utf8.count == 254 && cut.allSatisfy { $0 == "å" })
        let emoji = BankIDValidation.truncated("a👍🏽b", toBytes: 5)
        #expect(emoji == "a")
    }

    @Test("derived keys differ by purpose and from the identity digests' key")
    func derivedKeys() throws {
        let hasher = try IdentityHasher(
            currentKeyID: "k1", keys: [try IdentityKey(id: "k1", secret: Array(repeating: 1, count: 32))])
        let device = hasher.derivedKey(purpose: "portvakt.bankid.device-identifier.v1")
        #expect(device.count == 32)
        #expect(device != hasher.derivedKey(purpose: "another.purpose"))
        #expect(device != Array(repeating: 1, count: 32))
    }
}
