/// Collects issues across every reader of one load, and remembers which paths had one so that
/// cross-key checks can skip values that were already reported (and replaced by defaults).
final class ConfigIssueLog {
    private(set) var issues: [ConfigurationIssue] = []
    private var badPaths: Set<String> = []

    func add(_ code: ConfigurationIssue.Code, _ path: String, _ message: String) {
        issues.append(ConfigurationIssue(code, path: path, message: message))
        badPaths.insert(path)
    }

    /// Whether none of `paths` (nor anything below them) was reported.
    func allValid(_ paths: String...) -> Bool {
        paths.allSatisfy { path in
            !badPaths.contains { $0 == path || $0.hasPrefix(path + ".") || $0.hasPrefix(path + "[") }
        }
    }
}

/// Reads one JSON object of the configuration at a key path.
///
/// Each section declares its keys once through the typed getters, which take the default and a
/// validator; a missing key yields the default, a bad value is reported and yields the default so
/// that reading goes on and every problem is found in one pass. `finish()` then reports each key
/// no getter asked for, with the nearest known key as a suggestion.
final class ConfigReader {
    /// The key path of this object, "" for the document root.
    let path: String
    let log: ConfigIssueLog
    private let object: ConfigJSONObject
    private var known: [String] = []
    private var finished = false

    init(_ object: ConfigJSONObject, path: String, log: ConfigIssueLog) {
        self.object = object
        self.path = path
        self.log = log
    }

    /// The full path of `key` in this object.
    func keyPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// Whether the file gives `key` (marking it known).
    func contains(_ key: String) -> Bool {
        known.append(key)
        return object.member(key) != nil
    }

    // MARK: Typed getters

    /// An integer written as a JSON integer (not 1.5, not 1.0, not true) within `range`.
    func integer(_ key: String, default fallback: Int, in range: ClosedRange<Int>) -> Int {
        integer(key, required: false, in: range) ?? fallback
    }

    /// An integer that must be present; nil (after reporting) when missing or invalid.
    func integer(_ key: String, required: Bool, in range: ClosedRange<Int>) -> Int? {
        let expectation = "an integer from \(range.lowerBound) to \(range.upperBound)"
        return read(key, required: required, expectation: expectation) { value in
            guard case .integer(let number) = value else { return .wrongType }
            return range.contains(number) ? .ok(number) : .invalid(nil)
        }
    }

    /// A number (integer or fractional) strictly above `minimumExclusive` and at most `maximum`.
    func double(_ key: String, required: Bool, above minimumExclusive: Double, atMost maximum: Double)
        -> Double?
    {
        let expectation =
            "a number above \(Self.format(minimumExclusive)) and at most \(Self.format(maximum))"
        return read(key, required: required, expectation: expectation) { value in
            let number: Double
            switch value {
            case .integer(let integer): number = Double(integer)
            case .number(let double, _): number = double
            default: return .wrongType
            }
            return number.isFinite && number > minimumExclusive && number <= maximum
                ? .ok(number) : .invalid(nil)
        }
    }

    /// `true` or `false`.
    func bool(_ key: String, default fallback: Bool) -> Bool {
        bool(key) ?? fallback
    }

    /// `true` or `false` if given; nil when absent or invalid.
    func bool(_ key: String) -> Bool? {
        read(key, required: false, expectation: "true or false") { value in
            guard case .bool(let flag) = value else { return .wrongType }
            return .ok(flag)
        }
    }

    /// A string accepted by `validate`, which returns the problem or nil.
    func string(
        _ key: String, default fallback: String, expectation: String = "a string",
        validate: (String) -> String? = { _ in nil }
    ) -> String {
        read(key, required: false, expectation: expectation) { value in
            guard case .string(let text) = value else { return .wrongType }
            if let problem = validate(text) { return .invalid(problem) }
            return .ok(text)
        } ?? fallback
    }

    /// One of an enumeration's raw values; the message lists them.
    func choice<Choice: RawRepresentable & CaseIterable>(_ key: String, default fallback: Choice) -> Choice
    where Choice.RawValue == String {
        let names = Choice.allCases.map { "\"\($0.rawValue)\"" }
        let expectation = "one of " + names.joined(separator: ", ")
        return read(key, required: false, expectation: expectation) { value in
            guard case .string(let text) = value else { return .wrongType }
            guard let choice = Choice(rawValue: text) else { return .invalid(nil) }
            return .ok(choice)
        } ?? fallback
    }

    /// An array of strings, each accepted by `validate`; problems name the element, `key[2]`.
    func stringArray(
        _ key: String, default fallback: [String], elementExpectation: String,
        validate: (String) -> String?
    ) -> [String] {
        let arrayPath = keyPath(key)
        let elements = read(key, required: false, expectation: "an array of strings") {
            (value) -> Outcome<[ConfigJSON]> in
            guard case .array(let elements) = value else { return .wrongType }
            return .ok(elements)
        }
        guard let elements else { return fallback }
        var strings: [String] = []
        var allValid = true
        for (offset, element) in elements.enumerated() {
            let elementPath = "\(arrayPath)[\(offset)]"
            guard case .string(let text) = element else {
                log.add(
                    .wrongType, elementPath, "expected \(elementExpectation), got \(element.shortDescription)"
                )
                allValid = false
                continue
            }
            if let problem = validate(text) {
                log.add(.invalidValue, elementPath, problem)
                allValid = false
            }
            strings.append(text)
        }
        return allValid ? strings : fallback
    }

