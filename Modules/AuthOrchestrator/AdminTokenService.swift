import CryptoCore
public import FoundationEssentials
public import Kernel
public import Storage

/// The admin token a request was authorised with: what audit events name and what it may do.
public struct AdminPrincipal: Sendable, Equatable {
    /// The token's id.
    public let tokenID: String
    /// The token's name.
    public let name: String
    /// What the token may do.
    public let scope: AdminScope

    /// Creates a principal.
    public init(tokenID: String, name: String, scope: AdminScope) {
        self.tokenID = tokenID
        self.name = name
        self.scope = scope
    }

    /// The audit trail's actor for this token: `admin:<name>`.
    public var actor: AuditActor { .admin(tokenName: name) }
}

/// A token just created: the secret is here once and nowhere else.
public struct CreatedAdminToken: Sendable {
    /// The stored record (hash only).
    public let record: AdminTokenRecord
    /// The secret, `pva_` + 256 bits in base64url. Show it once; it cannot be recovered.
    public let token: String
}

/// Admin API tokens: minting, listing, revoking, and checking a presented bearer token.
///
/// Tokens are 256-bit random secrets with a `pva_` prefix (so secret scanners spot them), stored
/// only as SHA-256. A presented token is hashed and looked up by that hash; the found hash is
/// compared again in constant time, and a token from the environment (never stored) is compared
/// in constant time too.
public struct AdminTokenService: Sendable {
    let store: any AdminTokenStore
    let audit: any AuditStore
    let clock: any WallClock
    let random: any RandomSource
    /// SHA-256 of `PORTVAKT_ADMIN_TOKEN` when set: a write token named "environment", kept in
    /// memory only.
    let environmentTokenHash: [UInt8]?

    /// Admin tokens start with this, so secret scanners recognise them.
    public static let prefix = "pva_"
    /// The name of the token a first start creates.
    public static let bootstrapName = "bootstrap"
    /// The name a token from the environment goes by in the audit trail.
    public static let environmentName = "environment"
    /// The longest expiry a token may be created with: ten years.
    public static let maximumLifetime: TimeInterval = 10 * 365 * 86_400

    /// Creates the service.
    /// - Parameter environmentToken: `PORTVAKT_ADMIN_TOKEN`, accepted as a write token and never
    ///   written anywhere.
    public init(
        store: any AdminTokenStore, audit: any AuditStore, clock: any WallClock, random: any RandomSource,
        environmentToken: String? = nil
    ) {
        self.store = store
        self.audit = audit
        self.clock = clock
        self.random = random
        environmentTokenHash = environmentToken.map { Digest.sha256($0) }
    }

    // MARK: Checking requests

    /// The principal behind a bearer token, when the token may do what `scope` needs.
    /// - Parameters:
    ///   - bearer: The presented token; nil when the request had none.
    ///   - scope: the scope the route needs (`AdminScope.allows(_:)`): `.read` for requests that
    ///     only look, `.write` for changes, `.introspect` for session introspection.
    /// - Throws: `admin.unauthorized` (missing, unknown, revoked or expired), `admin.forbidden`
    ///   (a token whose scope does not allow the route); `StorageError` on storage faults.
    public func authorize(bearer: String?, scope: AdminScope) throws -> AdminPrincipal {
        guard let bearer, !bearer.isEmpty else {
            throw AuthError(.adminUnauthorized, "no admin token was presented")
        }
        let hash = Digest.sha256(bearer)
        let principal: AdminPrincipal
        if let environmentTokenHash, ConstantTime.equals(hash, environmentTokenHash) {
            principal = AdminPrincipal(
                tokenID: Self.environmentName, name: Self.environmentName, scope: .write)
        } else {
            // Found by the hash of a 256-bit secret, so the index lookup reveals nothing a timing
            // probe could use; the bytes are still compared in constant time before trusting them.
            guard let record = try store.adminToken(hash: hash), ConstantTime.equals(record.tokenHash, hash)
            else { throw AuthError(.adminUnauthorized, "the admin token is not valid") }
            let now = clock.now()
            guard record.revokedAt == nil, record.expiresAt.map({ $0 > now }) ?? true else {
                throw AuthError(.adminUnauthorized, "the admin token is not valid")
            }
            principal = AdminPrincipal(tokenID: record.id, name: record.name, scope: record.scope)
        }
        guard principal.scope.allows(scope) else {
            throw AuthError(
                .adminForbidden,
                principal.scope == .introspect
                    ? "this admin token may only introspect sessions" : "this admin token may only read")
        }
        return principal
    }

