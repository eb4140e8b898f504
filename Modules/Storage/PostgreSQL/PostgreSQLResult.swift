import CPQ
import FoundationEssentials

/// One `PGresult`, owned: cleared in `deinit`.
///
/// Rows arrive in binary format (the wrapper asks for it), so values are decoded by column type
/// without parsing text, and bytea comes as its bytes rather than hex.
final class PostgreSQLResult {
    private let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }

    deinit { PQclear(handle) }

    /// libpq's status for the command.
    var status: ExecStatusType { PQresultStatus(handle) }

    /// Whether the command succeeded (with or without rows).
    var succeeded: Bool { status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK }

    /// How many rows the result holds.
    var rowCount: Int32 { PQntuples(handle) }

    /// How many columns each row has.
    var columnCount: Int32 { PQnfields(handle) }

    /// Rows an INSERT, UPDATE, DELETE, MERGE or SELECT touched; 0 for other commands.
    var affectedRows: Int {
        // PQcmdTuples returns "" for commands without a count, and is never NULL.
        Int(String(cString: PQcmdTuples(handle))) ?? 0
    }

    /// The command tag, such as `COMMIT` or `INSERT 0 1`.
    var commandStatus: String { String(cString: PQcmdStatus(handle)) }

    /// One diagnostic field of an error result (`cpq_diag_sqlstate()` and friends), nil when absent.
    func errorField(_ field: Int32) -> String? {
        PQresultErrorField(handle, field).map { String(cString: $0) }
    }

    /// The parameter types of a described prepared statement.
    var parameterTypes: [Oid] {
        (0..<PQnparams(handle)).map { PQparamtype(handle, $0) }
    }

    /// Whether field (`row`, `column`) is NULL.
    func isNull(row: Int32, column: Int32) -> Bool { PQgetisnull(handle, row, column) == 1 }

    /// Field (`row`, `column`) decoded by its column's type.
    func value(row: Int32, column: Int32) throws(StorageError) -> SQLValue {
        guard column >= 0, column < columnCount else {
            throw StorageError(.internal, "the result has no column \(column)")
        }
        if isNull(row: row, column: column) { return .null }
        let count = Int(PQgetlength(handle, row, column))
        // PQgetvalue never returns NULL for a field in range; the bytes live as long as the result.
        let bytes = UnsafeRawBufferPointer(start: PQgetvalue(handle, row, column), count: count)
        return try SQLValue.decode(bytes, type: PQftype(handle, column), column: column)
    }

    /// Every row, for `query`.
    var rows: [PostgreSQLRow] { (0..<rowCount).map { PostgreSQLRow(result: self, index: $0) } }
}

/// One row of a result. It keeps the result alive, so it stays valid however long it is kept.
struct PostgreSQLRow: SQLRow {
    let result: PostgreSQLResult
    let index: Int32
    /// The result column that this row's column 0 is (see `shifted(by:)`).
    private var base: Int32 = 0

    init(result: PostgreSQLResult, index: Int32) {
        self.result = result
        self.index = index
    }

    func shifted(by offset: Int32) -> PostgreSQLRow {
        var row = self
        row.base += offset
        return row
    }

    /// Column `column` (0-based) decoded by its type.
    func value(_ column: Int32) throws(StorageError) -> SQLValue {
        try result.value(row: index, column: base + column)
    }

    /// Whether column `column` is NULL.
    func isNull(_ column: Int32) -> Bool { result.isNull(row: index, column: base + column) }

    /// Column `column` as an integer (int2, int4, int8 or oid).
    func int64(_ column: Int32) throws(StorageError) -> Int64 {
        guard case .integer(let number) = try nonNull(column) else { throw mismatch(column, "an integer") }
        return number
    }

    /// Column `column` as a floating-point number (float4 or float8).
    func double(_ column: Int32) throws(StorageError) -> Double {
        guard case .double(let number) = try nonNull(column) else { throw mismatch(column, "a double") }
        return number
    }

    /// Column `column` as a boolean.
    func bool(_ column: Int32) throws(StorageError) -> Bool {
        guard case .bool(let flag) = try nonNull(column) else { throw mismatch(column, "a boolean") }
        return flag
    }

    /// Column `column` as text (text, varchar, char, name, json or jsonb).
    func string(_ column: Int32) throws(StorageError) -> String {
        guard case .text(let text) = try nonNull(column) else { throw mismatch(column, "text") }
        return text
    }

    /// Column `column` as bytes (bytea).
    func blob(_ column: Int32) throws(StorageError) -> [UInt8] {
        guard case .bytes(let bytes) = try nonNull(column) else { throw mismatch(column, "bytea") }
        return bytes
    }

    /// Column `column` as a date, to the millisecond (timestamptz or timestamp).
    func date(_ column: Int32) throws(StorageError) -> Date {
        guard case .date(let date) = try nonNull(column) else { throw mismatch(column, "a timestamp") }
        return date
    }

    /// The value, refusing NULL: a typed accessor on a NULL column is a mistake in the SQL.
    private func nonNull(_ column: Int32) throws(StorageError) -> SQLValue {
        let value = try value(column)
        guard value != .null else { throw StorageError(.internal, "column \(base + column) is NULL") }
        return value
    }

    private func mismatch(_ column: Int32, _ kind: String) -> StorageError {
        StorageError(.internal, "column \(base + column) is not \(kind)")
    }
}
