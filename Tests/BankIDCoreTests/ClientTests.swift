import BankIDCore
import CryptoCore
import Foundation
import Kernel
import TestSupport
import Testing

@Suite("Client: answers, hint codes, error codes and the retry policy")
struct ClientTests {
    static let pendingHints = [
        "outstandingTransaction", "noClient", "started", "userMrtd", "userCallConfirm", "userSign",
    ]
    static let failedHints = [
        "expiredTransaction", "certificateErr", "userCancel", "cancelled", "startFailed", "userDeclinedCall",
        "notSupportedByUserApp", "transactionRiskBlocked",
    ]

    @Test("every pending hint code is read as its own case", arguments: pendingHints)
    func pendingHint(raw: String) async throws {
        let client = BankIDClient(transport: CannedTransport(json: Fixtures.pendingJSON(raw)))
        let response = try await client.collect(orderRef: Fixtures.orderRef)
        #expect(response.status == .pending)
        let hint = try #require(response.hintCode)
        #expect(hint.rawValue == raw)
        #expect(HintCode.known.contains(hint))
    }

    @Test("every failed hint code is read as its own case", arguments: failedHints)
    func failedHint(raw: String) async throws {
        let client = BankIDClient(transport: CannedTransport(json: Fixtures.failedJSON(raw)))
        let response = try await client.collect(orderRef: Fixtures.orderRef)
        #expect(response.status == .failed && response.status.isFinal)
        #expect(response.hintCode.map { HintCode.known.contains($0) } == true)
        #expect(response.hintCode?.rawValue == raw)
    }

    @Test("unknown hint codes and statuses are kept raw, unknown fields ignored")
    func unknownCodes() async throws {
        let client = BankIDClient(
            transport: CannedTransport(
                json:
                    #"{"orderRef":"\#(Fixtures.orderRef)","status":"paused","hintCode":"userThinking","extra":{"a":[1]}}"#
            ))
        let response = try await client.collect(orderRef: Fixtures.orderRef)
        #expect(response.status == .unknown("paused"))
        #expect(!response.status.isFinal)
        #expect(response.hintCode == .unknown("userThinking"))
    }

