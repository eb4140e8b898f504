import Kernel
import Testing

/// Kernel's strict parser reads plain ASCII inside a string eight bytes at a time: every byte it
/// must look at (a quote, a backslash, a control character, non-ASCII) is found wherever it falls
/// in a word, with the same answer and the same error offset as a byte-by-byte scan.
@Suite("StrictJSON strings: the word-at-a-time scan")
struct StrictJSONStringTests {
    /// `{"a":"` + text + `"}`, parsed.
    static func parse(_ text: [UInt8]) throws(StrictJSON.SyntaxError) -> StrictJSON.Value {
        try StrictJSON.parse(Array("{\"a\":\"".utf8) + text + Array("\"}".utf8))
    }

    static func string(_ value: StrictJSON.Value) -> String? {
        guard case .object(let object) = value, case .string(let text)? = object["a"] else { return nil }
        return text
    }

    @Test("plain strings of every length up to 40 come back whole")
    func plainLengths() throws {
        for length in 0...40 {
            let text = String((0..<length).map { Character(Unicode.Scalar(UInt8(0x30 + $0 % 40))) })
            #expect(try Self.string(Self.parse(Array(text.utf8))) == text, "length \(length)")
        }
    }

    @Test("an escape, a non-ASCII letter or an early closing quote at any position of a word")
    func specialBytesAtEveryPosition() throws {
        for position in 0..<24 {
            let before = String(repeating: "x", count: position)
            let after = String(repeating: "y", count: 17)
            let escaped = Array((before + "\\\"\\\\\\u00e9" + after).utf8)
            #expect(try Self.string(Self.parse(escaped)) == before + "\"\\é" + after, "escape at \(position)")
            let accented = Array((before + "é" + after).utf8)
            #expect(try Self.string(Self.parse(accented)) == before + "é" + after, "é at \(position)")
            // The string ends at the first quote; what follows is outside it, and wrong there.
            let quoted = Array((before + "\"" + after).utf8)
            #expect(throws: StrictJSON.SyntaxError.self) { try Self.parse(quoted) }
        }
    }

    @Test("a control character or invalid UTF-8 at any position is refused at its own offset")
    func refusedAtEveryPosition() throws {
        for position in 0..<24 {
            for bad: UInt8 in [0x00, 0x01, 0x0a, 0x1f] {
                let text =
                    Array(repeating: UInt8(ascii: "x"), count: position) + [bad]
                    + Array(repeating: UInt8(ascii: "y"), count: 17)
                do {
                    _ = try Self.parse(text)
                    Issue.record("accepted control byte \(bad) at \(position)")
                } catch {
                    #expect(error.reason == "control character in a string")
                    // `{"a":"` is six bytes.
                    #expect(error.offset == 6 + position, "byte \(bad) at \(position)")
                }
            }
            let invalid =
                Array(repeating: UInt8(ascii: "x"), count: position) + [0xff]
                + Array(repeating: UInt8(ascii: "y"), count: 17)
            #expect(throws: StrictJSON.SyntaxError.self, "0xff at \(position)") { try Self.parse(invalid) }
            // DEL (0x7f) and the bytes just below and above the special ones are plain.
            let plain =
                Array(repeating: UInt8(ascii: "x"), count: position) + [0x7f, 0x21, 0x23, 0x5b, 0x5d, 0x20]
            #expect(
                try Self.string(Self.parse(plain)) == String(decoding: plain, as: UTF8.self),
                "plain at \(position)")
        }
    }

    @Test("a string the input ends inside is refused, whatever its length")
    func unterminated() {
        for length in 0...20 {
            let text = Array("{\"a\":\"".utf8) + Array(repeating: UInt8(ascii: "z"), count: length)
            #expect(throws: StrictJSON.SyntaxError.self, "length \(length)") { try StrictJSON.parse(text) }
        }
    }
}
