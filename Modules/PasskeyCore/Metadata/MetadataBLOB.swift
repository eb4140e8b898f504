import CryptoCore
public import FoundationEssentials

/// A FIDO Metadata Service v3 BLOB, verified: its JWS signature checks out with the first
/// certificate of its `x5c`, and that certificate chains to the FIDO root the operator configured.
///
/// The BLOB supplies, per AAGUID, the authenticator's name, its attestation root certificates and
/// its status reports (a revoked or compromised authenticator is refused in strict mode and
/// flagged otherwise). Nothing here fetches anything: the caller reads the BLOB from a file.
public struct MetadataBLOB: AuthenticatorMetadataSource {
    /// The BLOB's serial number (`no`); a newer BLOB has a larger one.
    public let serialNumber: Int
    /// When FIDO promises the next BLOB (`nextUpdate`, a calendar date, UTC midnight).
    public let nextUpdate: Date
    /// The legal terms the BLOB carries.
    public let legalHeader: String?
    private let entries: [UUID: MetadataEntry]

    /// Everything the BLOB says of a FIDO2 authenticator model, if it has an entry.
    public func metadataEntry(for aaguid: UUID) -> MetadataEntry? {
        entries[aaguid]
    }

    /// The model's metadata as the ceremony consults it: name, attestation roots, status reports
    /// oldest first.
    public func entry(for aaguid: UUID) -> AuthenticatorMetadata? {
        entries[aaguid].map {
            AuthenticatorMetadata(
                name: $0.description, attestationRootCertificates: $0.attestationRootCertificates,
                statusReports: $0.statusReports.map(\.status))
        }
    }

    /// How many FIDO2 entries (those with an AAGUID) the BLOB holds.
    public var entryCount: Int { entries.count }

    /// Whether `nextUpdate` has passed: the operator should load a newer BLOB.
    public func isStale(at now: Date) -> Bool {
        now >= nextUpdate
    }

    /// Verifies and parses a BLOB.
    /// - Parameters:
    ///   - jws: the BLOB as downloaded: a JWS in compact serialization.
    ///   - rootCertificate: the FIDO MDS root (DER) from configuration, the only trust anchor.
    ///   - time: when to validate the certificate chain (injected: tests and replays fix it).
    /// - Throws: `PasskeyError` with `metadata.malformed`, `metadata.unsupported_algorithm`,
    ///   `metadata.untrusted_chain` or `metadata.signature_invalid`.
    public static func verify(jws: [UInt8], rootCertificate: [UInt8], at time: Date) throws(PasskeyError)
        -> MetadataBLOB
    {
        let parsed = try CompactJWS(jws, code: .metadataMalformed, what: "the BLOB")
        let chain = try certificates(parsed.x5c)
        try validate(chain, rootCertificate: rootCertificate, at: time)
        guard
            let valid = parsed.signatureVerifies(
                with: chain[0].publicKey, allowed: ["RS256", "PS256", "ES256", "ES384", "ES512"])
        else {
            throw PasskeyError(
                .metadataUnsupportedAlgorithm,
                "the BLOB is signed with \(parsed.algorithm.prefix(16)), which its certificate's key cannot make"
            )
        }
        guard valid else {
            throw PasskeyError(.metadataSignatureInvalid, "the BLOB's signature does not verify")
        }
        return try parse(payload: parsed.payload)
    }

    private init(serialNumber: Int, nextUpdate: Date, legalHeader: String?, entries: [UUID: MetadataEntry]) {
        self.serialNumber = serialNumber
        self.nextUpdate = nextUpdate
        self.legalHeader = legalHeader
        self.entries = entries
    }

    private static func certificates(_ x5c: [[UInt8]]) throws(PasskeyError) -> [Certificate] {
        guard x5c.count <= 8 else {
            throw PasskeyError(.metadataMalformed, "the BLOB's x5c chain is too long")
        }
        var chain: [Certificate] = []
        for der in x5c {
            do {
                chain.append(try Certificate(der: der))
            } catch {
                throw PasskeyError(.metadataMalformed, "an x5c entry is not a certificate", underlying: error)
            }
        }
        return chain
    }

    private static func validate(_ chain: [Certificate], rootCertificate: [UInt8], at time: Date)
        throws(PasskeyError)
    {
        do {
            let root = try Certificate(der: rootCertificate)
            _ = try CertificateChainValidator.validate(
                leaf: chain[0], intermediates: Array(chain.dropFirst()), anchors: [root], at: time)
        } catch {
            throw PasskeyError(
                .metadataUntrustedChain,
                "the BLOB's signing certificate does not chain to the configured FIDO root",
                underlying: error)
        }
    }

