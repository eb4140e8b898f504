import BankIDSimulator
import CryptoCore
import Foundation
import Kernel
import TestSupport
import Testing

/// The user's side: scanning, autostart, phone answers, actions, persons and the page.
@Suite("User API (the simulated BankID app)")
struct UserAPITests {
    @Test("the QR helper reproduces BankID's official test vector")
    func officialVector() {
        let token = "67df3917-fa0d-44e5-b327-edcc928297f8"
        let secret = "d28db9a7-4cde-429e-a983-359be676944c"
        #expect(
            Harness.qrData(token: token, secret: secret, t: 0)
                == "bankid.\(token).0.dc69358e712458a66a7525beef148ae8526b1c71610eff2c16cdffb4cdac9bf8")
        #expect(
            Harness.qrData(token: token, secret: secret, t: 1)
                == "bankid.\(token).1.949d559bf23403952a94d103e67743126381eda00f0b3cbddbf7c96b1adcbce2")
        #expect(
            Harness.qrData(token: token, secret: secret, t: 2)
                == "bankid.\(token).2.a9e5ec59cb4eee4ef4117150abc58fad7a85439a6a96ccbecc3668b41795b3f3")
    }

    @Test("a stale QR code is refused like the app does, and the order stays untouched")
    func staleQR() throws {
        let harness = try Harness()
        let order = try harness.startAuth()
        harness.clock.advance(by: 10)
        for t in [0, 7, 12] {
            let response = try harness.scan(order, t: t)
            #expect(response.status == 400, "t=\(t)")
            #expect(response.errorCode == "qrCodeStale", "t=\(t)")
        }
        #expect(try harness.collect(order["orderRef"] as! String).body["hintCode"] as? String == "noClient")
        // Within the app's tolerance (two seconds old, or one ahead) the code scans.
        #expect(try harness.scan(order, t: 8).status == 200)
    }

    @Test("a fresh QR code scans at every second of the start window")
    func freshQR() throws {
        let harness = try Harness()
        let order = try harness.startAuth()
        harness.clock.advance(by: 25.5)
        #expect(try harness.scan(order, t: 25, extra: #","action":"start""#).status == 200)
        #expect(try harness.collect(order["orderRef"] as! String).body["hintCode"] as? String == "started")
    }

    @Test("a QR code with a wrong authentication code, an unknown token or another shape is refused")
    func badQR() throws {
        let harness = try Harness()
        let order = try harness.startAuth()
        let token = order["qrStartToken"] as! String
        let forged = Harness.qrData(token: token, secret: "not-the-secret", t: 0)
        let wrong = try harness.userPost("scan", #"{"qrData":"\#(forged)"}"#)
        #expect(wrong.status == 400 && wrong.errorCode == "qrCodeInvalid")
        let unknown = Harness.qrData(token: UUID().uuidString.lowercased(), secret: "x", t: 0)
        let missing = try harness.userPost("scan", #"{"qrData":"\#(unknown)"}"#)
        #expect(missing.status == 404 && missing.errorCode == "orderNotFound")
        for shape in [
            "bankid.\(token).0", "other.\(token).0.aa", "bankid.\(token).-1.aa", "bankid.\(token).x.aa",
        ] {
            #expect(try harness.userPost("scan", #"{"qrData":"\#(shape)"}"#).errorCode == "qrCodeInvalid")
        }
        #expect(try harness.userPost("scan", #"{}"#).errorCode == "invalidRequest")
    }

    @Test("scan as a chosen test person; unknown persons are refused")
    func chosenPerson() throws {
        let harness = try Harness()
        let order = try harness.startAuth()
        #expect(
            try harness.scan(order, extra: #","personalNumber":"190101010101""#).errorCode == "unknownPerson")
        #expect(try harness.scan(order, extra: #","personalNumber":"199001012385""#).status == 200)
        let data = try harness.collect(order["orderRef"] as! String).body["completionData"] as? [String: Any]
        #expect((data?["user"] as? [String: Any])?["surname"] as? String == "Testsson")
    }

    @Test("a required person: another person's app is refused")
    func requiredPerson() throws {
        let harness = try Harness()
        let order = try harness.startAuth(#","requirement":{"personalNumber":"199001012385"}"#)
        let response = try harness.scan(order)
        #expect(response.status == 409 && response.errorCode == "wrongPerson")
    }

    @Test("autostart opens a same-device order; unknown tokens are refused")
    func autostart() throws {
        let harness = try Harness()
        let order = try harness.startAuth()
        let token = order["autoStartToken"] as! String
        let missing = try harness.userPost("autostart", #"{"autoStartToken":"\#(UUID().uuidString)"}"#)
        #expect(missing.status == 404 && missing.errorCode == "orderNotFound")
        let opened = try harness.userPost("autostart", #"{"autoStartToken":"\#(token)"}"#)
        #expect(opened.status == 200)
        #expect((try opened.jsonObject())["status"] as? String == "complete")
        #expect(try harness.collect(order["orderRef"] as! String).body["status"] as? String == "complete")
    }

    @Test(
        "actions end the order as the app would",
        arguments: [
            ("cancel", "userCancel"), ("decline", "userCancel"),
        ])
    func actions(action: String, hint: String) throws {
        let harness = try Harness()
        let order = try harness.startAuth()
        #expect(try harness.scan(order, extra: #","action":"\#(action)""#).status == 200)
        let (_, body) = try harness.collect(order["orderRef"] as! String)
        #expect(body["status"] as? String == "failed")
        #expect(body["hintCode"] as? String == hint)
    }

    @Test("wrongCode: userSign until the limit, then certificateErr")
    func wrongCode() throws {
        let harness = try Harness()
        let order = try harness.startAuth()
        let orderRef = order["orderRef"] as! String
        #expect(try harness.scan(order, extra: #","action":"wrongCode""#).status == 200)
        #expect(try harness.collect(orderRef).body["hintCode"] as? String == "userSign")
        for _ in 0..<2 {
            #expect(
                try harness.userPost("respond", #"{"orderRef":"\#(orderRef)","action":"wrongCode"}"#).status
                    == 200)
        }
        #expect(try harness.collect(orderRef).body["hintCode"] as? String == "certificateErr")
    }

    @Test("an unknown action is refused")
    func unknownAction() throws {
        let harness = try Harness()
        let order = try harness.startAuth()
        #expect(try harness.scan(order, extra: #","action":"approveTwice""#).errorCode == "invalidRequest")
    }

    @Test("/sim/v1/phone answers phone orders only")
    func phoneOnly() throws {
        let harness = try Harness()
        let order = try harness.startAuth()
        let response = try harness.userPost("phone", #"{"orderRef":"\#(order["orderRef"] as! String)"}"#)
        #expect(response.status == 404 && response.errorCode == "orderNotFound")
    }

    @Test("persons: built-in and configured test persons; the page is served")
    func personsAndPage() throws {
        let extra = TestPerson(personalNumber: "198001019879", givenName: "Extra", surname: "Person")
        #expect(throws: SimulatorError.self) {
            var configuration = BankIDSimulatorConfiguration(dataDirectory: NSTemporaryDirectory() + "never")
            configuration.testPersons = [
                TestPerson(personalNumber: "198001019876", givenName: "A", surname: "B")
            ]
            _ = try BankIDSimulator.start(configuration)
        }
        let harness = try Harness { $0.testPersons = [extra] }
        let response = try harness.user.send(method: "GET", url: harness.simulator.userAPIURL + "persons")
        let persons = try #require((try response.jsonObject())["persons"] as? [[String: Any]])
        #expect(persons.count == TestPerson.builtIn.count + 1)
        #expect(persons.last?["name"] as? String == "Extra Person")
        let order = try harness.startAuth()
        #expect(try harness.scan(order, extra: #","personalNumber":"198001019879""#).status == 200)
        let page = try harness.user.send(
            method: "GET", url: "http://127.0.0.1:\(harness.simulator.userPort)/sim/")
        #expect(page.status == 200 && page.text.contains("<html"))
    }

    @Test("the user API answers in-process too, for mounting under /sim/ on another listener")
    func inProcess() throws {
        let harness = try Harness()
        let order = try harness.startAuth()
        let qr = Harness.qrData(
            token: order["qrStartToken"] as! String, secret: order["qrStartSecret"] as! String, t: 0)
        let answer = harness.simulator.handleUserRequest(
            method: "POST", path: "/sim/v1/scan", body: Array(#"{"qrData":"\#(qr)"}"#.utf8),
            peer: "198.51.100.4")
        #expect(answer.status == 200 && answer.contentType == "application/json")
        let data = try harness.collect(order["orderRef"] as! String).body["completionData"] as? [String: Any]
        #expect((data?["device"] as? [String: Any])?["ipAddress"] as? String == "198.51.100.4")
        let page = harness.simulator.handleUserRequest(method: "GET", path: "/sim/", body: [], peer: "::1")
        #expect(page.status == 200 && page.contentType.hasPrefix("text/html"))
    }
}
