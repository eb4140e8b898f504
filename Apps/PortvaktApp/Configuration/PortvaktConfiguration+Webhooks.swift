public import CryptoCore
import FoundationEssentials
public import Kernel
import WebhookCore

extension PortvaktConfiguration {
    /// Webhooks to the app's servers (Docs/webhooks.md): the endpoints, what each wants, and how
    /// deliveries are sent and retried. No endpoints (the default) means no outbox rows at all.
    public struct WebhookSettings: Sendable, Equatable {
        /// One receiver.
        public struct Endpoint: Sendable, Equatable {
            /// 1 to 32 letters, digits, `-` or `_`; unique. Stored with each delivery.
            public var name: String
            /// https, or http to this machine only.
            public var url: String
            /// The event types it wants; nil means every type (`["*"]`).
            public var events: [ChangeEventType]?
            /// The environment variable holding its secret, `PORTVAKT_WEBHOOK_…`.
            public var secretVariable: String
            /// `whsec_` + base64 of 24 to 64 bytes, as read from the variable; never shown.
            public var secret: Secret

            /// Creates an endpoint.
            public init(
                name: String, url: String, events: [ChangeEventType]?, secretVariable: String, secret: Secret
            ) {
                self.name = name
                self.url = url
                self.events = events
                self.secretVariable = secretVariable
                self.secret = secret
            }
        }

        /// The retry schedule: doubling from `initialDelaySeconds` up to `maxDelaySeconds`, with
        /// jitter, until `giveUpAfterSeconds` after the event.
        public struct RetrySettings: Sendable, Equatable {
            /// The delay before the first retry (default 2 s, 1 to 60).
            public var initialDelaySeconds: Int
            /// The longest delay between attempts (default 3600 s, initial to 86400).
            public var maxDelaySeconds: Int
            /// How long a delivery is retried before it fails (default 86400 s, 60 to 604800).
            public var giveUpAfterSeconds: Int

            /// Creates the settings.
            public init(
                initialDelaySeconds: Int = 2, maxDelaySeconds: Int = 3600, giveUpAfterSeconds: Int = 86_400
            ) {
                self.initialDelaySeconds = initialDelaySeconds
                self.maxDelaySeconds = maxDelaySeconds
                self.giveUpAfterSeconds = giveUpAfterSeconds
            }
        }

        /// The receivers, in file order.
        public var endpoints: [Endpoint]
        /// The longest one attempt may take, connect included (default 10 s, 1 to 30).
        public var timeoutSeconds: Int
        /// Sender threads, each with its own connection (default 2, 1 to 64).
        public var threads: Int
        /// Deliveries of one endpoint this instance sends at once (default 2, 1 to 64).
        public var maxInFlightPerEndpoint: Int
        /// Days delivered and failed deliveries are kept for the admin API (default 7, 1 to 365).
        public var retentionDays: Int
        /// The retry schedule.
        public var retry: RetrySettings

        /// Creates the settings.
        public init(
            endpoints: [Endpoint] = [], timeoutSeconds: Int = 10, threads: Int = 2,
            maxInFlightPerEndpoint: Int = 2,
            retentionDays: Int = 7, retry: RetrySettings = RetrySettings()
        ) {
            self.endpoints = endpoints
            self.timeoutSeconds = timeoutSeconds
            self.threads = threads
            self.maxInFlightPerEndpoint = maxInFlightPerEndpoint
            self.retentionDays = retentionDays
            self.retry = retry
        }
    }
}

extension PortvaktConfiguration.EnvironmentVariable {
    /// Each webhook endpoint names its own secret variable, which must start with this prefix.
    public static let webhookSecretPrefix = "PORTVAKT_WEBHOOK_"
}

extension PortvaktConfiguration.WebhookSettings {
    init(reading r: ConfigReader, environment: [String: String]) {
        let defaults = Self()
        let timeout = r.integer("timeoutSeconds", default: defaults.timeoutSeconds, in: 1...30)
        let threads = r.integer("threads", default: defaults.threads, in: 1...64)
        let inFlight = r.integer(
            "maxInFlightPerEndpoint", default: defaults.maxInFlightPerEndpoint, in: 1...64)
        let retention = r.integer("retentionDays", default: defaults.retentionDays, in: 1...365)
        let retry = r.section("retry") { RetrySettings(reading: $0) }
        self.init(
            endpoints: Self.readEndpoints(r, environment: environment), timeoutSeconds: timeout,
            threads: threads,
            maxInFlightPerEndpoint: inFlight, retentionDays: retention, retry: retry)
    }

