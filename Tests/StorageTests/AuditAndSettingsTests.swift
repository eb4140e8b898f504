import Foundation
import Kernel
import SessionCore
import Storage
import Synchronization
import TestSupport
import Testing

/// AuditStore and SettingsStore behaviour, identical on SQLite and PostgreSQL.
@Suite("Audit and settings stores")
struct AuditAndSettingsTests {
    @Test(
        "audit events get increasing ids and read back newest first with every field",
        arguments: StoreKind.tested)
    func appendAndRead(kind: StoreKind) throws {
        let fixture = try kind.make()
        let first = AuditEvent(
            at: at(1), action: AuditAction(rawValue: "user.created"), actor: .admin(tokenName: "ops"),
            userID: "u1", requestID: "r-1",
            ipAddress: "192.0.2.7", details: ["method": "passkey", "note": "quote \" and / slash"])
        let second = AuditEvent(at: at(2), action: AuditAction(rawValue: "system.started"), actor: .system)
        let firstID = try fixture.store.appendAudit(first)
        let secondID = try fixture.store.appendAudit(second)
        #expect(secondID > firstID)

        var expectedFirst = first
        expectedFirst.id = firstID
        var expectedSecond = second
        expectedSecond.id = secondID
        #expect(
            try fixture.store.auditEvents(userID: nil, beforeID: nil, limit: 10) == [
                expectedSecond, expectedFirst,
            ])
    }

    @Test("audit pages by id and filters by user", arguments: StoreKind.tested)
    func pagination(kind: StoreKind) throws {
        let fixture = try kind.make()
        var ids: [Int64] = []
        for index in 0..<7 {
            ids.append(
                try fixture.store.appendAudit(
                    AuditEvent(
                        at: at(Double(index)), action: AuditAction(rawValue: "session.created"),
                        actor: .system,
                        userID: index.isMultiple(of: 2) ? "even" : "odd")))
        }
        let firstPage = try fixture.store.auditEvents(userID: nil, beforeID: nil, limit: 3)
        #expect(firstPage.compactMap(\.id) == Array(ids.reversed().prefix(3)))
        let secondPage = try fixture.store.auditEvents(
            userID: nil, beforeID: firstPage.last?.id, limit: 3)
        #expect(secondPage.compactMap(\.id) == Array(ids.reversed().dropFirst(3).prefix(3)))

        let even = try fixture.store.auditEvents(userID: "even", beforeID: nil, limit: 10)
        #expect(even.compactMap(\.id) == [ids[6], ids[4], ids[2], ids[0]])
        let evenOlder = try fixture.store.auditEvents(userID: "even", beforeID: ids[4], limit: 10)
        #expect(evenOlder.compactMap(\.id) == [ids[2], ids[0]])
    }

    @Test("audit events outlive the user they mention", arguments: StoreKind.tested)
    func auditOutlivesUser(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.insertUser(makeUser("u1"))
        _ = try fixture.store.appendAudit(
            AuditEvent(
                at: epoch, action: AuditAction(rawValue: "user.deleted"), actor: .admin(tokenName: "ops"),
                userID: "u1"))
        #expect(try fixture.store.deleteUser(id: "u1"))
        #expect(try fixture.store.auditEvents(userID: "u1", beforeID: nil, limit: 10).count == 1)
    }

    @Test("a setting reads back and a later set replaces it", arguments: StoreKind.tested)
    func setAndReplace(kind: StoreKind) throws {
        let fixture = try kind.make()
        #expect(try fixture.store.setting("admin.token_hash") == nil)
        try fixture.store.setSetting("admin.token_hash", value: [1, 2, 3])
        #expect(try fixture.store.setting("admin.token_hash") == [1, 2, 3])
        try fixture.store.setSetting("admin.token_hash", value: [9])
        #expect(try fixture.store.setting("admin.token_hash") == [9])
    }

    @Test("an empty setting value reads back empty, not missing", arguments: StoreKind.tested)
    func emptyValue(kind: StoreKind) throws {
        let fixture = try kind.make()
        try fixture.store.setSetting("flag", value: [])
        #expect(try fixture.store.setting("flag") == [])
    }

    @Test("insert-if-absent stores only the first value", arguments: StoreKind.tested)
    func insertIfAbsent(kind: StoreKind) throws {
        let fixture = try kind.make()
        #expect(try fixture.store.insertSettingIfAbsent("admin.token_hash", value: [1]))
        #expect(try fixture.store.insertSettingIfAbsent("admin.token_hash", value: [2]) == false)
        #expect(try fixture.store.setting("admin.token_hash") == [1])
    }

    @Test(
        "insert-if-absent lets exactly one of many racing threads win",
        arguments: StoreKind.tested)
    func insertIfAbsentRace(kind: StoreKind) throws {
        let fixture = try kind.make()
        let store = fixture.store
        let wins = Wins()
        onThreads(8) { index in
            if (try? store.insertSettingIfAbsent("admin.token_hash", value: [UInt8(index)])) == true {
                wins.add(index)
            }
        }
        let winners = wins.all
        #expect(winners.count == 1)
        #expect(try store.setting("admin.token_hash") == winners.map { UInt8($0) })
    }
}

/// Collects indices from several threads.
final class Wins: Sendable {
    private let state = Mutex<[Int]>([])
    func add(_ index: Int) { state.withLock { $0.append(index) } }
    var all: [Int] { state.withLock { $0 } }
}
