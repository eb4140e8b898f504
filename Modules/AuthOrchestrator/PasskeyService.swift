import CryptoCore
public import FoundationEssentials
public import Kernel
public import PasskeyCore
public import SessionCore
public import Storage

/// What passkey sign-up and sign-in run with: the relying party and the deployment's switches.
public struct PasskeyPolicy: Sendable {
    /// RP ID, origins, user verification, attestation and counter policies.
    public var relyingParty: RelyingParty
    /// The attestation conveyance asked for at registration.
    public var attestation: AttestationConveyance
    /// How long a challenge may be answered.
    public var challengeLifetime: TimeInterval
    /// Whether passkeys are offered at all.
    public var enabled: Bool
    /// Whether a new account may be created with a passkey.
    public var signupEnabled: Bool
    /// Whether BankID login is on: then an account with a linked identity still has a way in
    /// without passkeys, and its last passkey may be removed.
    public var bankIDLogin: Bool
    /// AAGUID → provider name ("iCloud Keychain"); FIDO metadata is consulted after it.
    public var providerNames: ProviderNames

    /// Creates a policy with the documented defaults for everything but the relying party.
    public init(
        relyingParty: RelyingParty, attestation: AttestationConveyance = .none,
        challengeLifetime: TimeInterval = 300, enabled: Bool = true, signupEnabled: Bool = true,
        bankIDLogin: Bool = false, providerNames: ProviderNames = .bundled
    ) {
        self.relyingParty = relyingParty
        self.attestation = attestation
        self.challengeLifetime = challengeLifetime
        self.enabled = enabled
        self.signupEnabled = signupEnabled
        self.bankIDLogin = bankIDLogin
        self.providerNames = providerNames
    }
}

/// Whom a registration is for.
public enum RegistrationSubject: Sendable {
    /// A signed-in user adding a passkey.
    case signedIn(User)
    /// A new account, created when the passkey is verified.
    case newAccount(username: String, displayName: String?)
}

/// Options handed to the client, and the handle to send back with its response.
public struct IssuedChallenge: Sendable {
    /// The stored challenge's id (base64url), sent back with the response.
    public let challengeID: String
    /// `PublicKeyCredentialCreationOptionsJSON` or `PublicKeyCredentialRequestOptionsJSON`, UTF-8.
    public let optionsJSON: [UInt8]
    /// When the challenge stops being accepted.
    public let expiresAt: Date
}

/// A verified and stored registration.
public struct CompletedRegistration: Sendable {
    /// The account the passkey belongs to (new for a sign-up).
    public let user: User
    /// The stored passkey.
    public let passkey: StoredPasskey
    /// The session opened by a sign-up; nil when a signed-in user added a passkey.
    public let session: IssuedSession?
    /// What a recovery enrollment revoked, so the user sees what happened; nil otherwise.
    public var recovery: RecoveryOutcome? = nil
    /// The account's passkeys and names for the Signal API; nil when they could not be read
    /// (the registration stands: the signals only tidy the password manager).
    public var signals: PasskeySignals? = nil
}

/// What a passkey enrolled through BankID recovery changed besides adding itself.
public struct RecoveryOutcome: Sendable, Equatable {
    /// The account's other sessions ended (all of them under the default policy).
    public let sessionsRevoked: Int
    /// The account's older passkeys removed (none under the default policy).
    public let passkeysRevoked: Int
}

/// A verified login and the session it opened.
public struct CompletedLogin: Sendable {
    /// The user who signed in.
    public let user: User
    /// The passkey used, with its counter and last use updated.
    public let passkey: StoredPasskey
    /// The new session.
    public let session: IssuedSession
    /// The counter went backwards and the policy is `flag`: a possible cloned authenticator.
    public let counterRegressed: Bool
    /// The account's passkeys and names for the Signal API; nil when they could not be read
    /// (the sign-in stands: the signals only tidy the password manager).
    public var signals: PasskeySignals? = nil
}

/// Passkey sign-up, sign-in and passkey management: the use cases behind the passkey routes.
///
/// Every step that changes state or decides a login writes an audit event. Challenges are
/// single use: registration challenges through `ChallengeStore.consumeChallenge`, sealed login
/// challenges through `ChallengeStore.useSealedChallenge` (inside the login's commit), both
/// atomic, so two finalize calls racing with one response cannot both succeed.
public struct PasskeyService: Sendable {
    let accounts: any AccountStore
    let challenges: any ChallengeStore
    let audit: any AuditStore
    let logins: any PasskeyLoginStore
    let sessions: SessionService
    /// The policy in force.
    public let policy: PasskeyPolicy
    let clock: any WallClock
    let random: any RandomSource
    /// Where the webhook events about sign-ups, added and removed passkeys, and the sessions a
    /// login replaces go.
    let feed: ChangeFeed
    /// Linked BankID identities, a way in besides passkeys while `policy.bankIDLogin` is on.
    let identities: any BankIDIdentityStore
    /// Seals login challenges into their ids, so issuing one writes nothing.
    let loginSeal: LoginChallengeSeal

