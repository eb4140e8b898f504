/// `portvakt admin …`: token management on the data folder.
enum AdminCommand {
    static func run(_ arguments: ArraySlice<String>, environment: [String: String]) throws -> Int32 {
        var rest = arguments
        switch rest.popFirst() {
        case "token":
            return try AdminTokenCommand.run(rest, environment: environment)
        case let other?:
            throw UsageError("unknown admin command '\(other)' (expected token)")
        case nil:
            throw UsageError("admin needs a command: token")
        }
    }
}