    @Test("complete: completionData with every field, unknown members ignored")
    func complete() async throws {
        let client = BankIDClient(transport: CannedTransport(json: Fixtures.completeJSON()))
        let response = try await client.collect(orderRef: Fixtures.orderRef)
        #expect(response.status == .complete)
        let data = try #require(response.completionData)
        #expect(data.user.personalNumber == (try PersonalNumber(Fixtures.personalNumber)))
        #expect(
            data.user.name == "Karl Karlsson" && data.user.givenName == "Karl"
                && data.user.surname == "Karlsson")
        #expect(data.device.ipAddress == "192.0.2.7" && data.device.uhi == "OZvYM9VvyiAmG7NA5jU5zRGcHa5")
        #expect(data.bankIdIssueDate == "2020-02-01")
        #expect(data.stepUp?.mrtd == true)
        #expect(data.signature == "PHNpZ25hdHVyZT4=" && data.ocspResponse == "MIIHfgoBAKCCB3c=")
        #expect(data.risk == "low")
    }

    @Test("a malformed 200 answer, another order's answer, or complete without data is malformedResponse")
    func malformed() async {
        for json in [
            "not json", #"{"status":"pending"}"#, Fixtures.pendingJSON(orderRef: "someone-else"),
            #"{"orderRef":"\#(Fixtures.orderRef)","status":"complete"}"#,
            Fixtures.completeJSON(number: "198112289875"),
        ] {
            let client = BankIDClient(transport: CannedTransport(json: json))
            let error = await #expect(throws: BankIDError(.malformedResponse, "")) {
                try await client.collect(orderRef: Fixtures.orderRef)
            }
            #expect(error?.message.contains("198112289875") == false)
        }
    }

    /// Every documented error answer, with the code, retryability and message it maps to.
    static let errorTable: [(Int, String?, BankIDError.Code, RecommendedMessage)] = [
        (400, "alreadyInProgress", .alreadyInProgress, .rfa4),
        (400, "invalidParameters", .invalidParameters, .rfa22),
        (400, "somethingNew", .upstreamUnknown, .rfa22),
        (400, nil, .upstreamUnknown, .rfa22),
        (401, "unauthorized", .unauthorized, .rfa22),
        (403, "unauthorized", .unauthorized, .rfa22),
        (404, "notFound", .notFound, .rfa22),
        (405, "methodNotAllowed", .methodNotAllowed, .rfa22),
        (408, "requestTimeout", .requestTimeout, .rfa5),
        (415, "unsupportedMediaType", .unsupportedMediaType, .rfa22),
        (429, nil, .tooManyRequests, .rfa5),
        (500, "internalError", .internalError, .rfa5),
        (503, "maintenance", .maintenance, .rfa5),
        (502, nil, .upstreamUnknown, .rfa22),
    ]

    @Test("every error answer maps to its code and message", arguments: 0..<errorTable.count)
    func errorCodes(row: Int) async {
        let (status, code, expected, message) = Self.errorTable[row]
        let body = code.map { Fixtures.error($0) } ?? "<html>gateway</html>"
        let sleeps = RecordedSleeps()
        let transport = CannedTransport(status: status, json: body)
        let client = BankIDClient(
            transport: transport, retryPolicy: BankIDRetryPolicy(maintenanceRetries: 2), sleep: sleeps.sleep)
        let error = await #expect(throws: BankIDError.self) {
            try await client.collect(orderRef: Fixtures.orderRef)
        }
        #expect(error?.code == expected)
        #expect(error?.httpStatus == status)
        #expect(error?.upstreamCode == code)
        #expect(error?.recommendedMessage == message)
        // Only maintenance is resent, and only a bounded number of times.
        #expect(transport.requests.count == (expected == .maintenance ? 3 : 1))
    }

    @Test("maintenance is retried silently with growing pauses and then succeeds")
    func maintenanceRetried() async throws {
        let sleeps = RecordedSleeps()
        let transport = CannedTransport.sequence([
            (503, Fixtures.error("maintenance")), (503, Fixtures.error("maintenance")),
            (200, Fixtures.startJSON),
        ])
        let client = BankIDClient(
            transport: transport, retryPolicy: BankIDRetryPolicy(maintenanceRetries: 3, initialBackoff: 0.5),
            sleep: sleeps.sleep)
        let response = try await client.auth(BankIDStartRequest(endUserIP: "192.0.2.1"))
        #expect(response.orderRef == Fixtures.orderRef)
        #expect(transport.requests.count == 3)
        #expect(sleeps.values == [0.5, 1.0])
        #expect(transport.requests[0] == transport.requests[2], "the same request is resent")
    }

    @Test("maintenance retries stop at the bound; the backoff is capped")
    func maintenanceBounded() async {
        let sleeps = RecordedSleeps()
        let transport = CannedTransport(status: 503, json: Fixtures.error("maintenance"))
        let client = BankIDClient(
            transport: transport,
            retryPolicy: BankIDRetryPolicy(maintenanceRetries: 4, initialBackoff: 1, maximumBackoff: 3),
            sleep: sleeps.sleep)
        await #expect(throws: BankIDError(.maintenance, "")) {
            try await client.auth(BankIDStartRequest(endUserIP: "192.0.2.1"))
        }
        #expect(transport.requests.count == 5)
        #expect(sleeps.values == [1, 2, 3, 3])
    }

    @Test("a transport timeout is surfaced as timedOut and never resent")
    func timeoutNotResent() async {
        for code in [BankIDError.Code.timedOut, .connectionFailed, .tlsFailed, .transportFailed, .overloaded]
        {
            let transport = CannedTransport { _ throws(BankIDError) in throw BankIDError(code, "canned") }
            let sleeps = RecordedSleeps()
            let client = BankIDClient(transport: transport, sleep: sleeps.sleep)
            await #expect(throws: BankIDError(code, "")) {
                try await client.sign(BankIDStartRequest(endUserIP: "192.0.2.1", userVisibleData: "x"))
            }
            #expect(transport.requests.count == 1)
            #expect(sleeps.values.isEmpty)
        }
    }

    @Test("error details are shortened and long digit runs masked")
    func detailsSanitized() async {
        let transport = CannedTransport(
            status: 400, json: Fixtures.error("invalidParameters", details: "Bad personalNumber 198112289874")
        )
        let error = await #expect(throws: BankIDError.self) {
            try await BankIDClient(transport: transport).cancel(orderRef: "x")
        }
        #expect(error?.message.contains("198112289874") == false)
        #expect(error?.message.contains("Bad personalNumber ############") == true)
    }
}

@Suite("Transport configuration")
struct TransportConfigurationTests {
    @Test("the libcurl transport refuses non-https URLs, unreadable files and bad limits")
    func refused() throws {
        let directory = try TemporaryDirectory()
        let ca = directory.path("ca.pem")
        let p12 = directory.path("rp.p12")
        for path in [ca, p12] { _ = FileManager.default.createFile(atPath: path, contents: Data("x".utf8)) }
        let identity = BankIDClientIdentity.pkcs12(path: p12, passphrase: RedactedSecret("p"))
        func make(
            _ url: String, ca: String, identity: BankIDClientIdentity, connect: Double = 5, total: Double = 10
        )
            throws(BankIDError)
        {
            _ = try CurlBankIDTransport(
                configuration: BankIDTransportConfiguration(
                    baseURL: url, clientIdentity: identity, caCertificatePath: ca, connectTimeout: connect,
                    requestTimeout: total))
        }
        try make("https://appapi2.test.bankid.com/rp/v6.0/", ca: ca, identity: identity)
        #expect(throws: BankIDError(.configuration, "")) {
            try make("http://appapi2.test.bankid.com/rp/v6.0", ca: ca, identity: identity)
        }
        #expect(throws: BankIDError(.configuration, "")) {
            try make(
                BankIDTransportConfiguration.testBaseURL, ca: directory.path("missing.pem"),
                identity: identity)
        }
        #expect(throws: BankIDError(.configuration, "")) {
            try make(
                BankIDTransportConfiguration.testBaseURL, ca: ca,
                identity: .pem(
                    certificatePath: p12, keyPath: directory.path("missing.key"), keyPassphrase: nil))
        }
        #expect(throws: BankIDError(.configuration, "")) {
            try make(
                BankIDTransportConfiguration.testBaseURL, ca: ca, identity: identity, connect: 10, total: 5)
        }
    }
}
