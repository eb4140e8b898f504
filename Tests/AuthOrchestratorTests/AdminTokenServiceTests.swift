import AuthOrchestrator
import CryptoCore
import Foundation
import Kernel
import Storage
import TestSupport
import Testing

@Suite("Admin tokens")
struct AdminTokenServiceTests {
    let clock = FixedClock()
    /// The tokens, the audit trail and the settings, in one database as in the server.
    let storage: TestStore
    var store: SQLStore { storage.store }

    init() throws { storage = try TestStore(.sqlite, clock: clock) }

    var service: AdminTokenService {
        AdminTokenService(store: store, audit: store, clock: clock, random: SystemRandom())
    }

    @Test("a token is pva_ + 256 bits, stored only as its SHA-256, and authorises its scope")
    func createAndAuthorise() throws {
        let created = try service.create(name: "support", scope: .read, lifetime: nil, actor: .cli)
        #expect(created.token.hasPrefix("pva_"))
        #expect(Base64URL.decode(created.token.dropFirst(4))?.count == 32)
        let stored = try #require(try store.adminTokens().first)
        #expect(stored.tokenHash == Digest.sha256(created.token))
        let principal = try service.authorize(bearer: created.token, scope: .read)
        #expect(principal == AdminPrincipal(tokenID: stored.id, name: "support", scope: .read))
        #expect(principal.actor.rawValue == "admin:support")
        #expect(throws: AuthError(.adminForbidden, "")) {
            try service.authorize(bearer: created.token, scope: .write)
        }
        let events = try store.auditEvents(userID: nil, beforeID: nil, limit: 10)
        #expect(events.map(\.action.rawValue) == ["admin.token.created"])
        #expect(!"\(events)".contains(created.token))
    }

    @Test(
        "scopes form a ladder, write ⊇ read ⊇ introspect, and an introspect token is stored and read back",
        arguments: TestEngine.tested)
    func scopeLadder(engine: TestEngine) throws {
        let storage = try TestStore(engine, clock: clock)
        let service = AdminTokenService(
            store: storage.store, audit: storage.store, clock: clock, random: SystemRandom())
        let allowed: [AdminScope: Set<AdminScope>] = [
            .write: [.write, .read, .introspect], .read: [.read, .introspect], .introspect: [.introspect],
        ]
        for held in AdminScope.allCases {
            let created = try service.create(name: "t-\(held)", scope: held, lifetime: nil, actor: .cli)
            #expect(try storage.store.adminToken(hash: Digest.sha256(created.token))?.scope == held)
            for needed in AdminScope.allCases {
                #expect(held.allows(needed) == allowed[held]?.contains(needed), "\(held) for \(needed)")
                if held.allows(needed) {
                    #expect(try service.authorize(bearer: created.token, scope: needed).scope == held)
                } else {
                    #expect(throws: AuthError(.adminForbidden, ""), "\(held) for \(needed)") {
                        try service.authorize(bearer: created.token, scope: needed)
                    }
                }
            }
        }
        #expect(Set(try storage.store.adminTokens().map(\.scope)) == Set(AdminScope.allCases))
    }

    @Test("missing, unknown, revoked and expired tokens are all admin.unauthorized")
    func refusals() throws {
        let unauthorized = AuthError(.adminUnauthorized, "")
        #expect(throws: unauthorized) { try service.authorize(bearer: nil, scope: .read) }
        #expect(throws: unauthorized) { try service.authorize(bearer: "pva_nope", scope: .read) }
        let revoked = try service.create(name: "old", scope: .write, lifetime: nil, actor: .cli)
        try service.revoke("old", actor: .cli)
        #expect(throws: unauthorized) { try service.authorize(bearer: revoked.token, scope: .read) }
        let expiring = try service.create(name: "temp", scope: .write, lifetime: 60, actor: .cli)
        _ = try service.authorize(bearer: expiring.token, scope: .write)
        clock.advance(by: 60)
        #expect(throws: unauthorized) { try service.authorize(bearer: expiring.token, scope: .read) }
    }

    @Test("names are checked and unique; revoking twice or an unknown token is admin.token_not_found")
    func namesAndRevocation() throws {
        #expect(throws: AuthError(.invalidTokenName, "")) {
            try service.create(name: "has space", scope: .read, lifetime: nil, actor: .cli)
        }
        #expect(throws: AuthError(.invalidExpiry, "")) {
            try service.create(name: "forever", scope: .read, lifetime: 20 * 365 * 86_400, actor: .cli)
        }
        let first = try service.create(name: "ops", scope: .write, lifetime: nil, actor: .cli)
        #expect(throws: AuthError(.tokenNameTaken, "")) {
            try service.create(name: "ops", scope: .read, lifetime: nil, actor: .cli)
        }
        try service.revoke(first.record.id, actor: .cli)
        #expect(throws: AuthError(.tokenNotFound, "")) { try service.revoke("ops", actor: .cli) }
        #expect(throws: AuthError(.tokenNotFound, "")) { try service.revoke("ghost", actor: .cli) }
    }

    @Test("the environment token is a write token named environment, never stored")
    func environmentToken() throws {
        let secret = "pva_" + String(repeating: "e", count: 43)
        let service = AdminTokenService(
            store: store, audit: store, clock: clock, random: SystemRandom(), environmentToken: secret)
        #expect(try service.authorize(bearer: secret, scope: .write).actor.rawValue == "admin:environment")
        #expect(try store.adminTokens().isEmpty)
    }

    @Test("bootstrap creates one write token on an empty table, once; a legacy hash is adopted instead")
    func bootstrap() throws {
        let token = try #require(try service.bootstrap(settings: store, legacyKey: "legacy"))
        #expect(try service.authorize(bearer: token, scope: .write).name == "bootstrap")
        #expect(try service.bootstrap(settings: store, legacyKey: "legacy") == nil)

        // Another database, with no tokens yet but the hash an older version kept in its settings.
        let legacyStorage = try TestStore(.sqlite, clock: clock)
        let legacyStore = legacyStorage.store
        let legacy = AdminTokenService(
            store: legacyStore, audit: legacyStore, clock: clock, random: SystemRandom())
        let old = "pva_" + String(repeating: "o", count: 43)
        try legacyStore.setSetting("legacy", value: Digest.sha256(old))
        #expect(try legacy.bootstrap(settings: legacyStore, legacyKey: "legacy") == nil)
        #expect(try legacy.authorize(bearer: old, scope: .write).name == "bootstrap")
    }
}
