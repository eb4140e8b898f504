/// A person the simulated BankID app can identify as: a test personal number and a name.
public struct TestPerson: Sendable, Hashable, Codable {
    /// Twelve digits, YYYYMMDDNNNC, with a valid check digit.
    public var personalNumber: String
    /// Given name.
    public var givenName: String
    /// Surname.
    public var surname: String
    /// When the person's BankID was issued, YYYY-MM-DD (completionData.bankIdIssueDate).
    public var bankIdIssueDate: String
    /// The risk BankID assesses for this person's orders: "low", "moderate" or "high".
    public var risk: String

    /// The full name as BankID gives it: given name, a space, surname.
    public var name: String { "\(givenName) \(surname)" }

    /// Creates a test person.
    public init(
        personalNumber: String, givenName: String, surname: String, bankIdIssueDate: String = "2023-05-02",
        risk: String = "low"
    ) {
        self.personalNumber = personalNumber
        self.givenName = givenName
        self.surname = surname
        self.bankIdIssueDate = bankIdIssueDate
        self.risk = risk
    }

    /// The built-in persons: test personal numbers of the kind Skatteverket publishes (valid check
    /// digits, never real people's numbers). The first is the default for scans and auto-complete.
    public static let builtIn: [TestPerson] = [
        TestPerson(personalNumber: "198112289874", givenName: "Tolvan", surname: "Tolvansson"),
        TestPerson(personalNumber: "199001012385", givenName: "Anna", surname: "Testsson"),
        TestPerson(personalNumber: "198503152483", givenName: "Erik", surname: "Provare"),
        TestPerson(personalNumber: "197605203210", givenName: "Maria", surname: "Exempelsson"),
        TestPerson(
            personalNumber: "200207242777", givenName: "Johan", surname: "Riskberg",
            bankIdIssueDate: "2024-11-20",
            risk: "moderate"),
        TestPerson(personalNumber: "196912302863", givenName: "Karin", surname: "Simulatorsson"),
        TestPerson(personalNumber: "198809121307", givenName: "Olof", surname: "Demoqvist"),
        TestPerson(personalNumber: "199512312704", givenName: "Sara", surname: "Prövning"),
    ]
}

/// Swedish personal identity numbers in BankID's twelve-digit form.
enum PersonalNumber {
    /// True when `text` is twelve ASCII digits, a plausible date (day + 60 for coordination
    /// numbers) and the Luhn check digit over the last ten digits is right.
    static func isValid(_ text: String) -> Bool {
        let digits = text.utf8.map { Int($0) - 48 }
        guard digits.count == 12, digits.allSatisfy({ (0...9).contains($0) }) else { return false }
        let year = digits[0] * 1000 + digits[1] * 100 + digits[2] * 10 + digits[3]
        let month = digits[4] * 10 + digits[5]
        var day = digits[6] * 10 + digits[7]
        if day > 60 { day -= 60 }
        guard (1800...2100).contains(year), (1...12).contains(month), (1...31).contains(day) else {
            return false
        }
        return checkDigit(Array(digits[2..<11])) == digits[11]
    }

    /// The Luhn check digit for the nine digits YYMMDDNNN.
    static func checkDigit(_ nine: [Int]) -> Int {
        var sum = 0
        for (index, digit) in nine.enumerated() {
            let weighted = digit * (index % 2 == 0 ? 2 : 1)
            sum += weighted / 10 + weighted % 10
        }
        return (10 - sum % 10) % 10
    }
}
