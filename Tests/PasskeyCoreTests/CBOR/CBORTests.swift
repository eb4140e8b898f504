import CryptoCore
import Kernel
import PasskeyCore
import TestSupport
import Testing

/// Decodes with default limits, expecting failure with `code`.
private func expectFailure(
    _ code: PasskeyError.Code, _ hexInput: String, limits: CBORDecoder.Limits = .init(),
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(throws: PasskeyError(code, ""), "input \(hexInput)", sourceLocation: sourceLocation) {
        try CBORDecoder(limits: limits).decode(hex(hexInput))
    }
}

@Suite("CBOR")
struct CBORTests {
    // MARK: RFC 8949 Appendix A

    /// Appendix A examples inside the supported subset, with the value each must decode to.
    static let appendixA: [(String, CBORValue)] = [
        ("00", 0), ("01", 1), ("0a", 10), ("17", 23), ("1818", 24), ("1819", 25), ("1864", 100),
        ("1903e8", 1000), ("1a000f4240", 1_000_000), ("1b000000e8d4a51000", 1_000_000_000_000),
        ("20", -1), ("29", -10), ("3863", -100), ("3903e7", -1000),
        ("f4", false), ("f5", true), ("f6", .null),
        ("40", .bytes([])), ("4401020304", .bytes([1, 2, 3, 4])),
        ("60", ""), ("6161", "a"), ("6449455446", "IETF"), ("62225c", "\"\\"), ("62c3bc", "\u{fc}"),
        ("63e6b0b4", "\u{6c34}"), ("64f0908591", "\u{10151}"),
        ("80", []), ("83010203", [1, 2, 3]), ("8301820203820405", [1, [2, 3], [4, 5]]),
        (
            "98190102030405060708090a0b0c0d0e0f101112131415161718181819",
            .array((1...25).map { CBORValue.integer(Int64($0)) })
        ),
        ("a0", [:]), ("a201020304", [1: 2, 3: 4]), ("a26161016162820203", ["a": 1, "b": [2, 3]]),
        ("826161a161626163", ["a", ["b": "c"]]),
        ("a56161614161626142616361436164614461656145", ["a": "A", "b": "B", "c": "C", "d": "D", "e": "E"]),
    ]

    @Test(
        "RFC 8949 Appendix A examples in the supported subset decode to their values and re-encode byte for byte"
    )
    func appendixARoundTrip() throws {
        for (encoding, expected) in Self.appendixA {
            let decoded = try CBORDecoder().decode(hex(encoding))
            #expect(decoded == expected, "decoding \(encoding)")
            #expect(Hex.encode(CBOREncoder.encode(decoded)) == encoding, "re-encoding \(encoding)")
        }
    }

    @Test("RFC 8949 Appendix A floats, tags, undefined and simple values are refused as unsupported types")
    func appendixAUnsupported() {
        let unsupported = [
            "f90000", "f98000", "f93c00", "fb3ff199999999999a", "f93e00", "f97bff", "fa47c35000",
            "fa7f7fffff", "fb7e37e43c8800759c", "f90001", "f90400", "f9c400", "fbc010666666666666",
            "f97c00", "f97e00", "f9fc00", "fa7f800000", "fa7fc00000", "faff800000", "fb7ff0000000000000",
            "fb7ff8000000000000", "fbfff0000000000000", "f7", "f0", "f8ff",
            "c074323031332d30332d32315432303a30343a30305a", "c11a514b67b0", "c1fb41d452d9ec200000",
            "d74401020304", "d818456449455446", "d82076687474703a2f2f7777772e6578616d706c652e636f6d",
            "c249010000000000000000", "c349010000000000000000",
        ]
        for encoding in unsupported { expectFailure(.cborUnsupportedType, encoding) }
    }

    @Test("RFC 8949 Appendix A integers beyond Int64 are refused as overflow, Int64's own bounds are kept")
    func appendixAOverflow() throws {
        expectFailure(.cborIntegerOverflow, "1bffffffffffffffff")
        expectFailure(.cborIntegerOverflow, "3bffffffffffffffff")
        expectFailure(.cborIntegerOverflow, "1b8000000000000000")
        expectFailure(.cborIntegerOverflow, "3b8000000000000000")
        #expect(try CBORDecoder().decode(hex("1b7fffffffffffffff")) == .integer(.max))
        #expect(try CBORDecoder().decode(hex("3b7fffffffffffffff")) == .integer(.min))
        #expect(CBOREncoder.encode(.integer(.min)) == hex("3b7fffffffffffffff"))
        #expect(CBOREncoder.encode(.integer(.max)) == hex("1b7fffffffffffffff"))
    }

