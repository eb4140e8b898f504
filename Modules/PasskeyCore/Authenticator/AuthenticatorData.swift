public import FoundationEssentials

/// Authenticator data (WebAuthn L3 §6.1), parsed and checked for internal consistency.
///
/// Layout: rpIdHash (32) ‖ flags (1) ‖ signCount (4, big-endian) ‖ attested credential data (when AT)
/// ‖ extensions (a CBOR map, when ED). The parser checks structure only: whether the RP ID hash,
/// UP/UV and the counter are acceptable is for the ceremony steps, which get the raw bytes too
/// (`rawBytes`), because signatures cover authenticator data exactly as sent.
public struct AuthenticatorData: Sendable, Hashable {
    /// The flags byte (§6.1, "flags").
    public struct Flags: OptionSet, Sendable, Hashable {
        /// The byte as sent.
        public let rawValue: UInt8

        /// Wraps a flags byte.
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// Bit 0, UP: the user was present.
        public static let userPresent = Flags(rawValue: 1 << 0)
        /// Bit 2, UV: the user was verified (biometric or PIN).
        public static let userVerified = Flags(rawValue: 1 << 2)
        /// Bit 3, BE: the credential may be backed up (a synced passkey). Fixed at creation.
        public static let backupEligible = Flags(rawValue: 1 << 3)
        /// Bit 4, BS: the credential is backed up now. May change over the credential's life.
        public static let backupState = Flags(rawValue: 1 << 4)
        /// Bit 6, AT: attested credential data follows.
        public static let attestedCredentialData = Flags(rawValue: 1 << 6)
        /// Bit 7, ED: an extensions map follows.
        public static let extensionData = Flags(rawValue: 1 << 7)
    }

    /// The fixed part's length: rpIdHash, flags and signCount.
    public static let fixedLength = 37
    /// The longest credential ID WebAuthn L3 allows (§7.1 step "credentialId is ≤ 1023 bytes").
    public static let maximumCredentialIDLength = 1023

    /// SHA-256 of the RP ID the authenticator scoped the credential to (32 bytes).
    public let rpIDHash: [UInt8]
    /// The flags byte. Bits 1 and 5 are reserved: kept as sent, never interpreted (§6.1 says ignore).
    public let flags: Flags
    /// The signature counter; 0 for authenticators (such as synced passkeys) that do not count.
    public let signCount: UInt32
    /// The new credential, present exactly when AT is set (registration).
    public let attestedCredentialData: AttestedCredentialData?
    /// The authenticator extension outputs, present exactly when ED is set; keys are extension identifiers.
    public let extensions: CBORMap?
    /// The bytes as received; signatures are checked over these, never over a re-encoding.
    public let rawBytes: [UInt8]

    /// Parses and checks authenticator data.
    ///
    /// - Parameters:
    ///   - bytes: The authenticator data exactly as the client sent it.
    ///   - decoder: Decodes the embedded credential public key and extensions.
    /// - Throws: `PasskeyError` with an `authdata.*` code for a structural error; a `cbor.*` or `cose.*`
    ///   code when the embedded public key or extensions are themselves malformed.
    public init(bytes: [UInt8], decoder: CBORDecoder = CBORDecoder()) throws(PasskeyError) {
        guard bytes.count >= Self.fixedLength else {
            throw PasskeyError(
                .authDataTruncated,
                "authenticator data is \(bytes.count) bytes, at least \(Self.fixedLength) needed")
        }
        let flags = Flags(rawValue: bytes[32])
        // §6.1.3: a credential that cannot be backed up cannot be backed up now; §7.1 and §7.2 check it.
        if flags.contains(.backupState) && !flags.contains(.backupEligible) {
            throw PasskeyError(.authDataBackupStateWithoutEligibility, "BS is set but BE is not")
        }
        var offset = Self.fixedLength

        var attested: AttestedCredentialData? = nil
        if flags.contains(.attestedCredentialData) {
            guard offset < bytes.count else {
                throw PasskeyError(
                    .authDataMissingAttestedCredentialData, "AT is set but no credential data follows")
            }
            let (data, consumed) = try AttestedCredentialData.parse(bytes, from: offset, decoder: decoder)
            attested = data
            offset += consumed
        }

        var extensions: CBORMap? = nil
        if flags.contains(.extensionData) {
            guard offset < bytes.count else {
                throw PasskeyError(.authDataMissingExtensions, "ED is set but no extensions follow")
            }
            extensions = try Self.parseExtensions(bytes[offset...], decoder: decoder)
            offset = bytes.count
        }

        // With AT and ED clear this also catches credential data sent without its flag.
        guard offset == bytes.count else {
            throw PasskeyError(
                .authDataTrailingBytes, "\(bytes.count - offset) bytes follow what the flags announce")
        }
        self.rpIDHash = Array(bytes[0..<32])
        self.flags = flags
        // signCount is big-endian (§6.1), assembled byte by byte so alignment never matters.
        self.signCount = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        self.attestedCredentialData = attested
        self.extensions = extensions
        self.rawBytes = bytes
    }