    /// The Signal API data for this relying party's accounts and credentials.
    public var signals: PasskeySignalBuilder {
        PasskeySignalBuilder(rpID: policy.relyingParty.id, accounts: accounts)
    }

    /// The bytes of a challenge id: 128 bits, unguessable.
    static let challengeIDBytes = 16

    /// Creates the service over its stores, with injected time and randomness.
    ///
    /// - Parameter challengeKey: The key that seals login challenges (32 bytes or more). Every
    ///   instance serving one database must use the same key, `sharedChallengeKey(settings:random:)`;
    ///   nil draws a key of this service's own, which suits a single process (tests, tools).
    public init(
        accounts: any AccountStore, challenges: any ChallengeStore, audit: any AuditStore,
        logins: any PasskeyLoginStore, identities: any BankIDIdentityStore, sessions: SessionService,
        policy: PasskeyPolicy, clock: any WallClock, random: any RandomSource, challengeKey: [UInt8]? = nil,
        feed: ChangeFeed = .off
    ) {
        // The system's randomness rather than `random`: the key is never seen, and drawing it from
        // a seeded test source would shift every value drawn after it.
        loginSeal = LoginChallengeSeal(
            key: challengeKey ?? SystemRandom().bytes(LoginChallengeSeal.keyLength))
        self.accounts = accounts
        self.challenges = challenges
        self.audit = audit
        self.logins = logins
        self.identities = identities
        self.sessions = sessions
        self.policy = policy
        self.clock = clock
        self.random = random
        self.feed = feed
    }

    // MARK: Registration

    /// Issues creation options for a signed-in user's new passkey or for a new account.
    ///
    /// - Parameter conditional: the client runs the options with `mediation: "conditional"` (an
    ///   automatic passkey upgrade): the challenge records it, so its response may lack user
    ///   presence, and the options hint `client-device` (the passkey is made where the user
    ///   just signed in). `PasskeyRegistration` decides who may ask for it.
    /// - Throws: `passkey.disabled`, `passkey.signup_disabled`, `user.invalid_username`,
    ///   `user.invalid_display_name`, `user.username_taken`; `StorageError` on storage faults.
    public func startRegistration(_ subject: RegistrationSubject, conditional: Bool = false) throws
        -> IssuedChallenge
    {
        try requireEnabled()
        let now = clock.now()
        let options: RegistrationOptions
        var stored: StoredChallenge
        switch subject {
        case .signedIn(let user):
            // Listing the existing passkeys lets the authenticator refuse a second one for this RP.
            let existing = try accounts.passkeys(userID: user.id).map(Self.descriptor)
            options = try RegistrationOptions(
                relyingParty: policy.relyingParty, userName: PasskeySignalBuilder.webAuthnUserName(user),
                userDisplayName: user.displayName, userHandle: user.userHandle, excludeCredentials: existing,
                residentKey: .required, attestation: policy.attestation,
                hints: conditional ? [.clientDevice] : [], timeoutMilliseconds: timeoutMilliseconds,
                random: random)
            stored = StoredChallenge(
                id: "", challenge: options.challenge, purpose: .registration, userID: user.id,
                userHandle: user.userHandle, createdAt: now, expiresAt: now + policy.challengeLifetime,
                conditional: conditional)
        case .newAccount(let rawUsername, let rawDisplayName):
            guard policy.signupEnabled else {
                throw AuthError(.signupDisabled, "new accounts cannot be created with a passkey here")
            }
            let username = try Names.normaliseUsername(rawUsername)
            let displayName = try Names.displayName(rawDisplayName ?? username)
            guard try accounts.user(username: username) == nil else {
                throw AuthError(.usernameTaken, "the username is taken")
            }
            // A nil handle makes the options draw a fresh one from the injected randomness.
            options = try RegistrationOptions(
                relyingParty: policy.relyingParty, userName: username, userDisplayName: displayName,
                residentKey: .required, attestation: policy.attestation,
                timeoutMilliseconds: timeoutMilliseconds, random: random)
            stored = StoredChallenge(
                id: "", challenge: options.challenge, purpose: .registration, username: username,
                displayName: displayName, userHandle: options.user.id, createdAt: now,
                expiresAt: now + policy.challengeLifetime)
        }
        stored.id = try random.secureToken(Self.challengeIDBytes)
        try challenges.insertChallenge(stored)
        return IssuedChallenge(
            challengeID: stored.id, optionsJSON: options.json(), expiresAt: stored.expiresAt)
    }

