import CSQLite
import FoundationEssentials

/// One compiled SQL statement. It owns the `sqlite3_stmt` and finalises it in `deinit`.
final class Statement {
    private var handle: OpaquePointer?
    /// The owning connection's handle, only for error messages; the connection outlives us
    /// because it finalises its cached statements before it closes.
    private let connection: OpaquePointer
    /// Whether a `Connection.withStatement` call is using it now (it stays in the cache meanwhile).
    var inUse = false

    init(handle: OpaquePointer, connection: OpaquePointer) {
        self.handle = handle
        self.connection = connection
    }

    deinit { finalize() }

    var rawHandle: OpaquePointer {
        guard let handle else { preconditionFailure("use of a finalized SQLite statement") }
        return handle
    }

    /// Binds `arguments` to parameters 1…n, which must be exactly the statement's parameters:
    /// a mismatch is a bug in the SQL, and binding fewer would silently store NULLs.
    func bind(_ arguments: [any SQLBindable]) throws(StorageError) {
        let expected = Int(sqlite3_bind_parameter_count(rawHandle))
        guard arguments.count == expected else {
            throw StorageError(
                .internal, "a statement expects \(expected) parameters but got \(arguments.count)")
        }
        for (offset, argument) in arguments.enumerated() {
            try bind(argument.sqlValue, at: Int32(offset + 1))
        }
    }

    /// Binds one value to parameter `index` (1-based). SQLite has no boolean or date type:
    /// a flag is 0 or 1 (as the CHECK constraints on flag columns require), an instant is integer
    /// milliseconds since 1970 (exact and sortable).
    func bind(_ value: SQLValue, at index: Int32) throws(StorageError) {
        let rc: Int32
        switch value {
        case .integer(let number):
            rc = sqlite3_bind_int64(rawHandle, index, number)
        case .bool(let flag):
            rc = sqlite3_bind_int64(rawHandle, index, flag ? 1 : 0)
        case .date(let date):
            rc = sqlite3_bind_int64(rawHandle, index, date.millisecondsSince1970)
        case .double(let number):
            rc = sqlite3_bind_double(rawHandle, index, number)
        case .text(let text):
            // A nil pointer would bind NULL, so an empty string gets a real (empty) C string.
            var text = text
            rc = text.withUTF8 { bytes in
                guard let base = bytes.baseAddress, bytes.count > 0 else {
                    return sqlite3_bind_text(rawHandle, index, "", 0, csqlite_transient())
                }
                return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                    sqlite3_bind_text(rawHandle, index, $0, Int32(bytes.count), csqlite_transient())
                }
            }
        case .bytes(let bytes):
            // Likewise an empty blob must not become NULL: zeroblob(0) is a zero-length blob.
            if bytes.isEmpty {
                rc = sqlite3_bind_zeroblob(rawHandle, index, 0)
            } else {
                rc = bytes.withUnsafeBytes { raw in
                    sqlite3_bind_blob(
                        rawHandle, index, raw.baseAddress, Int32(raw.count), csqlite_transient())
                }
            }
        case .null:
            rc = sqlite3_bind_null(rawHandle, index)
        }
        guard rc == SQLITE_OK else {
            throw Connection.error(rc, connection, context: "could not bind parameter \(index)")
        }
    }

    /// Advances to the next row: true when a row is ready, false when the statement is done.
    func step() throws(StorageError) -> Bool {
        let rc = sqlite3_step(rawHandle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw Connection.error(rc, connection, context: "statement failed")
        }
    }

    /// Makes the statement ready to run again and drops its bindings, so no bound value (a token
    /// hash, say) lingers in memory SQLite owns. The return code repeats the last step's error,
    /// which `step` already reported.
    func reset() {
        guard let handle else { return }
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Frees the statement now; the connection calls this before it closes.
    func finalize() {
        guard let handle else { return }
        sqlite3_finalize(handle)
        self.handle = nil
    }
}

/// The current row of a statement, valid only inside the closure it is passed to.
struct Row: SQLRow {
    let statement: OpaquePointer
    /// The statement column that this row's column 0 is: a joined query reads each table's
    /// columns with that table's own decoder, shifted past the columns before them.
    private var base: Int32 = 0

    init(statement: OpaquePointer) { self.statement = statement }

    /// This row with column `offset` of the statement as its column 0.
    func shifted(by offset: Int32) -> Row {
        var row = self
        row.base += offset
        return row
    }

    /// Whether column `index` (0-based) is NULL.
    func isNull(_ index: Int32) -> Bool { sqlite3_column_type(statement, base + index) == SQLITE_NULL }

    /// Column `index` as an integer.
    func int64(_ index: Int32) -> Int64 { sqlite3_column_int64(statement, base + index) }

    /// Column `index` as a floating-point number.
    func double(_ index: Int32) -> Double { sqlite3_column_double(statement, base + index) }

    /// Column `index` as text (NULL reads as the empty string, as SQLite converts it).
    func string(_ index: Int32) -> String {
        // column_text must be called before column_bytes so the byte count is of the UTF-8 form.
        guard let text = sqlite3_column_text(statement, base + index) else { return "" }
        let count = Int(sqlite3_column_bytes(statement, base + index))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    /// Column `index` as bytes (NULL and a zero-length blob both read as empty).
    func blob(_ index: Int32) -> [UInt8] {
        guard let bytes = sqlite3_column_blob(statement, base + index) else { return [] }
        let count = Int(sqlite3_column_bytes(statement, base + index))
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }

    /// Column `index`, stored as 0 or 1, as a flag.
    func bool(_ index: Int32) -> Bool { int64(index) != 0 }

    /// Column `index`, stored as milliseconds since 1970, as a date.
    func date(_ index: Int32) -> Date { Date(millisecondsSince1970: int64(index)) }
}
