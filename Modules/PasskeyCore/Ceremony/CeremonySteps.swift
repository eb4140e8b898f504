import CryptoCore

/// The client data and authenticator data steps §7.1 and §7.2 share, one function per step.
///
/// Step numbers are WebAuthn L3's, registration first: "§7.1 step 9 / §7.2 step 12" is the same check
/// in both ceremonies.
enum SharedSteps {
    /// The shortest expected challenge accepted: §13.4.3's 16 bytes. Guards against a caller passing an
    /// empty or truncated challenge, which an empty C.challenge would otherwise match.
    static let minimumExpectedChallengeLength = 16

    /// §7.1 step 7 / §7.2 step 10: C.type is "webauthn.create" or "webauthn.get".
    static func verifyType(_ clientData: CollectedClientData, expected: String) throws(PasskeyError) {
        guard clientData.type == expected else {
            throw PasskeyError(.ceremonyTypeMismatch, "client data type is not \"\(expected)\"")
        }
    }

    /// §7.1 step 8 / §7.2 step 11: C.challenge decodes to the issued challenge (constant-time compare).
    static func verifyChallenge(_ clientData: CollectedClientData, expected: [UInt8]) throws(PasskeyError) {
        guard expected.count >= minimumExpectedChallengeLength else {
            throw PasskeyError(
                .ceremonyChallengeMismatch,
                "the expected challenge is \(expected.count) bytes; an issued challenge has at least 16")
        }
        // A challenge that is not canonical base64url cannot be the one issued, whatever it decodes to.
        guard let received = Base64URL.decode(clientData.challenge),
            ConstantTime.equals(received, expected)
        else {
            throw PasskeyError(.ceremonyChallengeMismatch, "the client data challenge is not the one issued")
        }
    }

    /// §7.1 step 9 / §7.2 step 12: C.origin is one of the configured origins, matched exactly.
    static func verifyOrigin(_ clientData: CollectedClientData, _ relyingParty: RelyingParty)
        throws(PasskeyError)
    {
        guard relyingParty.allowedOrigins.contains(clientData.origin) else {
            // The origin is not secret and is what an operator needs to fix an Android hash or a port.
            throw PasskeyError(.ceremonyOriginNotAllowed, "origin \"\(clientData.origin)\" is not allowed")
        }
    }

    /// §7.1 step 10 / §7.2 step 13 (cross-origin): a cross-origin iframe is refused unless top origins
    /// are configured, because an embedding page could otherwise frame the ceremony.
    static func verifyCrossOrigin(_ clientData: CollectedClientData, _ relyingParty: RelyingParty)
        throws(PasskeyError)
    {
        guard !clientData.crossOrigin || !relyingParty.allowedTopOrigins.isEmpty else {
            throw PasskeyError(
                .ceremonyCrossOriginNotAllowed,
                "the ceremony ran in a cross-origin iframe and none is allowed")
        }
    }

    /// §7.1 step 10 / §7.2 step 13 (top origin): when C.topOrigin is present it must be configured.
    static func verifyTopOrigin(_ clientData: CollectedClientData, _ relyingParty: RelyingParty)
        throws(PasskeyError)
    {
        guard let topOrigin = clientData.topOrigin else { return }
        guard relyingParty.allowedTopOrigins.contains(topOrigin) else {
            throw PasskeyError(.ceremonyTopOriginNotAllowed, "top origin \"\(topOrigin)\" is not allowed")
        }
    }

    /// §7.1 step 13 / §7.2 step 14: rpIdHash is SHA-256 of the configured RP ID.
    static func verifyRPIDHash(_ authenticatorData: AuthenticatorData, _ relyingParty: RelyingParty)
        throws(PasskeyError)
    {
        guard authenticatorData.rpIDHash == relyingParty.idHash else {
            throw PasskeyError(
                .ceremonyRPIDHashMismatch, "the credential is not scoped to RP ID \"\(relyingParty.id)\"")
        }
    }

    /// §7.1 step 14 / §7.2 step 15: UP is set.
    static func verifyUserPresent(_ authenticatorData: AuthenticatorData) throws(PasskeyError) {
        guard authenticatorData.userPresent else {
            throw PasskeyError(
                .ceremonyUserNotPresent, "the authenticator did not test user presence (UP clear)")
        }
    }

    /// §7.1 step 15 / §7.2 step 16: UV is set when the policy or the caller requires it; the message
    /// names a mismatch between what the options asked for and what is enforced (Safari skips UV
    /// under "preferred").
    static func verifyUserVerified(
        _ authenticatorData: AuthenticatorData, _ relyingParty: RelyingParty, override: Bool?
    ) throws(PasskeyError) {
        let policy = relyingParty.userVerification
        let required = override ?? (policy == .required)
        guard required, !authenticatorData.userVerified else { return }
        if policy == .required {
            throw PasskeyError(
                .ceremonyUserNotVerified,
                "the policy requires user verification and the options said userVerification \"required\", "
                    + "but the authenticator did not verify the user (UV clear)")
        }
        throw PasskeyError(
            .ceremonyUserNotVerified,
            "user verification is required for this ceremony but the options said userVerification "
                + "\"\(policy.rawValue)\" (the relying party's policy), so the authenticator may skip it "
                + "(Safari does): set the policy to \"required\" so options and verification agree")
    }
}
