import AuthOrchestrator
import FoundationEssentials
import HTTPEngine
import Kernel
import PortvaktAPI
import SessionCore
import Storage

/// The signed access tokens' part of the server: the use case over the shared keys, its two
/// public routes, and its share of the hourly upkeep. Nothing of it exists while
/// `accessTokens.enabled` is false.
struct AccessTokenParts: Sendable {
    /// The use case; nil when access tokens are off.
    let service: AccessTokenService?
    let access: AccountSessionService
    let transport: SessionTransport

    /// Builds the parts and, when on, makes sure the database holds a key (the first start
    /// makes one) and says once, in the log, when this instance cannot sign with it: a
    /// `PORTVAKT_ACCESS_TOKEN_KEY` other than the one that sealed the keys.
    init(
        configuration: PortvaktConfiguration, store: SQLStore, access: AccountSessionService,
        transport: SessionTransport, clock: any WallClock, random: any RandomSource, logger: Logger
    ) throws {
        self.access = access
        self.transport = transport
        let report: @Sendable (String) -> Void = { [logger] reason in
            logger.log(.error, "access tokens cannot be signed", ["reason": reason])
        }
        guard
            let service = try Self.service(
                configuration: configuration, store: store, clock: clock, random: random,
                onUnavailable: report)
        else {
            self.service = nil
            return
        }
        if try service.ensureKey() {
            logger.log(.info, "made the first access-token signing key")
        }
        service.checkSigning()
        self.service = service
    }

    /// The use case over `store` as `configuration` sets it up; nil when access tokens are off.
    /// `portvakt admin keys` builds the same.
    static func service(
        configuration: PortvaktConfiguration, store: SQLStore, clock: any WallClock, random: any RandomSource,
        onUnavailable: (@Sendable (String) -> Void)? = nil
    ) throws -> AccessTokenService? {
        let settings = configuration.accessTokens
        guard settings.enabled else { return nil }
        // The loader refuses an enabled section without a valid key or an audience; a
        // configuration built in code is checked here again.
        guard let kek = settings.keyEncryptionKey, !settings.audience.isEmpty else {
            throw ConfigurationError(issues: [
                ConfigurationIssue(
                    .missingKey, path: PortvaktConfiguration.EnvironmentVariable.accessTokenKey,
                    message: "access tokens need accessTokens.audience and a valid key-encryption key")
            ])
        }
        let ring = SigningKeyRing(repository: store, kek: kek, clock: clock)
        return AccessTokenService(
            issuer: AccessTokenIssuer(
                ring: ring, issuer: configuration.publicURL, audience: settings.audience,
                lifetime: TimeInterval(settings.lifetimeSeconds), clock: clock, random: random),
            ring: ring, keys: store, audit: store, kek: kek,
            rotationInterval: TimeInterval(settings.rotationDays) * 86_400, clock: clock, random: random,
            onUnavailable: onUnavailable)
    }

    /// Adds the token and key-set routes to the public router (none when off).
    func register(on router: inout Router) {
        guard let service else { return }
        AccessTokenAPI(service: service, access: access, transport: transport).register(on: &router)
    }

    /// The hourly upkeep (run on one instance at a time): the scheduled rotation and the
    /// deletion of keys no token can still need.
    func maintain(logger: Logger) throws {
        guard let service else { return }
        let (rotated, deleted) = try service.maintain()
        if let rotated {
            logger.log(.info, "rotated the access-token signing key", ["kid": rotated.kid])
        }
        if deleted > 0 { logger.log(.info, "deleted expired signing keys", ["count": String(deleted)]) }
    }
}