    /// Verifies a registration response (§7.1), stores the passkey and, for a sign-up, creates
    /// the account and its first session.
    ///
    /// - Parameters:
    ///   - challengeID: The id `startRegistration` returned.
    ///   - response: The `RegistrationResponseJSON` bytes.
    ///   - name: The passkey's name; the provider's name (or "Passkey") when nil.
    ///   - signedInUser: The request's user, required when the challenge was for adding a passkey.
    ///   - clientKind: Where a sign-up's session token goes.
    ///   - context: For the audit trail and the session.
    /// - Throws: `AuthError` (`passkey.challenge_invalid`, `passkey.credential_exists`,
    ///   `user.username_taken`, `passkey.invalid_name`, …) or the failing step's `PasskeyError`.
    public func finishRegistration(
        challengeID: String, response: [UInt8], name: String?, signedInUser: User?, clientKind: ClientKind,
        context: ClientContext
    ) throws -> CompletedRegistration {
        try requireEnabled()
        // Checked before the challenge is spent, so a typo in the name costs no new ceremony.
        var chosenName: String?
        if let name { chosenName = try Names.passkeyName(name) }
        let now = clock.now()
        guard
            let challenge = try challenges.consumeChallenge(id: challengeID, purpose: .registration, at: now)
        else {
            throw AuthError(
                .challengeInvalid, "the challenge is unknown, used, expired or for another ceremony")
        }
        // An add-passkey challenge is good only for the user it was issued to.
        if let owner = challenge.userID, signedInUser?.id != owner {
            throw AuthError(.challengeInvalid, "the challenge was issued to another session")
        }
        var passkey = try verifiedPasskey(
            response: response, challenge: challenge, userID: challenge.userID ?? "", name: chosenName,
            at: now)
        // A new account's id is drawn only once the response has been verified.
        if challenge.userID == nil { passkey.userID = try random.secureToken(16) }
        let userID = passkey.userID
        let provider = passkey.providerName

        var details = [
            "credentialId": Base64URL.encode(passkey.credentialID), "aaguid": passkey.aaguid,
            "attestationFormat": passkey.attestationFormat,
        ]
        if let provider { details["provider"] = provider }
        if challenge.conditional { details["conditional"] = "true" }

        if let signedInUser, challenge.userID != nil {
            details["newAccount"] = "false"
            let record = ChangeRecord(
                auditEvent(.passkeyRegistered, userID: userID, context: context, details: details),
                outbox: feed.entries([
                    .passkeyAdded(userID: userID, credentialID: passkey.credentialID, via: .added, at: now)
                ]))
            do {
                try accounts.insertPasskey(passkey, record: record)
            } catch let error as StorageError where error.code == .conflict {
                throw AuthError(.credentialExists, "this passkey is already registered", underlying: error)
            }
            feed.committed(record.outbox)
            return CompletedRegistration(user: signedInUser, passkey: passkey, session: nil)
        } else {
            guard let username = challenge.username, let handle = challenge.userHandle else {
                throw AuthError(.challengeInvalid, "the challenge does not describe a new account")
            }
            let newUser = User(
                id: userID, username: username, displayName: challenge.displayName ?? username,
                createdAt: now,
                userHandle: handle)
            // Prepared, not stored: the account, its passkey, its session and their record are one
            // transaction, so a failed insert leaves no account without a way in.
            let session = try sessions.prepare(
                userID: userID, clientKind: clientKind, authMethod: .passkey, userAgent: context.userAgent,
                ipAddress: context.ipAddress)
            details["newAccount"] = "true"
            details["sessionId"] = session.session.id
            let record = ChangeRecord(
                auditEvent(.passkeyRegistered, userID: userID, context: context, details: details),
                outbox: feed.entries([
                    .userCreated(userID: userID, method: .passkey, at: now),
                    .passkeyAdded(userID: userID, credentialID: passkey.credentialID, via: .signup, at: now),
                ]))
            do {
                try accounts.createUser(
                    newUser, firstPasskey: passkey, session: session.session, record: record)
            } catch let error as StorageError where error.code == .conflict {
                // Someone took the name between initialize and finalize, or the credential exists.
                if try accounts.user(username: username) != nil {
                    throw AuthError(.usernameTaken, "the username is taken", underlying: error)
                }
                throw AuthError(.credentialExists, "this passkey is already registered", underlying: error)
            }
            feed.committed(record.outbox)
            return CompletedRegistration(user: newUser, passkey: passkey, session: session)
        }
    }

