import BankIDSimulator
import Foundation
import HTTPEngine
import SessionCore
import TestSupport
import Testing

@testable import PortvaktApp

/// What Portvakt sends BankID in each order, read from the embedded simulator's record of the
/// bodies it received over mutual TLS: `web` or `app` (never both), the per-intent text in the
/// client's language, the configured requirements, a sign's hidden data, and the mrtd hint
/// reaching the client.
@Suite("BankID order content", .serialized)
struct BankIDOrderContentTests {
    static let origin = "https://app.example.com"
    static let userAgent = "Mozilla/5.0 (X11; Linux x86_64) PortvaktTest/1.0"

    /// A server whose CORS origins include `origin`, with `bankid` keys merged in.
    static func server(_ bankid: [String: Any] = [:]) throws -> TestServer {
        try TestServer.inProcess(configuration: [
            "http": ["cors": ["allowedOrigins": [origin]]],
            "relyingParty": ["name": "Exempeltjänsten"],
            "bankid": bankid,
        ])
    }

    static func simulator(_ server: TestServer) throws -> RunningSimulator {
        try #require(server.server.bankID?.simulator)
    }

    /// The last order body the simulator received, as an object.
    static func lastBody(_ server: TestServer) throws -> [String: Any] {
        let text = try #require(try simulator(server).lastOrderBody)
        return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    static func decoded(_ base64: Any?) -> String? {
        (base64 as? String).flatMap { Data(base64Encoded: $0) }.map { String(decoding: $0, as: UTF8.self) }
    }

    /// Starts a web order as a browser on `origin` would.
    static func startWeb(
        _ server: TestServer, intent: String = "login", cookie: String? = nil, origin: String? = origin,
        language: String? = nil, userAgent: String = userAgent
    ) async throws -> TestResponse {
        var headers: [(String, String)] = [("User-Agent", userAgent)]
        if let origin { headers.append(("Origin", origin)) }
        if let cookie { headers.append(("Cookie", "portvakt_device=\(cookie)")) }
        if let language { headers.append(("Accept-Language", language)) }
        return try await request(
            "POST", server.publicURL + "/v1/bankid/orders", json: #"{"intent":"\#(intent)","client":"web"}"#,
            headers: headers)
    }

    /// The device cookie a start set, if any.
    static func deviceCookie(_ response: TestResponse) -> (value: String, header: String)? {
        guard
            let header = response.headers.values(for: "set-cookie").first(where: {
                $0.hasPrefix("portvakt_device=")
            })
        else { return nil }
        let value = header.dropFirst("portvakt_device=".count).prefix { $0 != ";" }
        return (String(value), header)
    }

    @Test(
        "a browser's order carries web: the page's domain, its User-Agent, and a keyed hash of a year-long HttpOnly device cookie, stable per browser"
    )
    func webDeviceData() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let first = try await Self.startWeb(server)
        #expect(first.status == 201, "\(first.text)")
        let (cookie, header) = try #require(Self.deviceCookie(first))
        #expect(
            header.contains("HttpOnly") && header.contains("SameSite=Lax")
                && header.contains("Max-Age=31536000"))
        #expect(cookie.count == 43)
        var body = try Self.lastBody(server)
        #expect(body["app"] == nil, "never both")
        let web = try #require(body["web"] as? [String: String])
        #expect(web["referringDomain"] == "app.example.com")
        #expect(web["userAgent"] == Self.userAgent)
        let identifier = try #require(web["deviceIdentifier"])
        #expect(identifier.count == 64 && identifier.allSatisfy(\.isHexDigit))
        #expect(identifier != cookie, "the raw cookie never reaches BankID")
        #expect(!first.text.contains(identifier), "nor the client")

        // The same browser (its cookie) again: the same identifier, and no new cookie.
        let second = try await Self.startWeb(server, cookie: cookie)
        #expect(second.status == 201)
        #expect(Self.deviceCookie(second) == nil)
        body = try Self.lastBody(server)
        #expect((body["web"] as? [String: String])?["deviceIdentifier"] == identifier)

        // Another browser: another identifier. A page elsewhere does not name itself: the public host.
        let other = try await Self.startWeb(server, origin: "https://evil.example.net")
        #expect(other.status == 201)
        body = try Self.lastBody(server)
        let otherWeb = try #require(body["web"] as? [String: String])
        #expect(otherWeb["deviceIdentifier"] != identifier)
        #expect(otherWeb["referringDomain"] == "localhost")
        #expect(body["app"] == nil)

