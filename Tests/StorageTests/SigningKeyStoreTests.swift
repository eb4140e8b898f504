import CryptoCore
import Foundation
import Kernel
import SessionCore
import Synchronization
import TestSupport
import Testing

@testable import Storage

/// The signing keys on both engines: what is stored and read back, the publication window,
/// and that rotations racing on two instances never fork the current key.
@Suite("Signing key store")
struct SigningKeyStoreTests {
    let clock = FixedClock()
    let kek = SigningKeyEncryptionKey(bytes: [UInt8](repeating: 0x42, count: 32))!

    func key(at now: Date, activatingIn seconds: TimeInterval = 0) throws -> SigningKeyRecord {
        try SigningKeyRecord.generate(
            kek: kek, at: now, activatesAt: now.addingTimeInterval(seconds), random: SystemRandom())
    }

    @Test(
        "A key round-trips every column; publication and deletion follow publish_until",
        arguments: TestEngine.tested)
    func roundTrip(engine: TestEngine) throws {
        let fixture = try TestStore(engine, clock: clock)
        let store = fixture.store
        let now = clock.now()
        let first = try key(at: now)
        #expect(try store.insertInitialSigningKeyIfNone(first, at: now))
        #expect(try store.signingKeys(publishedAt: now) == [first])
        let second = try key(at: now, activatingIn: 600)
        #expect(
            try store.rotateSigningKey(
                to: second, retiredUntil: now.addingTimeInterval(4260), unpublishingAt: nil,
                onlyIfCurrentActivatedBefore: nil))
        let keys = try store.signingKeys(publishedAt: now)
        #expect(keys.map(\.kid) == [first.kid, second.kid])
        let retired = try #require(keys.first)
        #expect(
            retired.retiredAt == second.activatesAt && retired.publishUntil == now.addingTimeInterval(4260))
        #expect(retired.sealedPrivateKey == first.sealedPrivateKey && retired.publicKey == first.publicKey)
        #expect(retired.kekID == kek.id && retired.algorithm == "ES256" && retired.createdAt == now)
        #expect(keys.last == second)
        // No initial key while any is published.
        #expect(try !store.insertInitialSigningKeyIfNone(try key(at: now), at: now))
        let later = now.addingTimeInterval(4260)
        #expect(try store.signingKeys(publishedAt: later).map(\.kid) == [second.kid])
        #expect(try store.signingKeys(publishedAt: nil).count == 2)
        #expect(try store.deleteSigningKeys(unpublishedBefore: later.addingTimeInterval(-1)) == 0)
        #expect(try store.deleteSigningKeys(unpublishedBefore: later) == 1)
        #expect(try store.signingKeys(publishedAt: nil) == [second])
        // The database refuses another algorithm.
        #expect(throws: StorageError.self) {
            try store.engine.write { try $0.execute("UPDATE signing_keys SET algorithm = 'HS256'") }
        }
    }

    @Test(
        "A scheduled rotation does nothing while the current key is younger than the interval",
        arguments: TestEngine.tested)
    func conditional(engine: TestEngine) throws {
        let fixture = try TestStore(engine, clock: clock)
        let store = fixture.store
        let now = clock.now()
        _ = try store.insertInitialSigningKeyIfNone(try key(at: now), at: now)
        let candidate = try key(at: now, activatingIn: 600)
        #expect(
            try !store.rotateSigningKey(
                to: candidate, retiredUntil: now, unpublishingAt: nil,
                onlyIfCurrentActivatedBefore: now.addingTimeInterval(-86_400)))
        #expect(try store.signingKeys(publishedAt: nil).count == 1)
        #expect(
            try store.rotateSigningKey(
                to: candidate, retiredUntil: now.addingTimeInterval(4260), unpublishingAt: nil,
                onlyIfCurrentActivatedBefore: now.addingTimeInterval(1)))
        #expect(try store.signingKeys(publishedAt: nil).count == 2)
    }

    @Test(
        "Two instances rotating on the same schedule at once leave one new current key",
        arguments: TestEngine.tested)
    func racingRotations(engine: TestEngine) throws {
        let fixture = try TestStore(engine, clock: clock)
        let now = clock.now()
        _ = try fixture.store.insertInitialSigningKeyIfNone(try key(at: now), at: now)
        // A month later both instances' hourly upkeep finds the key due.
        let due = now.addingTimeInterval(31 * 86_400)
        let instances = [
            SQLStore(engine: fixture.engine, clock: clock), SQLStore(engine: fixture.engine, clock: clock),
        ]
        let candidates = try (0..<8).map { _ in try key(at: due, activatingIn: 600) }
        let rotated = Counter()
        DispatchQueue.concurrentPerform(iterations: candidates.count) { index in
            let store = instances[index % 2]
            let done = try? store.rotateSigningKey(
                to: candidates[index], retiredUntil: due.addingTimeInterval(4260), unpublishingAt: nil,
                onlyIfCurrentActivatedBefore: due.addingTimeInterval(-30 * 86_400))
            if done == true { rotated.add() }
        }
        #expect(rotated.value == 1)
        let keys = try fixture.store.signingKeys(publishedAt: nil)
        #expect(keys.count == 2)
        #expect(keys.filter { $0.retiredAt == nil }.count == 1)
    }

    @Test("Instances starting together make one initial key", arguments: TestEngine.tested)
    func racingInitialKeys(engine: TestEngine) throws {
        let fixture = try TestStore(engine, clock: clock)
        let now = clock.now()
        let candidates = try (0..<8).map { _ in try key(at: now) }
        let made = Counter()
        DispatchQueue.concurrentPerform(iterations: candidates.count) { index in
            let store = SQLStore(engine: fixture.engine, clock: clock)
            if (try? store.insertInitialSigningKeyIfNone(candidates[index], at: now)) == true { made.add() }
        }
        #expect(made.value == 1)
        #expect(try fixture.store.signingKeys(publishedAt: nil).count == 1)
    }
}

/// A thread-safe count.
private final class Counter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
