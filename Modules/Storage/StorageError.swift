import CryptoCore
public import Kernel

/// An error from Storage: a stable code, a message free of bound values, and where it arose.
///
/// SQLite result codes are translated once, in the connection wrapper, so callers switch on
/// `code` and never on SQLite numbers or message text.
public struct StorageError: CodedError {
    /// The stable codes Storage reports.
    public enum Code: String, Sendable, CaseIterable {
        /// A NOT NULL, CHECK or foreign-key constraint failed (for example a session for a missing user).
        case constraint = "storage.constraint"
        /// A row with the same unique key already exists, or a concurrent change won the race.
        case conflict = "storage.conflict"
        /// The database stayed locked by another connection for longer than the busy timeout.
        case busy = "storage.busy"
        /// The database file is damaged or is not a database.
        case corrupt = "storage.corrupt"
        /// The operating system failed to read, write or open a file (including a full disk).
        case io = "storage.io"
        /// The database refused a write (a read-only file, or a write on a reader connection).
        case readOnly = "storage.read_only"
        /// The schema could not be migrated, or the database is newer than this binary.
        case migration = "storage.migration"
        /// The row the operation needs does not exist.
        case notFound = "storage.not_found"
        /// The database was closed.
        case closed = "storage.closed"
        /// A caller passed a value Storage cannot use (an empty path, a zero reader count).
        case invalidArgument = "storage.invalid_argument"
        /// Anything else SQLite reported; it points at a bug in Storage rather than in the data.
        case `internal` = "storage.internal"
        /// PostgreSQL aborted a transaction to keep transactions serializable, or to break a
        /// deadlock; running the whole transaction again may succeed.
        case serializationFailure = "storage.serialization_failure"
        /// The database server cannot be reached, refused the connection, or the connection broke.
        case unavailable = "storage.unavailable"
        /// A statement ran longer than the statement timeout, or no connection became free in time.
        case timeout = "storage.timeout"
        /// The database server is older than the oldest version Storage supports.
        case unsupportedServer = "storage.unsupported_server"

        /// Whether running the failed transaction again from its start may succeed.
        ///
        /// Only a serialization failure is: the others either need an operator or, like a lost
        /// connection, leave open whether a COMMIT took effect, so repeating the writes could apply
        /// them twice.
        public var isRetryable: Bool { self == .serializationFailure }
    }

    /// What went wrong, as a stable code callers switch on.
    public let code: Code
    /// A readable explanation; never contains bound values, tokens or personal data.
    public let message: String
    /// SQLite's extended result code when SQLite raised the error, for operators' logs.
    public let sqliteResultCode: Int32?
    /// The source file that raised the error.
    public let file: String
    /// The source line that raised the error.
    public let line: Int

    /// Creates an error; the location defaults to the caller's.
    public init(
        _ code: Code, _ message: String, sqliteResultCode: Int32? = nil, file: String = #fileID,
        line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.sqliteResultCode = sqliteResultCode
        self.file = file
        self.line = line
    }

    public var description: String {
        if let sqliteResultCode {
            return "\(code.rawValue): \(message) (SQLite \(sqliteResultCode))"
        }
        return "\(code.rawValue): \(message)"
    }

}

/// A database that is busy, unreachable, too slow or kept losing a serialization race is worth a
/// retry (503 with the code: `storage.busy`, `storage.unavailable`, …); anything else is an
/// internal error whose details stay in the log.
extension StorageError: DependencyFailure {
    public var failureCode: String { code.rawValue }

    public var isTemporary: Bool {
        switch code {
        case .busy, .unavailable, .timeout, .serializationFailure: true
        default: false
        }
    }
}