        // A long User-Agent is cut to BankID's field limit; the simulator accepts it.
        let long = try await Self.startWeb(server, userAgent: String(repeating: "Å", count: 300))
        #expect(long.status == 201, "\(long.text)")
        let agent = try #require((try Self.lastBody(server)["web"] as? [String: String])?["userAgent"])
        #expect(agent.utf8.count <= 256 && agent.hasPrefix("ÅÅ"))
    }

    @Test(
        "a native order carries app with the listed app identifier and the hashed device identifier; an unlisted or missing one is 400 bankid.app_not_allowed"
    )
    func appDeviceData() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let url = server.publicURL + "/v1/bankid/orders"
        let started = try await request(
            "POST", url, json: #"{"intent":"login","client":"native",\#(TestServer.nativeAppMembers)}"#,
            headers: [("User-Agent", Self.userAgent)])
        #expect(started.status == 201, "\(started.text)")
        #expect(Self.deviceCookie(started) == nil, "apps get no device cookie")
        let body = try Self.lastBody(server)
        #expect(body["web"] == nil, "never both")
        let app = try #require(body["app"] as? [String: String])
        #expect(app["appIdentifier"] == TestServer.appIdentifier)
        #expect(app["deviceOS"] == "iOS 18.1" && app["deviceModelName"] == "Apple iPhone16,2")
        #expect(app["deviceIdentifier"]?.count == 64 && app["deviceIdentifier"] != "test-device-1")

        let count = try Self.simulator(server).orderBodies.count
        for json in [
            #"{"intent":"login","client":"native"}"#,
            #"{"intent":"login","client":"native","appIdentifier":"com.other.app","deviceOS":"iOS","deviceModelName":"x","deviceIdentifier":"d"}"#,
        ] {
            let refused = try await request("POST", url, json: json)
            #expect(refused.status == 400)
            #expect(
                try refused.jsonObject()["code"] as? String == "bankid.app_not_allowed", "\(refused.text)")
        }
        let missing = try await request(
            "POST", url,
            json:
                #"{"intent":"login","client":"native","appIdentifier":"se.example.portvakt","deviceOS":"iOS"}"#
        )
        #expect(missing.status == 400)
        #expect(try missing.jsonObject()["code"] as? String == "bankid.invalid_request")
        let mixed = try await request(
            "POST", url, json: #"{"intent":"login","client":"web",\#(TestServer.nativeAppMembers)}"#,
            headers: [("User-Agent", Self.userAgent)])
        #expect(
            try mixed.jsonObject()["code"] as? String == "bankid.invalid_request",
            "app details on a web order")
        #expect(try Self.simulator(server).orderBodies.count == count, "nothing refused reached BankID")
    }

    @Test(
        "every intent shows its configured text in the client's language and format; the defaults name the service"
    )
    func textsPerIntent() async throws {
        let server = try Self.server([
            "texts": [
                "login": [
                    "sv": "# Logga in\nHej *du*.", "en": "# Log in\nHello *you*.",
                    "format": "simpleMarkdownV1",
                ]
            ]
        ])
        defer { server.stop() }
        _ = try await Self.startWeb(server, intent: "login")
        var body = try Self.lastBody(server)
        #expect(Self.decoded(body["userVisibleData"]) == "# Logga in\nHej *du*.")
        #expect(body["userVisibleDataFormat"] as? String == "simpleMarkdownV1")
        _ = try await Self.startWeb(server, intent: "login", language: "en-GB,en;q=0.9")
        body = try Self.lastBody(server)
        #expect(Self.decoded(body["userVisibleData"]) == "# Log in\nHello *you*.")

        // Unconfigured intents keep the built-in text naming relyingParty.name, as plain text.
        for (intent, language, expected) in [
            ("signup", "sv", "Skapa ett konto hos Exempeltjänsten med ditt BankID."),
            (
                "recovery", "en",
                "Recover access to your account with Exempeltjänsten. You then add a new passkey."
            ),
        ] {
            let started = try await Self.startWeb(server, intent: intent, language: language)
            #expect(started.status == 201, "\(started.text)")
            body = try Self.lastBody(server)
            #expect(Self.decoded(body["userVisibleData"]) == expected)
            #expect(body["userVisibleDataFormat"] == nil, "plain text is BankID's default")
        }
    }

    @Test("the configured requirement of each intent is sent in requirement; others send none")
    func requirementsPerIntent() async throws {
        let server = try Self.server([
            "requirements": [
                "login": ["pinCode": true, "certificatePolicies": ["1.2.752.78.1.5"]],
                "recovery": ["mrtd": true, "cardReader": "class2"],
            ]
        ])
        defer { server.stop() }
        _ = try await Self.startWeb(server, intent: "login")
        var requirement = try #require(try Self.lastBody(server)["requirement"] as? [String: Any])
        #expect(requirement["pinCode"] as? Bool == true)
        #expect(requirement["certificatePolicies"] as? [String] == ["1.2.752.78.1.5"])
        #expect(requirement["mrtd"] == nil)
        _ = try await Self.startWeb(server, intent: "recovery")
        requirement = try #require(try Self.lastBody(server)["requirement"] as? [String: Any])
        #expect(requirement["mrtd"] as? Bool == true && requirement["cardReader"] as? String == "class2")
        _ = try await Self.startWeb(server, intent: "signup")
        #expect(try Self.lastBody(server)["requirement"] == nil)
    }

    @Test(
        "a sign keeps the API's text and carries its userNonVisibleData; an identification refuses hidden data"
    )
    func signCarriesNonVisibleData() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let user = try server.makeUser(username: "signer")
        let signedIn = try server.signIn(user, as: .native)
        let started = try await request(
            "POST", server.publicURL + "/v1/bankid/orders",
            json:
                #"{"intent":"sign","client":"native","userVisibleData":"Pay 100 SEK","userNonVisibleData":"invoice:4711",\#(TestServer.nativeAppMembers)}"#,
            headers: [("Authorization", "Bearer \(signedIn.token)")])
        #expect(started.status == 201, "\(started.text)")
        let body = try Self.lastBody(server)
        #expect(try Self.simulator(server).orderBodies.last?.endpoint == "sign")
        #expect(Self.decoded(body["userVisibleData"]) == "Pay 100 SEK")
        #expect(Self.decoded(body["userNonVisibleData"]) == "invoice:4711")

        let refused = try await request(
            "POST", server.publicURL + "/v1/bankid/orders",
            json:
                #"{"intent":"login","client":"native","userNonVisibleData":"x",\#(TestServer.nativeAppMembers)}"#
        )
        #expect(try refused.jsonObject()["code"] as? String == "bankid.invalid_request")
    }

    @Test(
        "a recovery that requires mrtd passes through userMrtd, shown as RFA23 in Swedish and English, before it completes"
    )
    func recoveryWithMRTD() async throws {
        let server = try Self.server(["requirements": ["recovery": ["mrtd": true]]])
        defer { server.stop() }
        let simulator = try Self.simulator(server)
        let before = Set(simulator.orderRefs)
        let started = try await request(
            "POST", server.publicURL + "/v1/bankid/orders",
            json: #"{"intent":"recovery","client":"native",\#(TestServer.nativeAppMembers)}"#)
        #expect(started.status == 201, "\(started.text)")
        let object = try started.jsonObject()
        let orderID = try #require(object["orderId"] as? String)
        let binding = try #require(object["clientBinding"] as? String)
        let orderRef = try #require(Set(simulator.orderRefs).subtracting(before).first)
        #expect((try Self.lastBody(server)["requirement"] as? [String: Any])?["mrtd"] as? Bool == true)

        // The app opens the order: with mrtd required it asks for the ID document first.
        let opened = try await request(
            "POST", server.publicURL + "/sim/v1/scan",
            json: #"{"qrData":"\#(try #require(object["qrData"] as? String))","action":"open"}"#)
        #expect(try opened.jsonObject()["hintCode"] as? String == "userMrtd", "\(opened.text)")
        // The simulated app shows what the user is asked to approve: the recovery's built-in text.
        #expect(
            try opened.jsonObject()["userVisibleData"] as? String
                == "Återställ åtkomsten till ditt konto hos Exempeltjänsten. Därefter lägger du till en ny nyckel."
        )
        let status = { (language: String) in
            try await request(
                "GET", server.publicURL + "/v1/bankid/orders/\(orderID)",
                headers: [("Portvakt-BankID-Binding", binding), ("Accept-Language", language)])
        }
        server.clock.advance(by: 2)
        var pending: [String: Any] = [:]
        for _ in 0..<200 {
            pending = try await status("sv").jsonObject()
            if pending["hintCode"] as? String == "userMrtd" { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        #expect(pending["status"] as? String == "pending")
        #expect(pending["hintCode"] as? String == "userMrtd")
        let message = try #require(pending["message"] as? [String: Any])
        #expect(message["code"] as? String == "RFA23")
        #expect(message["text"] as? String == "Fotografera och läs av din ID-handling med BankID-appen.")
        let english = try await status("en").jsonObject()["message"] as? [String: Any]
        #expect(
            english?["text"] as? String == "Take a photo of, and scan, your ID document with the BankID app.")

        // The document is scanned and the user approves: the order completes.
        let approved = try await request(
            "POST", server.publicURL + "/sim/v1/respond",
            json: #"{"orderRef":"\#(orderRef)","action":"approve"}"#)
        #expect(try approved.jsonObject()["status"] as? String == "complete", "\(approved.text)")
        server.clock.advance(by: 2)
        var final: [String: Any] = [:]
        for _ in 0..<200 {
            final = try await status("sv").jsonObject()
            if final["status"] as? String != "pending" { break }
            try await Task.sleep(for: .milliseconds(25))
        }
        #expect(final["status"] as? String == "complete", "\(final)")
        #expect((final["result"] as? [String: Any])?["code"] as? String == "bankid.no_account")
    }
}
