import CryptoCore
import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

/// The relying party, authenticator and credentials every ceremony test starts from.
///
/// Keys are generated once per test process (RSA generation is slow); each test changes one knob
/// of `SoftwareAuthenticator.Behaviour` or of the relying party and states the code it expects.
enum Fixture {
    static let rpID = "example.com"
    static let origin = "https://example.com"
    static let now = Date(timeIntervalSince1970: 1_767_225_600)
    static let challenge: [UInt8] = Array(0..<32)
    static let userHandle: [UInt8] = Array(repeating: 0xa5, count: 32)
    static let authenticator = SoftwareAuthenticator()
    /// Every algorithm the default relying party offers, in its order.
    static let algorithms: [COSEAlgorithm] = [.es256, .edDSA, .es384, .es512, .ps256, .rs256]
    static let credentials: [COSEAlgorithm: SoftwareCredential] = Dictionary(
        uniqueKeysWithValues: algorithms.map {
            ($0, authenticator.makeCredential(algorithm: $0, rpID: rpID, userHandle: userHandle))
        })
    static let es256 = credentials[.es256]!
    /// Another user's credential.
    static let otherUsersES256 = authenticator.makeCredential(
        algorithm: .es256, rpID: rpID, userHandle: Array(repeating: 0x5a, count: 32))

    /// The strict default relying party for example.com.
    static var relyingParty: RelyingParty {
        RelyingParty(id: rpID, name: "Example", allowedOrigins: [origin])
    }

    /// Runs the registration ceremony end to end: JSON out of the authenticator, in to the verifier.
    static func register(
        _ credential: SoftwareCredential = Fixture.es256,
        behaviour: SoftwareAuthenticator.Behaviour = .init(),
        relyingParty: RelyingParty = Fixture.relyingParty,
        origin: String = Fixture.origin, expectedChallenge: [UInt8] = Fixture.challenge,
        requireUserVerification: Bool? = nil
    ) throws(PasskeyError) -> VerifiedRegistration {
        let json = authenticator.register(
            credential, challenge: challenge, origin: origin, behaviour: behaviour
        ).json()
        return try verifyRegistration(
            response: RegistrationResponseJSON(json: json), expectedChallenge: expectedChallenge,
            relyingParty: relyingParty, requireUserVerification: requireUserVerification, at: now)
    }

    /// The record a caller would have stored for `credential`.
    static func stored(
        _ credential: SoftwareCredential = Fixture.es256, signCount: UInt32 = 0, backupEligible: Bool = true
    ) -> StoredCredential {
        StoredCredential(
            id: credential.id, publicKey: credential.publicKey, signCount: signCount,
            userHandle: credential.userHandle, backupEligible: backupEligible)
    }

    /// Runs the authentication ceremony end to end.
    static func authenticate(
        _ credential: SoftwareCredential = Fixture.es256,
        behaviour: SoftwareAuthenticator.Behaviour = .init(),
        relyingParty: RelyingParty = Fixture.relyingParty,
        origin: String = Fixture.origin, expectedChallenge: [UInt8] = Fixture.challenge,
        stored: StoredCredential? = nil, expectedUserHandle: [UInt8]? = nil,
        allowCredentials: [[UInt8]]? = nil,
        requireUserVerification: Bool? = nil
    ) throws(PasskeyError) -> VerifiedAuthentication {
        let json = authenticator.authenticate(
            credential, challenge: challenge, origin: origin, behaviour: behaviour
        )
        .json()
        return try verifyAuthentication(
            response: AuthenticationResponseJSON(json: json), expectedChallenge: expectedChallenge,
            relyingParty: relyingParty, credential: stored ?? Fixture.stored(credential),
            expectedUserHandle: expectedUserHandle, allowCredentials: allowCredentials,
            requireUserVerification: requireUserVerification)
    }
}

/// Runs `body` expecting a `PasskeyError` with `code`; returns the error so messages can be checked.
@discardableResult
func expectCode(
    _ code: PasskeyError.Code, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) -> PasskeyError? {
    // Untyped: closures infer `any Error` for their throws, so the cast happens here, once.
    do {
        try body()
        Issue.record("expected \(code.rawValue) but it succeeded", sourceLocation: sourceLocation)
        return nil
    } catch let error as PasskeyError {
        #expect(error.code == code, "got \(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record(
            "expected \(code.rawValue), got a foreign error \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// A behaviour with one change, so tests read as "the valid ceremony, except …".
func behaviour(_ change: (inout SoftwareAuthenticator.Behaviour) -> Void) -> SoftwareAuthenticator.Behaviour {
    var value = SoftwareAuthenticator.Behaviour()
    change(&value)
    return value
}

/// A relying party with one change.
func relyingParty(_ change: (inout RelyingParty) -> Void) -> RelyingParty {
    var value = Fixture.relyingParty
    change(&value)
    return value
}