    /// The object at `key` read by `body`; a missing key gives `body` an empty object (all defaults).
    func section<T>(_ key: String, _ body: (ConfigReader) -> T) -> T {
        let child = ConfigReader(ConfigJSONObject(), path: keyPath(key), log: log)
        let reader =
            read(key, required: false, expectation: "an object") { value in
                guard case .object(let object) = value else { return .wrongType }
                return .ok(ConfigReader(object, path: keyPath(key), log: log))
            } ?? child
        let result = body(reader)
        reader.finish()
        return result
    }

    /// Refuses `key` if present, with `message` saying what to do instead; the value is never echoed.
    func forbid(_ key: String, code: ConfigurationIssue.Code, message: String) {
        known.append(key)
        if object.member(key) != nil { log.add(code, keyPath(key), message) }
    }

    /// The keys actually written in this object, in file order (for maps such as `rateLimits`).
    var writtenKeys: [String] { object.members.map(\.key) }

    /// Reports duplicate keys, then every key no getter asked for, suggesting the nearest known one.
    /// `noun` names what the keys are ("route class"); `hint` may replace the message for a specific
    /// unknown key (e.g. a key that moved). Only the first call reports, so a section's body may
    /// finish its reader with its own wording before `section` does.
    func finish(noun: String = "key", hint: (String) -> String? = { _ in nil }) {
        guard !finished else { return }
        finished = true
        var seen: [String: Int] = [:]
        for member in object.members {
            if let firstLine = seen[member.key] {
                log.add(
                    .duplicateKey, keyPath(member.key),
                    "duplicate key (first on line \(firstLine), again on line \(member.line))")
            } else {
                seen[member.key] = member.line
            }
        }
        var reported: Set<String> = []
        for member in object.members where !known.contains(member.key) && reported.insert(member.key).inserted
        {
            let key = member.key
            if let message = hint(key) {
                log.add(.unknownKey, keyPath(key), message)
            } else {
                log.add(.unknownKey, keyPath(key), Self.unknownKeyMessage(key, known: known, noun: noun))
            }
        }
    }

    /// "unknown key (did you mean "port"?)", or the list of known keys when nothing is close.
    static func unknownKeyMessage(_ key: String, known: [String], noun: String) -> String {
        if let suggestion = KeySuggestion.nearest(to: key, among: known) {
            return "unknown \(noun) (did you mean \"\(suggestion)\"?)"
        }
        let list = known.isEmpty ? "none" : Set(known).sorted().joined(separator: ", ")
        return "unknown \(noun) (known: \(list))"
    }

    /// The value at `key` converted by `convert`; nil when absent, or (reported as a wrong type,
    /// stating `expectation`) when `convert` gives nil.
    func readRaw<T>(_ key: String, expectation: String, convert: (ConfigJSON) -> T?) -> T? {
        read(key, required: false, expectation: expectation) { value in
            convert(value).map { .ok($0) } ?? .wrongType
        }
    }

    // MARK: Core

    /// What a conversion made of a present value.
    private enum Outcome<T> {
        case ok(T)
        case wrongType
        /// Right kind, unacceptable value; nil means "state the expectation" as the problem.
        case invalid(String?)
    }

    /// Looks `key` up, converts it, and reports problems as `path: expected …, got …`.
    private func read<T>(
        _ key: String, required: Bool, expectation: String, convert: (ConfigJSON) -> Outcome<T>
    ) -> T? {
        known.append(key)
        let fullPath = keyPath(key)
        guard let member = object.member(key) else {
            if required { log.add(.missingKey, fullPath, "missing, expected \(expectation)") }
            return nil
        }
        switch convert(member.value) {
        case .ok(let value):
            return value
        case .wrongType:
            log.add(.wrongType, fullPath, "expected \(expectation), got \(member.value.shortDescription)")
        case .invalid(let problem):
            log.add(
                .invalidValue, fullPath,
                problem ?? "expected \(expectation), got \(member.value.shortDescription)")
        }
        return nil
    }

    /// A number as an operator would write it: 5 rather than 5.0.
    static func format(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int(number)) : number.description
    }
}

/// Finds the known key an unknown key was probably meant to be.
enum KeySuggestion {
    /// The closest of `candidates` by edit distance (a swap of neighbours counts as one edit,
    /// letter case is ignored), if close enough to be a typo rather than a different word.
    static func nearest(to key: String, among candidates: [String]) -> String? {
        let lowered = Array(key.lowercased())
        var best: (candidate: String, distance: Int)?
        for candidate in Set(candidates).sorted() {
            let distance = editDistance(lowered, Array(candidate.lowercased()))
            // Short keys tolerate one edit, longer ones up to three.
            let limit = max(1, min(3, candidate.count / 3))
            if distance <= limit, distance < (best?.distance ?? .max) {
                best = (candidate, distance)
            }
        }
        return best?.candidate
    }

    /// Optimal string alignment distance: insertions, deletions, substitutions, adjacent swaps.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var table = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }
}
