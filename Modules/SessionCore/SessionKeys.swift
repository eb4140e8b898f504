import CryptoCore
import FoundationEssentials
import Kernel

/// The id and token of a new session, and the key a presented token's session is looked up by.
///
/// Both the id and the token's stored form begin with the session's creation time (milliseconds
/// since 1970, 48 bits, big-endian), so a new session's entries in the `sessions` table's two unique
/// keys, its id and its token's stored form, land at the end of each, beside the sessions made just
/// before, instead of on a random page of two B-trees that grow with every session. That was two of
/// the ~12 pages a passkey login's commit wrote, each at a random place (Docs/performance.md, "What
/// storage costs"); an authenticated request now also reads its session among the newest pages.
/// The rest stays random: 80 bits of the id (it is no secret) and all 256 bits of the token's
/// secret part, so the time only says when the session began, which its `createdAt` says too.
enum SessionKeys {
    /// Every token starts with this, so secret scanners can recognise leaked tokens.
    static let prefix = "pvs_"
    /// Bytes of creation time at the start of a token and of an id.
    static let timeBytes = 6
    /// Random bytes of a token after its time: the secret.
    static let secretBytes = 32
    /// Random bytes of an id after its time.
    static let idRandomBytes = 10
    /// Characters after the prefix of a token: base64url of the time and the secret (38 bytes).
    static let tokenCharacters = 51
    /// Characters after the prefix of a token issued before tokens carried their time: base64url
    /// of 32 random bytes, stored as their SHA-256 alone. Still accepted until those sessions end.
    static let timelessTokenCharacters = 43

    /// A new session's id, token and the token's stored form (what `lookupKey` gives for it), made
    /// at `now`.
    static func make(at now: Date, random: any RandomSource) throws -> (
        id: String, token: String, storedForm: [UInt8]
    ) {
        let time = timeBytes(of: now)
        // One draw for both random parts: one system call fewer per sign-in.
        let drawn = try random.bytes(idRandomBytes + secretBytes)
        let id = Base64URL.encodeInByteOrder(time + drawn.prefix(idRandomBytes))
        let token = prefix + Base64URL.encode(time + drawn.suffix(secretBytes))
        return (id, token, time + Digest.sha256(token))
    }

    /// The stored form of `token`: its time, then the SHA-256 of the whole token; the SHA-256 alone
    /// for a token without a time. nil when `token` cannot be one of ours (wrong prefix or length, a
    /// time that is not base64url).
    static func lookupKey(token: String) -> [UInt8]? {
        guard token.hasPrefix(prefix) else { return nil }
        switch token.utf8.count - prefix.utf8.count {
        case tokenCharacters:
            // The time is exactly the first 8 characters after the prefix (48 bits).
            let encodedTime = token.utf8.dropFirst(prefix.utf8.count).prefix(8)
            guard let time = Base64URL.decode(Substring(encodedTime)), time.count == timeBytes else {
                return nil
            }
            return time + Digest.sha256(token)
        case timelessTokenCharacters:
            return Digest.sha256(token)
        default:
            return nil
        }
    }

    /// Milliseconds since 1970 as 6 big-endian bytes (a time before 1970 counts as 1970; 48 bits
    /// last until the year 10889).
    private static func timeBytes(of date: Date) -> [UInt8] {
        let milliseconds = UInt64(max(0, (date.timeIntervalSince1970 * 1000).rounded(.down)))
        return (0..<timeBytes).map { UInt8(truncatingIfNeeded: milliseconds >> (8 * (timeBytes - 1 - $0))) }
    }
}
