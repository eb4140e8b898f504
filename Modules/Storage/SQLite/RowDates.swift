import Foundation

extension Row {
    /// Column `index`, stored as milliseconds since 1970, as a date.
    func date(_ index: Int32) -> Date { Date(millisecondsSince1970: int64(index)) }

    /// Column `index` as a date, nil when NULL.
    func optionalDate(_ index: Int32) -> Date? { isNull(index) ? nil : date(index) }
}
