import AuthOrchestrator
import FoundationEssentials
import Kernel
import SessionCore
import Storage

/// `portvakt admin keys rotate|list`: the access-token signing keys, on the configured database
/// directly (as `admin token` works), so an operator can rotate with no server running. Running
/// instances pick a rotation up within seconds (their key rings reload every 5 s).
enum AdminKeysCommand {
    static func run(_ arguments: ArraySlice<String>, environment: [String: String]) throws -> Int32 {
        var rest = arguments
        switch rest.popFirst() {
        case "rotate":
            let options = try Options.parse(
                rest, command: "admin keys rotate", flags: ["--config"],
                switches: ["--immediately", "--retire-current"])
            let rotation = try withService(options["--config"], environment) {
                try $0.rotate(
                    immediately: options.isSet("--immediately"),
                    retireCurrent: options.isSet("--retire-current"),
                    actor: .cli)
            }
            print(
                "New signing key \(rotation.key.kid) signs from \(AdminTokenCommand.timestamp(rotation.key.activatesAt))."
            )
            if rotation.retiredCurrent {
                print("The previous keys are no longer published: tokens they signed stop verifying now.")
            } else {
                print("The previous key stays published until the last token it signed has expired.")
            }
            return 0
        case "list":
            let options = try Options.parse(rest, command: "admin keys list", flags: ["--config"])
            let (keys, now) = try withService(options["--config"], environment) { (try $0.allKeys(), Date()) }
            let rows = keys.map { key in
                [
                    key.kid, key.algorithm, AdminTokenCommand.timestamp(key.activatesAt),
                    key.retiredAt.map(AdminTokenCommand.timestamp) ?? "-",
                    key.publishUntil.map(AdminTokenCommand.timestamp) ?? "-",
                    state(key, at: now),
                ]
            }
            print(
                TextTable.render(
                    header: ["KID", "ALG", "ACTIVATES", "RETIRED", "PUBLISHED UNTIL", "STATE"], rows: rows))
            return 0
        case let other?:
            throw UsageError("unknown admin keys command '\(other)' (expected rotate or list)")
        case nil:
            throw UsageError("admin keys needs a command: rotate or list")
        }
    }

    /// A key's state for the list: `unpublished` (its tokens no longer verify; deleted at the next
    /// upkeep), `signing`, `pending` (published, signs later) or `published` (retired; its tokens
    /// still verify).
    static func state(_ key: SigningKeyRecord, at now: Date) -> String {
        guard key.isPublished(at: now) else { return "unpublished" }
        if key.signs(at: now) { return "signing" }
        return key.activatesAt > now && key.retiredAt.map({ $0 > now }) ?? true ? "pending" : "published"
    }

    /// Opens the configured database (applying migrations, as `serve` would) for one call.
    private static func withService<T>(
        _ configPath: String?, _ environment: [String: String], _ body: (AccessTokenService) throws -> T
    ) throws -> T {
        let configuration = try PortvaktConfiguration.load(path: configPath, environment: environment)
        let engine = try StorageEngine.open(configuration)
        defer { engine.close() }
        let store = SQLStore(engine: engine)
        guard
            let service = try AccessTokenParts.service(
                configuration: configuration, store: store, clock: SystemClock(), random: SystemRandom())
        else {
            throw UsageError("access tokens are off in this configuration (accessTokens.enabled)")
        }
        return try body(service)
    }
}
