import FoundationEssentials

/// A fault the simulator injects into RP API calls, one per request while a burst lasts.
public enum Fault: String, Sendable, Hashable, CaseIterable, Codable {
    /// 503 {"errorCode": "maintenance"}.
    case maintenance
    /// 500 {"errorCode": "internalError"}.
    case internalError
    /// 408 {"errorCode": "requestTimeout"}.
    case requestTimeout
    /// The connection is closed without a response.
    case dropConnection
}

/// A burst: the next `count` RP API requests fail with `fault`.
public struct FaultBurst: Sendable, Hashable, Codable {
    /// What happens.
    public var fault: Fault
    /// To how many requests.
    public var count: Int

    /// Creates a burst.
    public init(_ fault: Fault, count: Int) {
        self.fault = fault
        self.count = count
    }
}

/// Everything the simulator is started with; plain values with safe defaults.
public struct BankIDSimulatorConfiguration: Sendable {
    /// The data folder holding the development PKI (created on first start).
    public var dataDirectory: String
    /// The RP API's HTTPS port on 127.0.0.1; 0 lets the system choose.
    public var port: Int = 0
    /// The user API's plain-HTTP port on 127.0.0.1; 0 lets the system choose.
    public var userPort: Int = 0
    /// Start window, lifetime, retention and the app's tolerances.
    public var timing = OrderTiming()
    /// When set, every order completes by itself after this many pending collects, as the
    /// default test person (or the required one).
    public var autoCompleteAfter: Int?
    /// Test persons added to (or replacing, by personal number) the built-in ones.
    public var testPersons: [TestPerson] = []
    /// How an approval ends per personal number; unlisted persons complete.
    public var outcomes: [String: Outcome] = [:]
    /// Delay added to every RP API response, in milliseconds.
    public var latencyMilliseconds = 0
    /// Fault bursts applied to the first RP API requests, in order.
    public var faults: [FaultBurst] = []

    /// Creates a configuration with defaults for everything but the data folder.
    public init(dataDirectory: String) {
        self.dataDirectory = dataDirectory
    }

    /// The persons in effect: the built-in list with the configured ones replacing or following them.
    var persons: [TestPerson] {
        var list = TestPerson.builtIn
        for person in testPersons {
            if let index = list.firstIndex(where: { $0.personalNumber == person.personalNumber }) {
                list[index] = person
            } else {
                list.append(person)
            }
        }
        return list
    }

    /// Checks what a typo could break.
    func validate() throws(SimulatorError) {
        for person in testPersons where !PersonalNumber.isValid(person.personalNumber) {
            throw SimulatorError(.configuration, "a configured test person has an invalid personal number")
        }
        for number in outcomes.keys where !PersonalNumber.isValid(number) {
            throw SimulatorError(.configuration, "an outcome is configured for an invalid personal number")
        }
        if let autoCompleteAfter, autoCompleteAfter < 0 {
            throw SimulatorError(.configuration, "autoCompleteAfter must be 0 or more")
        }
        guard latencyMilliseconds >= 0, faults.allSatisfy({ $0.count >= 0 }) else {
            throw SimulatorError(.configuration, "latency and fault counts must be 0 or more")
        }
        guard timing.startWindow > 0, timing.lifetime > 0, timing.completedRetention >= 0,
            timing.failedRetention >= 0, timing.wrongCodeLimit >= 1, timing.qrMaxAge >= 0
        else { throw SimulatorError(.configuration, "timing values must be positive") }
    }
}
