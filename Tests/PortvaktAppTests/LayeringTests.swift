import Foundation
import Testing

/// Rules about which module may import what, read from the sources themselves: a change that
/// breaks one fails here, naming the file, instead of showing up as a larger binary or a
/// layer that knows too much.
@Suite("Module layering")
struct LayeringTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// Every Swift source under `folder`, with its text.
    static func sources(_ folder: String) throws -> [(path: String, text: String)] {
        let base = root.appendingPathComponent(folder)
        let files = FileManager.default.enumerator(atPath: base.path)?.compactMap { $0 as? String } ?? []
        return try files.filter { $0.hasSuffix(".swift") }.sorted().map {
            ("\(folder)/\($0)", try String(contentsOf: base.appendingPathComponent($0), encoding: .utf8))
        }
    }

    /// The modules a source imports, by name (`public import X`, `@testable import X` included).
    static func imports(_ text: String) -> Set<String> {
        var names: Set<String> = []
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ").map(String.init)
            guard let index = words.firstIndex(of: "import"), index + 1 < words.count,
                words[..<index].allSatisfy({
                    ["public", "internal", "private", "@testable", "@preconcurrency"].contains($0)
                })
            else { continue }
            names.insert(words[index + 1])
        }
        return names
    }

    @Test("no production source imports full Foundation (it links ICU: Docs/architecture.md)")
    func foundationEssentialsOnly() throws {
        var checked = 0
        for folder in ["Modules", "Apps"] {
            for (path, text) in try Self.sources(folder) where !path.hasPrefix("Modules/TestSupport/") {
                checked += 1
                #expect(!Self.imports(text).contains("Foundation"), "\(path) imports Foundation")
            }
        }
        #expect(checked > 100, "the sources were read")
    }

    @Test("PortvaktAPI translates only: it imports no Storage")
    func apiImportsNoStorage() throws {
        for (path, text) in try Self.sources("Modules/PortvaktAPI") {
            #expect(!Self.imports(text).contains("Storage"), "\(path) imports Storage")
        }
    }

    @Test("WebhookCore imports neither Storage nor another core, nor anything above them")
    func webhookCoreStandsAlone() throws {
        let sources = try Self.sources("Modules/WebhookCore")
        #expect(!sources.isEmpty)
        for (path, text) in sources {
            let forbidden = Self.imports(text).intersection([
                "Storage", "SessionCore", "BankIDCore", "PasskeyCore", "HTTPEngine", "AuthOrchestrator",
                "PortvaktAPI",
            ])
            #expect(forbidden.isEmpty, "\(path) imports \(forbidden.sorted())")
        }
    }
}
