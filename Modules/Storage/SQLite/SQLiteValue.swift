import CSQLite
import Foundation
import Kernel

/// A value SQLite can store: the five storage classes, nothing more.
enum SQLiteValue: Sendable, Equatable {
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
    case null
}

/// A Swift value that binds to a statement parameter.
protocol SQLiteBindable {
    /// The value as one of SQLite's storage classes.
    var sqliteValue: SQLiteValue { get }
}

extension AuditAction: SQLiteBindable {
    var sqliteValue: SQLiteValue { .text(rawValue) }
}

extension AuditActor: SQLiteBindable {
    var sqliteValue: SQLiteValue { .text(rawValue) }

    /// The actor stored as `text`; a value no release writes means the row was not ours.
    static func stored(_ text: String) throws(StorageError) -> AuditActor {
        guard let actor = AuditActor(rawValue: text) else {
            throw StorageError(.corrupt, "an audit event's actor is not one Portvakt writes")
        }
        return actor
    }
}

extension Int64: SQLiteBindable {
    var sqliteValue: SQLiteValue { .integer(self) }
}

extension Int: SQLiteBindable {
    var sqliteValue: SQLiteValue { .integer(Int64(self)) }
}

extension Bool: SQLiteBindable {
    /// SQLite has no boolean type: 0 or 1, as the CHECK constraints on flag columns require.
    var sqliteValue: SQLiteValue { .integer(self ? 1 : 0) }
}

extension Double: SQLiteBindable {
    var sqliteValue: SQLiteValue { .real(self) }
}

extension String: SQLiteBindable {
    var sqliteValue: SQLiteValue { .text(self) }
}

extension Array: SQLiteBindable where Element == UInt8 {
    var sqliteValue: SQLiteValue { .blob(self) }
}

extension Date: SQLiteBindable {
    /// Times are stored as integer milliseconds since 1970: exact, sortable, and what PostgreSQL's
    /// `timestamptz` keeps too, so a future driver round-trips the same values.
    var sqliteValue: SQLiteValue { .integer(millisecondsSince1970) }
}

extension Optional: SQLiteBindable where Wrapped: SQLiteBindable {
    var sqliteValue: SQLiteValue {
        switch self {
        case .some(let value): value.sqliteValue
        case .none: .null
        }
    }
}

extension Date {
    /// This instant in whole milliseconds since 1970, rounded to the nearest millisecond.
    var millisecondsSince1970: Int64 {
        let milliseconds = (timeIntervalSince1970 * 1000).rounded()
        // Clamp rather than trap: Date.distantFuture and friends must still be storable.
        guard milliseconds.isFinite else { return milliseconds > 0 ? .max : .min }
        if milliseconds >= 9.2e18 { return .max }
        if milliseconds <= -9.2e18 { return .min }
        return Int64(milliseconds)
    }

    /// The instant `milliseconds` after 1970.
    init(millisecondsSince1970 milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// This instant truncated to what Storage keeps, so in-memory and SQLite stores agree exactly.
    var storagePrecision: Date { Date(millisecondsSince1970: millisecondsSince1970) }
}
