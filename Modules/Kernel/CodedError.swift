/// The shape every Portvakt module's error takes: a stable code callers switch on, a message that
/// never carries secrets, and where it arose. Each module keeps its own error type and codes; this
/// protocol gives them one description, one equality and one way for callers (the HTTP layer, the
/// command line) to read the code without knowing the type.
public protocol CodedError: Error, Equatable, CustomStringConvertible {
    /// The module's code enumeration, whose raw values are the stable dotted codes.
    associatedtype Code: RawRepresentable & Equatable where Code.RawValue == String

    /// What went wrong.
    var code: Code { get }
    /// A readable explanation without key material, tokens or personal data.
    var message: String { get }
    /// The source file that raised the error.
    var file: String { get }
    /// The source line that raised the error.
    var line: Int { get }
}

extension CodedError {
    /// The stable dotted code, e.g. `crypto.chain_untrusted`, readable through `any CodedError`.
    public var codeName: String { code.rawValue }

    /// The code and the message.
    public var description: String { "\(code.rawValue): \(message)" }

    /// Errors are equal when their codes are: messages and locations may change.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
}
