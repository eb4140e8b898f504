import BankIDCore
import Foundation
import Kernel
import TestSupport
import Testing

@Suite("Animated QR code")
struct QRCodeTests {
    static let token = "67df3917-fa0d-44e5-b327-edcc928297f8"
    static let secret = QRStartSecret("d28db9a7-4cde-429e-a983-359be676944c")

    @Test("BankID's official test vector, t = 0, 1, 2")
    func officialVector() {
        #expect(
            BankIDQRCode.data(token: Self.token, secret: Self.secret, elapsedSeconds: 0)
                == "bankid.67df3917-fa0d-44e5-b327-edcc928297f8.0.dc69358e712458a66a7525beef148ae8526b1c71610eff2c16cdffb4cdac9bf8"
        )
        #expect(
            BankIDQRCode.data(token: Self.token, secret: Self.secret, elapsedSeconds: 1)
                == "bankid.67df3917-fa0d-44e5-b327-edcc928297f8.1.949d559bf23403952a94d103e67743126381eda00f0b3cbddbf7c96b1adcbce2"
        )
        #expect(
            BankIDQRCode.data(token: Self.token, secret: Self.secret, elapsedSeconds: 2)
                == "bankid.67df3917-fa0d-44e5-b327-edcc928297f8.2.a9e5ec59cb4eee4ef4117150abc58fad7a85439a6a96ccbecc3668b41795b3f3"
        )
    }

    @Test("t is the whole seconds since the start response arrived, never negative")
    func elapsed() {
        let start = Date(timeIntervalSince1970: 1_800_000_000.25)
        func t(_ offset: Double) -> String {
            BankIDQRCode.data(
                token: "tok", secret: Self.secret, startedAt: start, now: start.addingTimeInterval(offset)
            )
            .split(separator: ".")[2].description
        }
        #expect(t(0) == "0")
        #expect(t(0.999) == "0")
        #expect(t(1) == "1")
        #expect(t(29.5) == "29")
        #expect(t(-5) == "0", "a clock stepping back shows t = 0, not a negative t")
    }

    @Test("the secret never prints: description, reflection, dump, and inside a response")
    func secretRedacted() throws {
        let response = try JSONDecoder().decode(BankIDStartResponse.self, from: Data(Fixtures.startJSON.utf8))
        let secretText = "d28db9a7-4cde-429e-a983-359be676944c"
        #expect("\(response.qrStartSecret)" == "<redacted>")
        #expect(String(reflecting: response.qrStartSecret) == "<redacted>")
        #expect(!"\(response)".contains(secretText))
        #expect(!String(reflecting: response).contains(secretText))
        var dumped = ""
        dump(response, to: &dumped)
        #expect(!dumped.contains(secretText))
        #expect(response.qrStartSecret != QRStartSecret("d28db9a7-4cde-429e-a983-359be676944d"))
    }
}

@Suite("Recommended user messages")
struct MessageTests {
    static let desktopQR = MessageContext(autoStartAttempted: false, usesQRCode: true, device: .desktop)
    static let mobileAutostart = MessageContext(autoStartAttempted: true, usesQRCode: false, device: .mobile)
    static let desktopAutostart = MessageContext(
        autoStartAttempted: true, usesQRCode: false, device: .desktop)

    /// The reference's mapping, row by row: status, hint, context, message.
    static let table: [(CollectStatus, HintCode?, MessageContext, RecommendedMessage?)] = [
        (.pending, .outstandingTransaction, mobileAutostart, .rfa13),
        (.pending, .outstandingTransaction, desktopQR, .rfa1),
        (.pending, .noClient, mobileAutostart, .rfa1),
        (.pending, .noClient, desktopQR, .rfa1),
        (.pending, .started, desktopAutostart, .rfa15A),
        (.pending, .started, desktopQR, .rfa15A),
        (.pending, .started, mobileAutostart, .rfa15B),
        (.pending, .userSign, desktopQR, .rfa9),
        (.pending, .userMrtd, desktopQR, .rfa23),
        (.pending, .userCallConfirm, desktopQR, .rfa21),
        (.pending, .unknown("brandNew"), desktopQR, .rfa21),
        (.pending, nil, desktopQR, .rfa21),
        (.unknown("paused"), .unknown("x"), desktopQR, .rfa21),
        (.failed, .cancelled, desktopQR, .rfa3),
        (.failed, .userCancel, desktopQR, .rfa6),
        (.failed, .expiredTransaction, desktopQR, .rfa8),
        (.failed, .certificateErr, desktopQR, .rfa16),
        (.failed, .startFailed, mobileAutostart, .rfa17A),
        (.failed, .startFailed, desktopQR, .rfa17B),
        (.failed, .userDeclinedCall, desktopQR, .rfa22),
        (.failed, .notSupportedByUserApp, desktopQR, .rfa22),
        (.failed, .transactionRiskBlocked, desktopQR, .rfa22),
        (.failed, .unknown("brandNew"), desktopQR, .rfa22),
        (.complete, nil, desktopQR, nil),
    ]

    @Test("hint code → RFA, row by row", arguments: 0..<table.count)
    func mapping(row: Int) {
        let (status, hint, context, expected) = Self.table[row]
        #expect(RecommendedMessage.forCollect(status: status, hintCode: hint, context: context) == expected)
    }

    @Test("every known hint code has a row in the table")
    func tableCoversEveryCode() {
        let covered = Set(Self.table.compactMap(\.1))
        #expect(HintCode.known.allSatisfy { covered.contains($0) })
    }

    @Test("the reference's codes and only those, each with Swedish and English text")
    func codes() {
        #expect(
            RecommendedMessage.allCases.map(\.code) == [
                "RFA1", "RFA2", "RFA3", "RFA4", "RFA5", "RFA6", "RFA8", "RFA9", "RFA13", "RFA15A", "RFA15B",
                "RFA16", "RFA17A", "RFA17B", "RFA19", "RFA20", "RFA21", "RFA22", "RFA23",
            ])
        for message in RecommendedMessage.allCases {
            #expect(!message.text(.swedish).isEmpty && !message.text(.english).isEmpty)
            #expect(message.text(.swedish) != message.text(.english))
        }
        #expect(
            RecommendedMessage.rfa9.text(.swedish)
                == "Skriv in din säkerhetskod i BankID-appen och välj Identifiera eller Skriv under.")
        #expect(
            RecommendedMessage.rfa17B.text(.english)
                == "Failed to scan the QR code. Start the BankID app and scan the QR code.")
        #expect(
            RecommendedMessage.rfa4.text(.english).hasPrefix(
                "An identification or signing for this personal number"))
    }
}
