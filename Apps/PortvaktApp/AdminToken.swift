import CryptoCore
import Storage

/// The admin listener's bearer token: created on first start, shown once, stored only as a hash.
enum AdminToken {
    /// The settings key holding the SHA-256 of the admin token.
    static let settingKey = "admin.token.sha256"
    /// Admin tokens start with this, so secret scanners recognise them.
    static let prefix = "pva_"

    /// The hash to check admin requests against, and the token itself when this call created it.
    /// A token from the environment (PORTVAKT_ADMIN_TOKEN) wins and is never written anywhere.
    static func ensure(
        in settings: any SettingsStore, fromEnvironment token: String?, random: any RandomSource
    ) throws -> (hash: [UInt8], created: String?) {
        if let token { return (Digest.sha256(token), nil) }
        if let stored = try settings.setting(settingKey) { return (stored, nil) }
        let fresh = prefix + (try random.token(byteCount: 32))
        // Two processes starting on one fresh database: only the first insert wins, and the loser
        // must use the winner's hash (it never saw that token, so it prints nothing).
        if try settings.insertSettingIfAbsent(settingKey, value: Digest.sha256(fresh)) {
            return (Digest.sha256(fresh), fresh)
        }
        return (try settings.setting(settingKey) ?? [], nil)
    }
}