    @Test("RFC 8949 Appendix A indefinite-length items are refused")
    func appendixAIndefinite() {
        for encoding in [
            "5f42010243030405ff", "7f657374726561646d696e67ff", "9fff", "9f018202039f0405ffff",
            "9f01820203820405ff", "83018202039f0405ff", "83019f0203ff820405",
            "9f0102030405060708090a0b0c0d0e0f101112131415161718181819ff", "bf61610161629f0203ffff",
            "826161bf61626163ff", "bf6346756ef563416d7421ff",
        ] {
            expectFailure(.cborIndefiniteLength, encoding)
        }
    }

    // MARK: Every error code

    @Test("cbor.truncated: input ends inside a header, argument, string or container")
    func truncated() {
        for encoding in [
            "", "18", "19 01", "1a 0102 03", "1b 01020304050607", "42 01", "62 61", "82 01", "a1 01",
            "a2 0102 03",
        ] {
            expectFailure(.cborTruncated, encoding)
        }
    }

    @Test("cbor.truncated without allocation: declared lengths of up to 2^64-1 bytes or items fail at once")
    func hugeDeclaredLengths() {
        // Each of these would ask for exabytes if the decoder trusted the header.
        for encoding in [
            "5bffffffffffffffff", "7bffffffffffffffff", "9bffffffffffffffff", "bbffffffffffffffff",
            "5affffffff00", "9affffffff00", "baffffffff0000", "9b7fffffffffffffff01",
            "bb4000000000000000 0101",
        ] {
            expectFailure(.cborTruncated, encoding)
        }
        // Nested: an array of one array that declares 2^32 elements.
        expectFailure(.cborTruncated, "81 9b0000000100000000 00")
    }

    @Test("cbor.indefinite_length: a stray break byte is refused")
    func strayBreak() {
        expectFailure(.cborIndefiniteLength, "ff")
        expectFailure(.cborIndefiniteLength, "81 ff")
    }

    @Test("cbor.non_minimal: every argument width is refused when a shorter one would do")
    func nonMinimal() {
        for encoding in [
            "1817", "190017", "1900ff", "1a00000017", "1a0000ffff", "1b0000000000000017",
            "1b00000000ffffffff",
            "3817", "390000", "5801 00", "7801 61", "9801 00", "b801 0000", "5900 00", "99 0000",
            "a1 1801 00",  // a non-minimal key inside a map
        ] {
            expectFailure(.cborNonMinimal, encoding)
        }
        // The boundaries themselves are minimal and accepted.
        for encoding in ["1818", "18ff", "190100", "1a00010000", "1b0000000100000000"] {
            #expect(throws: Never.self) { try CBORDecoder().decode(hex(encoding)) }
        }
    }

    @Test(
        "cbor.duplicate_key: repeated integer, text and composite keys are refused, in small and large maps")
    func duplicateKeys() {
        expectFailure(.cborDuplicateKey, "a2 01 02 01 03")
        expectFailure(.cborDuplicateKey, "a2 6161 01 6161 02")
        expectFailure(.cborDuplicateKey, "a2 820102 00 820102 01")
        // Over 16 entries the decoder switches to a hash set; the rule must not change with it.
        var large = CBORMap()
        for key in 0..<40 { large[.integer(Int64(key))] = 0 }
        var bytes = CBOREncoder.encode(.map(large))
        bytes[0] = 0xb8
        bytes.insert(41, at: 1)
        bytes += [0x05, 0x00]  // key 5 again
        #expect(throws: PasskeyError(.cborDuplicateKey, "")) { try CBORDecoder().decode(bytes) }
        // The same key in different maps is not a duplicate.
        #expect(throws: Never.self) { try CBORDecoder().decode(hex("82 a10100 a10100")) }
    }

