import CryptoCore
import Dispatch
import Foundation
import Kernel
import SessionCore
import Storage
import TestSupport

/// The engines every behavioural test runs against: one contract, two engines.
typealias StoreKind = TestEngine

extension TestEngine {
    /// A fresh, empty store on this engine for one test (alive as long as the value).
    func make() throws -> TestStore { try TestStore(self) }
}

/// A whole-millisecond instant near the present, so round trips compare exactly.
let epoch = Date(timeIntervalSince1970: 1_790_000_000)

func at(_ seconds: TimeInterval) -> Date { epoch.addingTimeInterval(seconds) }

func makeUser(_ id: String, username: String? = nil, createdAt: Date = epoch) -> User {
    User(id: id, username: username, displayName: "User \(id)", createdAt: createdAt)
}

func makeSession(
    _ id: String, userID: String, createdAt: Date = epoch, expiresAt: Date = at(86_400),
    revokedAt: Date? = nil, token: String? = nil
) -> Session {
    Session(
        id: id, userID: userID, tokenHash: Digest.sha256(token ?? "token-\(id)"), clientKind: .web,
        authMethod: .passkey, createdAt: createdAt, lastSeenAt: createdAt, expiresAt: expiresAt,
        revokedAt: revokedAt, userAgent: "TestAgent/1.0", ipAddress: "192.0.2.1")
}

/// Runs `body` once on each of `count` threads at the same time and waits for all of them.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for index in 0..<count {
        let thread = Thread {
            body(index)
            group.leave()
        }
        group.enter()
        thread.start()
    }
    group.wait()
}

func makePasskey(
    _ credentialID: [UInt8], userID: String, name: String = "Passkey", createdAt: Date = epoch,
    signCount: UInt32 = 0
) -> StoredPasskey {
    StoredPasskey(
        credentialID: credentialID, userID: userID, publicKey: [0xA5, 0x01, 0x02, 0x03, 0x26],
        algorithm: -7, signCount: signCount, aaguid: "fbfc3007-154e-4ecc-8c0b-6e020557d7bd",
        providerName: "iCloud Keychain", transports: ["hybrid", "internal"], backupEligible: true,
        backupState: true, attestationFormat: "none", attestationType: "None",
        attestationTrusted: false, name: name, createdAt: createdAt, lastUsedAt: nil)
}

func makeChallenge(
    _ id: String, purpose: ChallengePurpose = .login, createdAt: Date = epoch,
    expiresAt: Date = at(300)
) -> StoredChallenge {
    StoredChallenge(
        id: id, challenge: Array(repeating: 7, count: 32), purpose: purpose, createdAt: createdAt,
        expiresAt: expiresAt)
}
