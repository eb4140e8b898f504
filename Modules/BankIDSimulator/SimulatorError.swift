import CryptoCore
public import Kernel

/// An error from the BankID simulator: a stable code, a message without secrets, and where it arose.
public struct SimulatorError: CodedError {
    /// The stable codes the simulator reports.
    public enum Code: String, Sendable, CaseIterable {
        /// The data folder or a PKI file could not be read or written.
        case storage = "bankid_simulator.storage"
        /// The development PKI could not be generated or loaded.
        case pki = "bankid_simulator.pki"
        /// libmicrohttpd could not listen (port in use, bad address, TLS material refused).
        case listen = "bankid_simulator.listen"
        /// The configuration is invalid (bad port, bad test person, bad scenario).
        case configuration = "bankid_simulator.configuration"
    }

    /// What went wrong.
    public let code: Code
    /// A readable explanation; never holds passphrases, secrets or personal numbers.
    public let message: String
    /// The source file that raised the error.
    public let file: String
    /// The source line that raised the error.
    public let line: Int

    /// Creates an error; the location defaults to the caller's.
    public init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
    }
}
