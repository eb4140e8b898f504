public import AuthOrchestrator
public import CryptoCore
public import HTTPEngine

/// The `signals` member of an answer (or a problem body): the arguments of the WebAuthn Signal
/// API's methods, keyed by their names without the `signal` prefix, ready to pass unchanged:
/// `PublicKeyCredential.signalAllAcceptedCredentials(body.signals.allAcceptedCredentials)`.
///
/// The one JSON form of `PasskeySignals`: responses encode or write it, problem bodies carry
/// `problemValue`; a test keeps the three equal.
public struct SignalsView: JSONWritable, Codable, Sendable, Equatable {
    /// `signalUnknownCredential`'s argument.
    public struct UnknownCredential: Codable, Sendable, Equatable {
        let rpId: String
        let credentialId: String
    }

    /// `signalAllAcceptedCredentials`'s argument.
    public struct AllAcceptedCredentials: Codable, Sendable, Equatable {
        let rpId: String
        let userId: String
        let allAcceptedCredentialIds: [String]
    }

    /// `signalCurrentUserDetails`'s argument.
    public struct CurrentUserDetails: Codable, Sendable, Equatable {
        let rpId: String
        let userId: String
        let name: String
        let displayName: String
    }

    let unknownCredential: UnknownCredential?
    let allAcceptedCredentials: AllAcceptedCredentials?
    let currentUserDetails: CurrentUserDetails?

    /// The view of `signals`.
    public init(_ signals: PasskeySignals) {
        unknownCredential = signals.unknownCredential.map {
            UnknownCredential(rpId: $0.rpID, credentialId: $0.credentialID)
        }
        allAcceptedCredentials = signals.allAcceptedCredentials.map {
            AllAcceptedCredentials(
                rpId: $0.rpID, userId: $0.userID, allAcceptedCredentialIds: $0.allAcceptedCredentialIDs)
        }
        currentUserDetails = signals.currentUserDetails.map {
            CurrentUserDetails(rpId: $0.rpID, userId: $0.userID, name: $0.name, displayName: $0.displayName)
        }
    }

    /// Members in declaration order, nil ones left out, as the synthesized encoding.
    public func write(to writer: inout JSONWriter) {
        writer.object { object in
            if let unknownCredential {
                object.key("unknownCredential")
                object.object { member in
                    member.member("rpId", unknownCredential.rpId)
                    member.member("credentialId", unknownCredential.credentialId)
                }
            }
            if let allAcceptedCredentials {
                object.key("allAcceptedCredentials")
                object.object { member in
                    member.member("rpId", allAcceptedCredentials.rpId)
                    member.member("userId", allAcceptedCredentials.userId)
                    member.key("allAcceptedCredentialIds")
                    member.array { ids in
                        for id in allAcceptedCredentials.allAcceptedCredentialIds { ids.string(id) }
                    }
                }
            }
            if let currentUserDetails {
                object.key("currentUserDetails")
                object.object { member in
                    member.member("rpId", currentUserDetails.rpId)
                    member.member("userId", currentUserDetails.userId)
                    member.member("name", currentUserDetails.name)
                    member.member("displayName", currentUserDetails.displayName)
                }
            }
        }
    }

    /// The same members as a problem body's extension value.
    public var problemValue: ProblemValue {
        var members: [String: ProblemValue] = [:]
        if let unknownCredential {
            members["unknownCredential"] = .object([
                "rpId": .string(unknownCredential.rpId),
                "credentialId": .string(unknownCredential.credentialId),
            ])
        }
        if let allAcceptedCredentials {
            members["allAcceptedCredentials"] = .object([
                "rpId": .string(allAcceptedCredentials.rpId),
                "userId": .string(allAcceptedCredentials.userId),
                "allAcceptedCredentialIds": .strings(allAcceptedCredentials.allAcceptedCredentialIds),
            ])
        }
        if let currentUserDetails {
            members["currentUserDetails"] = .object([
                "rpId": .string(currentUserDetails.rpId), "userId": .string(currentUserDetails.userId),
                "name": .string(currentUserDetails.name),
                "displayName": .string(currentUserDetails.displayName),
            ])
        }
        return .object(members)
    }
}
