import CPQ

/// SQLSTATE codes become `StorageError` codes here, once, so nothing above the wrapper reads
/// PostgreSQL's numbers or message text.
enum PostgreSQLErrorMapping {
    /// The stable code for a five-character SQLSTATE.
    static func storageCode(sqlState: String) -> StorageError.Code {
        switch sqlState {
        // A duplicate key, or an exclusion constraint (a generalised uniqueness): a conflict.
        case "23505", "23P01": return .conflict
        case "40001", "40P01": return .serializationFailure
        case "57014": return .timeout
        // lock_timeout: the row or table stayed locked by another connection for too long.
        case "55P03": return .busy
        // The server ended the session: pg_terminate_backend, shutdown, crash, idle-in-transaction
        // timeout, database dropped.
        case "57P01", "57P02", "57P03", "57P04", "25P03": return .unavailable
        case "25006": return .readOnly
        case "53100", "58030": return .io
        case "XX001", "XX002": return .corrupt
        default: break
        }
        switch sqlState.prefix(2) {
        case "08": return .unavailable
        case "23": return .constraint
        // Data exceptions: a value the column's type cannot hold (too long, out of range, malformed).
        case "22": return .invalidArgument
        case "53": return .unavailable
        default: return .internal
        }
    }

    /// Whether an error with this SQLSTATE means the session is gone and the connection unusable.
    static func endsSession(sqlState: String) -> Bool {
        sqlState.hasPrefix("08") || ["57P01", "57P02", "57P03", "57P04", "25P03"].contains(sqlState)
    }

    /// The error a failed result reports, built only from fields that carry no bound values.
    ///
    /// The server's DETAIL ("Key (username)=(alice) already exists") quotes values, and so does the
    /// primary message of a data exception ("invalid input syntax for type integer: …") or of an
    /// error a function raises; those are left out. What remains names the constraint, table and
    /// column, which is what an operator needs.
    static func error(
        from result: PostgreSQLResult, context: String, endpoint: String, file: String = #fileID,
        line: Int = #line
    ) -> StorageError {
        guard let sqlState = result.errorField(cpq_diag_sqlstate()) else {
            return StorageError(.internal, "\(context): the server reported an error without a SQLSTATE")
        }
        let code = storageCode(sqlState: sqlState)
        let quotesValues = sqlState.hasPrefix("22") || sqlState.hasPrefix("P0") || sqlState == "XX000"
        let primary =
            quotesValues
            ? "the server refused a value" : result.errorField(cpq_diag_message_primary()) ?? "failed"
        var facts = ["SQLSTATE \(sqlState)"]
        if let constraint = result.errorField(cpq_diag_constraint_name()) {
            facts.append("constraint \(constraint)")
        }
        if let table = result.errorField(cpq_diag_table_name()) { facts.append("table \(table)") }
        if let column = result.errorField(cpq_diag_column_name()) { facts.append("column \(column)") }
        let place = code == .unavailable ? " on \(endpoint)" : ""
        return StorageError(
            code, "\(context)\(place): \(primary) (\(facts.joined(separator: ", ")))", file: file, line: line)
    }

    /// libpq's message for a connection, on one line (libpq breaks lines and indents hints).
    static func connectionMessage(_ handle: OpaquePointer?) -> String {
        guard let handle, let text = PQerrorMessage(handle) else { return "no message from libpq" }
        let words = String(cString: text).split(whereSeparator: \.isWhitespace)
        return words.isEmpty ? "no message from libpq" : words.joined(separator: " ")
    }
}
