import CryptoCore
public import Kernel

/// The user account a new credential belongs to (§5.4.3, PublicKeyCredentialUserEntity).
public struct UserEntity: Sendable, Hashable {
    /// The user handle: random bytes, never personal data (§14.6.1), 1 to 64 bytes.
    public var id: [UInt8]
    /// The account name shown to pick an account ("alice@example.com").
    public var name: String
    /// The friendly name shown beside it ("Alice").
    public var displayName: String

    /// Creates a user entity.
    public init(id: [UInt8], name: String, displayName: String) {
        self.id = id
        self.name = name
        self.displayName = displayName
    }
}

/// Options for `navigator.credentials.create`, in the WebAuthn L3 JSON form
/// (`PublicKeyCredentialCreationOptionsJSON`, what `parseCreationOptionsFromJSON` takes).
///
/// The challenge and user handle come from the injected `RandomSource`; the caller stores `challenge`
/// (one use, short life) and passes it back as `expectedChallenge` when the response arrives.
public struct RegistrationOptions: Sendable, Hashable {
    /// The RP ID and name.
    public var relyingPartyID: String
    /// The RP display name.
    public var relyingPartyName: String
    /// The account the credential is for.
    public var user: UserEntity
    /// The challenge, at least 32 random bytes; store it until the response arrives.
    public var challenge: [UInt8]
    /// The algorithms offered, most preferred first.
    public var algorithms: [COSEAlgorithm]
    /// How long the client should wait, in milliseconds.
    public var timeoutMilliseconds: Int
    /// Credentials the user already has, so the authenticator does not create a second one.
    public var excludeCredentials: [CredentialDescriptor]
    /// Platform or roaming, or nil to let the user choose.
    public var authenticatorAttachment: AuthenticatorAttachment?
    /// Whether the credential should be discoverable.
    public var residentKey: ResidentKeyRequirement
    /// The user verification asked for; the relying party's policy by default, so the two agree.
    public var userVerification: UserVerificationRequirement
    /// The attestation asked for.
    public var attestation: AttestationConveyance
    /// UI hints.
    public var hints: [PublicKeyCredentialHint]

    /// The smallest challenge WebAuthn allows (§13.4.3: at least 16 bytes; Portvakt asks for 32).
    public static let minimumChallengeLength = 32
    /// The user handle length generated for new accounts.
    public static let userHandleLength = 32

    /// Builds registration options with a fresh challenge (and a fresh user handle for a new account).
    ///
    /// - Parameters:
    ///   - relyingParty: Supplies RP ID, name, algorithms and the user verification policy.
    ///   - userName: The account name.
    ///   - userDisplayName: The friendly name.
    ///   - userHandle: The existing account's handle; nil makes a new one of 32 random bytes.
    ///   - excludeCredentials: The account's existing credentials.
    ///   - residentKey: Discoverable credential requirement (default required: passkeys).
    ///   - userVerification: Overrides the relying party's policy; leave nil so options and checks agree.
    ///   - attestation: Attestation conveyance (default none).
    ///   - authenticatorAttachment: Platform or roaming, nil for either.
    ///   - hints: UI hints.
    ///   - timeoutMilliseconds: The client timeout (default five minutes).
    ///   - challengeLength: Challenge bytes (default and minimum 32).
    ///   - random: The randomness for the challenge and user handle.
    /// - Throws: `options.invalid` for a user handle outside 1…64 bytes, a short challenge or no
    ///   algorithms; `options.random_failure` when the random source fails.
    public init(
        relyingParty: RelyingParty, userName: String, userDisplayName: String, userHandle: [UInt8]? = nil,
        excludeCredentials: [CredentialDescriptor] = [], residentKey: ResidentKeyRequirement = .required,
        userVerification: UserVerificationRequirement? = nil, attestation: AttestationConveyance = .none,
        authenticatorAttachment: AuthenticatorAttachment? = nil, hints: [PublicKeyCredentialHint] = [],
        timeoutMilliseconds: Int = 300_000, challengeLength: Int = RegistrationOptions.minimumChallengeLength,
        random: any RandomSource
    ) throws(PasskeyError) {
        guard challengeLength >= Self.minimumChallengeLength else {
            throw PasskeyError(
                .optionsInvalid, "a challenge needs at least \(Self.minimumChallengeLength) bytes")
        }
        if let userHandle, !(1...64).contains(userHandle.count) {
            // §5.4.3: user.id is at most 64 bytes and must not be empty.
            throw PasskeyError(.optionsInvalid, "a user handle is 1 to 64 bytes")
        }
        guard !relyingParty.allowedAlgorithms.isEmpty else {
            throw PasskeyError(.optionsInvalid, "the relying party allows no algorithms")
        }
        // Not `??`: its autoclosure would erase the typed throw.
        let handle: [UInt8]
        if let userHandle {
            handle = userHandle
        } else {
            handle = try randomBytes(Self.userHandleLength, random)
        }
        self.relyingPartyID = relyingParty.id
        self.relyingPartyName = relyingParty.name
        self.user = UserEntity(id: handle, name: userName, displayName: userDisplayName)
        self.challenge = try randomBytes(challengeLength, random)
        self.algorithms = relyingParty.allowedAlgorithms
        self.timeoutMilliseconds = timeoutMilliseconds
        self.excludeCredentials = excludeCredentials
        self.authenticatorAttachment = authenticatorAttachment
        self.residentKey = residentKey
        self.userVerification = userVerification ?? relyingParty.userVerification
        self.attestation = attestation
        self.hints = hints
    }

