import FoundationEssentials

extension BankIDSimulatorConfiguration {
    /// Applies a scenario document (JSON) on top of this configuration: test persons, outcomes,
    /// faults, latency, auto-complete and timing. The app reads the file; this only parses.
    ///
    /// ```json
    /// {"testPersons": [{"personalNumber": "198001019879", "givenName": "Extra", "surname": "Person",
    ///                   "bankIdIssueDate": "2024-01-31", "risk": "moderate"}],
    ///  "outcomes": {"199001012385": "userCancel"},
    ///  "faults": [{"fault": "maintenance", "count": 3}], "latencyMilliseconds": 200, "autoComplete": 2,
    ///  "timing": {"startWindowSeconds": 30, "lifetimeSeconds": 180, "noClientAfterSeconds": 10,
    ///             "completedRetentionSeconds": 180, "failedRetentionSeconds": 300,
    ///             "wrongCodeLimit": 3, "qrMaxAgeSeconds": 2}}
    /// ```
    /// - Throws: `SimulatorError.configuration` naming the first field that is wrong.
    public mutating func apply(scenarioJSON bytes: [UInt8]) throws(SimulatorError) {
        guard let root = JSONValue.parse(bytes)?.object else {
            throw SimulatorError(.configuration, "the scenario file is not a JSON object")
        }
        try Self.onlyKeys(
            root, ["testPersons", "outcomes", "faults", "latencyMilliseconds", "autoComplete", "timing"],
            at: "")
        if let persons = root["testPersons"] {
            guard case .array(let items) = persons else { throw Self.wrong("testPersons", "a list") }
            for (index, item) in items.enumerated() {
                let path = "testPersons[\(index)]"
                guard let fields = item.object else { throw Self.wrong(path, "an object") }
                try Self.onlyKeys(
                    fields, ["personalNumber", "givenName", "surname", "bankIdIssueDate", "risk"], at: path)
                guard let number = fields["personalNumber"]?.string, PersonalNumber.isValid(number) else {
                    throw Self.wrong(path + ".personalNumber", "a valid 12-digit personal number")
                }
                guard let given = fields["givenName"]?.string, !given.isEmpty,
                    let surname = fields["surname"]?.string, !surname.isEmpty
                else { throw Self.wrong(path, "givenName and surname") }
                var person = TestPerson(personalNumber: number, givenName: given, surname: surname)
                if let date = fields["bankIdIssueDate"] {
                    guard let text = date.string, text.wholeMatch(of: /\d{4}-\d{2}-\d{2}/) != nil else {
                        throw Self.wrong(path + ".bankIdIssueDate", "YYYY-MM-DD")
                    }
                    person.bankIdIssueDate = text
                }
                if let risk = fields["risk"] {
                    guard let text = risk.string, ["low", "moderate", "high"].contains(text) else {
                        throw Self.wrong(path + ".risk", "low, moderate or high")
                    }
                    person.risk = text
                }
                testPersons.append(person)
            }
        }
        if let value = root["outcomes"] {
            guard let map = value.object else { throw Self.wrong("outcomes", "an object") }
            for (number, outcome) in map {
                guard PersonalNumber.isValid(number) else {
                    throw Self.wrong("outcomes", "personal numbers as keys")
                }
                guard let parsed = outcome.string.flatMap(Outcome.init(rawValue:)) else {
                    throw Self.wrong("outcomes", "one of \(Outcome.allCases.map(\.rawValue))")
                }
                outcomes[number] = parsed
            }
        }
        if let value = root["faults"] {
            guard case .array(let items) = value else { throw Self.wrong("faults", "a list") }
            for item in items {
                guard let fields = item.object,
                    let fault = fields["fault"]?.string.flatMap(Fault.init(rawValue:)),
                    case let count = fields["count"]?.int ?? 1, count >= 0
                else {
                    throw Self.wrong("faults", "{\"fault\": \(Fault.allCases.map(\.rawValue)), \"count\": n}")
                }
                faults.append(FaultBurst(fault, count: count))
            }
        }
        if let value = root["latencyMilliseconds"] {
            guard let number = value.int, (0...60_000).contains(number) else {
                throw Self.wrong("latencyMilliseconds", "0...60000")
            }
            latencyMilliseconds = number
        }
        if let value = root["autoComplete"] {
            guard let number = value.int, number >= 0 else {
                throw Self.wrong("autoComplete", "a number >= 0")
            }
            autoCompleteAfter = number
        }
        if let value = root["timing"] {
            guard let fields = value.object else { throw Self.wrong("timing", "an object") }
            let seconds: [(String, WritableKeyPath<OrderTiming, TimeInterval>)] = [
                ("startWindowSeconds", \.startWindow), ("lifetimeSeconds", \.lifetime),
                ("noClientAfterSeconds", \.noClientAfter),
                ("completedRetentionSeconds", \.completedRetention),
                ("failedRetentionSeconds", \.failedRetention),
            ]
            let counts: [(String, WritableKeyPath<OrderTiming, Int>)] = [
                ("wrongCodeLimit", \.wrongCodeLimit), ("qrMaxAgeSeconds", \.qrMaxAge),
            ]
            try Self.onlyKeys(fields, Set(seconds.map(\.0) + counts.map(\.0)), at: "timing")
            for (name, path) in seconds {
                guard let item = fields[name] else { continue }
                guard case .number(let number) = item, number >= 0 else {
                    throw Self.wrong("timing." + name, "seconds")
                }
                timing[keyPath: path] = number
            }
            for (name, path) in counts {
                guard let item = fields[name] else { continue }
                guard let number = item.int, number >= 0 else {
                    throw Self.wrong("timing." + name, "a number")
                }
                timing[keyPath: path] = number
            }
        }
        try validate()
    }

    private static func onlyKeys(_ fields: [String: JSONValue], _ known: Set<String>, at path: String)
        throws(SimulatorError)
    {
        if let unknown = fields.keys.sorted().first(where: { !known.contains($0) }) {
            throw SimulatorError(.configuration, "unknown field \(path.isEmpty ? "" : path + ".")\(unknown)")
        }
    }

    private static func wrong(_ path: String, _ expected: String) -> SimulatorError {
        SimulatorError(.configuration, "\(path) must be \(expected)")
    }
}
