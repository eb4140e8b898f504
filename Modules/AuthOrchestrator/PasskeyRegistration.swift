public import Kernel
public import SessionCore

/// Who is registering a passkey: the request's signed-in account when its session is usable, why
/// it is not when the request presented one that failed, and its BankID binding value.
public struct Registrant: Sendable {
    /// The request's signed-in account; nil when it presented no usable session.
    public var signedIn: SignedIn?
    /// Why the presented session could not be used (expired, revoked, disabled account); nil when
    /// none was presented or it was usable.
    public var sessionFailure: (any Error)?
    /// The client's BankID binding value, which a recovery's enrollment token is bound to.
    public var binding: String?

    /// Creates a registrant.
    public init(signedIn: SignedIn? = nil, sessionFailure: (any Error)? = nil, binding: String? = nil) {
        self.signedIn = signedIn
        self.sessionFailure = sessionFailure
        self.binding = binding
    }

    /// The registrant as a BankID order's requester, for bound enrollment tokens.
    var requester: BankIDRequester {
        BankIDRequester(session: signedIn?.current, user: signedIn?.user, binding: binding)
    }
}

/// What a registration asks for: a new account (`username`), a passkey for a one-time
/// enrollment or recovery token, or (neither) a new passkey for the signed-in account.
public struct RegistrationRequest: Sendable {
    /// A new account's username.
    public var username: String?
    /// A new account's display name (the username when absent).
    public var displayName: String?
    /// A one-time enrollment or recovery token.
    public var enrollmentToken: String?
    /// The client will run it with `mediation: "conditional"` (an automatic passkey upgrade).
    public var conditional: Bool

    /// Creates a request.
    public init(
        username: String? = nil, displayName: String? = nil, enrollmentToken: String? = nil,
        conditional: Bool = false
    ) {
        self.username = username
        self.displayName = displayName
        self.enrollmentToken = enrollmentToken
        self.conditional = conditional
    }
}

/// Passkey registration as the public API offers it: one entry that decides which of the three
/// registrations a request is, and which use case runs it (`EnrollmentService` for a token,
/// `PasskeyService` for a sign-up or an added passkey).
public struct PasskeyRegistration: Sendable {
    let passkeys: PasskeyService
    let enrollment: EnrollmentService
    /// Whether a session BankID opened may add a passkey (`BankIDPolicy.passkeyAfterBankID`).
    let passkeyAfterBankID: Bool

    /// Creates the entry over the two use cases.
    /// - Parameter passkeyAfterBankID: whether a session opened by a BankID identification may
    ///   add a passkey; BankID's terms forbid it (ID switching) unless the relying party's bank
    ///   agrees, so the caller passes `BankIDPolicy.passkeyAfterBankID`.
    public init(passkeys: PasskeyService, enrollment: EnrollmentService, passkeyAfterBankID: Bool) {
        self.passkeys = passkeys
        self.enrollment = enrollment
        self.passkeyAfterBankID = passkeyAfterBankID
    }

    /// Creation options for `request`.
    /// - Throws: what the chosen use case throws; for an added passkey without a usable session,
    ///   why the session failed (`session.missing` when none was presented); for one asked by a
    ///   BankID session where `passkeyAfterBankID` is off, `passkey.id_switching_refused`;
    ///   `passkey.conditional_not_allowed` for a conditional one that is not an added passkey.
    public func start(_ request: RegistrationRequest, by registrant: Registrant) throws -> IssuedChallenge {
        // A conditional create may come back without user presence, so it may only add a passkey
        // to the account the session already proves: the user agent creates it after a sign-in
        // it mediated. A new account or a token's must be made with the user there.
        guard !request.conditional || (request.enrollmentToken == nil && request.username == nil) else {
            throw AuthError(
                .conditionalNotAllowed,
                "a conditional registration can only add a passkey to the signed-in account")
        }
        if let token = request.enrollmentToken {
            // A recovery's token is good only for the client its BankID order was bound to.
            return try enrollment.startRegistration(token: token, client: registrant.requester)
        }
        if let username = request.username {
            return try passkeys.startRegistration(
                .newAccount(username: username, displayName: request.displayName))
        }
        let signedIn = try Self.signedIn(registrant)
        // A passkey for a session that a BankID identification opened would be a new way in
        // issued on BankID's word: ID switching, refused unless acknowledged. Refused here, at
        // the start, so no challenge for it exists; a session of any other method may add one.
        guard passkeyAfterBankID || signedIn.current.authMethod != .bankid else {
            throw AuthError(
                .idSwitchingRefused, "a session opened with BankID cannot add a passkey in this deployment")
        }
        return try passkeys.startRegistration(.signedIn(signedIn.user), conditional: request.conditional)
    }

    /// Verifies and stores the passkey for the challenge `challengeID` was issued as.
    /// - Throws: what the chosen use case throws. An added passkey's challenge presented with a
    ///   session that no longer works fails with that session's error rather than
    ///   `passkey.challenge_invalid`, so the client learns to sign in again.
    public func finish(
        challengeID: String, response: [UInt8], name: String?, clientKind: ClientKind,
        by registrant: Registrant,
        context: ClientContext
    ) throws -> CompletedRegistration {
        var completed = try verifiedAndStored(
            challengeID: challengeID, response: response, name: name, clientKind: clientKind, by: registrant,
            context: context)
        // Every registration answers with the account's whole list and names, so the password
        // manager drops passkeys this server no longer has (a recovery may have revoked some).
        completed.signals = try? passkeys.signals.acceptedCredentials(completed.user, withDetails: true)
        return completed
    }

    private func verifiedAndStored(
        challengeID: String, response: [UInt8], name: String?, clientKind: ClientKind,
        by registrant: Registrant, context: ClientContext
    ) throws -> CompletedRegistration {
        // A challenge issued for an enrollment token: that token's account, no session needed.
        if let enrolled = try enrollment.finishRegistration(
            challengeID: challengeID, response: response, name: name, clientKind: clientKind, context: context
        ) {
            return enrolled
        }
        do {
            return try passkeys.finishRegistration(
                challengeID: challengeID, response: response, name: name,
                signedInUser: registrant.signedIn?.user,
                clientKind: clientKind, context: context)
        } catch let error as AuthError where error.code == .challengeInvalid {
            if let failure = registrant.sessionFailure { throw failure }
            throw error
        }
    }

    /// The registrant's account, or why it has none.
    private static func signedIn(_ registrant: Registrant) throws -> SignedIn {
        if let signedIn = registrant.signedIn { return signedIn }
        throw registrant.sessionFailure ?? SessionError(.missing, "no session token was presented")
    }
}
