import CryptoCore

/// How much a relying party wants user verification (WebAuthn L3 §5.8.6), in options and in policy.
public enum UserVerificationRequirement: String, Sendable, Hashable, CaseIterable {
    /// UV must happen; verification fails without the UV flag.
    case required
    /// UV is asked for but not enforced.
    case preferred
    /// UV should be skipped where possible.
    case discouraged
}

/// Whether the new credential should be discoverable (§5.4.6, `residentKey`).
public enum ResidentKeyRequirement: String, Sendable, Hashable, CaseIterable {
    /// The credential must be discoverable: usernameless login and autofill need it.
    case required
    /// Discoverable if the authenticator can.
    case preferred
    /// A server-side credential is enough.
    case discouraged
}

/// What attestation the relying party asks for (§5.4.7).
public enum AttestationConveyance: String, Sendable, Hashable, CaseIterable {
    /// No attestation: the consumer-passkey default, and the only one that reveals nothing about the device.
    case none
    /// Attestation, possibly anonymized by the client.
    case indirect
    /// The authenticator's attestation as generated.
    case direct
    /// Uniquely identifying attestation, for managed deployments only.
    case enterprise
}

/// Which authenticator the client should prefer (§5.4.4).
public enum AuthenticatorAttachment: String, Sendable, Hashable, CaseIterable {
    /// Built into the device (Touch ID, Windows Hello, Android screen lock).
    case platform
    /// Roaming: a security key or a phone over hybrid.
    case crossPlatform = "cross-platform"
}

/// UI hints for the client (§5.8.7, L3).
public enum PublicKeyCredentialHint: String, Sendable, Hashable, CaseIterable {
    /// A physical security key.
    case securityKey = "security-key"
    /// The device the user is on.
    case clientDevice = "client-device"
    /// A phone reached over hybrid (QR code).
    case hybrid
}

/// A transport an authenticator is reachable by (§5.8.4).
///
/// A struct, not an enum: browsers add transports ("smart-card", "hybrid") faster than servers ship,
/// and §5.8.4 says unknown values are kept and passed back, not refused.
public struct AuthenticatorTransport: RawRepresentable, Sendable, Hashable {
    /// The transport as the client spelled it.
    public let rawValue: String

    /// Wraps a transport name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// USB.
    public static let usb = AuthenticatorTransport(rawValue: "usb")
    /// NFC.
    public static let nfc = AuthenticatorTransport(rawValue: "nfc")
    /// Bluetooth Low Energy.
    public static let ble = AuthenticatorTransport(rawValue: "ble")
    /// A smart card.
    public static let smartCard = AuthenticatorTransport(rawValue: "smart-card")
    /// Hybrid (cross-device, usually a phone over a QR code).
    public static let hybrid = AuthenticatorTransport(rawValue: "hybrid")
    /// Built into the client device.
    public static let `internal` = AuthenticatorTransport(rawValue: "internal")
}

/// A credential named in excludeCredentials or allowCredentials (§5.8.3).
public struct CredentialDescriptor: Sendable, Hashable {
    /// The credential ID.
    public var id: [UInt8]
    /// The transports the credential reported at registration; empty when unknown.
    public var transports: [AuthenticatorTransport]

    /// Creates a descriptor.
    ///
    /// - Parameters:
    ///   - id: The credential ID.
    ///   - transports: What `VerifiedRegistration.transports` reported; lets clients skip a QR code.
    public init(id: [UInt8], transports: [AuthenticatorTransport] = []) {
        self.id = id
        self.transports = transports
    }

    /// Writes `{"type":"public-key","id":…,"transports":[…]}`; transports are omitted when unknown.
    func write(to writer: inout JSONWriter) {
        writer.object { w in
            w.member("type", "public-key")
            w.member("id", Base64URL.encode(id))
            if !transports.isEmpty {
                w.key("transports")
                w.array { a in for transport in transports { a.string(transport.rawValue) } }
            }
        }
    }
}
