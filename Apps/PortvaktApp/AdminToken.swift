import AuthOrchestrator
import Storage

/// Where releases before the admin_tokens table kept the one admin token's SHA-256. A hash found
/// there on start becomes the "bootstrap" token, so a token printed back then keeps working.
enum AdminToken {
    /// The settings key holding the SHA-256 of the admin token (read only, for the upgrade).
    static let settingKey = "admin.token.sha256"
    /// Admin tokens start with this, so secret scanners recognise them.
    static let prefix = AdminTokenService.prefix
}
