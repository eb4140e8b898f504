/// Conversions between the two ECDSA signature encodings: JOSE and COSE use the fixed-size
/// concatenation r‖s (RFC 7518 §3.4), OpenSSL and WebAuthn assertions use DER
/// SEQUENCE { INTEGER r, INTEGER s }.
public enum ECDSASignature {
    /// The DER form of a raw r‖s signature for `curve`.
    /// - Throws: `CryptoError(.invalidSignatureEncoding)` when the length is not twice the
    ///   curve's coordinate size.
    public static func der(fromRaw raw: [UInt8], curve: ECCurve) throws(CryptoError) -> [UInt8] {
        let size = curve.coordinateByteCount
        guard raw.count == 2 * size else {
            throw CryptoError(
                .invalidSignatureEncoding, "a raw \(curve) signature is \(2 * size) bytes, got \(raw.count)")
        }
        let r = integer(raw[0..<size])
        let s = integer(raw[size...])
        return [0x30] + length(r.count + s.count) + r + s
    }

    /// A DER INTEGER holding the unsigned big-endian `bytes`: leading zeros dropped, one zero
    /// put back when the top bit is set so the value stays positive.
    private static func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var value = Array(bytes.drop { $0 == 0 })
        if value.isEmpty { value = [0] }
        if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
        return [0x02] + length(value.count) + value
    }

    /// A DER definite length (P-521 signatures need the long form: up to 139 bytes).
    private static func length(_ count: Int) -> [UInt8] {
        count < 0x80 ? [UInt8(count)] : [0x81, UInt8(count)]
    }
}
