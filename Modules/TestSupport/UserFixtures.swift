import CryptoCore
public import Foundation
public import Kernel

extension User {
    /// A user for tests, its WebAuthn handle derived from the id (SHA-256 of it): unique per id
    /// and repeatable, where the server draws a random one.
    public init(
        id: String, username: String?, displayName: String, createdAt: Date, disabledAt: Date? = nil
    ) {
        self.init(
            id: id, username: username, displayName: displayName, createdAt: createdAt,
            disabledAt: disabledAt, userHandle: Digest.sha256("portvakt.test-user-handle:" + id))
    }
}