    /// §7.1 over a consumed registration challenge: verifies the response and returns the passkey
    /// to store for `userID` (not stored yet). Shared with enrollment-token registration.
    /// - Throws: `passkey.credential_exists`, or the failing step's `PasskeyError`.
    func verifiedPasskey(
        response: [UInt8], challenge: StoredChallenge, userID: String, name: String?, at now: Date
    ) throws -> StoredPasskey {
        let parsed = try RegistrationResponseJSON(json: response)
        let verified = try verifyRegistration(
            response: parsed, expectedChallenge: challenge.challenge, relyingParty: policy.relyingParty,
            conditionalMediation: challenge.conditional, at: now)
        // §7.1 step 26: a credential ID registered to anyone is refused, never re-bound.
        guard try accounts.passkey(credentialID: verified.credentialID) == nil else {
            throw AuthError(.credentialExists, "this passkey is already registered")
        }
        let provider = policy.providerNames.name(for: verified)
        return StoredPasskey(
            credentialID: verified.credentialID, userID: userID, publicKey: verified.publicKeyBytes,
            algorithm: Int(verified.algorithm.rawValue), signCount: verified.signCount,
            aaguid: verified.aaguid.uuidString.lowercased(), providerName: provider,
            transports: verified.transports.map(\.rawValue), backupEligible: verified.backupEligible,
            backupState: verified.backupState, attestationFormat: verified.attestationFormat,
            attestationType: verified.attestationType.rawValue,
            attestationTrusted: verified.attestationTrusted,
            name: name ?? provider ?? "Passkey", createdAt: now, lastUsedAt: nil)
    }

    // MARK: Login

    /// Issues request options: discoverable (no username) or for a named user.
    ///
    /// An unknown username gets the same answer as a user without passkeys (an empty
    /// allowCredentials), so the options never reveal whether an account exists.
    /// - Throws: `passkey.disabled`, `user.invalid_username`; `StorageError` on storage faults.
    public func startLogin(username rawUsername: String?) throws -> IssuedChallenge {
        try requireEnabled()
        var user: User?
        var username: String?
        if let rawUsername {
            let normalised = try Names.normaliseUsername(rawUsername)
            username = normalised
            user = try accounts.user(username: normalised)
        }
        let allowed = try user.map { try accounts.passkeys(userID: $0.id).map(Self.descriptor) } ?? []
        let options = try AuthenticationOptions(
            relyingParty: policy.relyingParty, allowCredentials: allowed,
            timeoutMilliseconds: timeoutMilliseconds,
            random: random)
        // Sealed, not stored: the id carries the challenge, its expiry and (as a digest) the
        // username, so that finalize knows the login named someone and accepts only that
        // account's passkeys, none when nobody has that name. The id reads the same either way.
        let expiresAt = LoginChallengeSeal.millisecondPrecision(clock.now() + policy.challengeLifetime)
        let id = loginSeal.seal(
            LoginChallengeSeal.Contents(
                challenge: options.challenge, expiresAt: expiresAt,
                usernameDigest: username.map(LoginChallengeSeal.digest(username:))))
        return IssuedChallenge(challengeID: id, optionsJSON: options.json(), expiresAt: expiresAt)
    }

    /// Verifies an authentication response (§7.2), records the passkey's use and opens a session.
    ///
    /// - Parameters:
    ///   - challengeID: The id `startLogin` returned.
    ///   - response: The `AuthenticationResponseJSON` bytes.
    ///   - clientKind: Where the session token goes.
    ///   - replacingSessionID: The request's current session, revoked once the new one exists.
    ///   - context: For the audit trail and the session.
    /// - Throws: `passkey.challenge_invalid`; `passkey.login_failed` for an unknown credential,
    ///   an unknown user or another user's credential (one code, so nothing leaks); the failing
    ///   step's `PasskeyError` otherwise; `account.disabled`.
    public func finishLogin(
        challengeID: String, response: [UInt8], clientKind: ClientKind, replacingSessionID: String?,
        context: ClientContext
    ) async throws -> CompletedLogin {
        try await finishLogin(
            challengeID: challengeID, credential: CredentialJSON(json: response), clientKind: clientKind,
            replacingSessionID: replacingSessionID, context: context)
    }

