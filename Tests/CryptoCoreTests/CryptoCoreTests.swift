import CryptoCore
import FoundationEssentials
import Kernel
import TestSupport
import Testing

@Suite("CryptoCore")
struct CryptoCoreTests {
    @Test("SHA-1 and SHA-2 digests match the FIPS 180-4 \"abc\" vectors")
    func digestVectors() {
        #expect(
            Hex.encode(Digest.hash(.sha256, Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            Hex.encode(Digest.hash(.sha384, Array("abc".utf8)))
                == "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed"
                + "8086072ba1e7cc2358baeca134c825a7")
        #expect(
            Hex.encode(Digest.hash(.sha512, Array("abc".utf8)))
                == "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
                + "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")
        #expect(
            Hex.encode(Digest.hash(.sha1, Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(
            Hex.encode(Digest.sha256([UInt8]()))
                == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test("HMAC matches RFC 4231 test case 2")
    func hmacVector() {
        let mac = HMAC.authenticate(
            .sha256, key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8))
        #expect(Hex.encode(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        let mac512 = HMAC.authenticate(
            .sha512, key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8))
        #expect(
            Hex.encode(mac512)
                == "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554"
                + "9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737")
    }

    @Test("a keyed HMAC matches RFC 4231 and the one-shot HMAC, message after message and across threads")
    func hmacKey() async throws {
        let jefe = try HMACKey(.sha256, key: Array("Jefe".utf8))
        let message = Array("what do ya want for nothing?".utf8)
        #expect(
            Hex.encode(jefe.authenticate(message))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(jefe.authenticate(message) == jefe.authenticate(message), "the keyed context is not consumed")
        #expect(!jefe.description.contains("Jefe"))
        let key = [UInt8](repeating: 0xaa, count: 131)  // longer than a block: hashed first
        let sha384 = try HMACKey(.sha384, key: key)
        let agrees = await withTaskGroup(of: Bool.self) { group in
            for thread in 0..<8 {
                group.addTask {
                    (0..<200).allSatisfy { index in
                        let data = [UInt8](repeating: UInt8(thread), count: index)
                        return sha384.authenticate(data) == HMAC.authenticate(.sha384, key: key, data: data)
                    }
                }
            }
            return await group.reduce(true) { $0 && $1 }
        }
        #expect(agrees)
    }

