import BankIDSimulator
import CryptoCore
import Foundation
import Kernel
import TestSupport
import Testing

/// The RP API over real mutual TLS, with the controllable clock.
@Suite("RP API v6 over mutual TLS")
struct RPAPITests {
    static let tolvan = "198112289874"
    static let anna = "199001012385"
    static let text = Base64.encode(Array("Log in to **Portvakt**".utf8))

    @Test("auth answers orderRef, autoStartToken, qrStartToken and qrStartSecret as UUIDs")
    func authResponse() throws {
        let harness = try Harness()
        let order = try harness.startAuth()
        #expect(Set(order.keys) == ["orderRef", "autoStartToken", "qrStartToken", "qrStartSecret"])
        for value in order.values {
            let text = try #require(value as? String)
            #expect(UUID(uuidString: text) != nil && text == text.lowercased())
        }
    }

    @Test("auth, scan a fresh QR code, collect complete with every completionData field")
    func authScanCollect() throws {
        let harness = try Harness()
        let order = try harness.startAuth(#","returnRisk":true"#)
        let orderRef = try #require(order["orderRef"] as? String)
        #expect(try harness.collect(orderRef).body["hintCode"] as? String == "outstandingTransaction")
        harness.clock.advance(by: 3)
        let scanned = try harness.scan(order, t: 3)
        #expect(scanned.status == 200, "\(scanned.text)")
        let (status, body) = try harness.collect(orderRef)
        #expect(status == 200)
        #expect(body["status"] as? String == "complete")
        #expect(body["orderRef"] as? String == orderRef)
        let data = try #require(body["completionData"] as? [String: Any])
        let user = try #require(data["user"] as? [String: Any])
        #expect(user["personalNumber"] as? String == Self.tolvan)
        #expect(user["givenName"] as? String == "Tolvan")
        #expect(user["surname"] as? String == "Tolvansson")
        #expect(user["name"] as? String == "Tolvan Tolvansson")
        let device = try #require(data["device"] as? [String: Any])
        // The IP the "app" used: the user API's peer, not the RP's endUserIp.
        #expect(device["ipAddress"] as? String == "127.0.0.1")
        #expect((device["uhi"] as? String)?.isEmpty == false)
        #expect(data["bankIdIssueDate"] as? String == "2023-05-02")
        #expect(data["risk"] as? String == "low")
        #expect(data["stepUp"] == nil)
        let signatureText = try #require(data["signature"] as? String)
        let xml = String(decoding: try #require(Base64.decode(signatureText)), as: UTF8.self)
        #expect(
            xml.hasPrefix("<?xml") && xml.contains("<SignatureValue>") && xml.contains("<X509Certificate>"))
        let ocsp = try #require(data["ocspResponse"] as? String)
        #expect(Base64.decode(ocsp)?.first == 0x30)
    }

    @Test("the XML signature covers userVisibleData and verifies under the simulator's certificate")
    func signature() throws {
        let harness = try Harness()
        let response = try harness.post(
            "sign",
            #"{"endUserIp":"192.0.2.1","userVisibleData":"\#(Self.text)","userVisibleDataFormat":"simpleMarkdownV1"}"#
        )
        #expect(response.status == 200)
        let order = try response.jsonObject()
        #expect(try harness.scan(order).status == 200)
        let data = try #require(
            try harness.collect(order["orderRef"] as! String).body["completionData"] as? [String: Any])
        let xml = String(decoding: Base64.decode(data["signature"] as! String)!, as: UTF8.self)
        #expect(xml.contains(">\(Self.text)</usrVisibleData>"))
        func between(_ start: String, _ end: String) throws -> Substring {
            let from = try #require(xml.range(of: start))
            let to = try #require(xml.range(of: end, range: from.upperBound..<xml.endIndex))
            return xml[from.lowerBound..<to.upperBound]
        }
        let signedInfo = try between("<SignedInfo", "</SignedInfo>")
        let value = try between("<SignatureValue>", "</SignatureValue>").dropFirst(16).dropLast(17)
        let ca = try Certificate(
            pem: String(contentsOfFile: harness.simulator.caCertificatePath, encoding: .utf8))
        let leafText = try between("<X509Certificate>", "</X509Certificate>").dropFirst(17).dropLast(18)
        let leaf = try Certificate(der: try #require(Base64.decode(String(leafText))))
        let signature = try #require(Base64.decode(String(value)))
        #expect(leaf.verifySignature(issuer: ca))
        #expect(
            leaf.publicKey.verify(signature: signature, data: Array(signedInfo.utf8), algorithm: .ecdsaSHA256)
        )
    }