    /// `finishLogin(challengeID:response:…)` for a response an envelope's strict parse already
    /// built (`CredentialEnvelope(json:buildingCredential:)`), so that it is not parsed twice; read
    /// by the same rules at the same step.
    /// - Parameter credential: The `AuthenticationResponseJSON`, as bytes or as the parsed value.
    /// - Throws: as `finishLogin(challengeID:response:…)`.
    public func finishLogin(
        challengeID: String, credential response: CredentialJSON, clientKind: ClientKind,
        replacingSessionID: String?, context: ClientContext
    ) async throws -> CompletedLogin {
        try requireEnabled()
        let attempt = LoginAttempt()
        do {
            return try await login(
                challengeID: challengeID, response: response, clientKind: clientKind,
                replacingSessionID: replacingSessionID, context: context, attempt: attempt)
        } catch let error as StorageError {
            burnOnFailure(attempt)
            throw error
        } catch {
            burnOnFailure(attempt)
            // The audit event carries the failure's code and, when the credential was known, its
            // owner; never the username that was typed. A refusal that cannot be recorded fails
            // with the storage error instead: repeated failures must always leave a trail.
            let code = (error as? any CodedError)?.codeName ?? "internal"
            try record(
                .passkeyLoginFailed, userID: attempt.userID, context: context, details: ["code": code])
            throw error
        }
    }

    /// A challenge is good for one attempt: one whose response was refused is marked used, so it
    /// cannot be tried again with another response.
    private func burnOnFailure(_ attempt: LoginAttempt) {
        guard let challenge = attempt.challenge else { return }
        _ = try? challenges.useSealedChallenge(
            challenge.challenge, expiresAt: challenge.expiresAt, at: clock.now())
    }

    private func login(
        challengeID: String, response: CredentialJSON, clientKind: ClientKind, replacingSessionID: String?,
        context: ClientContext, attempt: LoginAttempt
    ) async throws -> CompletedLogin {
        let now = clock.now()
        // Opened, not yet used: the commit below records its use, so the signature is checked
        // without holding the write lock. Any refused attempt uses it up (see `burnOnFailure`).
        // An id that does not open (forged, altered, a registration challenge's) or has expired
        // is refused; there is nothing of it to use up.
        guard let challenge = loginSeal.open(challengeID),
            challenge.expiresAt > LoginChallengeSeal.millisecondPrecision(now)
        else {
            throw AuthError(
                .challengeInvalid, "the challenge is unknown, used, expired or for another ceremony")
        }
        attempt.challenge = challenge
        let parsed = try AuthenticationResponseJSON(response)
        // The passkey and its owner in one read (the owner always exists: deleting a user deletes
        // their passkeys in the same transaction).
        // Unknown to every account (never registered, or removed by its user, an administrator
        // or the account's deletion): the refusal tells the client so, for its password manager
        // to forget it. It says nothing about any account: the same answer whoever asked.
        guard let (passkey, user) = try accounts.passkeyWithOwner(credentialID: parsed.rawID) else {
            throw AuthError(
                .loginFailed, "the passkey is not known", signals: signals.unknownCredential(parsed.rawID))
        }
        attempt.userID = passkey.userID
        // A login that named a user accepts only that user's passkeys; one that named an
        // unknown user accepts none (no account has that name).
        if let named = challenge.usernameDigest,
            !ConstantTime.equals(named, user.username.map(LoginChallengeSeal.digest(username:)) ?? [])
        {
            throw AuthError(.loginFailed, "the passkey does not belong to the named account")
        }
        let verified: VerifiedAuthentication
        do {
            verified = try verify(
                parsed, challenge: challenge.challenge, passkey: passkey, owner: user,
                expectedUserHandle: challenge.usernameDigest == nil ? nil : user.userHandle,
                refusal: .loginFailed)
        } catch let error as PasskeyError where error.code == .ceremonyCounterRegression {
            try refuseRegression(error, challenge: challenge, attempt: attempt, at: now)
        }
        try AccountAccess.admit(user)
        let session = try sessions.prepare(
            userID: user.id, clientKind: clientKind, authMethod: .passkey, userAgent: context.userAgent,
            ipAddress: context.ipAddress)
        var details = [
            "credentialId": Base64URL.encode(passkey.credentialID), "sessionId": session.session.id,
        ]
        if verified.counterRegressed { details["counterRegressed"] = "true" }
        if verified.backupEligibilityChanged { details["backupEligibilityChanged"] = "true" }
        // One transaction: consume the challenge, record the passkey's use, open the session, end
        // the one the request came with (signing in is a change of privilege), audit.
        var record = PasskeyLoginRecord(
            challenge: .sealed(challenge: challenge.challenge, expiresAt: challenge.expiresAt),
            credentialID: passkey.credentialID, signCount: verified.signCount,
            backupState: verified.backupState, session: session.session,
            replacedSessionID: replacingSessionID,
            event: auditEvent(.passkeyLogin, userID: user.id, context: context, details: details),
            at: now)
        record.replacedSessionOutbox = feed.replacedSessionOutbox(replacingSessionID, at: now)
        // Suspends rather than blocks on a thread that serves other connections meanwhile.
        let credentialIDs = try await logins.commitPasskeyLogin(record)
        // Used up by the commit, whatever its answer.
        attempt.challenge = nil
        guard let credentialIDs else {
            // Another finalize with the same challenge won the race, or it expired meanwhile.
            throw AuthError(
                .challengeInvalid, "the challenge is unknown, used, expired or for another ceremony")
        }
        var used = passkey
        used.signCount = max(passkey.signCount, verified.signCount)
        used.backupState = verified.backupState
        used.lastUsedAt = now
        return CompletedLogin(
            user: user, passkey: used, session: session, counterRegressed: verified.counterRegressed,
            signals: signals.acceptedCredentials(user, credentialIDs: credentialIDs, withDetails: true))
    }

