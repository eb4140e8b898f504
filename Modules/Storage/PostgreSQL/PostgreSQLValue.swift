import CPQ
import FoundationEssentials

/// PostgreSQL's type oids for the types the wrapper encodes and decodes (`pg_type.oid`, fixed in
/// the server's catalog since long before PostgreSQL 13).
enum PostgreSQLType {
    static let bool: Oid = 16
    static let bytea: Oid = 17
    static let char: Oid = 18
    static let name: Oid = 19
    static let int8: Oid = 20
    static let int2: Oid = 21
    static let int4: Oid = 23
    static let text: Oid = 25
    static let oid: Oid = 26
    static let json: Oid = 114
    static let float4: Oid = 700
    static let float8: Oid = 701
    static let unknown: Oid = 705
    static let bpchar: Oid = 1042
    static let varchar: Oid = 1043
    static let timestamp: Oid = 1114
    static let timestamptz: Oid = 1184
    static let jsonb: Oid = 3802
}

/// A parameter as libpq sends it: the bytes and whether they are in binary or text format.
struct EncodedParameter {
    /// 1 for binary, 0 for text (libpq's `paramFormats`).
    let format: Int32
    /// The value's bytes; text format ends with a NUL, which libpq needs and does not send.
    let bytes: [UInt8]
}

extension SQLValue {
    /// Milliseconds from 1970 to PostgreSQL's epoch, 2000-01-01 00:00 UTC.
    private static let postgresEpochMilliseconds: Int64 = 946_684_800_000

    /// Encodes the value for parameter `index` (1-based), whose type the server inferred as `type`.
    ///
    /// Where the Swift kind matches the parameter's type the value goes in binary (no parsing, no
    /// rounding); otherwise integers, doubles and booleans go as text for the server to convert
    /// (an integer into a `numeric` column, say). Text always goes as text, so the server's input
    /// function accepts it for `jsonb`, `uuid` and the like. Bytes and dates must meet their own
    /// types: anything else is a mistake in the SQL.
    /// - Returns: nil for NULL.
    func encoded(as type: Oid, parameter index: Int) throws(StorageError) -> EncodedParameter? {
        switch self {
        case .null:
            return nil
        case .text(let text):
            // Text format is NUL-terminated, so a NUL would silently cut the value short; PostgreSQL
            // text cannot hold one anyway.
            guard !text.utf8.contains(0) else {
                throw StorageError(
                    .invalidArgument,
                    "parameter $\(index) contains a NUL character, which PostgreSQL text cannot hold")
            }
            return EncodedParameter(format: 0, bytes: Array(text.utf8) + [0])
        case .integer(let number):
            switch type {
            case PostgreSQLType.int8: return .binary(bigEndian: number)
            case PostgreSQLType.int4:
                guard let narrow = Int32(exactly: number) else { throw Self.outOfRange(index, "integer") }
                return .binary(bigEndian: narrow)
            case PostgreSQLType.int2:
                guard let narrow = Int16(exactly: number) else { throw Self.outOfRange(index, "smallint") }
                return .binary(bigEndian: narrow)
            default: return .text(String(number))
            }
        case .double(let number):
            switch type {
            case PostgreSQLType.float8: return .binary(bigEndian: number.bitPattern)
            case PostgreSQLType.float4: return .binary(bigEndian: Float(number).bitPattern)
            default:
                // The spellings float8in and numeric_in accept for the values Swift prints otherwise.
                if number.isNaN { return .text("NaN") }
                if number.isInfinite { return .text(number < 0 ? "-Infinity" : "Infinity") }
                return .text("\(number)")
            }
        case .bool(let flag):
            if type == PostgreSQLType.bool { return EncodedParameter(format: 1, bytes: [flag ? 1 : 0]) }
            return .text(flag ? "true" : "false")
        case .bytes(let bytes):
            guard type == PostgreSQLType.bytea else { throw Self.mismatch(index, "bytes", type) }
            return EncodedParameter(format: 1, bytes: bytes)
        case .date(let date):
            guard type == PostgreSQLType.timestamptz || type == PostgreSQLType.timestamp else {
                throw Self.mismatch(index, "a date", type)
            }
            // Microseconds since 2000, from the date rounded to the millisecond like every stored time.
            let (shifted, o1) = date.millisecondsSince1970.subtractingReportingOverflow(
                Self.postgresEpochMilliseconds)
            let (microseconds, o2) = shifted.multipliedReportingOverflow(by: 1000)
            guard !o1, !o2 else { throw Self.outOfRange(index, "timestamptz") }
            return .binary(bigEndian: microseconds)
        }
    }

