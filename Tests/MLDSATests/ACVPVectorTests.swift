import Foundation
import Testing

@testable import MLDSA

/// NIST's ACVP sigVer vectors for ML-DSA.Verify_internal (FIPS 204 Algorithm 8), a handful per
/// parameter set (Tests/Fixtures/acvp-mldsa-sigver.json, provenance in its README): valid
/// signatures verify, and each failure NIST made (a modified signature or message, z too large,
/// too many hints) is refused.
@Suite("ML-DSA ACVP sigVer vectors (NIST)")
struct ACVPVectorTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let parameterSet: MLDSAParameterSet
        let publicKey: [UInt8]
        let tcId: Int
        let passes: Bool
        let reason: String
        let message: [UInt8]
        let signature: [UInt8]
        var testDescription: String { "\(parameterSet.rawValue) tcId \(tcId): \(reason)" }
    }

    static let cases: [Case] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/acvp-mldsa-sigver.json")
        // A missing or broken fixture is a broken checkout: trap with the reason.
        let json = try! JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
        return (json["testGroups"] as! [[String: Any]]).flatMap { group in
            let parameterSet = MLDSAParameterSet(rawValue: group["parameterSet"] as! String)!
            let publicKey = hex(group["pk"] as! String)
            return (group["tests"] as! [[String: Any]]).map { test in
                Case(
                    parameterSet: parameterSet, publicKey: publicKey, tcId: test["tcId"] as! Int,
                    passes: test["testPassed"] as! Bool, reason: test["reason"] as! String,
                    message: hex(test["message"] as! String), signature: hex(test["signature"] as! String))
            }
        }
    }()

    @Test("every parameter set has valid cases and each of NIST's four failure reasons")
    func coverage() {
        for parameterSet in MLDSAParameterSet.allCases {
            let reasons = Set(Self.cases.filter { $0.parameterSet == parameterSet }.map(\.reason))
            #expect(
                reasons == [
                    "no modification", "modify signature", "modify message", "z too large", "too many hints",
                ])
        }
    }

    @Test("Verify_internal gives NIST's verdict", arguments: cases)
    func verdict(_ vector: Case) {
        let verified = vector.publicKey.withUnsafeBytes { pk in
            vector.message.withUnsafeBytes { message in
                vector.signature.withUnsafeBytes { signature in
                    MLDSAPublicKey.verifyInternal(
                        pk: pk, message: message, signature: signature, vector.parameterSet)
                }
            }
        }
        #expect(verified == vector.passes)
    }
}
