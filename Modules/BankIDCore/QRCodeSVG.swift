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

    /// Whether the module at `row`, `column` is dark.
    public subscript(row: Int, column: Int) -> Bool { modules[row * width + column] }

    /// The modules of the quiet zone around the code (the standard's 4).
    public static let quietZone = 4

    /// The code as an SVG document: black modules on a white square, with the 4-module quiet zone
    /// inside the picture, one unit per module, crisp edges, never inverted (so dark mode cannot
    /// turn it into a code the BankID app cannot read). Scale it with CSS; it has no fixed size.
    public var svg: String {
        let side = width + 2 * Self.quietZone
        var path = ""
        path.reserveCapacity(modules.count * 4)
        for row in 0..<width {
            var column = 0
            while column < width {
                guard self[row, column] else {
                    column += 1
                    continue
                }
                // One horizontal run per stretch of dark modules keeps the path short.
                var run = 1
                while column + run < width, self[row, column + run] { run += 1 }
                path += "M\(column + Self.quietZone) \(row + Self.quietZone)h\(run)v1h-\(run)z"
                column += run
            }
        }
        return
            #"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \#(side) \#(side)" shape-rendering="crispEdges" role="img" aria-label="BankID QR code">"#
            + ##"<rect width="\##(side)" height="\##(side)" fill="#ffffff"/><path fill="#000000" d="\##(path)"/></svg>"##
    }
}

extension BankIDQRCode {
    /// The QR data drawn as SVG (``QRCodeMatrix/svg``); nil when it cannot be encoded.
    public static func svg(_ data: String) -> String? {
        QRCodeMatrix(encoding: data)?.svg
    }
}
