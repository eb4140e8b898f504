import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

@Suite("Provider names")
struct ProviderNamesTests {
    /// The repository root, found from this file.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    @Test("the bundled list is exactly Data/passkey-provider-aaguids.json")
    func bundledMatchesData() throws {
        let data = try Data(
            contentsOf: Self.root.appendingPathComponent("Data/passkey-provider-aaguids.json"))
        let fromFile = try ProviderNames(json: [UInt8](data))
        #expect(fromFile == ProviderNames.bundled, "run Tools/generate-provider-names.py")
        #expect(ProviderNames.bundled.count == 52)
    }

    @Test("known AAGUIDs have names; unknown and all-zero ones have none")
    func lookups() throws {
        let bundled = ProviderNames.bundled
        #expect(
            bundled.name(for: try #require(UUID(uuidString: "08987058-cadc-4b81-b6e1-30de50dcbe96")))
                == "Windows Hello")
        #expect(
            bundled.name(for: try #require(UUID(uuidString: "00000000-0000-0000-0000-000000000000"))) == nil)
        #expect(bundled.name(for: UUID()) == nil)
    }

    @Test("an operator's file extends and overrides the bundled names")
    func merging() throws {
        let file =
            #"{"08987058-cadc-4b81-b6e1-30de50dcbe96": "Hello (work)", "11111111-2222-3333-4444-555555555555": "Corp Key"}"#
        let merged = ProviderNames.bundled.merging(try ProviderNames(json: Array(file.utf8)))
        #expect(
            merged.name(for: try #require(UUID(uuidString: "08987058-cadc-4b81-b6e1-30de50dcbe96")))
                == "Hello (work)")
        #expect(
            merged.name(for: try #require(UUID(uuidString: "11111111-2222-3333-4444-555555555555")))
                == "Corp Key")
        #expect(merged.count == ProviderNames.bundled.count + 1)
    }

    @Test(
        "a malformed provider-name file is refused with metadata.invalid_provider_names",
        arguments: [
            "[]", "not json", #"{"08987058-CADC-4B81-B6E1-30DE50DCBE96": "upper"}"#, #"{"not-a-uuid": "x"}"#,
            #"{"08987058-cadc-4b81-b6e1-30de50dcbe96": ""}"#, #"{"08987058-cadc-4b81-b6e1-30de50dcbe96": 5}"#,
            #"{"08987058-cadc-4b81-b6e1-30de50dcbe96": "bell\u0007"}"#,
        ])
    func refused(_ text: String) {
        #expect(throws: PasskeyError(.metadataInvalidProviderNames, "")) {
            try ProviderNames(json: Array(text.utf8))
        }
    }
}
