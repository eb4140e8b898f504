import HTTPEngine
import Testing

@testable import PortvaktAPI

/// The bearer token read from an Authorization value, byte by byte.
@Suite("Authorization: Bearer")
struct BearerTokenTests {
    /// The rule as first written (split at the first space, Unicode-lowercased scheme, the rest
    /// trimmed of spaces and tabs): the byte-level reading must agree with it on every value.
    private func byTheRule(_ authorization: String) -> String? {
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = String(parts[1]).trimmingOWS()
        return token.isEmpty ? nil : token
    }

    @Test("agrees with the split-and-lowercase rule on schemes, spacing, tabs and non-ASCII")
    func agreesWithTheRule() {
        let schemes = [
            "Bearer", "bearer", "BEARER", "bEaReR", "Basic", "Bearer2", "Bear", "", "Bearér", "\u{212A}",
        ]
        let gaps = ["", " ", "  ", "\t", " \t", "\t "]
        let tokens = ["pvs_abc", "pvs_a b", "", " ", "tøken", "a\t", "\tz", "x "]
        var checked = 0
        for lead in ["", " ", "  ", "\t"] {
            for scheme in schemes {
                for gap in gaps {
                    for token in tokens {
                        let value = lead + scheme + gap + token
                        #expect(
                            HTTPRequest.bearerToken(in: value) == byTheRule(value),
                            "\(value.debugDescription)")
                        checked += 1
                    }
                }
            }
        }
        #expect(checked == 4 * 10 * 6 * 8)
        #expect(HTTPRequest.bearerToken(in: "Bearer pvs_abc") == "pvs_abc")
        #expect(HTTPRequest.bearerToken(in: "bearer   pvs_abc \t") == "pvs_abc")
        #expect(HTTPRequest.bearerToken(in: "Bearer") == nil)
        #expect(HTTPRequest.bearerToken(in: "Basic pvs_abc") == nil)
    }
}
