/// A Swedish personal identity number (personnummer) or coordination number in its 12-digit form,
/// YYYYMMDDNNNC, whose last digit is the Luhn check digit over the 10 digits from YY.
///
/// The number is personal data: `description`, `debugDescription` and reflection show
/// `<redacted>`, so it cannot reach a log or an error by accident. Read ``digits`` only where the
/// number is sent to BankID or turned into an ``IdentityDigest``.
public struct PersonalNumber: Sendable, Hashable, CustomStringConvertible,
    CustomDebugStringConvertible, CustomReflectable
{
    /// The 12 digits.
    public let digits: String

    /// Checks and wraps a personal number.
    /// - Parameters:
    ///   - text: exactly 12 ASCII digits, no separator.
    ///   - field: the request field it came from, named in the error.
    /// - Throws: `BankIDError(.invalidPersonalNumber)` naming `field`; the value is never in the message.
    public init(_ text: String, field: String = "personalNumber") throws(BankIDError) {
        let bytes = Array(text.utf8)
        guard bytes.count == 12, bytes.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw BankIDError(.invalidPersonalNumber, "\(field): expected 12 digits (YYYYMMDDNNNC)")
        }
        guard Self.luhnValid(bytes.suffix(10).map { Int($0 - 0x30) }) else {
            throw BankIDError(.invalidPersonalNumber, "\(field): the check digit is wrong")
        }
        digits = text
    }

    /// Whether the last of `digits` is the Luhn check digit of the others: from the left, every
    /// other digit starting with the first is doubled (and its digits summed).
    static func luhnValid(_ digits: [Int]) -> Bool {
        guard let check = digits.last else { return false }
        var sum = 0
        for (index, digit) in digits.dropLast().enumerated() {
            let weighted = index % 2 == 0 ? digit * 2 : digit
            sum += weighted > 9 ? weighted - 9 : weighted
        }
        return (10 - sum % 10) % 10 == check
    }

    /// Always `<redacted>`.
    public var description: String { "<redacted>" }
    /// Always `<redacted>`.
    public var debugDescription: String { "<redacted>" }
    /// A mirror without children, so `dump` shows nothing.
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}

extension PersonalNumber: Decodable {
    /// Decodes and checks a number from BankID's JSON (completionData.user.personalNumber).
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        try self.init(text)
    }
}
