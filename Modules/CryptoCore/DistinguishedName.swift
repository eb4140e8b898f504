/// An X.501 distinguished name (a certificate's subject or issuer) as an ordered list of attributes.
///
/// Order is the certificate's encoding order (most significant RDN first, usually C then O…); a
/// multi-valued RDN shows up as several attributes sharing one `rdnIndex`. Values are decoded to
/// UTF-8 whatever their ASN.1 string type; `der` keeps the exact encoding for byte comparisons.
public struct DistinguishedName: Hashable, Sendable, CustomStringConvertible {
    /// One attribute type and value.
    public struct Attribute: Hashable, Sendable {
        /// The attribute type in dotted form ("2.5.4.3" for commonName).
        public let oid: String
        /// The value as text.
        public let value: String
        /// Which relative distinguished name (SET) the attribute belongs to, from 0.
        public let rdnIndex: Int

        /// Creates an attribute.
        public init(oid: String, value: String, rdnIndex: Int) {
            self.oid = oid
            self.value = value
            self.rdnIndex = rdnIndex
        }
    }

    /// The attribute type OIDs of the helpers below.
    public enum OID {
        /// countryName.
        public static let country = "2.5.4.6"
        /// organizationName.
        public static let organization = "2.5.4.10"
        /// organizationalUnitName; packed attestation requires "Authenticator Attestation".
        public static let organizationalUnit = "2.5.4.11"
        /// commonName.
        public static let commonName = "2.5.4.3"
    }

    /// The attributes in encoding order.
    public let attributes: [Attribute]
    /// The DER encoding of the Name.
    public let der: [UInt8]

    /// Creates a name from decoded attributes and their encoding.
    public init(attributes: [Attribute], der: [UInt8]) {
        self.attributes = attributes
        self.der = der
    }

    /// Every value of attribute `oid`, in order.
    public func values(of oid: String) -> [String] {
        attributes.filter { $0.oid == oid }.map(\.value)
    }

    /// The first value of attribute `oid`; names rarely repeat an attribute, and when they do the first is
    /// the most significant.
    public func first(_ oid: String) -> String? {
        attributes.first { $0.oid == oid }?.value
    }

    /// The first commonName (CN).
    public var commonName: String? { first(OID.commonName) }
    /// The first organizationName (O).
    public var organization: String? { first(OID.organization) }
    /// The first organizationalUnitName (OU).
    public var organizationalUnit: String? { first(OID.organizationalUnit) }
    /// The first countryName (C).
    public var country: String? { first(OID.country) }

    /// True for a name with no attributes (TPM attestation certificates have an empty subject).
    public var isEmpty: Bool { attributes.isEmpty }

    /// A readable form such as `C=SE, O=Portvakt, CN=Root`, in encoding order; unknown types by OID.
    public var description: String {
        let short = [
            OID.country: "C", OID.organization: "O", OID.organizationalUnit: "OU", OID.commonName: "CN",
        ]
        return attributes.map { "\(short[$0.oid] ?? $0.oid)=\($0.value)" }.joined(separator: ", ")
    }
}