    /// The options as `PublicKeyCredentialCreationOptionsJSON`, UTF-8, members in a fixed order.
    ///
    /// `requireResidentKey` is written as L1 clients expect: true exactly when residentKey is required.
    /// The credProps extension is always requested so registration learns whether the key is discoverable.
    public func json() -> [UInt8] {
        var writer = JSONWriter()
        writer.object { w in
            w.key("rp")
            w.object { rp in
                rp.member("id", relyingPartyID)
                rp.member("name", relyingPartyName)
            }
            w.key("user")
            w.object { u in
                u.member("id", Base64URL.encode(user.id))
                u.member("name", user.name)
                u.member("displayName", user.displayName)
            }
            w.member("challenge", Base64URL.encode(challenge))
            w.key("pubKeyCredParams")
            w.array { a in
                for algorithm in algorithms {
                    a.object { p in
                        p.member("type", "public-key")
                        p.key("alg")
                        p.integer(algorithm.rawValue)
                    }
                }
            }
            w.key("timeout")
            w.integer(Int64(timeoutMilliseconds))
            w.key("excludeCredentials")
            w.array { a in for credential in excludeCredentials { credential.write(to: &a) } }
            w.key("authenticatorSelection")
            w.object { s in
                if let authenticatorAttachment {
                    s.member("authenticatorAttachment", authenticatorAttachment.rawValue)
                }
                s.member("residentKey", residentKey.rawValue)
                s.key("requireResidentKey")
                s.bool(residentKey == .required)
                s.member("userVerification", userVerification.rawValue)
            }
            w.key("hints")
            w.array { a in for hint in hints { a.string(hint.rawValue) } }
            w.member("attestation", attestation.rawValue)
            w.key("extensions")
            w.object { e in
                e.key("credProps")
                e.bool(true)
            }
        }
        return writer.bytes
    }
}

/// Options for `navigator.credentials.get`, in the WebAuthn L3 JSON form
/// (`PublicKeyCredentialRequestOptionsJSON`, what `parseRequestOptionsFromJSON` takes).
public struct AuthenticationOptions: Sendable, Hashable {
    /// The challenge, at least 32 random bytes; store it until the response arrives.
    public var challenge: [UInt8]
    /// How long the client should wait, in milliseconds.
    public var timeoutMilliseconds: Int
    /// The RP ID.
    public var relyingPartyID: String
    /// The credentials that may answer; empty for a discoverable (usernameless) login.
    public var allowCredentials: [CredentialDescriptor]
    /// The user verification asked for; the relying party's policy by default.
    public var userVerification: UserVerificationRequirement
    /// UI hints.
    public var hints: [PublicKeyCredentialHint]

    /// Builds authentication options with a fresh challenge.
    ///
    /// - Parameters:
    ///   - relyingParty: Supplies the RP ID and the user verification policy.
    ///   - allowCredentials: The named user's credentials, or empty for discoverable login.
    ///   - userVerification: Overrides the policy; leave nil so options and checks agree.
    ///   - hints: UI hints.
    ///   - timeoutMilliseconds: The client timeout (default five minutes).
    ///   - challengeLength: Challenge bytes (default and minimum 32).
    ///   - random: The randomness for the challenge.
    /// - Throws: `options.invalid` for a short challenge; `options.random_failure` when randomness fails.
    public init(
        relyingParty: RelyingParty, allowCredentials: [CredentialDescriptor] = [],
        userVerification: UserVerificationRequirement? = nil, hints: [PublicKeyCredentialHint] = [],
        timeoutMilliseconds: Int = 300_000, challengeLength: Int = RegistrationOptions.minimumChallengeLength,
        random: any RandomSource
    ) throws(PasskeyError) {
        guard challengeLength >= RegistrationOptions.minimumChallengeLength else {
            throw PasskeyError(
                .optionsInvalid,
                "a challenge needs at least \(RegistrationOptions.minimumChallengeLength) bytes")
        }
        self.challenge = try randomBytes(challengeLength, random)
        self.timeoutMilliseconds = timeoutMilliseconds
        self.relyingPartyID = relyingParty.id
        self.allowCredentials = allowCredentials
        self.userVerification = userVerification ?? relyingParty.userVerification
        self.hints = hints
    }

    /// The options as `PublicKeyCredentialRequestOptionsJSON`, UTF-8, members in a fixed order.
    public func json() -> [UInt8] {
        var writer = JSONWriter()
        writer.object { w in
            w.member("challenge", Base64URL.encode(challenge))
            w.key("timeout")
            w.integer(Int64(timeoutMilliseconds))
            w.member("rpId", relyingPartyID)
            w.key("allowCredentials")
            w.array { a in for credential in allowCredentials { credential.write(to: &a) } }
            w.member("userVerification", userVerification.rawValue)
            w.key("hints")
            w.array { a in for hint in hints { a.string(hint.rawValue) } }
        }
        return writer.bytes
    }
}

/// Draws `count` bytes, turning a random-source failure into this module's error.
private func randomBytes(_ count: Int, _ random: any RandomSource) throws(PasskeyError) -> [UInt8] {
    do {
        return try random.bytes(count)
    } catch {
        throw PasskeyError(.optionsRandomFailure, "the random source failed", underlying: error)
    }
}
