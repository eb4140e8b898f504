import Foundation
import TestSupport
import Testing

/// `portvakt admin …` as operators run it.
@Suite("portvakt admin", .serialized)
struct AdminCLITests {
    @Test("admin token create prints the token once; list never shows it; revoke by name or id")
    func tokenLifecycle() throws {
        let directory = try TemporaryDirectory()
        let environment = ["PORTVAKT_DATA": directory.path]
        let created = try PortvaktProcess.run(
            ["admin", "token", "create", "--name", "ci", "--scope", "read", "--expires-in", "30d"],
            environment: environment)
        #expect(created.status == 0, "\(created.stderr)")
        let token = try #require(
            created.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.hasPrefix("pva_") })
        #expect(created.stdout.contains("Expires "))
        let listed = try PortvaktProcess.run(["admin", "token", "list"], environment: environment)
        #expect(listed.status == 0)
        #expect(
            listed.stdout.contains("ci") && listed.stdout.contains("read") && listed.stdout.contains("active")
        )
        #expect(!listed.stdout.contains(token))
        let duplicate = try PortvaktProcess.run(
            ["admin", "token", "create", "--name", "ci", "--scope", "write"], environment: environment)
        #expect(duplicate.status == 1 && duplicate.stderr.contains("admin.token_name_taken"))
        let revoked = try PortvaktProcess.run(["admin", "token", "revoke", "ci"], environment: environment)
        #expect(revoked.status == 0 && revoked.stdout.contains("revoked admin token 'ci'"))
        let again = try PortvaktProcess.run(["admin", "token", "revoke", "ci"], environment: environment)
        #expect(again.status == 1 && again.stderr.contains("admin.token_not_found"))
        let after = try PortvaktProcess.run(["admin", "token", "list"], environment: environment)
        #expect(after.stdout.contains("revoked "))
    }

    @Test("bad admin token usage exits 2 naming the flag")
    func usage() throws {
        let directory = try TemporaryDirectory()
        let environment = ["PORTVAKT_DATA": directory.path]
        let noScope = try PortvaktProcess.run(
            ["admin", "token", "create", "--name", "x"], environment: environment)
        #expect(noScope.status == 2 && noScope.stderr.contains("'--scope'"))
        let badScope = try PortvaktProcess.run(
            ["admin", "token", "create", "--name", "x", "--scope", "admin"], environment: environment)
        #expect(badScope.status == 2 && badScope.stderr.contains("'--scope' must be read or write"))
        let badExpiry = try PortvaktProcess.run(
            ["admin", "token", "create", "--name", "x", "--scope", "read", "--expires-in", "soon"],
            environment: environment)
        #expect(badExpiry.status == 2 && badExpiry.stderr.contains("'--expires-in'"))
        let noTarget = try PortvaktProcess.run(["admin", "token", "revoke"], environment: environment)
        #expect(noTarget.status == 2 && noTarget.stderr.contains("NAME or ID"))
    }
}
