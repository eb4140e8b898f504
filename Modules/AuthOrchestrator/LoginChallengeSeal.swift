import CryptoCore
import FoundationEssentials
public import Kernel
public import Storage

/// Login challenges sealed into their own id: the challenge bytes, its expiry and the username a
/// login named (as a digest), under an HMAC-SHA-256 with a key every instance shares.
///
/// Issuing a login challenge then writes nothing: finalize learns everything from the id, and the
/// MAC makes sure the server issued it (a forged id cannot pair a captured assertion's challenge
/// with a fresh expiry). Single use is kept by recording each challenge when it is answered or
/// refused (`ChallengeStore.useSealedChallenge`, inside the login's commit), so of racing
/// finalize calls exactly one wins, on any instance.
///
/// Layout: version 1 | expiry (ms since 1970, 8 bytes big-endian) | flags (bit 0: a username was
/// named) | challenge length | challenge | SHA-256 of the named username (only when named) | MAC.
/// Nothing in it is secret: the client already knows the challenge and the username it typed, and
/// the id looks the same whether or not that username exists.
struct LoginChallengeSeal: Sendable {
    /// What a sealed id carries.
    struct Contents: Equatable {
        /// The challenge bytes the authenticator signs; also what marks the challenge used.
        var challenge: [UInt8]
        /// The first instant (to the millisecond) at which it is no longer accepted.
        var expiresAt: Date
        /// SHA-256 of the normalised username a login by username named; nil for a discoverable
        /// login.
        var usernameDigest: [UInt8]?
    }

    /// The length of a sealing key: the HMAC-SHA-256 block's worth of entropy is plenty.
    static let keyLength = 32
    private static let version: UInt8 = 1
    private static let macLength = 32
    /// Binds the MAC to this use of the key, so the same key could never vouch for anything else.
    private static let label = Array("portvakt login challenge".utf8)

    /// Keyed once: each MAC then copies OpenSSL's keyed context instead of looking HMAC up.
    private let key: HMACKey

    /// A seal under `key` (at least `keyLength` bytes).
    init(key: [UInt8]) {
        precondition(key.count >= Self.keyLength, "a challenge sealing key needs 32 bytes")
        guard let keyed = try? HMACKey(.sha256, key: key) else {
            preconditionFailure("OpenSSL could not key HMAC-SHA-256")
        }
        self.key = keyed
    }

    /// `date` to the nearest millisecond, what a sealed id keeps (as the stores keep times).
    static func millisecondPrecision(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded() / 1000)
    }

    /// The SHA-256 of a normalised username, as sealed.
    static func digest(username: String) -> [UInt8] { Digest.sha256(username) }

    /// The id (base64url) sealing `contents`.
    func seal(_ contents: Contents) -> String {
        precondition((1...255).contains(contents.challenge.count), "a challenge is 1 to 255 bytes")
        var body: [UInt8] = [Self.version]
        let milliseconds = UInt64(max(0, (contents.expiresAt.timeIntervalSince1970 * 1000).rounded()))
        for shift in stride(from: 56, through: 0, by: -8) {
            body.append(UInt8(truncatingIfNeeded: milliseconds >> shift))
        }
        body.append(contents.usernameDigest == nil ? 0 : 1)
        body.append(UInt8(contents.challenge.count))
        body += contents.challenge
        if let digest = contents.usernameDigest { body += digest }
        return Base64URL.encode(body + mac(body))
    }

    /// The contents of `id` when this seal made it; nil for anything else (another key, a changed
    /// byte, a stored challenge's id, garbage). Expiry is the caller's to judge.
    func open(_ id: String) -> Contents? {
        // Far longer than any sealed id: refuse before decoding.
        guard id.utf8.count <= 512, let bytes = Base64URL.decode(id),
            bytes.count > 11 + Self.macLength
        else { return nil }
        let body = Array(bytes.dropLast(Self.macLength))
        // Constant time, so a prober learns nothing from how long a wrong MAC takes to refuse.
        guard ConstantTime.equals(mac(body), Array(bytes.suffix(Self.macLength))) else { return nil }
        // Authentic from here on: the layout is ours, but it is still checked, not trusted.
        guard body[0] == Self.version, body[9] <= 1 else { return nil }
        let named = body[9] == 1
        let length = Int(body[10])
        guard body.count == 11 + length + (named ? 32 : 0) else { return nil }
        let milliseconds = body[1...8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Contents(
            challenge: Array(body[11..<(11 + length)]),
            expiresAt: Date(timeIntervalSince1970: Double(milliseconds) / 1000),
            usernameDigest: named ? Array(body[(11 + length)...]) : nil)
    }

    private func mac(_ body: [UInt8]) -> [UInt8] {
        key.authenticate(Self.label + body)
    }
}

extension PasskeyService {
    /// The settings key under which the shared login-challenge sealing key is kept.
    public static let challengeKeySetting = "passkey.login_challenge_key"

    /// The login-challenge sealing key every instance on this database shares: created on the
    /// first start (the first of racing starts wins) and read back by everyone.
    ///
    /// It lives in the database like the session token hashes: anyone who can read the file could
    /// forge login challenge ids, which only matters together with a captured assertion (see
    /// Docs/storage.md).
    /// - Throws: `AuthError(.randomFailure)`, or `StorageError` when the settings cannot be read.
    public static func sharedChallengeKey(settings: any SettingsStore, random: any RandomSource) throws
        -> [UInt8]
    {
        if let key = try settings.setting(challengeKeySetting), key.count >= LoginChallengeSeal.keyLength {
            return key
        }
        let fresh: [UInt8]
        do {
            fresh = try random.bytes(LoginChallengeSeal.keyLength)
        } catch {
            throw AuthError(.randomFailure, "the random source failed", underlying: error)
        }
        _ = try settings.insertSettingIfAbsent(challengeKeySetting, value: fresh)
        guard let key = try settings.setting(challengeKeySetting), key.count >= LoginChallengeSeal.keyLength
        else {
            throw StorageError(.corrupt, "the stored login challenge key is malformed")
        }
        return key
    }
}