    @Test("cbor.unsorted_keys: canonical map order is enforced only when asked")
    func unsortedKeys() throws {
        let strict = CBORDecoder.Limits(requireCanonicalMapOrder: true)
        expectFailure(.cborUnsortedKeys, "a2 03 04 01 02", limits: strict)
        // CTAP2: major type first (integers before negatives before text), then length, then bytes.
        expectFailure(.cborUnsortedKeys, "a2 20 00 01 00", limits: strict)
        expectFailure(.cborUnsortedKeys, "a2 6162 00 6161 00", limits: strict)
        expectFailure(.cborUnsortedKeys, "a2 626161 00 6162 00", limits: strict)
        #expect(throws: Never.self) {
            try CBORDecoder(limits: strict).decode(hex("a5 01 02 03 26 20 01 21 40 22 40"))
        }
        #expect(throws: Never.self) { try CBORDecoder(limits: strict).decode(hex("a2 6162 00 626161 00")) }
        // Default: order is not enforced, the map keeps its wire order.
        let decoded = try CBORDecoder().decode(hex("a2 03 04 01 02"))
        #expect(decoded.mapValue?.map(\.key) == [3, 1])
    }

    @Test("cbor.depth: 16 levels decode, 17 fail, and a 100,000-level bomb fails fast without deep recursion")
    func depth() throws {
        let sixteen = [UInt8](repeating: 0x81, count: 16) + [0x00]
        #expect(throws: Never.self) { try CBORDecoder().decode(sixteen) }
        let seventeen = [UInt8](repeating: 0x81, count: 17) + [0x00]
        #expect(throws: PasskeyError(.cborDepth, "")) { try CBORDecoder().decode(seventeen) }
        let bigInput = CBORDecoder.Limits(maxInputBytes: 1 << 20)
        let arrayBomb = [UInt8](repeating: 0x81, count: 100_000) + [0x00]
        #expect(throws: PasskeyError(.cborDepth, "")) { try CBORDecoder(limits: bigInput).decode(arrayBomb) }
        let mapBomb = Array([[UInt8]](repeating: [0xa1, 0x00], count: 50_000).joined()) + [0x00]
        #expect(throws: PasskeyError(.cborDepth, "")) {
            try CBORDecoder(limits: bigInput).decode(mapBomb)
        }
        // A custom limit applies, and absurd limits are capped so recursion stays bounded.
        #expect(throws: PasskeyError(.cborDepth, "")) {
            try CBORDecoder(limits: .init(maxDepth: 2)).decode(hex("81818100"))
        }
        #expect(throws: PasskeyError(.cborDepth, "")) {
            try CBORDecoder(limits: .init(maxDepth: .max, maxInputBytes: 1 << 20)).decode(arrayBomb)
        }
    }

    @Test("cbor.invalid_utf8: bad sequences, overlong forms, surrogates and cut-off characters are refused")
    func invalidUTF8() {
        for encoding in ["62c328", "61ff", "62c0af", "63eda080", "61c3", "64f4908080", "6180"] {
            expectFailure(.cborInvalidUTF8, encoding)
        }
    }

    @Test("cbor.trailing_bytes: decode wants exactly one item, decodePrefix reports what it used")
    func trailingBytes() throws {
        expectFailure(.cborTrailingBytes, "00 00")
        expectFailure(.cborTrailingBytes, "a0 ff")
        let (value, consumed) = try CBORDecoder().decodePrefix(hex("a201020304 deadbeef"))
        #expect(value == [1: 2, 3: 4])
        #expect(consumed == 5)
        let slice = hex("ff ff 6161 00")[2...]
        let prefix = try CBORDecoder().decodePrefix(slice)
        #expect(prefix.value == "a" && prefix.consumed == 2)
    }

    @Test("cbor.too_large: input over the byte limit is refused before decoding")
    func tooLarge() {
        let limits = CBORDecoder.Limits(maxInputBytes: 8)
        expectFailure(.cborTooLarge, "48 0102030405060708", limits: limits)
        #expect(throws: Never.self) { try CBORDecoder(limits: limits).decode(hex("47 01020304050607")) }
    }

    @Test("cbor.malformed: reserved additional information and indefinite integers are not well formed")
    func malformed() {
        for encoding in ["1c", "1d", "1e", "1f", "3c", "3f", "5c", "7d", "9e", "bc", "fc", "fd", "fe"] {
            expectFailure(.cborMalformed, encoding)
        }
    }

    @Test("every CBOR error code is reachable from a crafted input")
    func everyCBORCodeCovered() {
        // This list must grow with the enum: a new cbor.* code needs an input above.
        let covered: Set<PasskeyError.Code> = [
            .cborTruncated, .cborMalformed, .cborIndefiniteLength, .cborNonMinimal, .cborDuplicateKey,
            .cborUnsortedKeys, .cborDepth, .cborInvalidUTF8, .cborTrailingBytes, .cborUnsupportedType,
            .cborIntegerOverflow, .cborTooLarge,
        ]
        let all = Set(PasskeyError.Code.allCases.filter { $0.rawValue.hasPrefix("cbor.") })
        #expect(all == covered)
    }

    // MARK: Encoder

    @Test("the encoder writes CTAP2 canonical order whatever the insertion order")
    func canonicalEncoding() throws {
        let map: CBORValue = ["b": 1, -1: 2, 3: 3, "a": 4, 1: 5, -2: 6, "aa": 7, 24: 8]
        let encoded = CBOREncoder.encode(map)
        // Unsigned keys (1, 3, 24: 24 is longer), then negatives (-1, -2), then text by length then bytes.
        #expect(
            Hex.encode(encoded) == "a8" + "0105" + "0303" + "181808" + "2002" + "2106" + "616104" + "616201"
                + "62616107")
        // The canonical output passes the strict decoder and decodes back to the same entries.
        let strict = CBORDecoder(limits: .init(requireCanonicalMapOrder: true))
        let decoded = try strict.decode(encoded)
        #expect(Set(decoded.mapValue!.map { $0 }) == Set(map.mapValue!.map { $0 }))
    }

    @Test("encoder argument widths switch exactly at 24, 256, 65536 and 2^32")
    func encoderWidths() {
        let cases: [(Int64, String)] = [
            (23, "17"), (24, "1818"), (255, "18ff"), (256, "190100"), (65535, "19ffff"),
            (65536, "1a00010000"),
            (4_294_967_295, "1affffffff"), (4_294_967_296, "1b0000000100000000"), (-24, "37"), (-25, "3818"),
            (-256, "38ff"), (-257, "390100"),
        ]
        for (value, expected) in cases {
            #expect(Hex.encode(CBOREncoder.encode(.integer(value))) == expected)
        }
        #expect(CBOREncoder.encode(.bytes([UInt8](repeating: 0, count: 24))).prefix(2) == [0x58, 24])
        #expect(
            CBOREncoder.encode(.text(String(repeating: "x", count: 256))).prefix(3) == [0x79, 0x01, 0x00])
    }

    @Test("map subscripts address keys, never positions, and setting nil removes")
    func mapSubscripts() {
        var map: CBORMap = [3: "three", 1: "one", "k": true]
        #expect(map[1] == "one")
        #expect(map[label: 3] == "three")
        #expect(map[name: "k"] == true)
        map[1] = nil
        #expect(map.count == 2 && map[1] == nil)
        map[3] = "drei"
        #expect(map.map(\.key) == [3, "k"] && map[3] == "drei")
    }

    // MARK: Fuzzing

    /// Valid encodings to mutate: the Appendix A subset plus WebAuthn-shaped maps.
    static var seeds: [[UInt8]] {
        var seeds = appendixA.map { hex($0.0) }
        seeds.append(CBOREncoder.encode(["fmt": "none", "attStmt": [:], "authData": .bytes(Array(0..<64))]))
        seeds.append(
            CBOREncoder.encode([1: 2, 3: -7, -1: 1, -2: .bytes(Array(0..<32)), -3: .bytes(Array(32..<64))]))
        seeds.append(
            CBOREncoder.encode(["credProtect": 2, "hmac-secret": true, "list": [[1, "x"], [:], .null]]))
        return seeds
    }

    /// Decodes `input`; on success checks that decoding is consistent with encoding.
    private func checkNoCrash(_ input: [UInt8], decoder: CBORDecoder) {
        guard let result = try? decoder.decodePrefix(input) else { return }
        let (value, consumed) = result
        #expect(consumed > 0 && consumed <= input.count)
        // Anything accepted is canonical apart from map order, so re-encoding is stable and decodable.
        let encoded = CBOREncoder.encode(value)
        #expect(encoded.count == consumed)
        #expect((try? decoder.decode(encoded)).map { CBOREncoder.encode($0) } == encoded)
    }

    @Test(
        "20,000 random inputs never crash the decoder, and whatever it accepts re-encodes to the same length")
    func randomFuzz() {
        var generator = SplitMix64(seed: 0x5eed_cb0f)
        let decoder = CBORDecoder()
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...48, using: &generator)
            var input = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // Bias half of the inputs towards container headers so nesting paths are exercised.
            if !input.isEmpty && Bool.random(using: &generator) {
                input[0] = [0x81, 0x82, 0xa1, 0xa2, 0x98, 0xb8][Int.random(in: 0..<6, using: &generator)]
            }
            checkNoCrash(input, decoder: decoder)
        }
    }

    @Test("20,000 single-byte mutations of valid encodings never crash the decoder")
    func mutationFuzz() {
        var generator = SplitMix64(seed: 0xc0ffee)
        let seeds = Self.seeds
        let decoders = [
            CBORDecoder(), CBORDecoder(limits: .init(maxDepth: 2, requireCanonicalMapOrder: true)),
        ]
        for round in 0..<20_000 {
            var input = seeds[Int.random(in: 0..<seeds.count, using: &generator)]
            let position = Int.random(in: 0..<input.count, using: &generator)
            // Alternate between a bit flip and a fresh random byte at the chosen position.
            if round.isMultiple(of: 2) {
                input[position] ^= 1 << UInt8.random(in: 0...7, using: &generator)
            } else {
                input[position] = UInt8.random(in: 0...255, using: &generator)
            }
            checkNoCrash(input, decoder: decoders[round % 2])
        }
    }

    @Test("truncating a valid encoding at every length fails with cbor.truncated, never a crash")
    func everyTruncation() {
        for seed in Self.seeds where seed.count > 1 {
            for length in 0..<seed.count {
                #expect(throws: PasskeyError(.cborTruncated, "")) {
                    try CBORDecoder().decode(Array(seed.prefix(length)))
                }
            }
        }
    }
}
