import HTTPEngine
import Testing

@Suite("Header names compare ASCII case-insensitively")
struct HTTPHeadersTests {
    @Test("lookups fold ASCII case only, on short (inline) and long names alike")
    func lookups() {
        let long = "X-A-Header-Name-Longer-Than-Fifteen-Bytes"
        let headers = HTTPHeaders([
            ("content-TYPE", "application/json"), ("Host", "x"), (long, "1"), ("X-Twice", "a"),
            ("x-twice", "b"),
            ("X-Straße", "s"),
        ])
        #expect(headers["Content-Type"] == "application/json")
        #expect(headers["CONTENT-type"] == "application/json")
        #expect(headers[long.uppercased()] == "1" && headers[long.lowercased()] == "1")
        #expect(headers.values(for: "X-TWICE") == ["a", "b"])
        // Same length, one byte apart, at the first, the middle and the last position.
        #expect(headers["iost"] == nil && headers["Hoxt"] == nil && headers["Hosu"] == nil)
        #expect(headers[String(long.dropLast()) + "t"] == nil)
        // Lengths differ: never equal, even as a prefix.
        #expect(headers["Hos"] == nil && headers["Hostx"] == nil && headers[""] == nil)
        // Not an ASCII letter: no folding ('@' and '`' sit next to 'A' and 'a', '[' next to 'Z').
        #expect(headers["@ost"] == nil && headers["`ost"] == nil)
        #expect(HTTPHeaders([("[", "1")])["{"] == nil)
        // Non-ASCII is compared as bytes, never folded.
        #expect(headers["X-Straße"] == "s" && headers["x-straße"] == "s" && headers["X-STRASSE"] == nil)
        #expect(headers["X-STRAẞE"] == nil)
    }
}