    @Test("a keyed HMAC equals the one-shot HMAC for every digest and key lengths around the block size")
    func hmacKeyLengths() throws {
        let cases: [(DigestAlgorithm, Int)] = [(.sha1, 64), (.sha256, 64), (.sha384, 128), (.sha512, 128)]
        for (algorithm, block) in cases {
            for keyLength in [0, 1, block - 1, block, block + 1, 3 * block] {
                let key = (0..<keyLength).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
                let keyed = try HMACKey(algorithm, key: key)
                for data in [[UInt8](), [0x61], [UInt8](repeating: 0x5c, count: 2 * block + 3)] {
                    #expect(
                        keyed.authenticate(data) == HMAC.authenticate(algorithm, key: key, data: data),
                        "\(algorithm), key \(keyLength) bytes, data \(data.count) bytes")
                }
            }
        }
    }

    @Test("constant-time comparison tells equal from different and different lengths")
    func constantTime() {
        #expect(ConstantTime.equals([1, 2, 3] as [UInt8], [1, 2, 3] as [UInt8]))
        #expect(!ConstantTime.equals([1, 2, 3] as [UInt8], [1, 2, 4] as [UInt8]))
        #expect(!ConstantTime.equals([1, 2, 3] as [UInt8], [1, 2] as [UInt8]))
        #expect(ConstantTime.equals([] as [UInt8], [] as [UInt8]))
    }

    @Test("base64url round-trips every length and rejects foreign characters")
    func base64url() {
        for length in 0..<70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 250) }
            let text = Base64URL.encode(bytes)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(Base64URL.decode(text) == bytes)
        }
        #expect(Base64URL.encode([0xfb, 0xff]) == "-_8")
        #expect(Base64URL.decode("a+b/") == nil)
        #expect(Base64URL.decode("abcde") == nil)
        #expect(Base64URL.decode("ab cd") == nil)
    }

    @Test("the byte-order encoding sorts as its bytes do, in base64url's characters, for every length")
    func base64InByteOrder() {
        var generator = SystemRandomNumberGenerator()
        for length in 1..<24 {
            for _ in 0..<200 {
                let a = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                // Often equal up to a late byte, where an order mistake would hide.
                var b = a
                b[Int.random(in: 0..<length, using: &generator)] = UInt8.random(
                    in: 0...255, using: &generator)
                let (x, y) = (Base64URL.encodeInByteOrder(a), Base64URL.encodeInByteOrder(b))
                #expect(
                    Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8)) == a.lexicographicallyPrecedes(b))
                #expect(x.utf8.count == Base64URL.encode(a).utf8.count)
                // Each character is base64url's: one followed by "A" decodes to a byte.
                #expect(x.utf8.allSatisfy { Base64URL.decode(String(UnicodeScalar($0)) + "A") != nil })
            }
        }
        #expect(Base64URL.encodeInByteOrder([0, 0, 0]) == "----")
        #expect(Base64URL.encodeInByteOrder([0xff, 0xff, 0xff]) == "zzzz")
    }

    @Test("base64url decoding accepts exactly the canonical texts: every short text over a mixed alphabet")
    func base64urlStrictness() {
        // A bit-at-a-time reference: canonical unpadded base64url, nil for anything else.
        func reference(_ text: [UInt8]) -> [UInt8]? {
            let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
            guard text.count % 4 != 1 else { return nil }
            var bits: [Bool] = []
            for byte in text {
                guard let value = alphabet.firstIndex(of: byte) else { return nil }
                for shift in (0..<6).reversed() { bits.append(value >> shift & 1 == 1) }
            }
            let whole = bits.count / 8 * 8
            guard !bits[whole...].contains(true) else { return nil }
            return stride(from: 0, to: whole, by: 8).map { start in
                bits[start..<start + 8].reduce(UInt8(0)) { $0 << 1 | ($1 ? 1 : 0) }
            }
        }
        // Characters with zero and non-zero low bits, the two URL-safe ones, their standard
        // counterparts, padding, a space, NUL, DEL and a non-ASCII byte.
        let pool = Array("AQgB-_+/= ".utf8) + [0x00, 0x7f, 0xc3]
        var texts: [[UInt8]] = [[]]
        var frontier: [[UInt8]] = [[]]
        for _ in 1...4 {
            frontier = frontier.flatMap { text in pool.map { text + [$0] } }
            texts += frontier
        }
        // Longer texts: a valid body of 8 or 12 characters, then every short tail from above.
        let bodies = [Array("AAECAwQF".utf8), Array("-_-_AQIDBAUG".utf8)]
        texts += bodies.flatMap { body in texts.filter { $0.count <= 3 }.map { body + $0 } }
        for text in texts {
            let decoded = text.withUnsafeBufferPointer { Base64URL.decode(utf8: $0) }
            #expect(decoded == reference(text), "\(text)")
        }
        // Every byte value in every position of a group, and every length from 0 to 70 round-trips.
        for position in 0..<4 {
            for byte in 0...255 {
                var text = Array("AAAAAAAA".utf8)
                text[4 + position] = UInt8(byte)
                let decoded = text.withUnsafeBufferPointer { Base64URL.decode(utf8: $0) }
                #expect(decoded == reference(text))
            }
        }
    }

    @Test("tolerant base64: every variant a client sends decodes to the same bytes")
    func base64TolerantVariants() {
        for length in 0..<70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 250) }
            let url = Base64URL.encode(bytes)
            let padding = String(repeating: "=", count: (4 - url.count % 4) % 4)
            let standard = String(url.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
            // Foundation's own standard base64 is what Android and React Native libraries send.
            #expect(Data(bytes).base64EncodedString() == standard + padding)
            for variant in [url, url + padding, standard, standard + padding] {
                #expect(Base64URL.decodeTolerant(variant) == bytes, "\(variant)")
            }
            if !padding.isEmpty {
                // A wrong count of `=`: one short, one too many.
                #expect(
                    Base64URL.decodeTolerant(url + padding.dropLast()) == (padding.count == 1 ? bytes : nil))
                #expect(Base64URL.decodeTolerant(url + padding + "=") == nil)
            } else {
                #expect(Base64URL.decodeTolerant(url + "=") == nil, "no padding after a whole group")
                #expect(Base64URL.decodeTolerant(url + "==") == nil)
            }
        }
        #expect(Base64URL.decodeTolerant("-_8") == [0xfb, 0xff])
        #expect(Base64URL.decodeTolerant("+/8=") == [0xfb, 0xff])
    }

    @Test(
        "tolerant base64 refuses what is not base64: mixed alphabets, inner padding, whitespace, stray bits")
    func base64TolerantRefusals() {
        for text in [
            "+-8=", "-/8", "_+AA", "a+b_",  // both alphabets in one text
            "AA==AAAA", "AA=A", "A=AA", "=AAA", "===", "==", "=",  // padding not at the end
            "AAA===", "AA===",  // too much padding
            "A", "AAAAA", "AAAAA===",  // a length of 1 mod 4
            " AAAA", "AAAA ", "AA AA", "AAAA\n", "AA\tAA", "AA==\n",  // whitespace anywhere
            "AB", "AB==", "AAB=", "AAB", "+/9=", "-_9",  // non-zero unused bits
            "AA*A", "AA.A", "AA%3D", "AAé=",  // foreign characters
        ] {
            #expect(Base64URL.decodeTolerant(text) == nil, "\(text)")
        }
    }

    @Test("tolerant base64 agrees with a reference model on every short text over a mixed alphabet")
    func base64TolerantModel() {
        // The model: strip one or two `=` when that is exactly what the length needs, refuse a
        // text with both alphabets, map the standard one onto the url one, then decode canonically.
        func canonical(_ text: [UInt8]) -> [UInt8]? {
            text.withUnsafeBufferPointer { Base64URL.decode(utf8: $0) }
        }
        func reference(_ text: [UInt8]) -> [UInt8]? {
            var body = text
            var padding = 0
            while padding < 2, body.last == UInt8(ascii: "=") {
                body.removeLast()
                padding += 1
            }
            if padding > 0, (body.count + padding) % 4 != 0 || body.count % 4 == 0 { return nil }
            let url = body.contains { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
            let standard = body.contains { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/") }
            if url && standard { return nil }
            return canonical(
                body.map {
                    $0 == UInt8(ascii: "+")
                        ? UInt8(ascii: "-") : $0 == UInt8(ascii: "/") ? UInt8(ascii: "_") : $0
                })
        }
        let pool = Array("AQgB-_+/= ".utf8) + [0x00, 0xc3]
        var texts: [[UInt8]] = [[]]
        var frontier: [[UInt8]] = [[]]
        for _ in 1...4 {
            frontier = frontier.flatMap { text in pool.map { text + [$0] } }
            texts += frontier
        }
        let bodies = [Array("AAECAwQF".utf8), Array("-_-_AQIDBAUG".utf8), Array("+/+/AQIDBAUG".utf8)]
        texts += bodies.flatMap { body in texts.filter { $0.count <= 4 }.map { body + $0 } }
        for text in texts {
            let decoded = Base64URL.decodeTolerant(String(decoding: text, as: UTF8.self))
            #expect(decoded == reference(text), "\(text)")
            // Whatever it accepts, it accepts as the bytes of one canonical text.
            if let decoded { #expect(canonical(Array(Base64URL.encode(decoded).utf8)) == decoded) }
        }
    }

    @Test("JSON strings escape quote, backslash, control characters and DEL wherever they stand")
    func jsonQuoting() {
        // The rule byte by byte, as the writer had it before scanning a word at a time.
        func reference(_ text: String) -> [UInt8] {
            var out: [UInt8] = [UInt8(ascii: "\"")]
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "\""): out += Array(#"\""#.utf8)
                case UInt8(ascii: "\\"): out += Array(#"\\"#.utf8)
                case 0x0a: out += Array(#"\n"#.utf8)
                case 0x0d: out += Array(#"\r"#.utf8)
                case 0x09: out += Array(#"\t"#.utf8)
                case 0..<0x20, 0x7f:
                    let hex = Array("0123456789abcdef".utf8)
                    out += Array(#"\u00"#.utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]]
                default: out.append(byte)
                }
            }
            return out + [UInt8(ascii: "\"")]
        }
        // Bytes next to the special ones too: 0x1f/0x20, 0x21/0x23 around the quote, 0x5b/0x5d
        // around the backslash, 0x7e and 0x80+ (as UTF-8 of é) around DEL.
        let specials: [Unicode.Scalar] = [
            "\"", "\\", "\u{00}", "\u{01}", "\n", "\r", "\t", "\u{1f}", "\u{7f}", " ", "!", "#", "[", "]",
            "~",
            "é", "\u{80}", "\u{ff}", "€",
        ]
        for length in 0...19 {
            for fill in ["a", "é"] {
                let base = String(repeating: fill, count: length)
                for special in specials {
                    for position in 0...length {
                        var scalars = Array(base.unicodeScalars)
                        scalars.insert(special, at: position)
                        var text = ""
                        text.unicodeScalars.append(contentsOf: scalars)
                        var bytes: [UInt8] = []
                        JSONWriter.appendQuoted(text, to: &bytes)
                        #expect(bytes == reference(text), "\(Array(text.utf8))")
                    }
                }
            }
        }
    }

    @Test("UTCTimestamp.append writes after what the buffer already holds")
    func timestampAppend() {
        var bytes = Array("{\"ts\":\"".utf8)
        UTCTimestamp.append(seconds: 951_782_400, milliseconds: 5, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"ts":"2000-02-29T00:00:00.005Z""#)
        #expect(UTCTimestamp.dateString(Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29")
    }

    @Test("hex decodes either case and rejects odd lengths and non-digits")
    func hex() {
        #expect(Hex.decode("00fFa0") == [0x00, 0xff, 0xa0])
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
    }

    @Test("system random gives the requested length and does not repeat")
    func random() throws {
        let source = SystemRandom()
        let a = source.bytes(32)
        let b = source.bytes(32)
        #expect(a.count == 32 && b.count == 32)
        #expect(a != b)
        #expect(try source.token(byteCount: 32).count == 43)
        #expect(source.bytes(0).isEmpty)
        // Past getrandom's 256-byte single-read guarantee, and every length up to a word and more.
        let large = source.bytes(100_000)
        #expect(large.count == 100_000 && Set(large).count == 256)
        for count in 1...17 { #expect(source.bytes(count).count == count) }
    }
}

@Suite("ECDSA signature encodings")
struct ECDSASignatureTests {
    @Test("raw r‖s becomes DER with positive minimal integers")
    func rawToDER() throws {
        var raw = [UInt8](repeating: 0, count: 64)
        raw[0] = 0x80  // r's top bit set: needs a leading zero in DER
        raw[31] = 1
        raw[63] = 0x05  // s = 5: leading zeros dropped
        let der = try ECDSASignature.der(fromRaw: raw, curve: .p256)
        #expect(Array(der.prefix(4)) == [0x30, 0x26, 0x02, 0x21])
        #expect(der[4] == 0x00 && der[5] == 0x80)
        #expect(Array(der.suffix(3)) == [0x02, 0x01, 0x05])
    }

    @Test("a P-521 signature uses the long DER length form")
    func longForm() throws {
        let raw = [UInt8](repeating: 0xff, count: 132)
        let der = try ECDSASignature.der(fromRaw: raw, curve: .p521)
        #expect(Array(der.prefix(3)) == [0x30, 0x81, UInt8(der.count - 3)])
    }

    @Test("a raw signature of the wrong length is refused")
    func wrongLength() {
        #expect(throws: CryptoError(.invalidSignatureEncoding, "")) {
            try ECDSASignature.der(fromRaw: [UInt8](repeating: 1, count: 63), curve: .p256)
        }
    }
}