    /// True when UP is set.
    public var userPresent: Bool { flags.contains(.userPresent) }
    /// True when UV is set.
    public var userVerified: Bool { flags.contains(.userVerified) }
    /// True when BE is set.
    public var backupEligible: Bool { flags.contains(.backupEligible) }
    /// True when BS is set.
    public var backupState: Bool { flags.contains(.backupState) }

    /// Decodes the extensions: the rest of the data must be exactly one map with text keys (§9).
    private static func parseExtensions(_ rest: ArraySlice<UInt8>, decoder: CBORDecoder) throws(PasskeyError)
        -> CBORMap
    {
        let value: CBORValue
        do throws(PasskeyError) {
            value = try decoder.decode(rest)
        } catch {
            // Trailing bytes after the map belong to the authenticator data's own error.
            if error.code == .cborTrailingBytes {
                throw PasskeyError(
                    .authDataTrailingBytes, "bytes follow the extensions map", underlying: error)
            }
            throw error.context("authenticator data extensions")
        }
        guard case .map(let map) = value else {
            throw PasskeyError(
                .authDataInvalidExtensions, "extensions must be a CBOR map, found \(value.typeName)")
        }
        // Extension identifiers are strings (§9); an integer key means this is not an extensions map.
        guard map.allSatisfy({ $0.key.textValue != nil }) else {
            throw PasskeyError(.authDataInvalidExtensions, "extension identifiers must be text strings")
        }
        return map
    }
}

/// The attested credential data inside registration authenticator data (WebAuthn L3 §6.5.1).
public struct AttestedCredentialData: Sendable, Hashable {
    /// The authenticator model's AAGUID; all zeros when the authenticator does not say.
    public let aaguid: UUID
    /// The credential ID, 0 to 1023 bytes.
    public let credentialID: [UInt8]
    /// The credential public key, checked and ready to verify with; its `encoded` bytes are what to store.
    public let credentialPublicKey: COSEKey

    /// The AAGUID that says nothing: self attestation and privacy-preserving authenticators send it.
    public static let zeroAAGUID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))

    /// Parses attested credential data starting at `start` in `bytes`; returns it and its length.
    static func parse(
        _ bytes: [UInt8], from start: Int, decoder: CBORDecoder
    ) throws(PasskeyError) -> (AttestedCredentialData, Int) {
        // AAGUID (16) and credentialIdLength (2) come first.
        guard bytes.count - start >= 18 else {
            throw PasskeyError(
                .authDataTruncated, "attested credential data ends inside AAGUID or credential ID length")
        }
        let aaguidBytes = bytes[start..<(start + 16)]
        let idLength = Int(bytes[start + 16]) << 8 | Int(bytes[start + 17])
        guard idLength <= AuthenticatorData.maximumCredentialIDLength else {
            throw PasskeyError(
                .authDataCredentialIDTooLong,
                "credential ID is \(idLength) bytes, at most \(AuthenticatorData.maximumCredentialIDLength) allowed"
            )
        }
        let idStart = start + 18
        guard bytes.count - idStart >= idLength else {
            throw PasskeyError(.authDataTruncated, "authenticator data ends inside the credential ID")
        }
        let keyStart = idStart + idLength
        guard keyStart < bytes.count else {
            throw PasskeyError(.authDataTruncated, "authenticator data ends before the credential public key")
        }
        // The key has no length prefix: its CBOR encoding delimits it, and extensions may follow.
        let (value, keyLength): (CBORValue, Int)
        do throws(PasskeyError) {
            (value, keyLength) = try decoder.decodePrefix(bytes[keyStart...])
        } catch {
            throw error.context("credential public key")
        }
        let key: COSEKey
        do throws(PasskeyError) {
            key = try COSEKey(value: value, encoded: Array(bytes[keyStart..<(keyStart + keyLength)]))
        } catch {
            throw error.context("credential public key")
        }
        let data = AttestedCredentialData(
            aaguid: Self.uuid(aaguidBytes), credentialID: Array(bytes[idStart..<keyStart]),
            credentialPublicKey: key)
        return (data, keyStart + keyLength - start)
    }

    /// Reads 16 bytes as a UUID in network order, as AAGUIDs are written.
    private static func uuid(_ b: ArraySlice<UInt8>) -> UUID {
        let s = b.startIndex
        return UUID(
            uuid: (
                b[s], b[s + 1], b[s + 2], b[s + 3], b[s + 4], b[s + 5], b[s + 6], b[s + 7],
                b[s + 8], b[s + 9], b[s + 10], b[s + 11], b[s + 12], b[s + 13], b[s + 14], b[s + 15]
            ))
    }
}
