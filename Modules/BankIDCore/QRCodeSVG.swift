import CQREncode

/// A QR code as a square of modules, drawn from BankID's QR data with libqrencode.
public struct QRCodeMatrix: Sendable, Equatable {
    /// Modules per side, without the quiet zone (17 + 4 × version).
    public let width: Int
    /// Row-major, true for a dark module.
    public let modules: [Bool]

    /// Encodes `text` with error correction L in 8-bit mode, in the smallest version that fits.
    /// - Returns: nil when libqrencode cannot (the text is too long for any version).
    public init?(encoding text: String) {
        guard let code = cqrencode_encode_low(text) else { return nil }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        // Bit 0 of each byte is the module's colour; the other bits describe how it was placed.
        let data = UnsafeBufferPointer(start: code.pointee.data, count: width * width)
        self.width = width
        modules = data.map { $0 & 1 == 1 }
    }

    /// The modules of the quiet zone around the code (the standard's 4).
    public static let quietZone = 4

    /// The code as an SVG document: black modules on a white square, with the 4-module quiet zone
    /// inside the picture, one unit per module, crisp edges, never inverted (so dark mode cannot
    /// turn it into a code the BankID app cannot read). Scale it with CSS; it has no fixed size.
    public var svg: String {
        let side = width + 2 * Self.quietZone
        // Built as bytes: a code has a few hundred runs, and a status poll draws a new one every
        // second for every pending order, so formatting each run with string interpolation was
        // about a quarter of a code's cost, libqrencode's encoding included.
        var text = ASCIIText(capacity: 320 + modules.count * 4)
        text.append(#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 "#)
        text.append(side)
        text.append(" ")
        text.append(side)
        text.append(#"" shape-rendering="crispEdges" role="img" aria-label="BankID QR code"><rect width=""#)
        text.append(side)
        text.append(#"" height=""#)
        text.append(side)
        text.append(##"" fill="#ffffff"/><path fill="#000000" d=""##)
        modules.withUnsafeBufferPointer { modules in
            for row in 0..<width {
                let first = row * width
                var column = 0
                while column < width {
                    guard modules[first + column] else {
                        column += 1
                        continue
                    }
                    // One horizontal run per stretch of dark modules keeps the path short.
                    var run = 1
                    while column + run < width, modules[first + column + run] { run += 1 }
                    text.append("M")
                    text.append(column + Self.quietZone)
                    text.append(" ")
                    text.append(row + Self.quietZone)
                    text.append("h")
                    text.append(run)
                    text.append("v1h-")
                    text.append(run)
                    text.append("z")
                    column += run
                }
            }
        }
        text.append(#""/></svg>"#)
        return text.string
    }
}

/// ASCII text appended to as bytes (a value, so no access to it is checked at run time).
private struct ASCIIText {
    private var bytes: [UInt8] = []

    init(capacity: Int) { bytes.reserveCapacity(capacity) }

    var string: String { String(decoding: bytes, as: UTF8.self) }

    mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// A number below 1,000 in decimal: a side is at most 177 + 8 modules.
    mutating func append(_ number: Int) {
        if number >= 100 { bytes.append(UInt8(ascii: "0") + UInt8(number / 100)) }
        if number >= 10 { bytes.append(UInt8(ascii: "0") + UInt8(number / 10 % 10)) }
        bytes.append(UInt8(ascii: "0") + UInt8(number % 10))
    }
}

extension BankIDQRCode {
    /// The QR data drawn as SVG (``QRCodeMatrix/svg``); nil when it cannot be encoded.
    public static func svg(_ data: String) -> String? {
        QRCodeMatrix(encoding: data)?.svg
    }
}