    @Test("GET and other methods answer 405 methodNotAllowed", arguments: ["GET", "PUT", "DELETE"])
    func methodNotAllowed(method: String) throws {
        let harness = try Harness()
        let response = try harness.rp.send(method: method, url: harness.simulator.baseURL + "auth")
        #expect(response.status == 405)
        #expect(response.errorCode == "methodNotAllowed")
    }

    @Test(
        "Content-Type must be exactly application/json: 415 otherwise",
        arguments: [
            "application/json; charset=UTF-8", "application/json;charset=utf-8", "text/plain", "",
        ])
    func unsupportedMediaType(contentType: String) throws {
        let harness = try Harness()
        let response = try harness.rp.send(
            method: "POST", url: harness.simulator.baseURL + "auth", headers: [("Content-Type", contentType)],
            body: Array(#"{"endUserIp":"192.0.2.1"}"#.utf8))
        #expect(response.status == 415)
        #expect(response.errorCode == "unsupportedMediaType")
        #expect((try response.jsonObject())["details"] is String)
    }

    @Test("unknown paths answer 404 notFound")
    func notFound() throws {
        let harness = try Harness()
        for path in [
            "https://127.0.0.1:\(harness.simulator.port)/rp/v5.1/auth", harness.simulator.baseURL + "payment",
        ] {
            let response = try harness.rp.sendJSON(url: path, json: "{}")
            #expect(response.status == 404)
            #expect(response.errorCode == "notFound")
        }
    }

    @Test(
        "malformed requests answer 400 invalidParameters",
        arguments: [
            ("auth", "not json"), ("auth", "[]"), ("auth", "{}"), ("auth", #"{"endUserIp":"999.1.1.1"}"#),
            ("auth", #"{"endUserIp":"192.0.2.1","personalNumber":"198112289874"}"#),
            ("auth", #"{"endUserIp":"192.0.2.1","requirement":{"personalNumber":"198112289875"}}"#),
            ("auth", #"{"endUserIp":"192.0.2.1","requirement":{"personalNumber":"19811228987"}}"#),
            ("auth", #"{"endUserIp":"192.0.2.1","requirement":{"allowFingerprint":true}}"#),
            ("auth", #"{"endUserIp":"192.0.2.1","requirement":{"pinCode":1}}"#),
            ("auth", #"{"endUserIp":"192.0.2.1","requirement":{"mrtd":"yes"}}"#),
            ("auth", #"{"endUserIp":"192.0.2.1","requirement":{"cardReader":"class3"}}"#),
            ("auth", #"{"endUserIp":"192.0.2.1","requirement":{"certificatePolicies":["not an oid"]}}"#),
            ("auth", #"{"endUserIp":"192.0.2.1","requirement":{"risk":"high"}}"#),
            ("auth", #"{"endUserIp":"192.0.2.1","userVisibleData":"not base64!"}"#),
            (
                "auth",
                #"{"endUserIp":"192.0.2.1","userVisibleData":"SGVq","userVisibleDataFormat":"markdown"}"#
            ),
            ("auth", #"{"endUserIp":"192.0.2.1","userVisibleDataFormat":"simpleMarkdownV1"}"#),
            ("auth", #"{"endUserIp":"192.0.2.1","userNonVisibleData":"@@@@"}"#),
            ("auth", #"{"endUserIp":"192.0.2.1","returnUrl":"not a url"}"#),
            ("auth", #"{"endUserIp":"192.0.2.1","returnRisk":"true"}"#),
            ("auth", #"{"endUserIp":"192.0.2.1","app":{"appIdentifier":"a"},"web":{"userAgent":"b"}}"#),
            ("auth", #"{"endUserIp":"192.0.2.1","web":{"userAgent":5}}"#),
            ("auth", #"{"endUserIp":"192.0.2.1","app":{"unknown":"x"}}"#),
            ("sign", #"{"endUserIp":"192.0.2.1"}"#),
            ("phone/auth", #"{"personalNumber":"198112289874"}"#),
            ("phone/auth", #"{"callInitiator":"rp","personalNumber":"198112289874"}"#),
            ("phone/auth", #"{"callInitiator":"user"}"#),
            (
                "phone/auth",
                #"{"callInitiator":"user","personalNumber":"198112289874","endUserIp":"192.0.2.1"}"#
            ),
            ("phone/sign", #"{"callInitiator":"RP","personalNumber":"198112289874"}"#),
            ("collect", "{}"), ("collect", #"{"orderRef":"nope"}"#), ("collect", #"{"orderRef":5}"#),
            ("cancel", #"{"orderRef":"131daac9-16c6-4618-beb0-365768f37288"}"#),
        ])
    func invalidParameters(endpoint: String, body: String) throws {
        let harness = try Harness()
        let response = try harness.post(endpoint, body)
        #expect(response.status == 400, "\(body)")
        #expect(response.errorCode == "invalidParameters", "\(body)")
    }

    @Test(
        "app and web as BankID checks them: never both, every sub-field required, 1 to 256 bytes without control characters, nothing unknown",
        arguments: [
            #""app":{"appIdentifier":"se.example.app","deviceOS":"iOS 18","deviceModelName":"iPhone","deviceIdentifier":"x"},"web":{"referringDomain":"example.se","userAgent":"UA","deviceIdentifier":"y"}"#,
            #""web":{"referringDomain":"example.se","userAgent":"UA"}"#,
            #""web":{"userAgent":"UA","deviceIdentifier":"y"}"#,
            #""app":{"appIdentifier":"se.example.app","deviceOS":"iOS 18","deviceModelName":"iPhone"}"#,
            #""app":{"deviceOS":"iOS 18","deviceModelName":"iPhone","deviceIdentifier":"x"}"#,
            #""web":{"referringDomain":"example.se","userAgent":"\#(String(repeating: "a", count: 257))","deviceIdentifier":"y"}"#,
            #""app":{"appIdentifier":"se.example.app","deviceOS":"iOS 18","deviceModelName":"\#(String(repeating: "ö", count: 129))","deviceIdentifier":"x"}"#,
            #""web":{"referringDomain":"example.se","userAgent":"a\u0007b","deviceIdentifier":"y"}"#,
            #""web":{"referringDomain":"","userAgent":"UA","deviceIdentifier":"y"}"#,
            #""web":{"referringDomain":"example.se","userAgent":"UA","deviceIdentifier":"y","extra":"z"}"#,
            #""web":"example.se""#,
        ])
    func deviceData(members: String) throws {
        let harness = try Harness()
        let response = try harness.post("auth", #"{"endUserIp":"192.0.2.1",\#(members)}"#)
        #expect(response.status == 400, "\(members)")
        #expect(response.errorCode == "invalidParameters", "\(members)")
    }

    @Test("web with every field at the 256-byte limit is accepted, and the body is kept as it arrived")
    func deviceDataAtLimitAndRecorded() throws {
        let harness = try Harness()
        let agent = String(repeating: "å", count: 128)
        let body =
            #"{"endUserIp":"192.0.2.1","web":{"referringDomain":"example.se","userAgent":"\#(agent)","deviceIdentifier":"y"}}"#
        let response = try harness.post("auth", body)
        #expect(response.status == 200, "\(response.text)")
        _ = try harness.post("sign", #"{"endUserIp":"192.0.2.1","app":{}}"#)
        let bodies = harness.simulator.orderBodies
        #expect(bodies.map(\.endpoint) == ["auth", "sign"], "refused bodies are kept too")
        let first = try #require(
            try JSONSerialization.jsonObject(with: Data(bodies[0].json.utf8)) as? [String: Any])
        #expect((first["web"] as? [String: String])?["userAgent"] == agent)
        #expect(harness.simulator.lastOrderBody == bodies[1].json)
    }

    @Test("userVisibleData: at most 40,000 characters of base64")
    func userVisibleDataSize() throws {
        let harness = try Harness()
        let fits = Base64.encode([UInt8](repeating: 0x41, count: 30_000))
        let tooLong = Base64.encode([UInt8](repeating: 0x41, count: 30_003))
        #expect(fits.count == 40_000 && tooLong.count > 40_000)
        #expect(
            try harness.post("sign", #"{"endUserIp":"192.0.2.1","userVisibleData":"\#(fits)"}"#).status == 200
        )
        #expect(
            try harness.post("sign", #"{"endUserIp":"192.0.2.1","userVisibleData":"\#(tooLong)"}"#).status
                == 400)
    }

    @Test("every accepted field together is accepted")
    func fullRequest() throws {
        let harness = try Harness()
        let body = """
            {"endUserIp":"2001:db8::1","userVisibleData":"\(Self.text)","userVisibleDataFormat":"simpleMarkdownV1",
            "userNonVisibleData":"\(Self.text)","returnUrl":"https://rp.example/return#nonce=abc","returnRisk":false,
            "requirement":{"pinCode":true,"mrtd":false,"cardReader":"class1","certificatePolicies":["1.2.3.4.5"],
            "personalNumber":"\(Self.anna)","risk":"moderate"},
            "app":{"appIdentifier":"se.example.app","deviceOS":"iOS 18","deviceModelName":"iPhone","deviceIdentifier":"x"}}
            """
        let response = try harness.post("auth", body)
        #expect(response.status == 200, "\(response.text)")
    }

    @Test("alreadyInProgress for a second order for the same person; free again after cancel")
    func alreadyInProgress() throws {
        let harness = try Harness()
        let requirement = #","requirement":{"personalNumber":"\#(Self.anna)"}"#
        let first = try harness.startAuth(requirement)
        let second = try harness.post("auth", #"{"endUserIp":"192.0.2.1"\#(requirement)}"#)
        #expect(second.status == 400)
        #expect(second.errorCode == "alreadyInProgress")
        let phone = try harness.post(
            "phone/auth", #"{"callInitiator":"RP","personalNumber":"\#(Self.anna)"}"#)
        #expect(phone.errorCode == "alreadyInProgress")
        #expect(try harness.post("cancel", #"{"orderRef":"\#(first["orderRef"] as! String)"}"#).status == 200)
        #expect(try harness.post("auth", #"{"endUserIp":"192.0.2.1"\#(requirement)}"#).status == 200)
    }

    @Test("a person who opened an order is bound to it: their next order is alreadyInProgress")
    func alreadyInProgressAfterScan() throws {
        let harness = try Harness()
        let order = try harness.startAuth()
        #expect(try harness.scan(order, extra: #","action":"open""#).status == 200)
        let second = try harness.post(
            "auth", #"{"endUserIp":"192.0.2.1","requirement":{"personalNumber":"\#(Self.tolvan)"}}"#)
        #expect(second.errorCode == "alreadyInProgress")
    }

    @Test("cancel answers 200 {}; collect shows cancelled; a second cancel is invalidParameters")
    func cancel() throws {
        let harness = try Harness()
        let orderRef = try harness.startAuth()["orderRef"] as! String
        let first = try harness.post("cancel", #"{"orderRef":"\#(orderRef)"}"#)
        #expect(first.status == 200)
        #expect(first.text == "{}")
        let second = try harness.post("cancel", #"{"orderRef":"\#(orderRef)"}"#)
        #expect(second.status == 400 && second.errorCode == "invalidParameters")
        let (_, body) = try harness.collect(orderRef)
        #expect(body["status"] as? String == "failed")
        #expect(body["hintCode"] as? String == "cancelled")
    }

    @Test("a collect after the final state is invalidParameters")
    func collectAfterFinal() throws {
        let harness = try Harness()
        let order = try harness.startAuth()
        _ = try harness.scan(order)
        let orderRef = order["orderRef"] as! String
        #expect(try harness.collect(orderRef).body["status"] as? String == "complete")
        let again = try harness.post("collect", #"{"orderRef":"\#(orderRef)"}"#)
        #expect(again.status == 400 && again.errorCode == "invalidParameters")
    }

    @Test("startFailed when nobody scans within 30 seconds (controllable clock)")
    func startFailed() throws {
        let harness = try Harness()
        let order = try harness.startAuth()
        let orderRef = order["orderRef"] as! String
        harness.clock.advance(by: 29)
        #expect(try harness.collect(orderRef).body["status"] as? String == "pending")
        harness.clock.advance(by: 1)
        let (_, body) = try harness.collect(orderRef)
        #expect(body["status"] as? String == "failed")
        #expect(body["hintCode"] as? String == "startFailed")
        // The app cannot open it any more either.
        let scan = try harness.scan(order, t: 30)
        #expect(scan.status == 409 && scan.errorCode == "notPending")
    }

    @Test("expiredTransaction after the configured lifetime")
    func expired() throws {
        let harness = try Harness { $0.timing.lifetime = 90 }
        let order = try harness.startAuth()
        let orderRef = order["orderRef"] as! String
        #expect(try harness.scan(order, extra: #","action":"open""#).status == 200)
        harness.clock.advance(by: 89)
        #expect(try harness.collect(orderRef).body["hintCode"] as? String == "userSign")
        harness.clock.advance(by: 1)
        let (_, body) = try harness.collect(orderRef)
        #expect(body["status"] as? String == "failed")
        #expect(body["hintCode"] as? String == "expiredTransaction")
    }

    @Test("retention: a completed order is gone after 3 minutes, a failed one after 5")
    func retention() throws {
        let harness = try Harness()
        let complete = try harness.startAuth()
        _ = try harness.scan(complete)
        let failed = try harness.startAuth()
        _ = try harness.post("cancel", #"{"orderRef":"\#(failed["orderRef"] as! String)"}"#)
        harness.clock.advance(by: 180)
        let late = try harness.post("collect", #"{"orderRef":"\#(complete["orderRef"] as! String)"}"#)
        #expect(late.status == 400 && late.errorCode == "invalidParameters")
        harness.clock.advance(by: 119)
        #expect(try harness.collect(failed["orderRef"] as! String).body["hintCode"] as? String == "cancelled")
        let other = try harness.startAuth()
        _ = try harness.post("cancel", #"{"orderRef":"\#(other["orderRef"] as! String)"}"#)
        harness.clock.advance(by: 300)
        let gone = try harness.post("collect", #"{"orderRef":"\#(other["orderRef"] as! String)"}"#)
        #expect(gone.status == 400 && gone.errorCode == "invalidParameters")
    }

    @Test("pending hints: outstandingTransaction, noClient, started, userMrtd, userSign, then stepUp")
    func hintProgression() throws {
        let harness = try Harness()
        let order = try harness.startAuth(#","requirement":{"mrtd":true}"#)
        let orderRef = order["orderRef"] as! String
        func hint() throws -> String? { try harness.collect(orderRef).body["hintCode"] as? String }
        #expect(try hint() == "outstandingTransaction")
        harness.clock.advance(by: 10)
        #expect(try hint() == "noClient")
        let token = order["autoStartToken"] as! String
        #expect(
            try harness.userPost("autostart", #"{"autoStartToken":"\#(token)","action":"start"}"#).status
                == 200)
        #expect(try hint() == "started")
        let respond = #"{"orderRef":"\#(orderRef)","action":"open"}"#
        #expect(try harness.userPost("respond", respond).status == 200)
        #expect(try hint() == "userMrtd")
        #expect(try harness.userPost("respond", respond).status == 200)
        #expect(try hint() == "userSign")
        #expect(try harness.userPost("respond", #"{"orderRef":"\#(orderRef)"}"#).status == 200)
        let data = try #require(try harness.collect(orderRef).body["completionData"] as? [String: Any])
        #expect((data["stepUp"] as? [String: Any])?["mrtd"] as? Bool == true)
    }

    @Test("phone auth: orderRef only, userCallConfirm, complete as the called person")
    func phoneAuth() throws {
        let harness = try Harness()
        let response = try harness.post(
            "phone/auth", #"{"callInitiator":"user","personalNumber":"\#(Self.anna)"}"#)
        #expect(response.status == 200)
        let order = try response.jsonObject()
        #expect(Array(order.keys) == ["orderRef"])
        let orderRef = order["orderRef"] as! String
        #expect(try harness.userPost("phone", #"{"orderRef":"\#(orderRef)","action":"start"}"#).status == 200)
        #expect(try harness.collect(orderRef).body["hintCode"] as? String == "userCallConfirm")
        #expect(try harness.userPost("phone", #"{"orderRef":"\#(orderRef)"}"#).status == 200)
        let data = try #require(try harness.collect(orderRef).body["completionData"] as? [String: Any])
        #expect((data["user"] as? [String: Any])?["personalNumber"] as? String == Self.anna)
    }

    @Test("phone sign declined: userDeclinedCall")
    func phoneSignDeclined() throws {
        let harness = try Harness()
        let body =
            #"{"callInitiator":"RP","personalNumber":"\#(Self.anna)","userVisibleData":"\#(Self.text)"}"#
        let orderRef = try harness.post("phone/sign", body).jsonObject()["orderRef"] as! String
        #expect(
            try harness.userPost("phone", #"{"orderRef":"\#(orderRef)","action":"decline"}"#).status == 200)
        #expect(try harness.collect(orderRef).body["hintCode"] as? String == "userDeclinedCall")
    }
}
