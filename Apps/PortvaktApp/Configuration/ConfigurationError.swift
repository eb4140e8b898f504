/// One problem found in a configuration: where it is, a stable code, and what is wrong.
///
/// Messages name the expectation and the offending value, but never a secret: the admin token is
/// described by its length only.
public struct ConfigurationIssue: Sendable, Equatable, CustomStringConvertible {
    /// The stable kinds of problem, for callers and tests to switch on instead of message text.
    public enum Code: String, Sendable {
        /// The file could not be read.
        case unreadableFile = "config.unreadable_file"
        /// The file is not valid JSON; the path names the line and column.
        case invalidJSON = "config.invalid_json"
        /// A key the configuration does not know; the message suggests the nearest known key.
        case unknownKey = "config.unknown_key"
        /// The same key appears twice in one object.
        case duplicateKey = "config.duplicate_key"
        /// A required key is absent (e.g. `perSecond` in a rate limit that is given).
        case missingKey = "config.missing_key"
        /// A value of the wrong JSON kind: a string for an integer, 1.5 for an integer, and so on.
        case wrongType = "config.wrong_type"
        /// A value of the right kind that is out of range or malformed.
        case invalidValue = "config.invalid_value"
        /// Values that are valid alone but not together (e.g. idle timeout above absolute lifetime).
        case conflict = "config.conflict"
        /// A journey that exchanges a BankID identification for a passkey account (ID switching)
        /// is on outside the simulator without `bankid.idSwitching` acknowledging it.
        case idSwitchingNotAcknowledged = "config.id_switching_not_acknowledged"
        /// A secret written in the file; secrets come only from the environment.
        case secretInFile = "config.secret_in_file"
        /// An environment variable with an invalid value, or a misspelt Portvakt variable.
        case invalidEnvironment = "config.invalid_environment"
    }

    /// The stable kind of problem.
    public let code: Code
    /// Where: a key path such as `http.trustedProxies[2]`, `line 3, column 9` for syntax errors,
    /// the file path for unreadable files, or an environment variable's name.
    public let path: String
    /// What is wrong, e.g. `expected an integer from 1024 to 16777216, got "64k"`.
    public let message: String

    /// Creates an issue.
    public init(_ code: Code, path: String, message: String) {
        self.code = code
        self.path = path
        self.message = message
    }

    /// The issue as one line, `path: message`.
    public var description: String { "\(path): \(message)" }

    /// Issues are equal when their codes and paths are: message wording may change.
    public static func == (lhs: ConfigurationIssue, rhs: ConfigurationIssue) -> Bool {
        lhs.code == rhs.code && lhs.path == rhs.path
    }
}

/// Every problem found while loading a configuration, collected in one pass.
///
/// There is no source location: the location that matters to an operator is the key path in each
/// issue, not the line of Swift that noticed it.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The problems in the order found (file order within a section, sections in reading order).
    public let issues: [ConfigurationIssue]

    /// Creates an error from at least one issue.
    public init(issues: [ConfigurationIssue]) {
        precondition(!issues.isEmpty, "a ConfigurationError needs at least one issue")
        self.issues = issues
    }

    /// One line per issue, `path: message`, ready to print for an operator.
    public var description: String { issues.map(\.description).joined(separator: "\n") }
}
