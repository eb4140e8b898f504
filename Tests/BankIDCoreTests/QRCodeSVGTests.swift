import BankIDCore
import Foundation
import Kernel
import TestSupport
import Testing

/// The QR code drawn with libqrencode, checked by reading the SVG back into modules: its size,
/// the white quiet zone, black on white, and the three finder patterns where a reader looks.
@Suite("QR code as SVG")
struct QRCodeSVGTests {
    /// BankID's animated QR data: 36-character token, seconds, 64 hex digits.
    static let sample =
        "bankid.67df3917-fa0d-44e5-b327-edcc928297f8.12.dc69358e712458a66a7525beef148ae8526b1c71610eff2c16cdffb4cdac9bf8"

    /// The SVG's side and its dark modules, read from the viewBox and the path's runs.
    static func read(_ svg: String) throws -> (side: Int, dark: Set<[Int]>) {
        let viewBox = try #require(svg.firstRange(of: #/viewBox="0 0 (\d+) (\d+)"/#))
        let side = try #require(Int(svg[viewBox].split(separator: " ")[2]))
        var dark = Set<[Int]>()
        for match in svg.matches(of: #/M(\d+) (\d+)h(\d+)v1h-(\d+)z/#) {
            let (x, y, run) = (Int(match.output.1)!, Int(match.output.2)!, Int(match.output.3)!)
            #expect(Int(match.output.4)! == run)
            for column in x..<(x + run) { dark.insert([y, column]) }
        }
        return (side, dark)
    }

    @Test("size is the version's width plus a 4-module quiet zone on each side, and the zone is white")
    func sizeAndQuietZone() throws {
        let matrix = try #require(QRCodeMatrix(encoding: Self.sample))
        #expect((matrix.width - 17) % 4 == 0 && matrix.width >= 21)
        let svg = matrix.svg
        let (side, dark) = try Self.read(svg)
        #expect(side == matrix.width + 8)
        #expect(dark.allSatisfy { (4..<(side - 4)).contains($0[0]) && (4..<(side - 4)).contains($0[1]) })
        #expect(dark.count == matrix.modules.filter { $0 }.count)
        // Black on white, never inverted.
        #expect(svg.contains(##"<rect width="\##(side)" height="\##(side)" fill="#ffffff"/>"##))
        #expect(svg.contains(##"<path fill="#000000""##))
    }

    @Test("the three finder patterns sit in the corners: a dark 7×7 ring, a light ring, a dark 3×3 core")
    func finderPatterns() throws {
        let matrix = try #require(QRCodeMatrix(encoding: Self.sample))
        let (side, dark) = try Self.read(matrix.svg)
        let width = side - 8
        for (top, left) in [(0, 0), (0, width - 7), (width - 7, 0)] {
            for row in 0..<7 {
                for column in 0..<7 {
                    let ring = max(abs(row - 3), abs(column - 3))
                    let expected = ring != 2
                    #expect(dark.contains([4 + top + row, 4 + left + column]) == expected)
                }
            }
        }
        // The fourth corner has none.
        #expect(!(0..<7).allSatisfy { dark.contains([4 + width - 7, 4 + width - 7 + $0]) })
    }

    @Test("error correction L: BankID's data fits a small version; a longer text needs a larger one")
    func versions() throws {
        let short = try #require(QRCodeMatrix(encoding: Self.sample))
        // 111 bytes in 8-bit mode: level L fits version 6 (41 modules, 134 bytes); level M would
        // need version 7 (version 6-M holds 106), so this also shows the level is L.
        #expect(short.width == 41)
        let long = try #require(QRCodeMatrix(encoding: String(repeating: "x", count: 500)))
        #expect(long.width > short.width)
        #expect(BankIDQRCode.svg(Self.sample) == short.svg)
    }
}
