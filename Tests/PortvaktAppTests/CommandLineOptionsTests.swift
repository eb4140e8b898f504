import Testing

@testable import PortvaktApp

/// The command line's option parser: options are `--name`, so values that start with one dash
/// (base64url credential ids can) are positional, and `--` ends the options.
@Suite("Command-line options")
struct CommandLineOptionsTests {
    @Test("a positional argument starting with '-' is positional; '--' ends the options")
    func dashArguments() throws {
        let parsed = try Options.parse(
            ["user-1", "-Ab3_x", "--json"], command: "admin passkeys revoke", flags: [], switches: ["--json"],
            positional: 2)
        #expect(parsed.positional == ["user-1", "-Ab3_x"] && parsed.isSet("--json"))
        let ended = try Options.parse(
            ["--", "--json"], command: "admin passkeys revoke", flags: [], switches: ["--json"], positional: 1
        )
        #expect(ended.positional == ["--json"] && !ended.isSet("--json"))
        #expect(throws: UsageError.self) {
            try Options.parse(["--colour", "blue"], command: "serve", flags: ["--config"])
        }
        #expect(throws: UsageError.self) {
            try Options.parse(["a", "-b"], command: "config check", flags: [], positional: 1)
        }
    }
}
