import CryptoCore

/// A server secret for identity digests, with the id that lets it be rotated.
public struct IdentityKey: Sendable, Equatable, CustomStringConvertible {
    /// The key's id, stored beside each digest made with it (1 to 32 of A–Z a–z 0–9 - _).
    public let id: String
    /// The secret bytes (at least 32).
    let secret: [UInt8]

    /// The shortest secret accepted, in bytes.
    public static let minimumSecretBytes = 32

    /// Creates a key.
    /// - Throws: `BankIDError(.configuration)` for a malformed id or a secret under 32 bytes.
    public init(id: String, secret: [UInt8]) throws(BankIDError) {
        let validID =
            (1...32).contains(id.utf8.count)
            && id.unicodeScalars.allSatisfy {
                ("0"..."9").contains($0) || ("a"..."z").contains($0) || ("A"..."Z").contains($0)
                    || $0 == "-" || $0 == "_"
            }
        guard validID else {
            throw BankIDError(.configuration, "identity key id: 1 to 32 letters, digits, - or _")
        }
        guard secret.count >= Self.minimumSecretBytes else {
            throw BankIDError(
                .configuration,
                "identity key \(id): the secret must be at least \(Self.minimumSecretBytes) bytes")
        }
        self.id = id
        self.secret = secret
    }

    /// The id only; the secret is never printed.
    public var description: String { "IdentityKey(\(id))" }

    /// Compares ids, and secrets in constant time.
    public static func == (lhs: IdentityKey, rhs: IdentityKey) -> Bool {
        lhs.id == rhs.id && ConstantTime.equals(lhs.secret, rhs.secret)
    }
}

/// A keyed digest of a personal number: what Portvakt stores instead of the number.
public struct IdentityDigest: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The id of the key it was made with.
    public let keyID: String
    /// HMAC-SHA256 of the number under that key.
    public let value: [UInt8]

    /// Creates a digest value (from storage).
    public init(keyID: String, value: [UInt8]) {
        self.keyID = keyID
        self.value = value
    }

    /// `keyID:hex`, a compact stored form.
    public var description: String { "\(keyID):\(Hex.encode(value))" }
}

/// Turns personal numbers into keyed digests, so an account can be found by its owner's number
/// without the number being stored: a plain hash would fall to a search of the few hundred
/// million possible numbers, an HMAC under a server secret does not.
///
/// New digests use the current key; lookups try every configured key, so a key can be rotated by
/// adding a new current one and re-keying stored digests as their owners sign in.
public struct IdentityHasher: Sendable {
    /// The key new digests are made with.
    public let currentKey: IdentityKey
    /// Every key digests are matched against, current first.
    public let keys: [IdentityKey]

    /// Prefixed to the number so a digest cannot be confused with an HMAC of the same key over
    /// another kind of value.
    static let domain = "portvakt.bankid.personal-number.v1:"

    /// Creates a hasher.
    /// - Throws: `BankIDError(.configuration)` when `currentKeyID` is not among `keys` or ids repeat.
    public init(currentKeyID: String, keys: [IdentityKey]) throws(BankIDError) {
        guard Set(keys.map(\.id)).count == keys.count else {
            throw BankIDError(.configuration, "identity keys: ids must be unique")
        }
        guard let current = keys.first(where: { $0.id == currentKeyID }) else {
            throw BankIDError(
                .configuration, "identity keys: the current key \(currentKeyID) is not configured")
        }
        currentKey = current
        self.keys = [current] + keys.filter { $0.id != currentKeyID }
    }

    /// The digest to store, under the current key.
    public func digest(_ number: PersonalNumber) -> IdentityDigest { digest(number, key: currentKey) }

    /// The number's digest under every key, current first: look each up to find an account made
    /// before a rotation.
    public func candidates(_ number: PersonalNumber) -> [IdentityDigest] {
        keys.map { digest(number, key: $0) }
    }

    /// Whether `stored` is this number's digest (under whichever configured key it names), in constant time.
    public func matches(_ number: PersonalNumber, _ stored: IdentityDigest) -> Bool {
        guard let key = keys.first(where: { $0.id == stored.keyID }) else { return false }
        return ConstantTime.equals(digest(number, key: key).value, stored.value)
    }

    /// Whether `stored` was made with an older key and should be replaced by ``digest(_:)``.
    public func needsRekey(_ stored: IdentityDigest) -> Bool { stored.keyID != currentKey.id }

    /// A key for another purpose, derived from the current key: HMAC-SHA256 under it of
    /// `purpose`, so the identity key itself serves only identity digests. A new current key
    /// gives a new derived key.
    /// - Parameter purpose: a label naming the use and its version, such as
    ///   `portvakt.bankid.device-identifier.v1`.
    public func derivedKey(purpose: String) -> [UInt8] {
        HMAC.authenticate(.sha256, key: currentKey.secret, data: Array(purpose.utf8))
    }

    private func digest(_ number: PersonalNumber, key: IdentityKey) -> IdentityDigest {
        IdentityDigest(
            keyID: key.id,
            value: HMAC.authenticate(
                .sha256, key: key.secret, data: Array((Self.domain + number.digits).utf8)))
    }
}