    // MARK: Managing tokens

    /// Mints a token.
    /// - Parameters:
    ///   - name: 1 to 64 letters, digits, `.`, `_` or `-`; unique among all tokens ever made.
    ///   - scope: write, read or introspect.
    ///   - lifetime: seconds until it expires; nil for no expiry.
    ///   - actor: who made it, for the audit trail (`cli`, or `admin:<name>`).
    /// - Throws: `admin.invalid_token_name`, `admin.token_name_taken`, `admin.invalid_expiry`.
    public func create(name: String, scope: AdminScope, lifetime: TimeInterval?, actor: AuditActor) throws
        -> CreatedAdminToken
    {
        try Self.checkName(name)
        if let lifetime, !(1...Self.maximumLifetime).contains(lifetime) {
            throw AuthError(.invalidExpiry, "an expiry is 1 second to 10 years away")
        }
        let now = clock.now()
        let token = Self.prefix + (try random.secureToken(32))
        let record = AdminTokenRecord(
            id: "adt_" + (try random.secureToken(12)), name: name, scope: scope,
            tokenHash: Digest.sha256(token),
            createdAt: now, expiresAt: lifetime.map { now + $0 })
        do {
            try store.insertAdminToken(record)
        } catch let error as StorageError where error.code == .conflict {
            throw AuthError(.tokenNameTaken, "an admin token with this name exists", underlying: error)
        }
        _ = try audit.appendAudit(
            AuditEvent(
                at: now, action: .adminTokenCreated, actor: actor,
                details: ["tokenId": record.id, "name": name, "scope": scope.rawValue]))
        return CreatedAdminToken(record: record, token: token)
    }

    /// Every token, oldest first (hashes included; callers show only the other fields).
    public func list() throws -> [AdminTokenRecord] {
        try store.adminTokens()
    }

    /// Revokes the token with this id or name.
    /// - Throws: `admin.token_not_found` when none has it or it was already revoked.
    @discardableResult
    public func revoke(_ nameOrID: String, actor: AuditActor) throws -> AdminTokenRecord {
        guard let record = try store.adminTokens().first(where: { $0.id == nameOrID || $0.name == nameOrID }),
            try store.revokeAdminToken(id: record.id, at: clock.now())
        else { throw AuthError(.tokenNotFound, "no live admin token has this name or id") }
        _ = try audit.appendAudit(
            AuditEvent(
                at: clock.now(), action: .adminTokenRevoked, actor: actor,
                details: ["tokenId": record.id, "name": record.name]))
        return record
    }

    /// On a first start (no admin token stored at all) creates the write token "bootstrap" and
    /// returns its secret, once. A hash left by an older release in settings under `legacyKey`
    /// becomes "bootstrap" instead, so the token printed back then keeps working.
    ///
    /// Two processes starting together on one fresh database: the name is unique, so only one
    /// insert wins and only its process prints a token.
    public func bootstrap(settings: any SettingsStore, legacyKey: String) throws -> String? {
        guard try store.adminTokens().isEmpty else { return nil }
        let now = clock.now()
        if let legacy = try settings.setting(legacyKey), legacy.count == 32 {
            let record = AdminTokenRecord(
                id: "adt_" + (try random.secureToken(12)), name: Self.bootstrapName, scope: .write,
                tokenHash: legacy, createdAt: now)
            do { try store.insertAdminToken(record) } catch let error as StorageError
                where error.code == .conflict
            {}
            return nil
        }
        do {
            return try create(name: Self.bootstrapName, scope: .write, lifetime: nil, actor: .system).token
        } catch let error as AuthError where error.code == .tokenNameTaken {
            return nil
        }
    }

    // MARK: Helpers

    static func checkName(_ name: String) throws(AuthError) {
        guard (1...64).contains(name.utf8.count),
            name.utf8.allSatisfy({ byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"),
                    UInt8(ascii: "-"):
                    true
                default: false
                }
            })
        else {
            throw AuthError(
                .invalidTokenName, "an admin token name is 1 to 64 letters, digits, \".\", \"_\" or \"-\"")
        }
    }

}
