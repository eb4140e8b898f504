public import FoundationEssentials

/// RFC 3339 UTC times (`YYYY-MM-DDTHH:MM:SS.mmmZ`) and dates, formatted by hand.
///
/// The one date format of the API, the logs and the operator messages. Foundation's formatters
/// would load ICU's data (megabytes resident for the life of the process) and a DateFormatter is
/// not thread-safe; integer arithmetic is faster than gmtime_r and a digit loop per field.
public enum UTCTimestamp {
    /// `date` to the nearest millisecond, e.g. `2026-11-29T10:00:00.000Z`.
    public static func string(_ date: Date) -> String {
        // Nearest, not down: a millisecond time read back from storage may sit a hair below itself.
        let milliseconds = Int((date.timeIntervalSince1970 * 1000).rounded())
        // Floor division, so instants before 1970 keep a non-negative millisecond part.
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        var bytes: [UInt8] = []
        append(seconds: seconds, milliseconds: milliseconds - seconds * 1000, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The UTC calendar date of `date`, e.g. `2026-11-29`.
    public static func dateString(_ date: Date) -> String {
        String(string(date).prefix(10))
    }

    /// Appends the UTC time `seconds` after the epoch (plus `milliseconds`) to `bytes`.
    public static func append(seconds: Int, milliseconds: Int, to bytes: inout [UInt8]) {
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
        appendDigits(year, count: 4, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendDigits(month, count: 2, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        appendDigits(day, count: 2, to: &bytes)
        bytes.append(UInt8(ascii: "T"))
        appendDigits(secondOfDay / 3_600, count: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        appendDigits(secondOfDay / 60 % 60, count: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        appendDigits(secondOfDay % 60, count: 2, to: &bytes)
        bytes.append(UInt8(ascii: "."))
        appendDigits(milliseconds, count: 3, to: &bytes)
        bytes.append(UInt8(ascii: "Z"))
    }

    /// Appends the last `count` decimal digits of a non-negative `value`, zero-padded.
    private static func appendDigits(_ value: Int, count: Int, to bytes: inout [UInt8]) {
        var divisor = 1
        for _ in 1..<count { divisor *= 10 }
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
            divisor /= 10
        }
    }
}
