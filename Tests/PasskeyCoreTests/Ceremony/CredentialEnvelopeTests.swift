import Foundation
import Kernel
import PasskeyCore
import TestSupport
import Testing

@Suite("Credential envelope")
struct CredentialEnvelopeTests {
    @Test("the credential member is handed on byte for byte; string members are read")
    func exactBytes() throws {
        let credential = #"{"id": "AQ",  "rawId":"AQ", "response" : {"a": [1, 2]}}"#
        let body = #"{"challengeId": "abc", "credential": "# + credential + #", "client": "native"}"#
        let envelope = try CredentialEnvelope(json: Array(body.utf8))
        #expect(envelope.credential == Array(credential.utf8))
        #expect(envelope.strings == ["challengeId": "abc", "client": "native"])
    }

    @Test(
        "malformed envelopes are refused: duplicates, non-objects, wrong member types, trailing content",
        arguments: [
            #"{"credential": {}, "credential": {}}"#, #"{"credential": {"a": 1, "a": 2}}"#, #"[]"#,
            #"{"credential": []}"#, #"{"credential": {}, "name": 5}"#, #"{"credential": {}} x"#, "",
        ])
    func refused(_ body: String) {
        #expect(throws: PasskeyError(.responseMalformedJSON, "")) {
            try CredentialEnvelope(json: Array(body.utf8))
        }
    }

    /// Envelopes whose credential breaks each rule once, and a few that keep them all.
    static let checkedBodies: [String] = {
        let nested = { (depth: Int) in
            String(repeating: "{\"a\":", count: depth) + "1" + String(repeating: "}", count: depth)
        }
        let many = { (count: Int) in
            "{" + (0..<count).map { "\"m\($0)\":\($0)" }.joined(separator: ",") + "}"
        }
        let list = { (count: Int) in "[" + (0..<count).map { String($0) }.joined(separator: ",") + "]" }
        let credentials = [
            #"{"id":"AQ","rawId":"AQ","response":{"a":[1,-2,3.5e1,true,false,null,"\u00e9\n"]}}"#,
            #"{"a":1,"a":2}"#, #"{"a":{"b":1,"b":2}}"#, #"{"a\u0062":1,"ab":2}"#, #"{"a":[{"b":1,"b":1}]}"#,
            nested(10), nested(11), nested(12), many(255), many(256), #"{"a":"# + list(256) + "}",
            #"{"a":"# + list(257) + "}", #"{"a":"\ud800"}"#, #"{"a":"\udc00x"}"#, #"{"a":"\q"}"#,
            "{\"a\":\"\u{01}\"}", #"{"a":01}"#, #"{"a":-}"#, #"{"a":1.}"#, #"{"a":1e}"#, #"{"a":tru}"#,
            #"{"a":nul}"#, #"{"a":"é"}"#, #"{"a":"unterminated}"#, #"{"a" 1}"#, #"{"a":1,}"#, #"{"a":[1,]}"#,
            #"{a:1}"#, #"{"a":1"#, #"{"a":[1"#, #"{"a":"#, "[]", #""text""#, "12", "null", #"{"a":]}"#,
        ]
        var bodies = credentials.map { #"{"challengeId":"abc","credential":"# + $0 + #","client":"web"}"# }
        bodies += [
            #"{"credential":{},"credential":{}}"#, #"{"credential":{},"x":1,"credential":[]}"#,
            #"{"a":1,"credential":{"b":2}} x"#, #"{"challengeId":"abc"}"#, #"{"credential":{}}"#,
            "{" + (0..<255).map { "\"m\($0)\":1" }.joined(separator: ",") + #","credential":{}}"#,
            "{" + (0..<256).map { "\"m\($0)\":1" }.joined(separator: ",") + #","credential":{}}"#,
        ]
        return bodies
    }()

    @Test(
        "the credential is checked without being built, by the same rules: the same bytes refused, at the same offset",
        arguments: 0..<checkedBodies.count)
    func checkedLikeBuilt(_ index: Int) throws {
        let body = Array(Self.checkedBodies[index].utf8)
        let built = Swift.Result { () throws(StrictJSON.SyntaxError) in try StrictJSON.parseMembers(body) }
        let checked = Swift.Result { () throws(StrictJSON.SyntaxError) in
            try StrictJSON.parseMembers(body, checkingOnly: "credential")
        }
        switch (built, checked) {
        case (.success(let all), .success(let parsed)):
            let position = all.firstIndex { $0.name == "credential" }
            #expect(parsed.checked?.position == position)
            #expect(parsed.checked?.range == position.map { all[$0].range })
            #expect(parsed.checked?.typeName == position.map { all[$0].value.typeName })
            #expect(parsed.members.map(\.name) == all.map(\.name).filter { $0 != "credential" })
            #expect(parsed.members.map(\.range) == all.filter { $0.name != "credential" }.map(\.range))
        case (.failure(let expected), .failure(let error)):
            #expect(
                error.reason == expected.reason && error.offset == expected.offset,
                "\(Self.checkedBodies[index])")
        default:
            Issue.record("built \(built), checked \(checked): \(Self.checkedBodies[index].prefix(120))")
        }
    }

    /// Envelopes around an assertion and around variants that break one response rule each
    /// (absent, mistyped, non-canonical or mismatched members, the size limit, deep nesting).
    static let responseBodies: [String] = {
        let valid = String(
            decoding: Fixture.authenticator.authenticate(
                Fixture.es256, challenge: Fixture.challenge, origin: Fixture.origin
            ).json(), as: UTF8.self)
        let nested = String(repeating: "[", count: 9) + String(repeating: "]", count: 9)
        let credentials = [
            valid, valid.replacingOccurrences(of: "\"signature\":", with: "\"signatur\":"),
            valid.replacingOccurrences(of: "\"response\":", with: "\"respons\":"),
            valid.replacingOccurrences(of: "\"type\":\"public-key\"", with: "\"type\":1"),
            valid.replacingOccurrences(of: "\"type\":\"public-key\"", with: "\"type\":\"public-keys\""),
            valid.replacingOccurrences(of: "\"id\":\"", with: "\"id\":\"A"),
            valid.replacingOccurrences(of: "\"rawId\":\"", with: "\"rawId\":\"+"),
            valid.replacingOccurrences(
                of: "\"authenticatorAttachment\":\"platform\"", with: "\"authenticatorAttachment\":2"),
            valid.replacingOccurrences(of: "\"userHandle\":\"", with: "\"userHandle\":null,\"x\":\""),
            valid.replacingOccurrences(
                of: "\"clientExtensionResults\":{}", with: "\"clientExtensionResults\":[]"),
            valid.replacingOccurrences(
                of: "\"clientExtensionResults\":{}",
                with: "\"clientExtensionResults\":{\"credProps\":{\"rk\":1}}"),
            valid.replacingOccurrences(of: "\"type\":", with: "\"deep\":" + nested + ",\"type\":"),
            valid.replacingOccurrences(of: "\"type\":", with: "\"deep\":[" + nested + "],\"type\":"),
            valid.replacingOccurrences(
                of: "\"type\":",
                with: "\"pad\":\"" + String(repeating: "a", count: 16 * 1024) + "\",\"type\":"),
            "{}", #"{"response":{}}"#, #"{"type":"public-key","id":"AQ","rawId":"AQ","response":[]}"#,
        ]
        return credentials.map { #"{"challengeId":"abc","credential":"# + $0 + #","client":"native"}"# }
    }()

    @Test(
        "a credential built by the envelope reads as the one parsed again from its bytes: the same envelopes, responses and refusals",
        arguments: 0..<(checkedBodies.count + responseBodies.count))
    func builtLikeParsedAgain(_ index: Int) throws {
        let text =
            index < Self.checkedBodies.count
            ? Self.checkedBodies[index] : Self.responseBodies[index - Self.checkedBodies.count]
        let body = Array(text.utf8)
        let checked = Swift.Result { () throws(PasskeyError) in try CredentialEnvelope(json: body) }
        let built = Swift.Result { () throws(PasskeyError) in
            try CredentialEnvelope(json: body, buildingCredential: true)
        }
        switch (checked, built) {
        case (.success(let checked), .success(let built)):
            #expect(built.strings == checked.strings && built.credential == checked.credential)
            let again = Swift.Result { () throws(PasskeyError) in
                try AuthenticationResponseJSON(json: checked.credential)
            }
            let once = Swift.Result { () throws(PasskeyError) in
                try AuthenticationResponseJSON(built.credentialJSON)
            }
            switch (again, once) {
            case (.success(let again), .success(let once)): #expect(once == again)
            case (.failure(let expected), .failure(let error)):
                #expect(
                    error.code == expected.code && error.message == expected.message, "\(text.prefix(120))")
            default: Issue.record("parsed again \(again), built \(once): \(text.prefix(120))")
            }
        case (.failure(let expected), .failure(let error)):
            #expect(error.code == expected.code && error.message == expected.message, "\(text.prefix(120))")
        default:
            Issue.record("checked \(checked), built \(built): \(text.prefix(120))")
        }
    }

    @Test("a valid assertion built by the envelope reads as its parts")
    func builtAssertion() throws {
        let parts = Fixture.authenticator.authenticate(
            Fixture.es256, challenge: Fixture.challenge, origin: Fixture.origin)
        let body =
            #"{"challengeId":"abc","credential":"# + String(decoding: parts.json(), as: UTF8.self) + "}"
        let envelope = try CredentialEnvelope(json: Array(body.utf8), buildingCredential: true)
        let response = try AuthenticationResponseJSON(envelope.credentialJSON)
        #expect(response.rawID == parts.rawID && response.signature == parts.signature)
        #expect(response.clientDataJSON == parts.clientDataJSON && response.userHandle == parts.userHandle)
        #expect(envelope.credential == parts.json() && envelope.strings == ["challengeId": "abc"])
    }

    @Test("an envelope without a credential is a missing field")
    func missing() {
        #expect(throws: PasskeyError(.responseMissingField, "")) {
            try CredentialEnvelope(json: Array(#"{"challengeId": "abc"}"#.utf8))
        }
    }
}
