public import FoundationEssentials

/// RFC 3339 UTC times (`YYYY-MM-DDTHH:MM:SS.mmmZ`) and dates, formatted by hand.
///
/// The one date format of the API, the logs and the operator messages. Foundation's formatters
/// would load ICU's data (megabytes resident for the life of the process) and a DateFormatter is
/// not thread-safe; integer arithmetic is faster than gmtime_r and a digit loop per field.
public enum UTCTimestamp {
    /// The length of every timestamp this type writes: `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    static let length = 24

    /// `date` to the nearest millisecond, e.g. `2026-11-29T10:00:00.000Z`.
    public static func string(_ date: Date) -> String {
        // Nearest, not down: a millisecond time read back from storage may sit a hair below itself.
        let milliseconds = Int((date.timeIntervalSince1970 * 1000).rounded())
        // Floor division, so instants before 1970 keep a non-negative millisecond part.
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        // Written into the string's own storage: one allocation, no array growing on the way.
        return String(unsafeUninitializedCapacity: length) { buffer in
            write(seconds: seconds, milliseconds: milliseconds - seconds * 1000, into: buffer)
            return length
        }
    }

    /// The UTC calendar date of `date`, e.g. `2026-11-29`.
    public static func dateString(_ date: Date) -> String {
        String(string(date).prefix(10))
    }

    /// Appends the UTC time `seconds` after the epoch (plus `milliseconds`) to `bytes`.
    public static func append(seconds: Int, milliseconds: Int, to bytes: inout [UInt8]) {
        // Written on the stack and appended as one copy: every access-log line has a timestamp,
        // and growing the array by a repeated zero first went through the generic append.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length) { buffer in
            write(seconds: seconds, milliseconds: milliseconds, into: buffer)
            bytes.append(contentsOf: UnsafeBufferPointer(buffer))
        }
    }

    /// Writes the 24 bytes of the UTC time `seconds` after the epoch (plus `milliseconds`).
    private static func write(seconds: Int, milliseconds: Int, into out: UnsafeMutableBufferPointer<UInt8>) {
        // The civil date from days since 1970 (H. Hinnant's days-to-civil algorithm).
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        putDigits(year, count: 4, at: 0, in: out)
        out[4] = UInt8(ascii: "-")
        putDigits(month, count: 2, at: 5, in: out)
        out[7] = UInt8(ascii: "-")
        putDigits(day, count: 2, at: 8, in: out)
        out[10] = UInt8(ascii: "T")
        putDigits(secondOfDay / 3_600, count: 2, at: 11, in: out)
        out[13] = UInt8(ascii: ":")
        putDigits(secondOfDay / 60 % 60, count: 2, at: 14, in: out)
        out[16] = UInt8(ascii: ":")
        putDigits(secondOfDay % 60, count: 2, at: 17, in: out)
        out[19] = UInt8(ascii: ".")
        putDigits(milliseconds, count: 3, at: 20, in: out)
        out[23] = UInt8(ascii: "Z")
    }

    /// Writes the last `count` decimal digits of a non-negative `value`, zero-padded, at `offset`.
    private static func putDigits(
        _ value: Int, count: Int, at offset: Int, in out: UnsafeMutableBufferPointer<UInt8>
    ) {
        var rest = value
        for position in (offset..<offset + count).reversed() {
            out[position] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
    }
}
