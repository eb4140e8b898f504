extension PortvaktConfiguration {
    /// Session introspection for the app's servers (`POST /admin/v1/sessions/introspect`).
    public struct IntrospectionSettings: Sendable, Equatable {
        /// Whether an introspection counts as use of the session for the idle timeout (default
        /// false: an app's server asking must not keep a session alive its holder abandoned).
        public var touchesSession: Bool

        /// Creates the settings.
        public init(touchesSession: Bool = false) {
            self.touchesSession = touchesSession
        }
    }
}

extension PortvaktConfiguration.IntrospectionSettings {
    init(reading r: ConfigReader) {
        self.init(touchesSession: r.bool("touchesSession", default: Self().touchesSession))
    }

    var effectiveJSON: ConfigJSON {
        .object([("touchesSession", .bool(touchesSession))])
    }
}
