public import FoundationEssentials

/// Base64url without padding (RFC 4648 §5), the encoding of WebAuthn and of Portvakt's tokens.
public enum Base64URL {
    private static let alphabet = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    /// The same 64 characters in the order ASCII sorts them.
    private static let orderedAlphabet = Array(
        "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz".utf8)

    /// Encodes bytes as unpadded base64url, straight into the output (tokens, ids and WebAuthn
    /// fields are encoded on every request; going through base64 and string replacement cost more).
    public static func encode(_ bytes: some ContiguousBytes) -> String {
        encode(bytes, alphabet: alphabet)
    }

    /// Encodes bytes in base64url's characters, but given their values in ASCII order, so that
    /// encodings of equally long byte strings sort (as text, bytewise) as the bytes do: for ids
    /// that begin with a time and should be stored in the order they were made. Not base64url:
    /// `decode` does not give the bytes back (and refuses some endings), and nothing needs to.
    public static func encodeInByteOrder(_ bytes: some ContiguousBytes) -> String {
        encode(bytes, alphabet: orderedAlphabet)
    }

    private static func encode(_ bytes: some ContiguousBytes, alphabet: [UInt8]) -> String {
        bytes.withUnsafeBytes { raw in
            let count = raw.count
            let length = (count / 3) * 4 + [0, 2, 3][count % 3]
            return String(unsafeUninitializedCapacity: length) { out in
                var input = 0
                var output = 0
                while input + 3 <= count {
                    let value =
                        UInt32(raw[input]) << 16 | UInt32(raw[input + 1]) << 8 | UInt32(raw[input + 2])
                    out[output] = alphabet[Int(value >> 18 & 63)]
                    out[output + 1] = alphabet[Int(value >> 12 & 63)]
                    out[output + 2] = alphabet[Int(value >> 6 & 63)]
                    out[output + 3] = alphabet[Int(value & 63)]
                    input += 3
                    output += 4
                }
                let rest = count - input
                if rest > 0 {
                    let value = UInt32(raw[input]) << 16 | (rest == 2 ? UInt32(raw[input + 1]) << 8 : 0)
                    out[output] = alphabet[Int(value >> 18 & 63)]
                    out[output + 1] = alphabet[Int(value >> 12 & 63)]
                    output += 2
                    if rest == 2 {
                        out[output] = alphabet[Int(value >> 6 & 63)]
                        output += 1
                    }
                }
                return output
            }
        }
    }

    /// 0...63 for alphabet bytes, 0xff for everything else.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xff, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// Decodes unpadded, canonical base64url; nil for anything else.
    ///
    /// Strict so that each byte string has exactly one accepted text: padding is refused, and so are
    /// non-zero bits in the final character's unused low bits (`AB` and `AC` would otherwise both
    /// mean 0x00). Two texts that decode to the same bytes would let a mutated WebAuthn response pass
    /// as the original, or two spellings of one token look different.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var text = String(text)
        return text.withUTF8 { decode(utf8: $0) }
    }

    /// Decodes from UTF-8 bytes; nil for padding, a foreign byte, an impossible length or stray bits.
    public static func decode(utf8 input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let remainder = input.count % 4
        // One leftover character carries 6 bits, not a whole byte: no byte string encodes that way.
        guard remainder != 1 else { return nil }
        let length = input.count / 4 * 3 + max(remainder - 1, 0)
        // Written straight into a buffer, with the table borrowed once, then copied into the
        // result: appending byte by byte checked uniqueness and capacity three times per group of
        // four characters, and every table lookup went through the lazy global's once-check
        // (WebAuthn responses decode five members on every login). Not
        // `init(unsafeUninitializedCapacity:)` or `init(repeating:count:)`: their allocation is
        // not specialized and looks the array's type metadata up at run time, which costs more
        // than copying a few hundred bytes.
        return values.withUnsafeBufferPointer { table in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length) { buffer in
                decode(input, table: table, into: buffer) ? Array(buffer) : nil
            }
        }
    }

    /// Fills `out` (exactly the decoded length) from `input` (of a length that is not 1 mod 4);
    /// false if any byte is outside the alphabet or the last character has stray low bits.
    private static func decode(
        _ input: UnsafeBufferPointer<UInt8>, table: UnsafeBufferPointer<UInt8>,
        into out: UnsafeMutableBufferPointer<UInt8>
    ) -> Bool {
        let remainder = input.count % 4
        let fullEnd = input.count - remainder
        // 0xff in any lookup sets bit 7 of the OR; alphabet values stay below 64. The bytes written
        // before a refusal are thrown away with the buffer, so one test at the end is enough.
        var seen: UInt8 = 0
        var index = 0
        var output = 0
        while index < fullEnd {
            let a = table[Int(input[index])]
            let b = table[Int(input[index + 1])]
            let c = table[Int(input[index + 2])]
            let d = table[Int(input[index + 3])]
            seen |= a | b | c | d
            let chunk = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
            out[output] = UInt8(truncatingIfNeeded: chunk >> 16)
            out[output + 1] = UInt8(truncatingIfNeeded: chunk >> 8)
            out[output + 2] = UInt8(truncatingIfNeeded: chunk)
            index += 4
            output += 3
        }
        if remainder == 2 {
            let a = table[Int(input[index])]
            let b = table[Int(input[index + 1])]
            // The last character's low 4 bits are unused and must be zero.
            guard (seen | a | b) & 0x80 == 0, b & 0x0f == 0 else { return false }
            out[output] = a << 2 | b >> 4
        } else if remainder == 3 {
            let a = table[Int(input[index])]
            let b = table[Int(input[index + 1])]
            let c = table[Int(input[index + 2])]
            // The last character's low 2 bits are unused and must be zero.
            guard (seen | a | b | c) & 0x80 == 0, c & 0x03 == 0 else { return false }
            out[output] = a << 2 | b >> 4
            out[output + 1] = (b & 0x0f) << 4 | c >> 2
        } else {
            guard seen & 0x80 == 0 else { return false }
        }
        return true
    }
}