    private static func parse(payload: [UInt8]) throws(PasskeyError) -> MetadataBLOB {
        let body: Payload
        do {
            body = try JSONDecoder().decode(Payload.self, from: Data(payload))
        } catch {
            throw PasskeyError(.metadataMalformed, "the BLOB's payload is not a metadata BLOB")
        }
        guard let nextUpdate = calendarDate(body.nextUpdate) else {
            throw PasskeyError(.metadataMalformed, "nextUpdate is not a YYYY-MM-DD date")
        }
        var entries: [UUID: MetadataEntry] = [:]
        for raw in body.entries {
            // U2F and UAF entries carry key identifiers or AAIDs instead: WebAuthn looks up AAGUIDs.
            guard let text = raw.aaguid else { continue }
            guard let aaguid = UUID(uuidString: text) else {
                throw PasskeyError(.metadataMalformed, "an entry's aaguid is not a UUID")
            }
            entries[aaguid] = try MetadataEntry(raw, aaguid: aaguid)
        }
        return MetadataBLOB(
            serialNumber: body.no, nextUpdate: nextUpdate, legalHeader: body.legalHeader, entries: entries)
    }

    /// Parses `YYYY-MM-DD` as midnight UTC.
    static func calendarDate(_ text: String) -> Date? {
        let parts = text.split(separator: "-")
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        // Days from 1970-01-01 by the proleptic Gregorian calendar (H. Hinnant's days_from_civil),
        // done by hand: FoundationEssentials' Calendar and TimeZone are not all there without
        // FoundationInternationalization.
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let monthLengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard day <= monthLengths[month - 1] else { return nil }
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Date(timeIntervalSince1970: Double(days) * 86_400)
    }

    struct Payload: Decodable {
        let legalHeader: String?
        let no: Int
        let nextUpdate: String
        let entries: [RawEntry]
    }

    struct RawEntry: Decodable {
        let aaguid: String?
        let metadataStatement: RawStatement?
        let statusReports: [RawStatusReport]
    }

    struct RawStatement: Decodable {
        let description: String?
        let attestationRootCertificates: [String]?
        let attestationTypes: [String]?
    }

    struct RawStatusReport: Decodable {
        let status: String
        let effectiveDate: String?
    }
}

/// What FIDO metadata says of one authenticator model.
public struct MetadataEntry: Sendable, Equatable {
    /// The model's AAGUID.
    public let aaguid: UUID
    /// The model's name (`metadataStatement.description`), for users and logs.
    public let description: String?
    /// The roots its attestation certificates chain to (DER), the trust anchors for this AAGUID.
    public let attestationRootCertificates: [[UInt8]]
    /// The attestation types it uses (`basic_full`, `basic_surrogate`, `attca`, `anonca`, `none`).
    public let attestationTypes: [String]
    /// Its status reports, oldest first by effective date.
    public let statusReports: [MetadataStatusReport]

    init(_ raw: MetadataBLOB.RawEntry, aaguid: UUID) throws(PasskeyError) {
        self.aaguid = aaguid
        description = raw.metadataStatement?.description
        var roots: [[UInt8]] = []
        for text in raw.metadataStatement?.attestationRootCertificates ?? [] {
            guard let der = Data(base64Encoded: text) else {
                throw PasskeyError(.metadataMalformed, "an attestation root certificate is not base64")
            }
            roots.append([UInt8](der))
        }
        attestationRootCertificates = roots
        attestationTypes = raw.metadataStatement?.attestationTypes ?? []
        // A report without a date sorts first: dated reports are the later, deliberate ones.
        statusReports = raw.statusReports.enumerated().map { index, report in
            MetadataStatusReport(
                status: AuthenticatorStatus(rawValue: report.status),
                effectiveDate: report.effectiveDate.flatMap(MetadataBLOB.calendarDate), order: index)
        }.sorted {
            ($0.effectiveDate ?? .distantPast, $0.order) < ($1.effectiveDate ?? .distantPast, $1.order)
        }
    }

    /// The status in force: the latest report's.
    public var currentStatus: AuthenticatorStatus? { statusReports.last?.status }

    /// Whether FIDO has reported this model revoked or its keys or user verification compromised.
    /// Any such report counts, even when a later one certifies again: a compromised key stays so.
    public var isCompromised: Bool {
        statusReports.contains { $0.status.isCompromise }
    }
}

/// One status report of an authenticator model.
public struct MetadataStatusReport: Sendable, Equatable {
    /// The status.
    public let status: AuthenticatorStatus
    /// When it took effect, if stated.
    public let effectiveDate: Date?
    /// Its position in the BLOB, to order reports with the same date.
    let order: Int
}
