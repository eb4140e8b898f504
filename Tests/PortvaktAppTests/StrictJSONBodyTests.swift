import Foundation
import HTTPEngine
import Kernel
import PortvaktApp
import SessionCore
import Storage
import TestSupport
import Testing

/// Every API body is read by the one strict parser: a member name repeated at any depth is
/// `400 request.malformed_json` on every route, public and admin, so no two parsers can disagree
/// about what one request said. Valid bodies keep working.
@Suite("Strict JSON bodies", .serialized)
struct StrictJSONBodyTests {
    let client = InProcessHTTPClient()

    private func post(
        _ url: String, _ json: String, method: String = "POST", headers: [(String, String)] = []
    ) throws -> TestResponse {
        try client.sendJSON(method: method, url: url, json: json, headers: headers)
    }

    @Test("a repeated member on a public route is 400 request.malformed_json: the first no longer wins")
    func publicDuplicates() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let base = server.publicURL
        let signedIn = try server.signIn(try server.makeUser(username: "ada"))
        let bearer = [("Authorization", "Bearer \(signedIn.token)")]
        let cases: [(String, String, String, [(String, String)])] = [
            ("POST", "/v1/passkeys/registration/initialize", #"{"username":"a","username":"b"}"#, []),
            ("POST", "/v1/passkeys/login/initialize", #"{"username":"ada","username":"ada"}"#, []),
            ("POST", "/v1/bankid/orders", #"{"intent":"login","device":"other","intent":"signup"}"#, []),
            ("PATCH", "/v1/me/passkeys/AAAA", #"{"name":"a","name":"b"}"#, bearer),
            (
                "POST", "/v1/passkeys/login/finalize",
                #"{"challengeId":"c1","credential":{},"challengeId":"c2"}"#, []
            ),
        ]
        for (method, path, json, headers) in cases {
            let response = try post(base + path, json, method: method, headers: headers)
            #expect(response.status == 400, "\(method) \(path)")
            #expect(try response.problemCode() == "request.malformed_json", "\(method) \(path)")
        }
        // Nothing was signed up under either name.
        #expect(try server.server.store.user(username: "a") == nil)
        #expect(try server.server.store.user(username: "b") == nil)
    }

    @Test("a repeated member inside a nested object or an array's object is refused too")
    func nestedDuplicates() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let base = server.publicURL
        for json in [
            #"{"username":"ada","extra":{"a":1,"a":2}}"#,
            #"{"username":"ada","extra":[1,{"deep":{"x":true,"x":false}}]}"#,
        ] {
            let response = try post(base + "/v1/passkeys/registration/initialize", json)
            #expect(response.status == 400, "\(json)")
            #expect(try response.problemCode() == "request.malformed_json", "\(json)")
        }
        // Inside the credential the finalize envelope carries.
        let finalize = try post(
            base + "/v1/passkeys/login/finalize",
            #"{"challengeId":"c1","credential":{"id":"AAAA","response":{"signature":"AA","signature":"AB"}}}"#
        )
        #expect(finalize.status == 400)
        #expect(try finalize.problemCode() == "request.malformed_json")
    }

    @Test("a repeated member on an admin route is 400 request.malformed_json and changes nothing")
    func adminDuplicates() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        let user = try server.makeUser(username: "grace")
        let admin = [("Authorization", "Bearer \(server.adminToken)")]
        let cases: [(String, String, String)] = [
            ("POST", "/admin/v1/users", #"{"username":"a","username":"b"}"#),
            ("PATCH", "/admin/v1/users/\(user.id)", #"{"disabled":false,"disabled":true}"#),
            ("POST", "/admin/v1/users/search", #"{"personalNumber":"1","personalNumber":"2"}"#),
            ("POST", "/admin/v1/users/\(user.id)/enrollment-links", #"{"x":{"y":1,"y":1}}"#),
        ]
        for (method, path, json) in cases {
            let response = try post(server.adminURL + path, json, method: method, headers: admin)
            #expect(response.status == 400, "\(method) \(path)")
            #expect(try response.problemCode() == "request.malformed_json", "\(method) \(path)")
        }
        #expect(try server.server.store.user(username: "a") == nil)
        #expect(try server.server.store.user(id: user.id)?.isDisabled == false)
    }

    @Test("valid bodies still work: repeated names in different objects, escapes, unknown members")
    func validBodies() throws {
        let server = try TestServer.inProcess()
        defer { server.stop() }
        // The same name in two sibling objects is no duplicate; escapes decode as before.
        let options = try post(
            server.publicURL + "/v1/passkeys/registration/initialize",
            #"{"username":"ad\u0061","displayName":"Ada \"L\"","extra":[{"a":1},{"a":2}]}"#)
        #expect(options.status == 200)
        #expect(try options.jsonObject()["challengeId"] is String)
        let login = try post(server.publicURL + "/v1/passkeys/login/initialize", " { } ")
        #expect(login.status == 200)
        let created = try post(
            server.adminURL + "/admin/v1/users", #"{"username":"grace","displayName":"Grace Hopper"}"#,
            headers: [("Authorization", "Bearer \(server.adminToken)")])
        #expect(created.status == 201)
        #expect(try created.jsonObject()["username"] as? String == "grace")
    }
}
