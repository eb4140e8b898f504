import CryptoCore
import Kernel
import TestSupport
import Testing

/// Decodes whitespace-separated hex in a test; a typo is a broken test, so it traps.
private func bytes(_ text: String) -> [UInt8] {
    guard let decoded = Hex.decode(text.filter { !$0.isWhitespace }) else { fatalError("bad hex: \(text)") }
    return decoded
}

/// Expects `body` to throw CryptoError with `code`.
func expectCode(
    _ code: CryptoError.Code, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record(
            "expected \(code.rawValue), got success. \(comment?.rawValue ?? "")",
            sourceLocation: sourceLocation)
    } catch let error as CryptoError {
        #expect(error.code == code, comment, sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected CryptoError, got \(error)", sourceLocation: sourceLocation)
    }
}

@Suite("CryptoCore DER reader")
struct DERReaderTests {
    // MARK: Types

    @Test("reads INTEGER as minimal two's-complement bytes and as Int, including negatives and Int extremes")
    func integers() throws {
        let cases: [(String, Int)] = [
            ("020100", 0), ("02017f", 127), ("02020080", 128), ("0201ff", -1), ("020180", -128),
            ("0202ff7f", -129), ("02087fffffffffffffff", Int.max), ("02088000000000000000", Int.min),
        ]
        for (encoding, value) in cases {
            var reader = DERReader(bytes(encoding))
            #expect(try reader.readInteger() == value, "\(encoding)")
            #expect(reader.isAtEnd)
            #expect(
                try DERReader.single(bytes(encoding)).integerBytes() == Array(bytes(encoding).dropFirst(2)))
        }
        // A 16-byte serial is fine as bytes but not as Int.
        let big = bytes("021000c0ffee0123456789aabbccddeeff01")
        #expect(try DERReader.single(big).integerBytes().count == 16)
        expectCode(.derIntegerOverflow) { _ = try DERReader.single(big).integer() }
    }

    @Test("reads BOOLEAN, NULL, ENUMERATED, OCTET STRING, BIT STRING and the three string types")
    func primitives() throws {
        var reader = DERReader(
            DERWriter.boolean(true) + DERWriter.boolean(false) + DERWriter.null + DERWriter.enumerated(2)
                + DERWriter.octetString([1, 2, 3]) + DERWriter.bitString([0xa0], unusedBits: 5)
                + DERWriter.utf8String("Portvakt ✓") + DERWriter.printableString("Authenticator Attestation")
                + DERWriter.ia5String("a@example.org"))
        #expect(try reader.readBoolean() == true)
        #expect(try reader.readBoolean() == false)
        try reader.readNull()
        #expect(try reader.readEnumerated() == 2)
        #expect(try reader.readOctetString() == [1, 2, 3])
        let bits = try reader.readBitString()
        #expect(bits == DERBitString(bytes: [0xa0], unusedBits: 5))
        #expect(bits.isSet(0) && !bits.isSet(1) && bits.isSet(2) && !bits.isSet(3) && !bits.isSet(8))
        #expect(try reader.readString() == "Portvakt ✓")
        #expect(try reader.readString() == "Authenticator Attestation")
        #expect(try reader.readString() == "a@example.org")
        try reader.finish()
    }

    @Test("decodes OIDs to dotted form, including the WebAuthn extension OIDs and large arcs")
    func objectIdentifiers() throws {
        let oids = [
            "1.3.6.1.4.1.45724.1.1.4", "1.2.840.113635.100.8.2", "1.3.6.1.4.1.11129.2.1.17", "2.23.133.2.1",
            "2.5.29.19", "0.9.2342.19200300.100.1.1", "2.999.3", "1.2.840.10045.4.3.2",
            "1.2.18446744073709551615",
        ]
        for oid in oids {
            #expect(try DERReader.single(DERWriter.objectIdentifier(oid)).objectIdentifier() == oid)
        }
        // A 65-bit arc (2^65 - 1) is refused rather than wrapped.
        expectCode(.derMalformed) {
            _ = try DERReader.single(bytes("060b 2a 83ffffffffffffffff7f")).objectIdentifier()
        }
        #expect(try DERReader.single(bytes("0603550403")).objectIdentifier() == "2.5.4.3")
    }

    @Test("reads nested SEQUENCE and SET with EXPLICIT and IMPLICIT context tags")
    func nesting() throws {
        let encoded = DERWriter.sequence([
            DERWriter.set([DERWriter.integer(1), DERWriter.integer(2)]),
            DERWriter.explicit(0, DERWriter.octetString([9])),
            DERWriter.contextSpecific(2, constructed: false, Array("example.org".utf8)),
        ])
        var outer = DERReader(encoded)
        var sequence = try outer.readSequence()
        var set = try sequence.readSet()
        #expect(try set.readInteger() == 1)
        #expect(try set.readInteger() == 2)
        try set.finish()
        #expect(try sequence.readOptionalExplicit(1) == nil)
        var tagged = try sequence.readExplicit(0)
        #expect(try tagged.readOctetString() == [9])
        try tagged.finish()
        #expect(try sequence.readImplicit(2, as: .ia5String).string() == "example.org")
        try sequence.finish()
        try outer.finish()
    }

    @Test("reads high tag numbers such as Android's [701] and [709], and peeks without consuming")
    func highTagNumbers() throws {
        let list = DERWriter.sequence([
            DERWriter.explicit(1, DERWriter.set([DERWriter.integer(2)])),
            DERWriter.explicit(701, DERWriter.integer(1_700_000_000_000)),
            DERWriter.explicit(709, DERWriter.octetString([0xAA])),
        ])
        // [701] constructed is bf 85 3d: the high form with two base-128 digits.
        #expect(list.contains(0xbf) && list[list.firstIndex(of: 0xbf)! + 1] == 0x85)
        var reader = try DERReader.single(list).contents()
        var numbers: [UInt32] = []
        while let tag = try reader.peekTag() {
            #expect(tag.tagClass == .contextSpecific && tag.isConstructed)
            let element = try reader.readElement()
            numbers.append(element.tag.number)
            if element.tag.number == 701 {
                var inner = try element.contents()
                #expect(try inner.readInteger() == 1_700_000_000_000)
            }
        }
        #expect(numbers == [1, 701, 709])
    }

    @Test("reads a long-form length and keeps the full encoding of an element")
    func longLengthsAndEncoding() throws {
        let payload = [UInt8](repeating: 7, count: 300)
        let encoded = DERWriter.octetString(payload)
        #expect(Array(encoded.prefix(4)) == [0x04, 0x82, 0x01, 0x2c])
        let element = try DERReader.single(encoded)
        #expect(try element.octetString() == payload)
        #expect(element.encoded == encoded && element.offset == 0)
    }

    @Test("reads the WebAuthn extension shapes: FIDO AAGUID, Apple nonce, TPM SAN directoryName")
    func attestationShapes() throws {
        let aaguid = [UInt8](0..<16)
        #expect(try DERReader.single(DERWriter.octetString(aaguid)).octetString() == aaguid)

        let nonce = [UInt8](repeating: 0x5A, count: 32)
        var apple = DERReader(DERWriter.sequence([DERWriter.explicit(1, DERWriter.octetString(nonce))]))
        var sequence = try apple.readSequence()
        var tagged = try sequence.readExplicit(1)
        #expect(try tagged.readOctetString() == nonce)

        // GeneralNames { directoryName [4] Name { RDN SET { type OID, value UTF8String } } }
        let attribute = { (oid: String, value: String) in
            DERWriter.set([
                DERWriter.sequence([DERWriter.objectIdentifier(oid), DERWriter.utf8String(value)])
            ])
        }
        let san = DERWriter.sequence([
            DERWriter.explicit(
                4,
                DERWriter.sequence([
                    attribute("2.23.133.2.1", "id:4E544300"), attribute("2.23.133.2.2", "NPCT6xx"),
                    attribute("2.23.133.2.3", "id:00070002"),
                ]))
        ])
        var names = try DERReader.single(san).contents()
        var directoryName = try names.readExplicit(4)
        var name = try directoryName.readSequence()
        var found: [String: String] = [:]
        while !name.isAtEnd {
            var rdn = try name.readSet()
            var pair = try rdn.readSequence()
            found[try pair.readObjectIdentifier()] = try pair.readString()
        }
        #expect(
            found == [
                "2.23.133.2.1": "id:4E544300", "2.23.133.2.2": "NPCT6xx", "2.23.133.2.3": "id:00070002",
            ])
    }

    // MARK: Errors

    @Test(
        "each DER rule violation has its crypto.der_* code",
        arguments: [
            // Lengths.
            ("indefinite length", "3080 0000", CryptoError.Code.derMalformed),
            ("long form for a short length", "04 81 01 00", .derMalformed),
            ("length with a leading zero byte", "04 82 00 80", .derMalformed),
            ("five-byte length", "04 85 0100000000", .derMalformed),
            ("reserved length byte 0xff", "04 ff", .derMalformed),
            ("high tag form for a small number", "9f 1e 00", .derMalformed),
            ("high tag number with a leading zero digit", "9f 80 20 00", .derMalformed),
            ("high tag number too large", "9f ff ff ff ff 7f 00", .derMalformed),
            // Truncation.
            ("empty input", "", .derTruncated),
            ("length beyond the input", "04 05 0102", .derTruncated),
            ("tag without a length", "04", .derTruncated),
            ("high tag cut short", "9f 85", .derTruncated),
            ("long length cut short", "04 82 01", .derTruncated),
            ("huge announced length", "04 84 ffffffff 00", .derTruncated),
            // Trailing data.
            ("two elements where one is expected", "0500 0500", .derTrailingData),
        ])
    func structuralErrors(_ name: String, _ input: String, _ code: CryptoError.Code) {
        expectCode(code, Comment(rawValue: name)) { _ = try DERReader.single(bytes(input)) }
    }

    @Test(
        "each malformed content has its crypto.der_* code",
        arguments: [
            ("non-minimal positive INTEGER", "02 02 007f", CryptoError.Code.derMalformed),
            ("non-minimal negative INTEGER", "02 02 ff80", .derMalformed),
            ("empty INTEGER", "02 00", .derMalformed),
            ("BOOLEAN 0x01", "01 01 01", .derMalformed),
            ("two-byte BOOLEAN", "01 02 ff00", .derMalformed),
            ("NULL with contents", "05 01 00", .derMalformed),
            ("BIT STRING without unused-bits byte", "03 00", .derMalformed),
            ("BIT STRING with eight unused bits", "03 02 08 00", .derMalformed),
            ("empty BIT STRING claiming unused bits", "03 01 01", .derMalformed),
            ("BIT STRING with set padding bits", "03 02 01 01", .derMalformed),
            ("empty OID", "06 00", .derMalformed),
            ("OID arc with a leading 0x80", "06 03 2a 80 01", .derMalformed),
            ("OID ending inside an arc", "06 02 2a 86", .derMalformed),
            ("invalid UTF-8", "0c 02 c328", .derMalformed),
            ("PrintableString with '@'", "13 03 614062", .derMalformed),
            ("IA5String with a high byte", "16 01 e9", .derMalformed),
            ("constructed OCTET STRING", "24 03 040101", .derUnexpectedTag),
        ])
    func contentErrors(_ name: String, _ input: String, _ code: CryptoError.Code) {
        expectCode(code, Comment(rawValue: name)) {
            let element = try DERReader.single(bytes(input))
            switch element.tag {
            case .integer: _ = try element.integer()
            case .boolean: _ = try element.boolean()
            case .null: try element.null()
            case .bitString: _ = try element.bitString()
            case .objectIdentifier: _ = try element.objectIdentifier()
            case .utf8String, .printableString, .ia5String: _ = try element.string()
            case DERTag(.universal, number: 4, constructed: true): _ = try element.octetString()
            default: Issue.record("unhandled test input \(name)")
            }
        }
    }

    @Test("typed reads refuse the wrong tag and leave the reader where it was")
    func unexpectedTagLeavesPosition() throws {
        var reader = DERReader(DERWriter.integer(5))
        expectCode(.derUnexpectedTag) { _ = try reader.readOctetString() }
        expectCode(.derUnexpectedTag) { _ = try reader.readSequence() }
        expectCode(.derUnexpectedTag) { _ = try reader.readExplicit(0) }
        expectCode(.derUnexpectedTag) { _ = try reader.readString() }
        #expect(try reader.readInteger() == 5)
        expectCode(.derUnexpectedTag) { _ = try DERReader.single(DERWriter.integer(5)).contents() }
        expectCode(.derUnexpectedTag) {
            _ = try DERReader.single(DERWriter.contextSpecific(0, constructed: true, [])).retagged(
                as: .integer)
        }
    }

    @Test("unread bytes inside a SEQUENCE are trailing data")
    func trailingInsideSequence() throws {
        var reader = try DERReader.single(DERWriter.sequence([DERWriter.integer(1), DERWriter.null]))
            .contents()
        _ = try reader.readInteger()
        #expect(reader.remainingCount == 2)
        expectCode(.derTrailingData) { try reader.finish() }
    }

    @Test("nesting past the depth limit is crypto.der_too_deep, and the limit is clamped")
    func depthLimit() throws {
        var nested = DERWriter.null
        for _ in 0..<40 { nested = DERWriter.sequence([nested]) }
        /// Descends as far as the reader allows, returning how many levels were entered.
        func descend(_ reader: DERReader) throws(CryptoError) -> Int {
            var reader = reader
            var levels = 0
            while try reader.peekTag() == .sequence {
                reader = try reader.readSequence()
                levels += 1
            }
            return levels
        }
        expectCode(.derTooDeep) { _ = try descend(DERReader(nested)) }
        #expect(try descend(DERReader(nested, maximumDepth: 64)) == 40)
        expectCode(.derTooDeep) { _ = try descend(DERReader(nested, maximumDepth: 3)) }
        #expect(DERReader(nested, maximumDepth: 1_000_000).maximumDepth == DERReader.hardMaximumDepth)
    }

    @Test("every crypto.der_* code is exercised by a test above")
    func everyCodeCovered() {
        let covered: Set<CryptoError.Code> = [
            .derMalformed, .derTruncated, .derUnexpectedTag, .derTrailingData, .derTooDeep,
            .derIntegerOverflow,
        ]
        #expect(Set(CryptoError.Code.allCases.filter { $0.rawValue.hasPrefix("crypto.der_") }) == covered)
    }

    // MARK: Fuzz

    @Test("50,000 random and mutated inputs never crash the reader (seeded, reproducible)")
    func fuzz() {
        var random = SplitMix64(seed: 0x5045_5254_4445_5231)
        let seeds: [[UInt8]] = [
            DERWriter.sequence([
                DERWriter.explicit(701, DERWriter.integer(3)), DERWriter.objectIdentifier("1.2.3.4"),
            ]
            ),
            DERWriter.sequence([
                DERWriter.set([DERWriter.utf8String("x")]), DERWriter.bitString([0x80], unusedBits: 7),
            ]),
        ]
        for round in 0..<50_000 {
            var input: [UInt8]
            if round % 2 == 0 {
                input = (0..<Int.random(in: 0...48, using: &random)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                }
            } else {
                input = seeds[round % seeds.count]
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    input[Int.random(in: 0..<input.count, using: &random)] = UInt8.random(
                        in: 0...255, using: &random)
                }
            }
            Self.walk(DERReader(input, maximumDepth: 8))
        }
    }

    /// Reads everything, decoding each element every way, and descends into constructed ones.
    private static func walk(_ reader: DERReader) {
        var reader = reader
        while !reader.isAtEnd {
            guard let element = try? reader.readElement() else { return }
            _ = try? element.integer()
            _ = try? element.integerBytes()
            _ = try? element.boolean()
            _ = try? element.bitString()
            _ = try? element.objectIdentifier()
            _ = try? element.string()
            _ = try? element.octetString()
            if let inner = try? element.contents() { walk(inner) }
        }
    }
}
