import CryptoCore

/// The credential record a login is checked against (§4, "credential record"), as the caller stored it.
public struct StoredCredential: Sendable {
    /// The credential ID.
    public var id: [UInt8]
    /// The public key; keep parsed `COSEKey` values in caches, parsing costs more than verifying.
    public var publicKey: COSEKey
    /// The last signature counter accepted.
    public var signCount: UInt32
    /// The user handle of the account that owns the credential.
    public var userHandle: [UInt8]
    /// BE as recorded at registration.
    public var backupEligible: Bool

    /// Creates a record from a parsed key (the fast path).
    public init(id: [UInt8], publicKey: COSEKey, signCount: UInt32, userHandle: [UInt8], backupEligible: Bool)
    {
        self.id = id
        self.publicKey = publicKey
        self.signCount = signCount
        self.userHandle = userHandle
        self.backupEligible = backupEligible
    }

    /// Creates a record from stored COSE_Key bytes.
    ///
    /// - Throws: `cbor.*` or `cose.*` codes when the stored key no longer parses.
    public init(
        id: [UInt8], publicKeyBytes: [UInt8], signCount: UInt32, userHandle: [UInt8], backupEligible: Bool
    ) throws(PasskeyError) {
        self.init(
            id: id, publicKey: try COSEKey(encoded: publicKeyBytes), signCount: signCount,
            userHandle: userHandle,
            backupEligible: backupEligible)
    }
}

/// A login that passed every §7.2 step: what the caller records (new counter, flags) and acts on.
public struct VerifiedAuthentication: Sendable {
    /// The credential that signed.
    public let credentialID: [UInt8]
    /// The counter the authenticator reported; store it (also when `counterRegressed`).
    public let signCount: UInt32
    /// The authenticator data flags.
    public let flags: AuthenticatorData.Flags
    /// True when the counter failed to increase from a non-zero value and the policy is `flag`:
    /// a possible cloned authenticator, for the caller to log, alert on or step up.
    public let counterRegressed: Bool
    /// True when BE differs from the value recorded at registration (iCloud before and after sync,
    /// password-manager migrations). Reported, never a lockout; update the record.
    public let backupEligibilityChanged: Bool
    /// The user handle of the account that logged in (the credential owner's).
    public let userHandle: [UInt8]
    /// Platform or cross-platform, when the client said.
    public let authenticatorAttachment: AuthenticatorAttachment?

    /// UP.
    public var userPresent: Bool { flags.contains(.userPresent) }
    /// UV.
    public var userVerified: Bool { flags.contains(.userVerified) }
    /// BE now.
    public var backupEligible: Bool { flags.contains(.backupEligible) }
    /// BS now.
    public var backupState: Bool { flags.contains(.backupState) }
}

/// Verifies an authentication response by WebAuthn L3 §7.2, step by step. Stores nothing.
///
/// The caller found `credential` by `response.rawID`; this function still checks that binding, and
/// binds the credential to its owner and, when the login named a user, to that user.
///
/// - Parameters:
///   - response: The parsed `AuthenticationResponseJSON`.
///   - expectedChallenge: The challenge issued with the options.
///   - relyingParty: Origins, RP ID and policies.
///   - credential: The stored credential record for `response.rawID`.
///   - expectedUserHandle: The user the login named (username-first login); nil for discoverable login.
///   - allowCredentials: The credential IDs the options listed, when they listed any.
///   - requireUserVerification: Overrides the policy's UV requirement for this ceremony; nil follows it.
/// - Returns: The login's outcome; persist `signCount` and BE.
/// - Throws: `PasskeyError` with the failing step's code.
public func verifyAuthentication(
    response: AuthenticationResponseJSON, expectedChallenge: [UInt8], relyingParty: RelyingParty,
    credential: StoredCredential, expectedUserHandle: [UInt8]?, allowCredentials: [[UInt8]]? = nil,
    requireUserVerification: Bool? = nil
) throws(PasskeyError) -> VerifiedAuthentication {
    try AuthenticationSteps.verifyCredentialIDLength(response.rawID)
    try AuthenticationSteps.verifyAllowed(response.rawID, allowCredentials)
    try AuthenticationSteps.verifyCredentialRecord(response.rawID, credential)
    let owner = try AuthenticationSteps.verifyUserHandle(response.userHandle, credential, expectedUserHandle)
    // Steps 7 to 9: parse the exact clientDataJSON bytes.
    let clientData = try CollectedClientData(bytes: response.clientDataJSON)
    try SharedSteps.verifyType(clientData, expected: "webauthn.get")
    try SharedSteps.verifyChallenge(clientData, expected: expectedChallenge)
    try SharedSteps.verifyOrigin(clientData, relyingParty)
    try SharedSteps.verifyCrossOrigin(clientData, relyingParty)
    try SharedSteps.verifyTopOrigin(clientData, relyingParty)
    let authenticatorData = try AuthenticatorData(bytes: response.authenticatorData)
    try AuthenticationSteps.verifyNoAttestedCredential(authenticatorData)
    try SharedSteps.verifyRPIDHash(authenticatorData, relyingParty)
    try SharedSteps.verifyUserPresent(authenticatorData)
    try SharedSteps.verifyUserVerified(authenticatorData, relyingParty, override: requireUserVerification)
    // Step 17 (BS without BE) is structural and refused by AuthenticatorData.
    let backupEligibilityChanged = AuthenticationSteps.backupEligibilityChanged(authenticatorData, credential)
    // Step 19: no extension outputs are required.
    try AuthenticationSteps.verifySignature(response, credential)
    let regressed = try AuthenticationSteps.verifyCounter(
        authenticatorData, credential, relyingParty.counterPolicy)

    return VerifiedAuthentication(
        credentialID: credential.id, signCount: authenticatorData.signCount, flags: authenticatorData.flags,
        counterRegressed: regressed, backupEligibilityChanged: backupEligibilityChanged, userHandle: owner,
        authenticatorAttachment: response.authenticatorAttachment)
}