    /// Refuses a login whose counter went backwards (§7.2 step 22, under the reject policy), as a
    /// possible clone only when its challenge was still unused.
    ///
    /// A replayed assertion carries the counter its first use stored, so it always looks like a
    /// regression; the challenge tells the two apart. Claiming it in the database (one atomic use
    /// that every instance sees) decides. Of racing finalizes of one assertion, a loser that read
    /// the counter the winner raised comes here and finds the challenge used; one that read it
    /// before sees no regression and loses at the commit. The passkey was read before this claim
    /// and the winning commit raises the counter and uses the challenge in one transaction, so a
    /// claim that succeeds judged a counter this assertion had not raised: the regression is real.
    /// (Under the `flag` policy nothing comes here: the flag is written by the commit, which a
    /// loser does not get.)
    /// - Throws: `passkey.challenge_invalid` for a used (or meanwhile expired) challenge, otherwise
    ///   `regression` itself.
    private func refuseRegression(
        _ regression: PasskeyError, challenge: LoginChallengeSeal.Contents, attempt: LoginAttempt,
        at now: Date
    ) throws -> Never {
        // Used up here, whatever the answer: nothing is left for `burnOnFailure` to do.
        attempt.challenge = nil
        guard try challenges.useSealedChallenge(challenge.challenge, expiresAt: challenge.expiresAt, at: now)
        else {
            throw AuthError(
                .challengeInvalid, "the challenge is unknown, used, expired or for another ceremony")
        }
        throw regression
    }

    /// §7.2 through PasskeyCore for `passkey` of `owner`, with the two codes that would tell a
    /// prober which account a credential belongs to folded into `refusal` (`passkey.login_failed`
    /// for a login, `reauthentication_failed` for a re-authentication).
    private func verify(
        _ response: AuthenticationResponseJSON, challenge: [UInt8], passkey: StoredPasskey, owner: User,
        expectedUserHandle: [UInt8]?, refusal: AuthError.Code
    ) throws -> VerifiedAuthentication {
        let credential = try StoredCredential(
            id: passkey.credentialID, publicKeyBytes: passkey.publicKey, signCount: passkey.signCount,
            userHandle: owner.userHandle, backupEligible: passkey.backupEligible)
        do {
            return try verifyAuthentication(
                response: response, expectedChallenge: challenge, relyingParty: policy.relyingParty,
                credential: credential, expectedUserHandle: expectedUserHandle)
        } catch {
            switch error.code {
            case .ceremonyUserHandleMismatch, .ceremonyCredentialNotAllowed:
                throw AuthError(refusal, "the passkey does not belong to the account", underlying: error)
            default:
                throw error
            }
        }
    }

    // MARK: Re-authentication

