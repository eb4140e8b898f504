import CryptoCore
import Foundation
import Kernel
import PortvaktApp
import SessionCore
import Storage
import TestSupport
import Testing

/// `portvakt admin keys rotate|list` as operators run it, on the database directly.
@Suite("portvakt admin keys", .serialized)
struct AdminKeysCLITests {
    static let kek = Base64.encode([UInt8](repeating: 0x11, count: 32))

    /// A data folder and a configuration with access tokens on.
    static func setUp() throws -> (TemporaryDirectory, [String]) {
        let directory = try TemporaryDirectory()
        let config = directory.path("config.json")
        let json =
            #"{"dataDirectory": "\#(directory.path)", "accessTokens": {"enabled": true, "audience": "api"}}"#
        try json.write(toFile: config, atomically: true, encoding: .utf8)
        return (directory, ["--config", config])
    }

    @Test(
        "rotate makes a key (at once, or in 10 s), list shows every key and its state, never a private half")
    func rotateAndList() throws {
        let (directory, config) = try Self.setUp()
        let environment = ["PORTVAKT_ACCESS_TOKEN_KEY": Self.kek]
        let empty = try PortvaktProcess.run(["admin", "keys", "list"] + config, environment: environment)
        #expect(empty.status == 0, "\(empty.stderr)")
        #expect(empty.stdout.split(separator: "\n").count == 1 && empty.stdout.hasPrefix("KID"))
        let first = try PortvaktProcess.run(
            ["admin", "keys", "rotate", "--immediately"] + config, environment: environment)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("New signing key ") && first.stdout.contains("stays published"))
        let second = try PortvaktProcess.run(["admin", "keys", "rotate"] + config, environment: environment)
        #expect(second.status == 0, "\(second.stderr)")
        let listed = try PortvaktProcess.run(["admin", "keys", "list"] + config, environment: environment)
        let rows = listed.stdout.split(separator: "\n").dropFirst()
        #expect(rows.count == 2, "\(listed.stdout)")
        #expect(
            rows.first?.hasSuffix("signing") == true && rows.last?.hasSuffix("pending") == true,
            "\(listed.stdout)")
        let retired = try PortvaktProcess.run(
            ["admin", "keys", "rotate", "--retire-current"] + config, environment: environment)
        #expect(retired.status == 0 && retired.stdout.contains("stop verifying now"), "\(retired.stderr)")
        let after = try PortvaktProcess.run(["admin", "keys", "list"] + config, environment: environment)
        let states = after.stdout.split(separator: "\n").dropFirst().map {
            $0.split(separator: " ").last ?? ""
        }
        // Oldest activation first: the first key, the new one, and the one that was still pending.
        #expect(states == ["unpublished", "signing", "unpublished"], "\(after.stdout)")
        // The audit trail has each rotation, by the command line.
        let store = SQLStore(database: try SQLiteDatabase(path: directory.path("portvakt.sqlite")))
        defer { store.engine.close() }
        let events = try store.auditEvents(userID: nil, beforeID: nil, limit: 10)
        #expect(events.filter { $0.action.rawValue == "signing_key.rotated" && $0.actor == .cli }.count == 3)
    }

    @Test("keys refuses without access tokens on, without the key, and with an unknown command or flag")
    func refusals() throws {
        let (directory, config) = try Self.setUp()
        let off = try PortvaktProcess.run(
            ["admin", "keys", "rotate"], environment: ["PORTVAKT_DATA": directory.path])
        #expect(off.status == 2 && off.stderr.contains("accessTokens.enabled"), "\(off.stderr)")
        let noKey = try PortvaktProcess.run(["admin", "keys", "rotate"] + config)
        #expect(noKey.status != 0 && noKey.stderr.contains("PORTVAKT_ACCESS_TOKEN_KEY"), "\(noKey.stderr)")
        let unknown = try PortvaktProcess.run(["admin", "keys", "spin"] + config)
        #expect(unknown.status == 2 && unknown.stderr.contains("expected rotate or list"))
        let flag = try PortvaktProcess.run(
            ["admin", "keys", "rotate", "--now"] + config,
            environment: ["PORTVAKT_ACCESS_TOKEN_KEY": Self.kek])
        #expect(flag.status == 2 && flag.stderr.contains("--now"))
    }
}
