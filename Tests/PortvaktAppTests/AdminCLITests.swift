import AuthOrchestrator
import CryptoCore
import Foundation
import Kernel
import PortvaktApp
import SessionCore
import Storage
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

        // An app server's token, good only for introspection.
        let narrow = try PortvaktProcess.run(
            ["admin", "token", "create", "--name", "app-server", "--scope", "introspect"],
            environment: environment)
        #expect(narrow.status == 0, "\(narrow.stderr)")
        #expect(narrow.stdout.contains("'app-server' (introspect)"))
        let narrowList = try PortvaktProcess.run(["admin", "token", "list"], environment: environment)
        #expect(
            narrowList.stdout.split(separator: "\n").contains {
                $0.contains("app-server") && $0.contains("introspect") && $0.contains("active")
            }, "\(narrowList.stdout)")
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
        #expect(
            badScope.status == 2 && badScope.stderr.contains("'--scope' must be read, write or introspect"))
        let badExpiry = try PortvaktProcess.run(
            ["admin", "token", "create", "--name", "x", "--scope", "read", "--expires-in", "soon"],
            environment: environment)
        #expect(badExpiry.status == 2 && badExpiry.stderr.contains("'--expires-in'"))
        let noTarget = try PortvaktProcess.run(["admin", "token", "revoke"], environment: environment)
        #expect(noTarget.status == 2 && noTarget.stderr.contains("NAME or ID"))
    }
}

/// `portvakt admin users|passkeys|sessions|enrollment-link` against a real server: on a socket,
/// since the `portvakt` binary, another process, is the client.
@Suite("portvakt admin over the API", .serialized)
struct AdminAPICLITests {
    @Test(
        "users list/show/disable/enable/delete, passkeys and sessions revoke, enrollment-link: tables and --json"
    )
    func commands() throws {
        let server = try TestServer(.live)
        defer { server.stop() }
        let environment = ["PORTVAKT_ADMIN_URL": server.adminURL, "PORTVAKT_ADMIN_TOKEN": server.adminToken]
        func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
            try PortvaktProcess.run(["admin"] + arguments, environment: environment)
        }
        let person = PasskeyUser(server: server)
        let (credential, userID, _) = try person.signUp("nora")
        _ = try server.signIn(try #require(try server.server.store.user(id: userID)))

        let list = try run(["users", "list"])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(
            list.stdout.contains("USERNAME") && list.stdout.contains("nora") && list.stdout.contains(userID))
        let json = try run(["users", "list", "--search", "nor", "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect((object?["users"] as? [[String: Any]])?.first?["id"] as? String == userID)

        let show = try run(["users", "show", userID])
        #expect(
            show.status == 0 && show.stdout.contains("Passkeys") && show.stdout.contains("passkey.registered")
        )

        let session = try #require(
            try server.server.store.sessions(userID: userID, liveAt: server.clock.now()).first)
        let one = try run(["sessions", "revoke", userID, session.id])
        #expect(one.status == 0 && one.stdout.contains("ended session \(session.id)"))
        let all = try run(["sessions", "revoke", userID, "--all"])
        #expect(all.status == 0 && all.stdout.contains("ended 1 session(s)"), "\(all.stdout)\(all.stderr)")

        let disabled = try run(["users", "disable", userID])
        #expect(disabled.status == 0 && disabled.stdout.contains("disabled user"))
        #expect(try server.server.store.user(id: userID)?.disabledAt != nil)
        #expect(try run(["users", "enable", userID]).status == 0)
        #expect(try server.server.store.user(id: userID)?.disabledAt == nil)

        let link = try run(["enrollment-link", userID, "--expires-in", "2h"])
        #expect(link.status == 0 && link.stdout.contains("#enroll=pve_"), "\(link.stderr)")

        let passkey = Base64URL.encode(credential.id)
        let revoked = try run(["passkeys", "revoke", userID, passkey])
        #expect(revoked.status == 0, "\(revoked.stderr)")
        #expect(try server.server.store.passkey(credentialID: credential.id) == nil)
        let again = try run(["passkeys", "revoke", userID, passkey])
        #expect(again.status == 1 && again.stderr.contains("admin.passkey_not_found"))

        let unconfirmed = try run(["users", "delete", userID])
        #expect(unconfirmed.status == 2 && unconfirmed.stderr.contains("'--yes'"))
        #expect(try run(["users", "delete", userID, "--yes"]).status == 0)
        #expect(try server.server.store.user(id: userID) == nil)
    }

    @Test("clear errors naming the flag: no token, a wrong or read-only token, a bad or unreachable URL")
    func errors() throws {
        let server = try TestServer(.live)
        defer { server.stop() }
        let reader = try server.server.adminTokens.create(
            name: "ro", scope: .read, lifetime: nil, actor: .cli)
        let user = try server.makeUser(username: "olle")
        let noToken = try PortvaktProcess.run(
            ["admin", "users", "list", "--url", server.adminURL], environment: ["PORTVAKT_ADMIN_TOKEN": ""])
        #expect(
            noToken.status == 2 && noToken.stderr.contains("PORTVAKT_ADMIN_TOKEN")
                && noToken.stderr.contains("'--token'"))
        let wrong = try PortvaktProcess.run(
            ["admin", "users", "list", "--url", server.adminURL, "--token", "pva_wrong"])
        #expect(
            wrong.status == 1 && wrong.stderr.contains("admin.unauthorized")
                && wrong.stderr.contains("'--token'"))
        let readOnly = try PortvaktProcess.run(
            ["admin", "users", "disable", user.id, "--url", server.adminURL, "--token", reader.token])
        #expect(
            readOnly.status == 1 && readOnly.stderr.contains("admin.forbidden"),
            "status \(readOnly.status), stderr \(readOnly.stderr)")
        #expect(!readOnly.stderr.contains(reader.token))
        let badURL = try PortvaktProcess.run(["admin", "users", "list", "--url", "ftp://x", "--token", "t"])
        #expect(badURL.status == 2 && badURL.stderr.contains("'--url'"))
        let unreachable = try PortvaktProcess.run(
            ["admin", "users", "list", "--url", "http://127.0.0.1:1", "--token", "t"])
        #expect(unreachable.status == 1 && unreachable.stderr.contains("cannot reach the admin API"))
        let missing = try PortvaktProcess.run(
            ["admin", "users", "show", "--url", server.adminURL, "--token", reader.token])
        #expect(missing.status == 2 && missing.stderr.contains("needs a user ID"))
    }
}