/// The authentication-only steps of §7.2.
enum AuthenticationSteps {
    /// §7.2 step 6 precondition: no stored credential ID is longer than 1023 bytes (§7.1 step 25), so a
    /// longer rawId is refused before anything else is looked at.
    static func verifyCredentialIDLength(_ rawID: [UInt8]) throws(PasskeyError) {
        guard rawID.count <= AuthenticatorData.maximumCredentialIDLength else {
            throw PasskeyError(
                .ceremonyCredentialIDTooLong,
                "rawId is \(rawID.count) bytes, at most \(AuthenticatorData.maximumCredentialIDLength)")
        }
    }

    /// §7.2 step 5: when allowCredentials was not empty, the credential is one of them.
    static func verifyAllowed(_ rawID: [UInt8], _ allowCredentials: [[UInt8]]?) throws(PasskeyError) {
        guard let allowCredentials, !allowCredentials.isEmpty else { return }
        guard allowCredentials.contains(rawID) else {
            throw PasskeyError(.ceremonyCredentialNotAllowed, "the credential was not in allowCredentials")
        }
    }

    /// §7.2 step 6 (credential record): the record the caller looked up is the one for rawId.
    static func verifyCredentialRecord(_ rawID: [UInt8], _ credential: StoredCredential) throws(PasskeyError)
    {
        guard rawID == credential.id else {
            throw PasskeyError(
                .ceremonyCredentialIDMismatch, "the stored credential is not the one that answered")
        }
    }

    /// §7.2 step 6 (user): the credential belongs to the user who asked to log in, and the returned user
    /// handle, when present, is the owner's. Without a named user the handle is required: it is the
    /// only thing that identifies the account (the Yubico advisory: bind credential → user explicitly).
    static func verifyUserHandle(
        _ userHandle: [UInt8]?, _ credential: StoredCredential, _ expectedUserHandle: [UInt8]?
    ) throws(PasskeyError) -> [UInt8] {
        if let expectedUserHandle {
            guard credential.userHandle == expectedUserHandle else {
                throw PasskeyError(
                    .ceremonyUserHandleMismatch,
                    "the credential belongs to a different user than the one logging in")
            }
        } else if userHandle == nil {
            throw PasskeyError(
                .ceremonyUserHandleMissing,
                "a login without a named user needs the authenticator's user handle")
        }
        if let userHandle, userHandle != credential.userHandle {
            throw PasskeyError(.ceremonyUserHandleMismatch, "the user handle is not the credential owner's")
        }
        return credential.userHandle
    }

    /// §6.1: attested credential data belongs to creation; an assertion carrying it is malformed.
    static func verifyNoAttestedCredential(_ authenticatorData: AuthenticatorData) throws(PasskeyError) {
        guard authenticatorData.attestedCredentialData == nil else {
            throw PasskeyError(
                .ceremonyUnexpectedAttestedCredential,
                "assertion authenticator data carries attested credential data")
        }
    }

    /// §7.2 step 18: BE compared with the record. A change is reported, never refused: synced passkeys
    /// change it legitimately and hard failures locked users out in other libraries.
    static func backupEligibilityChanged(
        _ authenticatorData: AuthenticatorData, _ credential: StoredCredential
    )
        -> Bool
    {
        authenticatorData.backupEligible != credential.backupEligible
    }

    /// §7.2 steps 20 and 21: the signature over authData ‖ SHA-256(clientDataJSON) verifies under the
    /// stored key, computed over the bytes exactly as received.
    static func verifySignature(_ response: AuthenticationResponseJSON, _ credential: StoredCredential)
        throws(PasskeyError)
    {
        let hash = Digest.sha256(response.clientDataJSON)
        var signed = [UInt8]()
        signed.reserveCapacity(response.authenticatorData.count + hash.count)
        signed.append(contentsOf: response.authenticatorData)
        signed.append(contentsOf: hash)
        guard credential.publicKey.verify(signature: response.signature, data: signed) else {
            throw PasskeyError(.ceremonySignatureInvalid, "the assertion signature does not verify")
        }
    }

    /// §7.2 step 22: when either counter is non-zero, the new one must be greater. 0 → 0 is fine
    /// (synced passkeys never count); anything else is a clone signal the policy rejects or flags.
    static func verifyCounter(
        _ authenticatorData: AuthenticatorData, _ credential: StoredCredential,
        _ policy: RelyingParty.CounterPolicy
    ) throws(PasskeyError) -> Bool {
        let received = authenticatorData.signCount
        let stored = credential.signCount
        guard received != 0 || stored != 0 else { return false }
        guard received <= stored else { return false }
        switch policy {
        case .reject:
            throw PasskeyError(
                .ceremonyCounterRegression,
                "the signature counter went from \(stored) to \(received): possible clone")
        case .flag:
            return true
        }
    }
}
