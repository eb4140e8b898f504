public import FoundationEssentials
public import Kernel

/// A value bound to a statement or read from a row, in the kinds both engines store. Each engine
/// maps it to its own types: SQLite keeps booleans as 0 or 1 and dates as integer milliseconds
/// since 1970, PostgreSQL as `boolean` and `timestamptz` (both to the millisecond).
enum SQLValue: Sendable, Equatable {
    case text(String)
    case integer(Int64)
    case double(Double)
    case bytes([UInt8])
    case bool(Bool)
    /// An instant, kept to the millisecond.
    case date(Date)
    case null
}

/// A Swift value that binds to a statement parameter on either engine.
protocol SQLBindable {
    /// The value in the kinds the engines bind.
    var sqlValue: SQLValue { get }
}

extension SQLValue: SQLBindable {
    var sqlValue: SQLValue { self }
}

extension Int64: SQLBindable {
    var sqlValue: SQLValue { .integer(self) }
}

extension Int: SQLBindable {
    var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Bool: SQLBindable {
    var sqlValue: SQLValue { .bool(self) }
}

extension Double: SQLBindable {
    var sqlValue: SQLValue { .double(self) }
}

extension String: SQLBindable {
    var sqlValue: SQLValue { .text(self) }
}

extension Array: SQLBindable where Element == UInt8 {
    var sqlValue: SQLValue { .bytes(self) }
}

extension Date: SQLBindable {
    var sqlValue: SQLValue { .date(self) }
}

extension Optional: SQLBindable where Wrapped: SQLBindable {
    var sqlValue: SQLValue {
        switch self {
        case .some(let value): value.sqlValue
        case .none: .null
        }
    }
}

extension AuditAction: SQLBindable {
    var sqlValue: SQLValue { .text(rawValue) }
}

extension AuditActor: SQLBindable {
    var sqlValue: SQLValue { .text(rawValue) }

    /// The actor stored as `text`; a value no release writes means the row was not ours.
    static func stored(_ text: String) throws(StorageError) -> AuditActor {
        guard let actor = AuditActor(rawValue: text) else {
            throw StorageError(.corrupt, "an audit event's actor is not one Portvakt writes")
        }
        return actor
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

    /// This instant truncated to what Storage keeps, so values compare exactly after a round trip.
    var storagePrecision: Date { Date(millisecondsSince1970: millisecondsSince1970) }
}
