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

    @Test("an envelope without a credential is a missing field")
    func missing() {
        #expect(throws: PasskeyError(.responseMissingField, "")) {
            try CredentialEnvelope(json: Array(#"{"challengeId": "abc"}"#.utf8))
        }
    }
}