    /// `endpoints`: an array of `{"name", "url", "events", "secretVariable"}`, each key required.
    private static func readEndpoints(_ r: ConfigReader, environment: [String: String]) -> [Endpoint] {
        guard let elements = r.array("endpoints") else { return [] }
        var endpoints: [Endpoint] = []
        var names: Set<String> = []
        for (offset, element) in elements.enumerated() {
            let path = "\(r.keyPath("endpoints"))[\(offset)]"
            guard case .object(let object) = element else {
                r.log.add(.wrongType, path, "expected an object, got \(element.shortDescription)")
                continue
            }
            let e = ConfigReader(object, path: path, log: r.log)
            e.forbid(
                "secret", code: .secretInFile,
                message:
                    "a webhook secret is never read from the file; name the environment variable in secretVariable"
            )
            let name = e.requiredString(
                "name", expectation: "1 to 32 letters, digits, - or _", validate: nameProblem)
            let url = e.requiredString("url", expectation: "an https URL", validate: urlProblem)
            let events = readEvents(e)
            let variable = e.requiredString(
                "secretVariable", expectation: "an environment variable name", validate: variableProblem)
            e.finish()
            if let name, !names.insert(name).inserted {
                r.log.add(
                    .conflict, e.keyPath("name"), "another endpoint is named \(ConfigJSONWriter.quoted(name))"
                )
            }
            var secret: PortvaktConfiguration.Secret?
            if let variable {
                if let text = environment[variable] {
                    secret = PortvaktConfiguration.Secret(text)
                    if WebhookSecret(secret!) == nil {
                        // The value is a secret: only what is wrong with it is reported.
                        r.log.add(
                            .invalidEnvironment, variable,
                            "must be whsec_ followed by the base64 of \(WebhookSecret.keyBytes.lowerBound) to \(WebhookSecret.keyBytes.upperBound) random bytes"
                        )
                        secret = nil
                    }
                } else {
                    r.log.add(
                        .invalidEnvironment, variable,
                        "is not set (the secret of webhook endpoint \(name ?? "?"))")
                }
            }
            if let name, let url, let events, let variable, let secret {
                endpoints.append(
                    Endpoint(
                        name: name, url: url, events: events.all ? nil : events.types,
                        secretVariable: variable, secret: secret))
            }
        }
        return endpoints
    }

    /// `events`: known types, or `["*"]` for all; required and never empty.
    private static func readEvents(_ e: ConfigReader) -> (all: Bool, types: [ChangeEventType])? {
        let known = Set(ChangeEventType.all.map(\.rawValue))
        let names = e.stringArray(
            "events", default: [], elementExpectation: "an event type or \"*\"",
            validate: { text in
                text == "*" || known.contains(text)
                    ? nil
                    : "unknown event type \(ConfigJSONWriter.quoted(text)) (known: \(ChangeEventType.all.map(\.rawValue).joined(separator: ", ")), or \"*\")"
            })
        guard e.log.allValid(e.keyPath("events")) else { return nil }
        if names.isEmpty {
            e.log.add(
                e.contains("events") ? .invalidValue : .missingKey, e.keyPath("events"),
                "expected the event types this endpoint wants, e.g. [\"user.deleted\"], or [\"*\"] for all")
            return nil
        }
        if names.contains("*") {
            guard names == ["*"] else {
                e.log.add(.invalidValue, e.keyPath("events"), "\"*\" means every type; give it alone")
                return nil
            }
            return (true, [])
        }
        guard Set(names).count == names.count else {
            e.log.add(.invalidValue, e.keyPath("events"), "an event type is listed twice")
            return nil
        }
        return (false, names.map { ChangeEventType(rawValue: $0) })
    }

    static func urlProblem(_ text: String) -> String? {
        do throws(WebhookError) {
            _ = try WebhookURL(text)
            return nil
        } catch {
            return error.message
        }
    }

    static func nameProblem(_ text: String) -> String? {
        ConfigValidators.identifierProblem(text, what: "an endpoint name")
    }

    static func variableProblem(_ text: String) -> String? {
        ConfigValidators.secretVariableProblem(
            text, prefix: PortvaktConfiguration.EnvironmentVariable.webhookSecretPrefix)
    }

    /// The section as `effectiveJSON` shows it: each endpoint's variable name, never its secret.
    var effectiveJSON: ConfigJSON {
        .object([
            (
                "endpoints",
                .array(
                    endpoints.map { endpoint in
                        .object([
                            ("name", .string(endpoint.name)),
                            ("url", .string(endpoint.url)),
                            (
                                "events",
                                .array((endpoint.events?.map(\.rawValue) ?? ["*"]).map { .string($0) })
                            ),
                            ("secretVariable", .string(endpoint.secretVariable)),
                        ])
                    })
            ),
            ("timeoutSeconds", .integer(timeoutSeconds)),
            ("threads", .integer(threads)),
            ("maxInFlightPerEndpoint", .integer(maxInFlightPerEndpoint)),
            ("retentionDays", .integer(retentionDays)),
            (
                "retry",
                .object([
                    ("initialDelaySeconds", .integer(retry.initialDelaySeconds)),
                    ("maxDelaySeconds", .integer(retry.maxDelaySeconds)),
                    ("giveUpAfterSeconds", .integer(retry.giveUpAfterSeconds)),
                ])
            ),
        ])
    }
}

extension PortvaktConfiguration.WebhookSettings.RetrySettings {
    init(reading r: ConfigReader) {
        let defaults = Self()
        let initial = r.integer("initialDelaySeconds", default: defaults.initialDelaySeconds, in: 1...60)
        let maximum = r.integer("maxDelaySeconds", default: defaults.maxDelaySeconds, in: 1...86_400)
        let giveUp = r.integer("giveUpAfterSeconds", default: defaults.giveUpAfterSeconds, in: 60...604_800)
        self.init(initialDelaySeconds: initial, maxDelaySeconds: maximum, giveUpAfterSeconds: giveUp)
        if r.log.allValid(r.keyPath("initialDelaySeconds"), r.keyPath("maxDelaySeconds")), maximum < initial {
            r.log.add(
                .conflict, r.keyPath("maxDelaySeconds"),
                "must not be below initialDelaySeconds (\(initial)), got \(maximum)")
        }
    }
}
