import Foundation
import Testing

@testable import MLDSA

/// ML-DSA-44, -65 and -87 against signatures made by dilithium-py (Tests/Fixtures), an
/// independent FIPS 204 implementation: every valid one verifies, and each kind of damage is
/// refused.
@Suite("ML-DSA vectors (dilithium-py)")
struct MLDSAVectorTests {
    struct Vector: Sendable {
        let message: [UInt8]
        let context: [UInt8]
        let signature: [UInt8]
    }

    struct ParameterSetVectors: Sendable, CustomTestStringConvertible {
        let parameterSet: MLDSAParameterSet
        let publicKey: [UInt8]
        let vectors: [Vector]
        let zTooLarge: Vector
        var testDescription: String { parameterSet.rawValue }
        var key: MLDSAPublicKey { MLDSAPublicKey(parameterSet: parameterSet, encoded: publicKey)! }
        /// The first vector: a non-empty message, an empty context.
        var first: Vector { vectors[0] }
    }

    static let all: [ParameterSetVectors] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/mldsa-dilithium-py-vectors.json")
        // A missing or broken fixture is a broken checkout: trap with the reason.
        let json = try! JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
        return (json["parameterSets"] as! [[String: Any]]).map { entry in
            func vector(_ item: [String: String]) -> Vector {
                Vector(
                    message: hex(item["message"]!), context: hex(item["context"] ?? ""),
                    signature: hex(item["signature"]!))
            }
            return ParameterSetVectors(
                parameterSet: MLDSAParameterSet(rawValue: entry["name"] as! String)!,
                publicKey: hex(entry["publicKey"] as! String),
                vectors: (entry["vectors"] as! [[String: String]]).map(vector),
                zTooLarge: vector(entry["zTooLarge"] as! [String: String]))
        }
    }()

    static func flipped(_ bytes: [UInt8], bit: Int) -> [UInt8] {
        var copy = bytes
        copy[bit / 8] ^= 1 << UInt8(bit % 8)
        return copy
    }

    @Test("every parameter set is in the fixture, with the sizes of FIPS 204 Table 2")
    func sizes() {
        #expect(Self.all.map(\.parameterSet) == MLDSAParameterSet.allCases)
        let sizes = Self.all.map { [$0.publicKey.count, $0.first.signature.count] }
        #expect(sizes == [[1312, 2420], [1952, 3309], [2592, 4627]])
        for entry in Self.all {
            #expect(entry.parameterSet.publicKeyByteCount == entry.publicKey.count)
            #expect(entry.parameterSet.signatureByteCount == entry.first.signature.count)
        }
    }

    @Test(
        "dilithium-py's signatures verify: empty, long and 255-byte contexts, an empty message",
        arguments: all)
    func valid(_ entry: ParameterSetVectors) {
        for vector in entry.vectors {
            #expect(
                entry.key.verify(
                    signature: vector.signature, message: vector.message, context: vector.context))
        }
    }

    @Test("a flipped bit in the signature is refused: in c̃, in z and in the hints", arguments: all)
    func flippedSignature(_ entry: ParameterSetVectors) {
        let signature = entry.first.signature
        let hintStart = signature.count - entry.parameterSet.omega - entry.parameterSet.k
        for bit in [
            0, 8 * entry.parameterSet.cTildeByteCount + 3, 8 * (hintStart - 1) + 7, 8 * hintStart,
            signature.count * 8 - 1,
        ] {
            #expect(
                !entry.key.verify(
                    signature: Self.flipped(signature, bit: bit), message: entry.first.message), "bit \(bit)")
        }
    }

    @Test("a flipped bit in the message or the context is refused", arguments: all)
    func flippedMessage(_ entry: ParameterSetVectors) {
        let vector = entry.first
        for bit in [0, vector.message.count * 8 - 1] {
            #expect(
                !entry.key.verify(
                    signature: vector.signature, message: Self.flipped(vector.message, bit: bit)))
        }
        #expect(!entry.key.verify(signature: vector.signature, message: vector.message + [0]))
        // A context the signer did not use is a different message (M′ carries it).
        #expect(!entry.key.verify(signature: vector.signature, message: vector.message, context: [0]))
        let withContext = entry.vectors[2]
        #expect(!entry.key.verify(signature: withContext.signature, message: withContext.message))
    }

    @Test("a flipped bit in the public key is refused: in ρ and in t₁", arguments: all)
    func flippedKey(_ entry: ParameterSetVectors) {
        for bit in [0, 255, 256, entry.publicKey.count * 8 - 1] {
            let key = MLDSAPublicKey(
                parameterSet: entry.parameterSet, encoded: Self.flipped(entry.publicKey, bit: bit))!
            #expect(!key.verify(signature: entry.first.signature, message: entry.first.message), "bit \(bit)")
        }
    }

    @Test(
        "wrong lengths: a key of another length is no key, a signature of another length is false",
        arguments: all)
    func lengths(_ entry: ParameterSetVectors) {
        #expect(MLDSAPublicKey(parameterSet: entry.parameterSet, encoded: entry.publicKey + [0]) == nil)
        #expect(
            MLDSAPublicKey(parameterSet: entry.parameterSet, encoded: Array(entry.publicKey.dropLast()))
                == nil)
        #expect(MLDSAPublicKey(parameterSet: entry.parameterSet, encoded: []) == nil)
        let signature = entry.first.signature
        #expect(!entry.key.verify(signature: signature + [0], message: entry.first.message))
        #expect(!entry.key.verify(signature: Array(signature.dropLast()), message: entry.first.message))
        #expect(!entry.key.verify(signature: [], message: entry.first.message))
        // Another parameter set's key of the right length for this one does not exist; its
        // signatures are the wrong length for this key.
        for other in Self.all where other.parameterSet != entry.parameterSet {
            #expect(MLDSAPublicKey(parameterSet: entry.parameterSet, encoded: other.publicKey) == nil)
            #expect(!entry.key.verify(signature: other.first.signature, message: other.first.message))
        }
        // A context longer than 255 bytes cannot be encoded in M′.
        #expect(
            !entry.key.verify(
                signature: signature, message: entry.first.message, context: [UInt8](repeating: 0, count: 256)
            ))
    }

    @Test("‖z‖∞ ≥ γ₁ − β is refused: a signature valid in every other respect", arguments: all)
    func zTooLarge(_ entry: ParameterSetVectors) {
        #expect(!entry.key.verify(signature: entry.zTooLarge.signature, message: entry.zTooLarge.message))
    }

    // MARK: Hint encoding (Algorithm 21)

    /// The signature's hint bytes: ω index bytes, then k running end offsets.
    static func hintLayout(_ entry: ParameterSetVectors) -> (start: Int, omega: Int, k: Int, total: Int) {
        let signature = entry.first.signature
        let start = signature.count - entry.parameterSet.omega - entry.parameterSet.k
        return (start, entry.parameterSet.omega, entry.parameterSet.k, Int(signature[signature.count - 1]))
    }

    @Test(
        "hints: a nonzero byte after the last index is refused (it would encode the same hints)",
        arguments: all)
    func nonzeroTail(_ entry: ParameterSetVectors) throws {
        let layout = Self.hintLayout(entry)
        try #require(layout.total < layout.omega)
        var signature = entry.first.signature
        signature[layout.start + layout.total] = 1
        #expect(!entry.key.verify(signature: signature, message: entry.first.message))
    }

    @Test(
        "hints: a repeated index within a polynomial is refused (the same hints, encoded twice)",
        arguments: all)
    func repeatedIndex(_ entry: ParameterSetVectors) throws {
        let layout = Self.hintLayout(entry)
        try #require(layout.total < layout.omega)
        var signature = entry.first.signature
        let ends = (0..<layout.k).map { Int(signature[layout.start + layout.omega + $0]) }
        // The first polynomial with a hint: repeat its first index, shifting the rest along.
        let polynomial = try #require((0..<layout.k).first { ends[$0] > ($0 == 0 ? 0 : ends[$0 - 1]) })
        let first = polynomial == 0 ? 0 : ends[polynomial - 1]
        var indices = Array(signature[layout.start..<(layout.start + layout.total)])
        indices.insert(indices[first], at: first)
        signature.replaceSubrange(layout.start..<(layout.start + indices.count), with: indices)
        for i in polynomial..<layout.k { signature[layout.start + layout.omega + i] += 1 }
        #expect(!entry.key.verify(signature: signature, message: entry.first.message))
    }

    @Test("hints: indices out of order within a polynomial are refused", arguments: all)
    func decreasingIndices(_ entry: ParameterSetVectors) throws {
        let layout = Self.hintLayout(entry)
        var signature = entry.first.signature
        let ends = (0..<layout.k).map { Int(signature[layout.start + layout.omega + $0]) }
        let polynomial = try #require(
            (0..<layout.k).first { ends[$0] - ($0 == 0 ? 0 : ends[$0 - 1]) >= 2 })
        let first = layout.start + (polynomial == 0 ? 0 : ends[polynomial - 1])
        signature.swapAt(first, first + 1)
        #expect(!entry.key.verify(signature: signature, message: entry.first.message))
    }

    @Test("hints: end offsets that decrease, or pass ω (more hints than ω), are refused", arguments: all)
    func badOffsets(_ entry: ParameterSetVectors) {
        let layout = Self.hintLayout(entry)
        let offsets = layout.start + layout.omega
        var tooMany = entry.first.signature
        tooMany[offsets + layout.k - 1] = UInt8(layout.omega + 1)
        #expect(!entry.key.verify(signature: tooMany, message: entry.first.message))
        var decreasing = entry.first.signature
        decreasing[offsets] = decreasing[offsets + 1] &+ 1
        #expect(!entry.key.verify(signature: decreasing, message: entry.first.message))
    }
}

/// Bytes from hex; the fixtures are well-formed, so bad input traps.
func hex(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        bytes.append(UInt8(text[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}
