import BankIDSimulator
import Foundation
import TestSupport
import Testing

@Suite("BankID simulator over mutual TLS")
struct RPAPITests {
    @Test("auth, scan with a fresh QR code, collect complete")
    func authScanCollect() throws {
        let harness = try Harness()
        let order = try harness.startAuth()
        let orderRef = try #require(order["orderRef"] as? String)
        #expect(try harness.collect(orderRef).body["hintCode"] as? String == "outstandingTransaction")
        let scanned = try harness.scan(order)
        #expect(scanned.status == 200, "\(scanned.text)")
        let (status, body) = try harness.collect(orderRef)
        #expect(status == 200)
        #expect(body["status"] as? String == "complete")
        let data = try #require(body["completionData"] as? [String: Any])
        let user = try #require(data["user"] as? [String: Any])
        #expect(user["personalNumber"] as? String == "198112289874")
    }
}
