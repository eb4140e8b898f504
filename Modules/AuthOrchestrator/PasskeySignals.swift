import CryptoCore
public import Kernel
public import Storage

/// What the WebAuthn Signal API (L3 §5.1.10: `PublicKeyCredential.signalUnknownCredential`,
/// `signalAllAcceptedCredentials`, `signalCurrentUserDetails`) needs to keep the user's password
/// manager in step with this server: a passkey removed here (by its user or an administrator)
/// stops being offered, a refused unknown one is forgotten, a renamed account shows its new name.
///
/// Answers carry it as a `signals` member whose keys are the JS methods' names without the
/// `signal` prefix; each value is exactly the method's argument. Native apps pass the same data
/// to their platform's equivalents (Docs/mobile.md). Every id is unpadded base64url.
public struct PasskeySignals: Sendable, Equatable {
    /// `signalUnknownCredential({rpId, credentialId})`: no account has this credential.
    public struct UnknownCredential: Sendable, Equatable {
        /// The relying party ID the credential is scoped to.
        public let rpID: String
        /// The refused credential's id, base64url.
        public let credentialID: String

        /// Creates the argument.
        public init(rpID: String, credentialID: String) {
            self.rpID = rpID
            self.credentialID = credentialID
        }
    }

    /// `signalAllAcceptedCredentials({rpId, userId, allAcceptedCredentialIds})`: the account's
    /// whole list; a password manager hides the account's other passkeys for this RP.
    public struct AllAcceptedCredentials: Sendable, Equatable {
        /// The relying party ID.
        public let rpID: String
        /// The WebAuthn user handle (`user.id` of the creation options), base64url; not the
        /// account id.
        public let userID: String
        /// Every credential id the account still has, base64url, oldest first.
        public let allAcceptedCredentialIDs: [String]

        /// Creates the argument.
        public init(rpID: String, userID: String, allAcceptedCredentialIDs: [String]) {
            self.rpID = rpID
            self.userID = userID
            self.allAcceptedCredentialIDs = allAcceptedCredentialIDs
        }
    }

    /// `signalCurrentUserDetails({rpId, userId, name, displayName})`: the names a password
    /// manager shows for the account's passkeys.
    public struct CurrentUserDetails: Sendable, Equatable {
        /// The relying party ID.
        public let rpID: String
        /// The WebAuthn user handle, base64url.
        public let userID: String
        /// The WebAuthn `user.name`, as the creation options give it.
        public let name: String
        /// The WebAuthn `user.displayName`.
        public let displayName: String

        /// Creates the argument.
        public init(rpID: String, userID: String, name: String, displayName: String) {
            self.rpID = rpID
            self.userID = userID
            self.name = name
            self.displayName = displayName
        }
    }

    /// For a login refused because no account has its credential.
    public var unknownCredential: UnknownCredential?
    /// For an answer about the signed-in account's passkeys (sign-in, added, removed, listed).
    public var allAcceptedCredentials: AllAcceptedCredentials?
    /// For an answer after sign-in or a change of the account's names.
    public var currentUserDetails: CurrentUserDetails?

    /// Creates signals; members left nil are not sent.
    public init(
        unknownCredential: UnknownCredential? = nil, allAcceptedCredentials: AllAcceptedCredentials? = nil,
        currentUserDetails: CurrentUserDetails? = nil
    ) {
        self.unknownCredential = unknownCredential
        self.allAcceptedCredentials = allAcceptedCredentials
        self.currentUserDetails = currentUserDetails
    }
}

/// Builds `PasskeySignals` for this deployment's relying party: the one place every route (and
/// every use case) gets them from, so the RP ID, the user handle and the id encoding agree.
public struct PasskeySignalBuilder: Sendable {
    /// The RP ID the signals name (`relyingParty.id`).
    public let rpID: String
    let accounts: any AccountStore

    /// Creates a builder over the store the account's passkeys are read from.
    public init(rpID: String, accounts: any AccountStore) {
        self.rpID = rpID
        self.accounts = accounts
    }

    /// The WebAuthn `user.name` an account's passkeys are created with: its username, or its
    /// display name when it has none (BankID-first accounts). Creation options and
    /// `currentUserDetails` both use this, so a password manager shows what it was given.
    public static func webAuthnUserName(_ user: User) -> String {
        user.username ?? user.displayName
    }

    /// `unknownCredential` for a credential id no account has.
    public func unknownCredential(_ credentialID: [UInt8]) -> PasskeySignals {
        PasskeySignals(
            unknownCredential: .init(rpID: rpID, credentialID: Base64URL.encode(credentialID)))
    }

    /// `currentUserDetails` for `user`.
    public func currentUserDetails(_ user: User) -> PasskeySignals {
        PasskeySignals(currentUserDetails: details(user))
    }

    /// `allAcceptedCredentials` from credential ids the caller already read, with
    /// `currentUserDetails` when `withDetails`.
    /// - Parameter credentialIDs: every passkey of `user`'s, in `credentialIDs(userID:)`'s order
    ///   (a partial list would hide the others).
    public func acceptedCredentials(_ user: User, credentialIDs: [[UInt8]], withDetails: Bool = false)
        -> PasskeySignals
    {
        accepted(user, ids: credentialIDs, withDetails: withDetails)
    }

    /// `allAcceptedCredentials` from the store's current list, with `currentUserDetails` when
    /// `withDetails`. Only the ids are read: this runs after every registration and BankID sign-in
    /// (a passkey sign-in gets them from its commit).
    /// - Throws: `StorageError` when the list cannot be read.
    public func acceptedCredentials(_ user: User, withDetails: Bool = false) throws -> PasskeySignals {
        try accepted(user, ids: accounts.credentialIDs(userID: user.id), withDetails: withDetails)
    }

    private func accepted(_ user: User, ids: [[UInt8]], withDetails: Bool) -> PasskeySignals {
        PasskeySignals(
            allAcceptedCredentials: .init(
                rpID: rpID, userID: Base64URL.encode(user.userHandle),
                allAcceptedCredentialIDs: ids.map { Base64URL.encode($0) }),
            currentUserDetails: withDetails ? details(user) : nil)
    }

    private func details(_ user: User) -> PasskeySignals.CurrentUserDetails {
        .init(
            rpID: rpID, userID: Base64URL.encode(user.userHandle), name: Self.webAuthnUserName(user),
            displayName: user.displayName)
    }
}
