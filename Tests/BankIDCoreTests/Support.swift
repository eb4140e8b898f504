import BankIDCore
import Foundation
import Kernel
import Synchronization
import TestSupport

/// A transport that answers from a script and records every request, for tests without a network.
final class CannedTransport: BankIDTransport {
    typealias Handler = @Sendable (BankIDHTTPRequest) async throws(BankIDError) -> BankIDHTTPResponse

    private let handler: Handler
    private let recorded = Mutex<[BankIDHTTPRequest]>([])

    init(_ handler: @escaping Handler) { self.handler = handler }

    /// Answers every request with the same status and body.
    convenience init(status: Int = 200, json: String) {
        self.init { _ in BankIDHTTPResponse(status: status, body: Array(json.utf8)) }
    }

    /// Answers with the given responses in order (the last one repeats).
    static func sequence(_ responses: [(Int, String)]) -> CannedTransport {
        let index = Mutex(0)
        return CannedTransport { _ in
            let position = index.withLock { value in
                defer { value += 1 }
                return min(value, responses.count - 1)
            }
            let (status, json) = responses[position]
            return BankIDHTTPResponse(status: status, body: Array(json.utf8))
        }
    }

    func send(_ request: BankIDHTTPRequest) async throws(BankIDError) -> BankIDHTTPResponse {
        recorded.withLock { $0.append(request) }
        return try await handler(request)
    }

    var requests: [BankIDHTTPRequest] { recorded.withLock { $0 } }

    func paths() -> [String] { requests.map(\.path) }

    /// The JSON object of request `index`'s body.
    func body(_ index: Int = 0) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(requests[index].body)) as! [String: Any]
    }
}

/// Records the pauses the client asks for instead of sleeping.
final class RecordedSleeps: Sendable {
    private let pauses = Mutex<[Double]>([])
    var values: [Double] { pauses.withLock { $0 } }
    var sleep: @Sendable (Double) async -> Void { { seconds in self.pauses.withLock { $0.append(seconds) } } }
}

enum Fixtures {
    /// Skatteverket-style test numbers (valid check digits, not real people).
    static let personalNumber = "198112289874"
    static let otherPersonalNumber = "199001012385"

    static let startJSON = """
        {"orderRef":"131daac9-16c6-4618-beb0-365768f37288","autoStartToken":"7c40b5c9-fa74-49cf-b98c-bfe651f9a7c6",\
        "qrStartToken":"67df3917-fa0d-44e5-b327-edcc928297f8","qrStartSecret":"d28db9a7-4cde-429e-a983-359be676944c"}
        """
    static let orderRef = "131daac9-16c6-4618-beb0-365768f37288"

    static func pendingJSON(_ hint: String = "outstandingTransaction", orderRef: String = orderRef) -> String
    {
        #"{"orderRef":"\#(orderRef)","status":"pending","hintCode":"\#(hint)"}"#
    }

    static func failedJSON(_ hint: String, orderRef: String = orderRef) -> String {
        #"{"orderRef":"\#(orderRef)","status":"failed","hintCode":"\#(hint)"}"#
    }

    static func completeJSON(orderRef: String = orderRef, number: String = personalNumber) -> String {
        """
        {"orderRef":"\(orderRef)","status":"complete","completionData":{\
        "user":{"personalNumber":"\(number)","name":"Karl Karlsson","givenName":"Karl","surname":"Karlsson"},\
        "device":{"ipAddress":"192.0.2.7","uhi":"OZvYM9VvyiAmG7NA5jU5zRGcHa5"},\
        "bankIdIssueDate":"2020-02-01","stepUp":{"mrtd":true},"signature":"PHNpZ25hdHVyZT4=",\
        "ocspResponse":"MIIHfgoBAKCCB3c=","risk":"low","futureField":{"x":1}},"anotherNewField":[1,2]}
        """
    }

    static func error(_ code: String, details: String = "details") -> String {
        #"{"errorCode":"\#(code)","details":"\#(details)"}"#
    }
}

/// A door tasks wait at until the test opens it.
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let pass = state.withLock { state in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if pass { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
