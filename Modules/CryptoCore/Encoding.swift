public import Foundation

/// Base64url without padding (RFC 4648 §5), the encoding of WebAuthn and of Portvakt's tokens.
public enum Base64URL {
    private static let alphabet = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Encodes bytes as unpadded base64url, straight into the output (tokens, ids and WebAuthn
    /// fields are encoded on every request; going through base64 and string replacement cost more).
    public static func encode(_ bytes: some ContiguousBytes) -> String {
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

    /// Decodes unpadded (or padded) base64url; nil when the text is not base64url.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var standard = String(text)
        guard standard.utf8.allSatisfy({ isAlphabet($0) || $0 == UInt8(ascii: "=") }) else {
            return nil
        }
        standard = standard.replacingOccurrences(of: "-", with: "+").replacingOccurrences(
            of: "_", with: "/")
        while standard.hasSuffix("=") { standard.removeLast() }
        // A length of 1 mod 4 cannot come from any byte string.
        guard standard.utf8.count % 4 != 1 else { return nil }
        standard += String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
        return Data(base64Encoded: standard).map { [UInt8]($0) }
    }

    private static func isAlphabet(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
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