    /// Decodes a result field in binary format of type `type`; `column` only names it in errors.
    static func decode(_ bytes: UnsafeRawBufferPointer, type: Oid, column: Int32) throws(StorageError)
        -> SQLValue
    {
        func fixed<T: FixedWidthInteger>(_: T.Type) throws(StorageError) -> T {
            guard bytes.count == MemoryLayout<T>.size else {
                throw StorageError(.internal, "column \(column) has \(bytes.count) bytes for a \(T.self)")
            }
            return T(bigEndian: bytes.loadUnaligned(as: T.self))
        }
        switch type {
        case PostgreSQLType.bool:
            return .bool(try fixed(UInt8.self) != 0)
        case PostgreSQLType.bytea:
            return .bytes(Array(bytes))
        case PostgreSQLType.text, PostgreSQLType.varchar, PostgreSQLType.bpchar, PostgreSQLType.name,
            PostgreSQLType.char, PostgreSQLType.json, PostgreSQLType.unknown:
            return .text(String(decoding: bytes, as: UTF8.self))
        case PostgreSQLType.jsonb:
            // jsonb's binary form is a version byte (1) before the JSON text.
            guard bytes.first == 1 else {
                throw StorageError(.internal, "column \(column) is jsonb of an unknown version")
            }
            return .text(String(decoding: bytes.dropFirst(), as: UTF8.self))
        case PostgreSQLType.int8:
            return .integer(try fixed(Int64.self))
        case PostgreSQLType.int4:
            return .integer(Int64(try fixed(Int32.self)))
        case PostgreSQLType.int2:
            return .integer(Int64(try fixed(Int16.self)))
        case PostgreSQLType.oid:
            return .integer(Int64(try fixed(UInt32.self)))
        case PostgreSQLType.float8:
            return .double(Double(bitPattern: try fixed(UInt64.self)))
        case PostgreSQLType.float4:
            return .double(Double(Float(bitPattern: try fixed(UInt32.self))))
        case PostgreSQLType.timestamptz, PostgreSQLType.timestamp:
            let microseconds = try fixed(Int64.self)
            // PostgreSQL's 'infinity' and '-infinity' are the extreme integers.
            if microseconds == .max { return .date(.distantFuture) }
            if microseconds == .min { return .date(.distantPast) }
            // Rounded to the nearest millisecond, as Date.millisecondsSince1970 rounds on the way in.
            let (whole, remainder) = microseconds.quotientAndRemainder(dividingBy: 1000)
            let milliseconds = whole + (remainder >= 500 ? 1 : remainder < -500 ? -1 : 0)
            return .date(Date(millisecondsSince1970: milliseconds + postgresEpochMilliseconds))
        default:
            throw StorageError(
                .internal,
                "column \(column) has PostgreSQL type oid \(type), which the wrapper does not decode; cast it in the SQL"
            )
        }
    }

    private static func outOfRange(_ index: Int, _ type: String) -> StorageError {
        StorageError(.invalidArgument, "parameter $\(index) is out of range for \(type)")
    }

    private static func mismatch(_ index: Int, _ kind: String, _ type: Oid) -> StorageError {
        StorageError(
            .invalidArgument,
            "parameter $\(index) is \(kind), but the statement takes type oid \(type) there; cast it in the SQL"
        )
    }
}

extension EncodedParameter {
    /// `value` in binary format: network byte order.
    static func binary<T: FixedWidthInteger>(bigEndian value: T) -> EncodedParameter {
        EncodedParameter(format: 1, bytes: withUnsafeBytes(of: value.bigEndian) { Array($0) })
    }

    /// `text` in text format, NUL-terminated.
    static func text(_ text: String) -> EncodedParameter {
        EncodedParameter(format: 0, bytes: Array(text.utf8) + [0])
    }
}