    /// Issues request options for the signed-in user to prove presence again with one of their own
    /// passkeys (`allowCredentials` lists them). The challenge is stored for that user: finalize
    /// accepts it only in one of their sessions, once.
    /// - Throws: `passkey.disabled`; `reauthentication_failed` when the user has no passkey.
    public func startReauthentication(_ signedIn: SignedIn) throws -> IssuedChallenge {
        try requireEnabled()
        let allowed = try accounts.passkeys(userID: signedIn.user.id).map(Self.descriptor)
        guard !allowed.isEmpty else {
            throw AuthError(.reauthenticationFailed, "the account has no passkey to re-authenticate with")
        }
        let options = try AuthenticationOptions(
            relyingParty: policy.relyingParty, allowCredentials: allowed,
            timeoutMilliseconds: timeoutMilliseconds, random: random)
        let now = clock.now()
        // Stored, not sealed: a sealed id opens at login finalize, a stored one never does, so a
        // re-authentication's assertion can never open a session.
        let stored = StoredChallenge(
            id: try random.secureToken(Self.challengeIDBytes), challenge: options.challenge, purpose: .login,
            userID: signedIn.user.id, userHandle: signedIn.user.userHandle, createdAt: now,
            expiresAt: now + policy.challengeLifetime)
        try challenges.insertChallenge(stored)
        return IssuedChallenge(
            challengeID: stored.id, optionsJSON: options.json(), expiresAt: stored.expiresAt)
    }

    /// Verifies a re-authentication (§7.2, with the counter and replay rules of a login) by one of
    /// the signed-in user's own passkeys, and records the proof of presence on the session. No
    /// session is opened.
    /// - Returns: when the proof was recorded.
    /// - Throws: `passkey.challenge_invalid` (unknown, used, expired, or issued to another user);
    ///   `reauthentication_failed` for an unknown passkey or another user's (one code); the failing
    ///   step's `PasskeyError`; `session.revoked` when the session ended meanwhile.
    public func finishReauthentication(
        _ signedIn: SignedIn, challengeID: String, credential response: CredentialJSON, context: ClientContext
    ) throws -> Date {
        try requireEnabled()
        let user = signedIn.user
        do {
            return try reauthenticate(
                signedIn, challengeID: challengeID, response: response, context: context)
        } catch let error as StorageError {
            throw error
        } catch let error as SessionError {
            throw error
        } catch {
            // As a failed login: every refusal leaves a trail, with its code, never the assertion.
            let code = (error as? any CodedError)?.codeName ?? "internal"
            try record(
                .passkeyReauthenticationFailed, userID: user.id, context: context, details: ["code": code])
            throw error
        }
    }

    private func reauthenticate(
        _ signedIn: SignedIn, challengeID: String, response: CredentialJSON, context: ClientContext
    ) throws -> Date {
        let user = signedIn.user
        let now = clock.now()
        // Consumed before anything is checked: a challenge is good for one attempt, and of racing
        // finalizes exactly one gets it, so a replayed assertion meets a used challenge.
        guard let challenge = try challenges.consumeChallenge(id: challengeID, purpose: .login, at: now),
            challenge.userID == user.id
        else {
            throw AuthError(
                .challengeInvalid, "the challenge is unknown, used, expired or for another ceremony")
        }
        let parsed = try AuthenticationResponseJSON(response)
        guard let (passkey, owner) = try accounts.passkeyWithOwner(credentialID: parsed.rawID),
            owner.id == user.id
        else {
            throw AuthError(.reauthenticationFailed, "the passkey is not one of this account's")
        }
        // The challenge is spent, so a counter that went backwards is no replay: under the reject
        // policy PasskeyCore refuses it as a possible clone, under flag it is recorded.
        let verified = try verify(
            parsed, challenge: challenge.challenge, passkey: passkey, owner: user,
            expectedUserHandle: user.userHandle, refusal: .reauthenticationFailed)
        var details = [
            "credentialId": Base64URL.encode(passkey.credentialID), "sessionId": signedIn.current.id,
        ]
        if verified.counterRegressed { details["counterRegressed"] = "true" }
        let ids =
            signedIn.rotated == nil ? [signedIn.session.id] : [signedIn.current.id, signedIn.session.id]
        guard
            try logins.commitPasskeyReauthentication(
                PasskeyReauthenticationRecord(
                    credentialID: passkey.credentialID, signCount: verified.signCount,
                    backupState: verified.backupState, userID: user.id, sessionIDs: ids,
                    event: auditEvent(
                        .passkeyReauthenticated, userID: user.id, context: context, details: details),
                    at: now))
        else { throw SessionError(.revoked, "the session was revoked") }
        return now
    }

    // MARK: Managing passkeys

    /// The user's passkeys, oldest first.
    public func listPasskeys(userID: String) throws -> [StoredPasskey] {
        try accounts.passkeys(userID: userID)
    }

