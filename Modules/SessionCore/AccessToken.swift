import CryptoCore
public import FoundationEssentials
public import Kernel

/// The claims of a Portvakt access token (a JWT, RFC 7519), in the order they are written.
public struct AccessTokenClaims: Sendable, Equatable {
    /// `iss`: the deployment's public URL.
    public let issuer: String
    /// `sub`: the user's id.
    public let subject: String
    /// `aud`: who the token is for; written as a string when there is one, else an array.
    public let audience: [String]
    /// `iat`, whole seconds.
    public let issuedAt: Int64
    /// `exp`, whole seconds: never after the session's own end.
    public let expiresAt: Int64
    /// `sid`: the session's id.
    public let sessionID: String
    /// `amr`: how the session was opened (`AuthMethod.amr`).
    public let amr: [String]
    /// `jti`: 128 random bits, base64url.
    public let jwtID: String

    /// The JSON payload, compact, members in a fixed order.
    public var json: [UInt8] {
        var writer = JSONWriter()
        writer.object { claims in
            claims.member("iss", issuer)
            claims.member("sub", subject)
            claims.key("aud")
            if audience.count == 1 {
                claims.string(audience[0])
            } else {
                claims.array { list in for entry in audience { list.string(entry) } }
            }
            claims.member("iat", issuedAt)
            claims.member("exp", expiresAt)
            claims.member("sid", sessionID)
            claims.key("amr")
            claims.array { list in for entry in amr { list.string(entry) } }
            claims.member("jti", jwtID)
        }
        return writer.bytes
    }
}

/// A signed access token and when it ends.
public struct IssuedAccessToken: Sendable {
    /// The compact JWS: `header.payload.signature`, each base64url.
    public let token: String
    /// When it ends (`exp`).
    public let expiresAt: Date
    /// What it says.
    public let claims: AccessTokenClaims
}

/// Signs short-lived access tokens for a live session: ES256 JWTs (RFC 7515 compact
/// serialization, RFC 7518 §3.4 signatures) that the app's servers verify offline against the
/// published keys. A token is a snapshot: it stays valid until `exp` even when its session is
/// revoked sooner, which is why its lifetime is short and never outlasts the session.
public struct AccessTokenIssuer: Sendable {
    /// The shortest and longest lifetime a deployment may choose.
    public static let lifetimeRange: ClosedRange<Int> = 60...3600

    let ring: SigningKeyRing
    let issuer: String
    let audience: [String]
    let lifetime: TimeInterval
    let clock: any WallClock
    let random: any RandomSource

    /// Creates the issuer.
    /// - Parameters:
    ///   - issuer: `iss`, the public URL.
    ///   - audience: `aud`, one or more (at least one).
    ///   - lifetime: seconds, within `lifetimeRange` (the configuration checks it).
    public init(
        ring: SigningKeyRing, issuer: String, audience: [String], lifetime: TimeInterval,
        clock: any WallClock,
        random: any RandomSource
    ) {
        self.ring = ring
        self.issuer = issuer
        self.audience = audience
        self.lifetime = lifetime
        self.clock = clock
        self.random = random
    }

    /// A token for `session`, which the caller has just found active.
    /// - Throws: `SigningKeyError(.keyUnavailable)` when no key signs; the random source's or
    ///   repository's error when they fail.
    public func issue(for session: Session) throws -> IssuedAccessToken {
        let now = clock.now()
        let (kid, key) = try ring.currentKey()
        let issuedAt = Int64(now.timeIntervalSince1970.rounded(.down))
        // Never beyond the session's end: a token must not outlive what it vouches for.
        let end = min(now.addingTimeInterval(lifetime), session.expiresAt)
        let expiresAt = Int64(end.timeIntervalSince1970.rounded(.down))
        let claims = AccessTokenClaims(
            issuer: issuer, subject: session.userID, audience: audience, issuedAt: issuedAt,
            expiresAt: expiresAt, sessionID: session.id, amr: [session.authMethod.amr],
            jwtID: try random.token(byteCount: 16))
        var header = JSONWriter()
        header.object { header in
            header.member("alg", SigningKeyRecord.es256)
            header.member("kid", kid)
            header.member("typ", "JWT")
        }
        let signingInput = Base64URL.encode(header.bytes) + "." + Base64URL.encode(claims.json)
        let signature: [UInt8]
        do {
            signature = try ECDSASignature.raw(
                fromDER: key.signSHA256(Array(signingInput.utf8)), curve: .p256)
        } catch {
            throw SigningKeyError(.keyUnavailable, "signing key \(kid) did not sign")
        }
        return IssuedAccessToken(
            token: signingInput + "." + Base64URL.encode(signature),
            expiresAt: Date(timeIntervalSince1970: TimeInterval(expiresAt)), claims: claims)
    }
}
