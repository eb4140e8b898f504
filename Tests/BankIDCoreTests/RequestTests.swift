import BankIDCore
import Foundation
import Kernel
import TestSupport
import Testing

@Suite("Requests: validated before sending, encoded as BankID takes them")
struct RequestTests {
    func client(_ transport: CannedTransport) -> BankIDClient { BankIDClient(transport: transport) }

    @Test("personal numbers: 12 digits with a Luhn check digit over the last 10")
    func personalNumbers() throws {
        #expect(try PersonalNumber("198112289874").digits == "198112289874")
        #expect(try PersonalNumber("199001012385").digits == "199001012385")
        for bad in ["198112289875", "8112289874", "19811228-9874", "1981122898741", "19811228987a", ""] {
            #expect(throws: BankIDError(.invalidPersonalNumber, "")) { try PersonalNumber(bad) }
        }
        let error = #expect(throws: BankIDError.self) {
            try PersonalNumber("198112289875", field: "requirement.personalNumber")
        }
        #expect(error?.message.contains("requirement.personalNumber") == true)
        #expect(error?.message.contains("198112289875") == false, "the number never appears in the message")
    }

    @Test("a personal number prints redacted")
    func personalNumberRedacted() throws {
        let number = try PersonalNumber(Fixtures.personalNumber)
        #expect("\(number)" == "<redacted>")
        #expect(String(reflecting: number) == "<redacted>")
        var dumped = ""
        dump(number, to: &dumped)
        #expect(!dumped.contains("9874"))
    }

    @Test("endUserIp must be an IPv4 or IPv6 address", arguments: ["192.0.2.1", "::1", "2001:db8::7"])
    func endUserIPValid(address: String) throws {
        try BankIDStartRequest(endUserIP: address).validate(forSign: false)
    }

    @Test(
        "endUserIp refuses host names and junk",
        arguments: ["localhost", "192.0.2", "1.2.3.4.5", "", "::1%eth0"])
    func endUserIPInvalid(address: String) {
        let error = #expect(throws: BankIDError(.invalidEndUserIP, "")) {
            try BankIDStartRequest(endUserIP: address).validate(forSign: false)
        }
        #expect(error?.message.hasPrefix("endUserIp") == true)
    }

    @Test("callInitiator is exactly user or RP")
    func callInitiator() throws {
        #expect(try CallInitiator(validating: "user") == .user)
        #expect(try CallInitiator(validating: "RP") == .rp)
        for bad in ["rp", "User", "USER", ""] {
            #expect(throws: BankIDError(.invalidCallInitiator, "")) { try CallInitiator(validating: bad) }
        }
    }

    @Test("app and web are never both sent")
    func appAndWeb() {
        let request = BankIDStartRequest(
            endUserIP: "192.0.2.1",
            app: BankIDAppInfo(
                appIdentifier: "se.example", deviceOS: "iOS 18", deviceModelName: "iPhone",
                deviceIdentifier: "d1"),
            web: BankIDWebInfo(referringDomain: "example.se", userAgent: "UA", deviceIdentifier: "d2"))
        #expect(throws: BankIDError(.conflictingDeviceInfo, "")) { try request.validate(forSign: false) }
        var empty = BankIDStartRequest(endUserIP: "192.0.2.1")
        empty.web = BankIDWebInfo(referringDomain: "", userAgent: "UA", deviceIdentifier: "d")
        let error = #expect(throws: BankIDError(.invalidDeviceInfo, "")) {
            try empty.validate(forSign: false)
        }
        #expect(error?.message.hasPrefix("web.referringDomain") == true)
    }

    @Test("userVisibleData: required to sign, within 40 000 characters of base64, format needs text")
    func visibleData() throws {
        #expect(throws: BankIDError(.invalidUserVisibleData, "")) {
            try BankIDStartRequest(endUserIP: "192.0.2.1").validate(forSign: true)
        }
        #expect(throws: BankIDError(.invalidUserVisibleData, "")) {
            try BankIDStartRequest(endUserIP: "192.0.2.1", userVisibleData: "").validate(forSign: false)
        }
        // 30 000 bytes are exactly 40 000 base64 characters; one more byte is over.
        try BankIDStartRequest(endUserIP: "192.0.2.1", userVisibleData: String(repeating: "a", count: 30_000))
            .validate(forSign: true)
        #expect(throws: BankIDError(.invalidUserVisibleData, "")) {
            try BankIDStartRequest(
                endUserIP: "192.0.2.1", userVisibleData: String(repeating: "a", count: 30_001)
            )
            .validate(forSign: true)
        }
        // Multi-byte characters count by their UTF-8 bytes: 15 000 "å" are 30 000 bytes.
        #expect(throws: BankIDError(.invalidUserVisibleData, "")) {
            try BankIDStartRequest(
                endUserIP: "192.0.2.1", userVisibleData: String(repeating: "å", count: 15_001)
            )
            .validate(forSign: true)
        }
        #expect(throws: BankIDError(.invalidUserVisibleDataFormat, "")) {
            try BankIDStartRequest(endUserIP: "192.0.2.1", userVisibleDataFormat: .simpleMarkdownV1)
                .validate(forSign: false)
        }
        #expect(throws: BankIDError(.invalidUserNonVisibleData, "")) {
            try BankIDStartRequest(
                endUserIP: "192.0.2.1", userNonVisibleData: String(repeating: "x", count: 150_001)
            )
            .validate(forSign: false)
        }
    }

    @Test("requirement: certificate policies must be OIDs")
    func requirement() throws {
        let good = BankIDRequirement(certificatePolicies: ["1.2.752.78.1.5", "1.2.3.4.25"])
        try BankIDStartRequest(endUserIP: "192.0.2.1", requirement: good).validate(forSign: false)
        for policies in [[], ["1.2.x"], ["1"], ["1..2"], ["1.02.3"]] {
            #expect(throws: BankIDError(.invalidRequirement, "")) {
                try BankIDStartRequest(
                    endUserIP: "192.0.2.1", requirement: BankIDRequirement(certificatePolicies: policies)
                )
                .validate(forSign: false)
            }
        }
    }

    @Test("returnUrl: https with a nonce, at most 512 characters")
    func returnURL() throws {
        try BankIDValidation.returnURL("https://example.se/bankid/return?nonce=Zq3kP9wX7mN2bV5cL8dF")
        try BankIDValidation.returnURL("http://localhost:8080/r?nonce=Zq3kP9wX7mN2bV5cL8dF")
        for bad in [
            "https://example.se/bankid/return", "https://example.se/r?nonce=short",
            "http://example.se/r?nonce=Zq3kP9wX7mN2bV5cL8dF",
            "/relative?nonce=Zq3kP9wX7mN2bV5cL8dF",
            "https://example.se/r?nonce=" + String(repeating: "n", count: 500),
        ] {
            #expect(throws: BankIDError(.invalidReturnURL, "")) { try BankIDValidation.returnURL(bad) }
        }
    }

    @Test("/auth body: base64 text, requirement, returnUrl, returnRisk, web; nothing unset is sent")
    func authBody() async throws {
        let transport = CannedTransport(json: Fixtures.startJSON)
        let request = BankIDStartRequest(
            endUserIP: "192.0.2.1",
            requirement: BankIDRequirement(
                pinCode: true, mrtd: false, cardReader: .class2, certificatePolicies: ["1.2.752.78.1.5"],
                personalNumber: try PersonalNumber(Fixtures.personalNumber), risk: .moderate),
            userVisibleData: "Logga in på **Portvakt**", userVisibleDataFormat: .simpleMarkdownV1,
            userNonVisibleData: "ref-1", returnURL: "https://example.se/r?nonce=Zq3kP9wX7mN2bV5cL8dF",
            returnRisk: true,
            web: BankIDWebInfo(
                referringDomain: "example.se", userAgent: "Mozilla/5.0", deviceIdentifier: "abc"))
        _ = try await client(transport).auth(request)
        #expect(transport.paths() == ["/auth"])
        #expect(transport.requests[0].method == "POST")
        #expect(transport.requests[0].contentType == "application/json")
        #expect(!transport.requests[0].isIdempotent, "a start request is never resent by the transport")
        let body = try transport.body()
        #expect(body["endUserIp"] as? String == "192.0.2.1")
        #expect(
            body["userVisibleData"] as? String == Data("Logga in på **Portvakt**".utf8).base64EncodedString())
        #expect(body["userVisibleDataFormat"] as? String == "simpleMarkdownV1")
        #expect(body["userNonVisibleData"] as? String == "cmVmLTE=")
        #expect(body["returnUrl"] as? String == "https://example.se/r?nonce=Zq3kP9wX7mN2bV5cL8dF")
        #expect(body["returnRisk"] as? Bool == true)
        #expect(body["app"] == nil)
        let requirement = try #require(body["requirement"] as? [String: Any])
        #expect(requirement["pinCode"] as? Bool == true)
        #expect(requirement["mrtd"] as? Bool == false)
        #expect(requirement["cardReader"] as? String == "class2")
        #expect(requirement["certificatePolicies"] as? [String] == ["1.2.752.78.1.5"])
        #expect(requirement["personalNumber"] as? String == Fixtures.personalNumber)
        #expect(requirement["risk"] as? String == "moderate")
        let web = try #require(body["web"] as? [String: String])
        #expect(
            web == ["referringDomain": "example.se", "userAgent": "Mozilla/5.0", "deviceIdentifier": "abc"])

        let minimal = CannedTransport(json: Fixtures.startJSON)
        _ = try await client(minimal).auth(BankIDStartRequest(endUserIP: "::1"))
        #expect(String(decoding: minimal.requests[0].body, as: UTF8.self) == #"{"endUserIp":"::1"}"#)
    }

    @Test("/sign requires userVisibleData and sends nothing when it is missing")
    func signRequiresText() async throws {
        let transport = CannedTransport(json: Fixtures.startJSON)
        await #expect(throws: BankIDError(.invalidUserVisibleData, "")) {
            try await client(transport).sign(BankIDStartRequest(endUserIP: "192.0.2.1"))
        }
        #expect(transport.requests.isEmpty)
        let response = try await client(transport).sign(
            BankIDStartRequest(endUserIP: "192.0.2.1", userVisibleData: "Godkänn överföring"))
        #expect(transport.paths() == ["/sign"])
        #expect(response.orderRef == Fixtures.orderRef)
        #expect(response.autoStartToken == "7c40b5c9-fa74-49cf-b98c-bfe651f9a7c6")
        #expect(response.qrStartToken == "67df3917-fa0d-44e5-b327-edcc928297f8")
        #expect(response.qrStartSecret == QRStartSecret("d28db9a7-4cde-429e-a983-359be676944c"))
    }

    @Test("/phone/auth and /phone/sign: callInitiator, personalNumber, text")
    func phone() async throws {
        let transport = CannedTransport(json: #"{"orderRef":"p-1","ignored":true}"#)
        let auth = try await client(transport).phoneAuth(
            BankIDPhoneRequest(
                callInitiator: .rp, personalNumber: try PersonalNumber(Fixtures.personalNumber)))
        #expect(auth.orderRef == "p-1")
        #expect(
            try transport.body(0) as NSDictionary == [
                "callInitiator": "RP", "personalNumber": Fixtures.personalNumber,
            ])
        await #expect(throws: BankIDError(.invalidUserVisibleData, "")) {
            try await client(transport).phoneSign(BankIDPhoneRequest(callInitiator: .user))
        }
        let sign = try await client(transport).phoneSign(
            BankIDPhoneRequest(
                callInitiator: .user, userVisibleData: "Hej", userVisibleDataFormat: .plaintext))
        #expect(sign.orderRef == "p-1")
        #expect(transport.paths() == ["/phone/auth", "/phone/sign"])
        #expect(
            try transport.body(1) as NSDictionary == [
                "callInitiator": "user", "userVisibleData": "SGVq", "userVisibleDataFormat": "plaintext",
            ])
    }

    @Test("/collect and /cancel send the orderRef; an empty orderRef is refused before sending")
    func collectAndCancel() async throws {
        let transport = CannedTransport.sequence([(200, Fixtures.pendingJSON()), (200, "{}")])
        _ = try await client(transport).collect(orderRef: Fixtures.orderRef)
        try await client(transport).cancel(orderRef: Fixtures.orderRef)
        #expect(transport.paths() == ["/collect", "/cancel"])
        #expect(transport.requests.allSatisfy { $0.isIdempotent }, "collect and cancel may be resent")
        #expect(try transport.body(0) as NSDictionary == ["orderRef": Fixtures.orderRef])
        #expect(try transport.body(1) as NSDictionary == ["orderRef": Fixtures.orderRef])
        await #expect(throws: BankIDError(.invalidOrderRef, "")) {
            try await client(transport).collect(orderRef: "")
        }
        #expect(transport.requests.count == 2)
    }
}
