public import FoundationEssentials

/// Names of passkey providers by AAGUID ("iCloud Keychain", "Google Password Manager", ...), so
/// users can tell their passkeys apart.
///
/// Names only: a name says nothing about security. Trust decisions come from attestation and FIDO
/// metadata. A list ships inside the binary; operators can replace or extend it from a file with
/// the same shape (`{"<lowercase aaguid>": "<name>", ...}`).
public struct ProviderNames: Sendable, Equatable {
    private let names: [UUID: String]

    /// The list compiled into the binary (Data/passkey-provider-aaguids.json).
    public static let bundled: ProviderNames = {
        var names: [UUID: String] = [:]
        for (key, name) in bundledEntries {
            // The generator checked every key; a bad one here is a build defect, not input.
            guard let aaguid = UUID(uuidString: key) else { preconditionFailure("bad bundled AAGUID \(key)") }
            names[aaguid] = name
        }
        return ProviderNames(names: names)
    }()

    private init(names: [UUID: String]) {
        self.names = names
    }

    /// Parses a provider-name file.
    /// - Throws: `PasskeyError(.metadataInvalidProviderNames)` naming the first bad entry: the
    ///   document must be one JSON object of lowercase UUID keys and non-empty names of at most 100
    ///   characters without control characters.
    public init(json: [UInt8]) throws(PasskeyError) {
        let object: [String: String]
        do {
            object = try JSONDecoder().decode([String: String].self, from: Data(json))
        } catch {
            throw PasskeyError(
                .metadataInvalidProviderNames, "provider names must be a JSON object of AAGUID to name")
        }
        var names: [UUID: String] = [:]
        for (key, name) in object {
            guard let aaguid = UUID(uuidString: key), aaguid.uuidString.lowercased() == key else {
                throw PasskeyError(
                    .metadataInvalidProviderNames, "\"\(key.prefix(40))\" is not a lowercase AAGUID")
            }
            guard !name.isEmpty, name.count <= 100,
                !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else {
                throw PasskeyError(
                    .metadataInvalidProviderNames,
                    "the name for \(key) must be 1 to 100 characters without control characters")
            }
            names[aaguid] = name
        }
        self.names = names
    }

    /// The provider's name, or nil when the AAGUID is unknown (including the all-zero AAGUID that
    /// authenticators use when they do not identify themselves).
    public func name(for aaguid: UUID) -> String? {
        names[aaguid]
    }

    /// The name to show for a passkey from `registration`: the curated provider name first
    /// ("iCloud Keychain"), then FIDO metadata's model name ("YubiKey 5 Series"); nil when neither
    /// knows the AAGUID.
    public func name(for registration: VerifiedRegistration) -> String? {
        name(for: registration.aaguid) ?? registration.authenticatorMetadata?.name
    }

    /// This list with `other`'s names added, `other` winning where both name an AAGUID.
    public func merging(_ other: ProviderNames) -> ProviderNames {
        ProviderNames(names: names.merging(other.names) { _, new in new })
    }

    /// How many AAGUIDs have a name.
    public var count: Int { names.count }
}
