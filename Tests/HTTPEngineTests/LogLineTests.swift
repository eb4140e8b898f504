import CryptoCore
import Foundation
import Kernel
import TestSupport
import Testing

@testable import HTTPEngine

@Suite("Log lines")
struct LogLineTests {
    @Test("timestamps are the UTC calendar date and time, leap days and century years included")
    func timestamps() {
        let cases: [(Int, Int, String)] = [
            (0, 0, "1970-01-01T00:00:00.000Z"), (951_782_400, 5, "2000-02-29T00:00:00.005Z"),
            (1_767_225_599, 999, "2025-12-31T23:59:59.999Z"),
            (1_767_225_600, 120, "2026-01-01T00:00:00.120Z"),
            (4_107_542_400, 0, "2100-03-01T00:00:00.000Z"), (1_709_164_800, 42, "2024-02-29T00:00:00.042Z"),
        ]
        for (seconds, milliseconds, expected) in cases {
            var line = LogLine()
            line.appendTimestamp(seconds: seconds, milliseconds: milliseconds)
            #expect(String(decoding: line.bytes, as: UTF8.self) == expected)
        }
        // Every day of four years, against Foundation's calendar.
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        for day in stride(from: 19_000, to: 19_000 + 4 * 366, by: 1) {
            let seconds = day * 86_400 + 45_296
            var line = LogLine()
            line.appendTimestamp(seconds: seconds, milliseconds: 7)
            let parts = calendar.dateComponents(
                [.year, .month, .day], from: Date(timeIntervalSince1970: TimeInterval(seconds)))
            let expected = String(
                format: "%04d-%02d-%02dT12:34:56.007Z", parts.year!, parts.month!, parts.day!)
            #expect(String(decoding: line.bytes, as: UTF8.self) == expected)
        }
    }

    @Test("API timestamps use the same format, to the nearest millisecond")
    func apiTimestamps() {
        #expect(
            UTCTimestamp.string(Date(timeIntervalSince1970: 1_767_225_600.12)) == "2026-01-01T00:00:00.120Z")
        #expect(
            UTCTimestamp.string(Date(timeIntervalSince1970: Double(1_767_225_600_007) / 1000))
                == "2026-01-01T00:00:00.007Z")
        #expect(UTCTimestamp.string(Date(timeIntervalSince1970: -0.5)) == "1969-12-31T23:59:59.500Z")
    }

    @Test("lifecycle lines are JSON with escaped members")
    func members() throws {
        var line = LogLine(level: "info", message: "listening \"now\"")
        line.add("address", "127.0.0.1:8080\n")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(line.finish())) as? [String: String])
        #expect(object["msg"] == "listening \"now\"" && object["address"] == "127.0.0.1:8080\n")
        #expect(object["level"] == "info" && object["ts"]?.hasSuffix("Z") == true)
    }
}