    /// Renames one of the user's passkeys.
    /// - Parameter credentialID: The credential ID in base64url, as the API shows it.
    /// - Throws: `passkey.invalid_name`, `passkey.not_found` (also for someone else's passkey).
    public func renamePasskey(userID: String, credentialID: String, name: String, context: ClientContext)
        throws -> StoredPasskey
    {
        let label = try Names.passkeyName(name)
        guard let id = Base64URL.decode(credentialID),
            try accounts.renamePasskey(credentialID: id, userID: userID, name: label),
            let renamed = try accounts.passkey(credentialID: id)
        else { throw AuthError(.passkeyNotFound, "no such passkey") }
        try record(
            .passkeyRenamed, userID: userID, context: context, details: ["credentialId": credentialID])
        return renamed
    }

    /// Deletes one of the signed-in user's passkeys, unless it is the account's last way in. A way
    /// in less cannot be undone by the user, so it needs a recent proof of presence.
    /// - Returns: `allAcceptedCredentials` with the passkeys left, for the Signal API; nil when
    ///   they could not be read (the removal stands).
    /// - Throws: `passkey.not_found`, `passkey.last_passkey`.
    @discardableResult
    public func deletePasskey(_ proof: RecentlyAuthenticated, credentialID: String, context: ClientContext)
        throws -> PasskeySignals?
    {
        let user = proof.signedIn.user
        try deletePasskey(userID: user.id, credentialID: credentialID, context: context)
        return try? signals.acceptedCredentials(user)
    }

    /// `deletePasskey(_:credentialID:context:)` by user id, for the tests of its rules.
    func deletePasskey(userID: String, credentialID: String, context: ClientContext) throws {
        guard let id = Base64URL.decode(credentialID) else {
            throw AuthError(.passkeyNotFound, "no such passkey")
        }
        let outbox = feed.entries([
            .passkeyRemoved(userID: userID, credentialID: id, by: .user, at: clock.now())
        ])
        // While BankID login is on, a linked identity is a way in too: then even the last
        // passkey may go. With it off the account would be locked out.
        if policy.bankIDLogin, try identities.linkedIdentity(userID: userID) != nil {
            let record = ChangeRecord(
                auditEvent(
                    .passkeyDeleted, userID: userID, context: context,
                    details: ["credentialId": credentialID, "bankidLinked": "true"]),
                outbox: outbox)
            guard try accounts.deletePasskey(credentialID: id, userID: userID, record: record) else {
                throw AuthError(.passkeyNotFound, "no such passkey")
            }
            feed.committed(outbox)
            return
        }
        let record = ChangeRecord(
            auditEvent(
                .passkeyDeleted, userID: userID, context: context, details: ["credentialId": credentialID]),
            outbox: outbox)
        switch try accounts.deletePasskeyUnlessLast(credentialID: id, userID: userID, record: record) {
        case .deleted: feed.committed(outbox)
        case .notFound: throw AuthError(.passkeyNotFound, "no such passkey")
        case .lastPasskey:
            throw AuthError(
                .lastPasskey, "this is the account's last passkey; add another before removing it")
        }
    }

    /// Deletes expired challenges; the server's hourly maintenance calls this.
    @discardableResult
    public func purgeExpiredChallenges() throws -> Int {
        try challenges.purgeChallenges(expiredBefore: clock.now())
    }

    // MARK: Helpers

    private var timeoutMilliseconds: Int { Int(policy.challengeLifetime * 1000) }

    private func requireEnabled() throws(AuthError) {
        guard policy.enabled else { throw AuthError(.passkeyDisabled, "passkeys are not enabled here") }
    }

    private static func descriptor(_ passkey: StoredPasskey) -> CredentialDescriptor {
        CredentialDescriptor(
            id: passkey.credentialID,
            transports: passkey.transports.map(AuthenticatorTransport.init(rawValue:)))
    }

    private func record(
        _ action: AuditAction, userID: String?, context: ClientContext, details: [String: String]
    )
        throws
    {
        _ = try audit.appendAudit(auditEvent(action, userID: userID, context: context, details: details))
    }

    private func auditEvent(
        _ action: AuditAction, userID: String?, context: ClientContext, details: [String: String]
    ) -> AuditEvent {
        AuditEvent(action, userID: userID, context: context, details: details, at: clock.now())
    }
}

/// What a failing login had learnt before it threw: the account it concerned once the credential
/// was found (for the audit event), and the challenge it opened and must use up.
private final class LoginAttempt {
    var userID: String?
    var challenge: LoginChallengeSeal.Contents?
}
