import AuthOrchestrator
import CryptoCore
import FoundationEssentials
import Kernel
import Storage

/// `portvakt admin token create|list|revoke`: works on the configured database directly (the
/// SQLite file, or the PostgreSQL server), so an operator can mint the first tokens (or replace a
/// lost one) without a running server or a token.
enum AdminTokenCommand {
    static func run(_ arguments: ArraySlice<String>, environment: [String: String]) throws -> Int32 {
        var rest = arguments
        switch rest.popFirst() {
        case "create":
            let options = try Options.parse(
                rest, command: "admin token create", flags: ["--config", "--name", "--scope", "--expires-in"])
            let name = try options.required("--name")
            let scopeText = try options.required("--scope")
            guard let scope = AdminScope(rawValue: scopeText) else {
                throw UsageError("option '--scope' must be read, write or introspect, got '\(scopeText)'")
            }
            var lifetime: TimeInterval?
            if let text = options["--expires-in"] {
                guard let seconds = parseDuration(text) else {
                    throw UsageError(
                        "option '--expires-in' must be a duration such as 90m, 12h, 30d or 3600s, got '\(text)'"
                    )
                }
                lifetime = seconds
            }
            let created = try withService(options["--config"], environment) {
                try $0.create(name: name, scope: scope, lifetime: lifetime, actor: .cli)
            }
            // The one place the secret is ever shown; stdout only, never the log.
            print("Admin token '\(name)' (\(scope.rawValue)) created; shown once, store it now:")
            print("  \(created.token)")
            if let expiry = created.record.expiresAt { print("Expires \(timestamp(expiry)).") }
            return 0
        case "list":
            let options = try Options.parse(rest, command: "admin token list", flags: ["--config"])
            let tokens = try withService(options["--config"], environment) { try $0.list() }
            let rows = tokens.map { token in
                [
                    token.id, token.name, token.scope.rawValue, timestamp(token.createdAt),
                    token.expiresAt.map(timestamp) ?? "never",
                    token.revokedAt.map { "revoked " + timestamp($0) } ?? "active",
                ]
            }
            print(
                TextTable.render(header: ["ID", "NAME", "SCOPE", "CREATED", "EXPIRES", "STATE"], rows: rows))
            return 0
        case "revoke":
            let options = try Options.parse(
                rest, command: "admin token revoke", flags: ["--config"], positional: 1)
            guard let target = options.positional.first else {
                throw UsageError("admin token revoke needs a token NAME or ID")
            }
            let revoked = try withService(options["--config"], environment) {
                try $0.revoke(target, actor: .cli)
            }
            print("revoked admin token '\(revoked.name)' (\(revoked.id))")
            return 0
        case let other?:
            throw UsageError("unknown admin token command '\(other)' (expected create, list or revoke)")
        case nil:
            throw UsageError("admin token needs a command: create, list or revoke")
        }
    }

    /// Opens the configured database (applying migrations, as `serve` would) for one call.
    private static func withService<T>(
        _ configPath: String?, _ environment: [String: String], _ body: (AdminTokenService) throws -> T
    ) throws -> T {
        let configuration = try PortvaktConfiguration.load(path: configPath, environment: environment)
        let engine = try StorageEngine.open(configuration)
        defer { engine.close() }
        let store = SQLStore(engine: engine)
        return try body(
            AdminTokenService(store: store, audit: store, clock: SystemClock(), random: SystemRandom()))
    }

    /// `90m`, `12h`, `30d`, `3600s` or a bare number of seconds, as seconds; nil otherwise.
    static func parseDuration(_ text: String) -> TimeInterval? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]
        var digits = Substring(text)
        var multiplier = 1.0
        if let last = digits.last, let unit = units[last] {
            multiplier = unit
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let value = Int(digits), value > 0 else {
            return nil
        }
        return Double(value) * multiplier
    }

    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}

/// Plain-text tables for the command line: left-aligned columns two spaces apart.
enum TextTable {
    static func render(header: [String], rows: [[String]]) -> String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1
                    ? cell : cell.paddedWithSpaces(toLength: widths[column])
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}
