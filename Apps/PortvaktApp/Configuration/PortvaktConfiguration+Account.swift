extension PortvaktConfiguration {
    /// The signed-in user's own account (`PATCH`/`DELETE /v1/me`, the export, re-authentication).
    public struct AccountSettings: Sendable, Equatable {
        /// How long a proof of presence (the sign-in, a passkey re-authentication, a BankID
        /// signature) lets the acts that cannot be undone through: deleting the account, removing
        /// a passkey, ending every other session. 30 to 3600 seconds, default 300.
        public var reauthenticationSeconds: Int

        /// Creates the settings.
        public init(reauthenticationSeconds: Int = 300) {
            self.reauthenticationSeconds = reauthenticationSeconds
        }
    }

    /// The audit trail.
    public struct AuditSettings: Sendable, Equatable {
        /// How many days an audit event is kept, about a deleted account too; the hourly
        /// maintenance deletes older ones. 0 keeps every event forever. Default 365.
        public var retentionDays: Int

        /// Creates the settings.
        public init(retentionDays: Int = 365) {
            self.retentionDays = retentionDays
        }
    }
}

extension PortvaktConfiguration.AccountSettings {
    init(reading r: ConfigReader) {
        // Below half a minute a passkey prompt could not be answered before the proof ran out;
        // above an hour "recent" means little.
        self.init(
            reauthenticationSeconds: r.integer(
                "reauthenticationSeconds", default: Self().reauthenticationSeconds, in: 30...3600))
    }

    var effectiveJSON: ConfigJSON {
        .object([("reauthenticationSeconds", .integer(reauthenticationSeconds))])
    }
}

extension PortvaktConfiguration.AuditSettings {
    init(reading r: ConfigReader) {
        // Up to a hundred years: long enough for any legal hold, short of overflowing a date.
        self.init(retentionDays: r.integer("retentionDays", default: Self().retentionDays, in: 0...36_500))
    }

    var effectiveJSON: ConfigJSON {
        .object([("retentionDays", .integer(retentionDays))])
    }
}
