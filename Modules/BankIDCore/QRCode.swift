import CryptoCore
public import FoundationEssentials

/// The secret half of an animated QR code. It never leaves the server: it is not Encodable, it
/// prints as `<redacted>`, reflection shows nothing, and equality is constant-time.
public struct QRStartSecret: Sendable, Decodable, Equatable, CustomStringConvertible,
    CustomDebugStringConvertible, CustomReflectable
{
    /// The secret's bytes (ASCII, as BankID sends it), used as the HMAC key.
    let bytes: [UInt8]

    /// Wraps a secret (from storage or a test).
    public init(_ value: String) { bytes = Array(value.utf8) }

    /// Decodes the JSON string BankID sends.
    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
    }

    /// The secret as text, for the order store only.
    public var storageValue: String { String(decoding: bytes, as: UTF8.self) }

    /// Always `<redacted>`.
    public var description: String { "<redacted>" }
    /// Always `<redacted>`.
    public var debugDescription: String { "<redacted>" }
    /// A mirror without children, so `dump` and string interpolation of containers show nothing.
    public var customMirror: Mirror { Mirror(self, children: [:]) }

    /// Compares in constant time.
    public static func == (lhs: QRStartSecret, rhs: QRStartSecret) -> Bool {
        ConstantTime.equals(lhs.bytes, rhs.bytes)
    }
}

/// The animated QR code's content: `bankid.<qrStartToken>.<t>.<qrAuthCode>`.
public enum BankIDQRCode {
    /// The QR data for the second `elapsedSeconds` after the start response arrived.
    /// - Parameters:
    ///   - token: the order's qrStartToken.
    ///   - secret: the order's qrStartSecret.
    ///   - elapsedSeconds: whole seconds since the /auth or /sign response arrived (0, 1, 2, …).
    /// - Returns: the text to encode in the QR code.
    public static func data(token: String, secret: QRStartSecret, elapsedSeconds: Int) -> String {
        let t = String(max(0, elapsedSeconds))
        let code = HMAC.authenticate(.sha256, key: secret.bytes, data: Array(t.utf8))
        return "bankid.\(token).\(t).\(Hex.encode(code))"
    }

    /// The QR data at `now` for an order whose start response arrived at `startedAt`: t is the
    /// whole seconds between them, rounded down, and never negative (a clock step backwards shows 0).
    public static func data(token: String, secret: QRStartSecret, startedAt: Date, now: Date) -> String {
        let elapsed = now.timeIntervalSince(startedAt)
        let seconds = elapsed.isFinite && elapsed > 0 ? Int(min(elapsed, 1e9).rounded(.down)) : 0
        return data(token: token, secret: secret, elapsedSeconds: seconds)
    }
}
