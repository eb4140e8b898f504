/// `portvakt admin …`: token management on the data folder, and the rest over the admin API.
enum AdminCommand {
    static func run(_ arguments: ArraySlice<String>, environment: [String: String]) throws -> Int32 {
        var rest = arguments
        switch rest.popFirst() {
        case "token":
            return try AdminTokenCommand.run(rest, environment: environment)
        case "users":
            return try AdminAPICommand.users(rest, environment: environment)
        case "passkeys":
            return try AdminAPICommand.passkeys(rest, environment: environment)
        case "sessions":
            return try AdminAPICommand.sessions(rest, environment: environment)
        case "enrollment-link":
            return try AdminAPICommand.enrollmentLink(rest, environment: environment)
        case "bankid":
            return try AdminBankIDCommand.run(rest, environment: environment)
        case "keys":
            return try AdminKeysCommand.run(rest, environment: environment)
        case let other?:
            throw UsageError(
                "unknown admin command '\(other)' (expected token, users, passkeys, sessions, enrollment-link, bankid or keys)"
            )
        case nil:
            throw UsageError(
                "admin needs a command: token, users, passkeys, sessions, enrollment-link, bankid or keys")
        }
    }
}