extension Base64URL {
    /// Decodes base64 as WebAuthn client libraries really send it: the url alphabet (RFC 4648 §5)
    /// or the standard one (§4), unpadded or correctly padded. Some libraries (older React
    /// Native and Android ones, Windows Hello captures) send standard base64 or padded base64url
    /// in the response JSON. nil for anything else that is not base64.
    ///
    /// Still one alphabet per text (a `-` or `_` beside a `+` or `/` is refused), padding only
    /// at the end and exactly as many `=` as the length needs (none after a whole group of four),
    /// no whitespace, no length of 1 mod 4, and, as in `decode`, zero unused low bits in the
    /// last character: browsers and the libraries above write them zero, so the stricter rule
    /// costs no client and keeps one set of texts per byte string and alphabet. The caller
    /// stores and compares the bytes (or their canonical `encode`), never the text.
    public static func decodeTolerant(_ text: some StringProtocol) -> [UInt8]? {
        var text = String(text)
        return text.withUTF8 { input in
            // What browsers send: canonical base64url costs one pass, as before.
            if let bytes = decode(utf8: input) { return bytes }
            return decodeOtherSpelling(input)
        }
    }

    /// The slow path of `decodeTolerant`: strips correct padding and maps the standard alphabet
    /// onto the url one, then decodes strictly.
    private static func decodeOtherSpelling(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var padding = 0
        while padding < min(2, input.count), input[input.count - 1 - padding] == UInt8(ascii: "=") {
            padding += 1
        }
        let length = input.count - padding
        // A third `=` stays in the body, where the alphabet check refuses it.
        guard padding == 0 || padding == (4 - length % 4) % 4 else { return nil }
        var url = false
        var standard = false
        var body = [UInt8](UnsafeBufferPointer(rebasing: input[0..<length]))
        for index in body.indices {
            switch body[index] {
            case UInt8(ascii: "-"), UInt8(ascii: "_"): url = true
            case UInt8(ascii: "+"):
                standard = true
                body[index] = UInt8(ascii: "-")
            case UInt8(ascii: "/"):
                standard = true
                body[index] = UInt8(ascii: "_")
            default: break
            }
        }
        guard !(url && standard) else { return nil }
        return body.withUnsafeBufferPointer { decode(utf8: $0) }
    }
}

/// Lowercase hexadecimal.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Encodes bytes as lowercase hex.
    public static func encode(_ bytes: some ContiguousBytes) -> String {
        bytes.withUnsafeBytes { raw in
            var out = [UInt8]()
            out.reserveCapacity(raw.count * 2)
            for byte in raw {
                out.append(digits[Int(byte >> 4)])
                out.append(digits[Int(byte & 0x0f)])
            }
            return String(decoding: out, as: UTF8.self)
        }
    }

    /// Decodes hex (either case); nil when the text is not an even run of hex digits.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = value(utf8[index]), let low = value(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    private static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
