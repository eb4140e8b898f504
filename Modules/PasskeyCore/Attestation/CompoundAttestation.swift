import FoundationEssentials

/// The "compound" attestation format (WebAuthn L3 §8.9): attStmt is an array of at least two
/// self-contained {fmt, attStmt} statements over the same authenticator data and client data hash.
///
/// §8.9 leaves two choices to relying party policy; Portvakt's are:
/// - **Every member must verify.** A member that fails, whose fmt is not registered with the relying
///   party, or that is itself compound fails the ceremony with that member's code: a statement the
///   relying party cannot verify must not ride along with one it can.
/// - **The result is the most convincing member's.** The first member that reached a trust anchor;
///   when none did, the first of the strongest type (a certificate type — basic, attCA, anonCA — over
///   self, self over none). Its type, trust path and anchor are returned.
///
/// Members are verified by `context.formats`, the relying party's own registry, so a format the
/// relying party closed stays closed inside compound.
public struct CompoundAttestation: AttestationFormat {
    /// "compound".
    public let identifier = "compound"

    /// The most members accepted: each may cost a chain validation, and real compounds hold two or three.
    public static let maximumMembers = 8

    /// Creates the format.
    public init() {}

    /// Refuses a map: compound's attStmt is an array.
    ///
    /// - Throws: `attestation.invalid_statement` always.
    public func verify(
        statement: CBORMap, authenticatorData: AuthenticatorData, authenticatorDataBytes: [UInt8],
        clientDataHash: [UInt8], context: AttestationContext
    ) throws(PasskeyError) -> AttestationOutcome {
        throw PasskeyError(.attestationInvalidStatement, "compound attStmt must be an array of statements")
    }

    /// Verifies every member with its own format and returns the most convincing outcome.
    ///
    /// - Returns: See the type's documentation for which member's outcome is returned.
    /// - Throws: `attestation.invalid_statement` for fewer than 2 or more than `maximumMembers`
    ///   members, a member that is not {fmt, attStmt}, or a nested compound;
    ///   `attestation.unsupported_format` for a member fmt the relying party does not register; any
    ///   member's own code, its message naming the member.
    public func verify(
        statements: [CBORValue], authenticatorData: AuthenticatorData, authenticatorDataBytes: [UInt8],
        clientDataHash: [UInt8], context: AttestationContext
    ) throws(PasskeyError) -> AttestationOutcome {
        guard (2...Self.maximumMembers).contains(statements.count) else {
            throw PasskeyError(
                .attestationInvalidStatement,
                "compound holds \(statements.count) statements, 2 to \(Self.maximumMembers) accepted")
        }
        var outcomes: [AttestationOutcome] = []
        for (index, item) in statements.enumerated() {
            let (format, statement) = try member(item, index: index, formats: context.formats)
            do throws(PasskeyError) {
                outcomes.append(
                    try format.verify(
                        statement: statement, authenticatorData: authenticatorData,
                        authenticatorDataBytes: authenticatorDataBytes, clientDataHash: clientDataHash,
                        context: context))
            } catch {
                throw error.context("compound statement \(index) (\(format.identifier))")
            }
        }
        if let trusted = outcomes.first(where: \.trusted) { return trusted }
        // max(by:) replaces its pick only on a strictly stronger one, so the first of equals is kept;
        // there are at least two outcomes, so there is a maximum.
        return outcomes.max { Self.strength($0.type) < Self.strength($1.type) }!
    }

    /// One member: a map of exactly fmt (a registered, non-compound format) and attStmt (a map).
    private func member(_ item: CBORValue, index: Int, formats: AttestationFormatRegistry)
        throws(PasskeyError)
        -> (any AttestationFormat, CBORMap)
    {
        guard case .map(let map) = item, map.count == 2, case .text(let fmt)? = map[name: "fmt"],
            case .map(let statement)? = map[name: "attStmt"]
        else {
            throw PasskeyError(
                .attestationInvalidStatement, "compound statement \(index) must be exactly {fmt, attStmt}")
        }
        guard fmt != identifier else {
            throw PasskeyError(.attestationInvalidStatement, "compound statement \(index) is itself compound")
        }
        guard let format = formats.format(for: fmt) else {
            throw PasskeyError(
                .attestationUnsupportedFormat,
                "compound statement \(index) has a format that is not supported")
        }
        return (format, statement)
    }

    /// Orders attestation types by what they prove about the authenticator.
    private static func strength(_ type: AttestationType) -> Int {
        switch type {
        case .none: 0
        case .selfAttestation: 1
        case .basic, .attestationCA, .anonymizationCA: 2
        }
    }
}
