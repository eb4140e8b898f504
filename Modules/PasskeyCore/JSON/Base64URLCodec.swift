/// Strict base64url (RFC 4648 §5) without padding, on bytes: the encoding of every binary member of
/// WebAuthn's JSON forms and of C.challenge.
///
/// Strict so that each byte string has exactly one accepted text: padding is refused, and so are
/// non-zero bits in the final character's unused low bits (`AB` and `AC` would otherwise both mean
/// 0x00). Two texts that decode to the same bytes would let a mutated response pass as the original.
/// CryptoCore's `Base64URL` is lenient on purpose (tokens); this one sits on the login hot path and
/// works on UTF-8 directly without building intermediate strings.
enum Base64URLCodec {
    private static let alphabet = Array(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// 0...63 for alphabet bytes, 0xff for everything else.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xff, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// Encodes `bytes` as unpadded base64url.
    static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next()
            let third = iterator.next()
            let chunk = UInt32(first) << 16 | UInt32(second ?? 0) << 8 | UInt32(third ?? 0)
            out.append(alphabet[Int(chunk >> 18 & 63)])
            out.append(alphabet[Int(chunk >> 12 & 63)])
            if second != nil { out.append(alphabet[Int(chunk >> 6 & 63)]) }
            if third != nil { out.append(alphabet[Int(chunk & 63)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes unpadded, canonical base64url; nil for anything else.
    static func decode(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { decode(utf8: $0) }
    }

    /// Decodes from UTF-8 bytes; nil for padding, a foreign byte, an impossible length or stray bits.
    static func decode(utf8 input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let remainder = input.count % 4
        // One leftover character carries 6 bits, not a whole byte: no byte string encodes that way.
        guard remainder != 1 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(input.count / 4 * 3 + max(remainder - 1, 0))
        var index = 0
        let fullEnd = input.count - remainder
        while index < fullEnd {
            let a = values[Int(input[index])]
            let b = values[Int(input[index + 1])]
            let c = values[Int(input[index + 2])]
            let d = values[Int(input[index + 3])]
            // 0xff in any lane sets bit 7 of the OR; alphabet values stay below 64.
            guard (a | b | c | d) & 0x80 == 0 else { return nil }
            let chunk = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
            out.append(UInt8(truncatingIfNeeded: chunk >> 16))
            out.append(UInt8(truncatingIfNeeded: chunk >> 8))
            out.append(UInt8(truncatingIfNeeded: chunk))
            index += 4
        }
        if remainder == 2 {
            let a = values[Int(input[index])]
            let b = values[Int(input[index + 1])]
            // The last character's low 4 bits are unused and must be zero.
            guard (a | b) & 0x80 == 0, b & 0x0f == 0 else { return nil }
            out.append(a << 2 | b >> 4)
        } else if remainder == 3 {
            let a = values[Int(input[index])]
            let b = values[Int(input[index + 1])]
            let c = values[Int(input[index + 2])]
            // The last character's low 2 bits are unused and must be zero.
            guard (a | b | c) & 0x80 == 0, c & 0x03 == 0 else { return nil }
            out.append(a << 2 | b >> 4)
            out.append((b & 0x0f) << 4 | c >> 2)
        }
        return out
    }
}
