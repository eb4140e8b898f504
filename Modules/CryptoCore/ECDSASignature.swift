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

    /// The raw r‖s form (RFC 7518 §3.4, what a JWS carries) of a DER signature for `curve`,
    /// as `SigningKey.signSHA256` gives it: each INTEGER's sign byte dropped, then left-padded
    /// with zeros to the curve's coordinate size.
    /// - Throws: `CryptoError(.invalidSignatureEncoding)` when the DER is not exactly a
    ///   SEQUENCE of two positive, minimal INTEGERs that each fit the curve; the reader's own
    ///   `der*` codes when it is not DER at all.
    public static func raw(fromDER der: [UInt8], curve: ECCurve) throws(CryptoError) -> [UInt8] {
        let size = curve.coordinateByteCount
        var outer = DERReader(der)
        let sequence = try outer.readElement(.sequence)
        try outer.finish()
        var fields = try sequence.contents()
        var raw: [UInt8] = []
        raw.reserveCapacity(2 * size)
        for _ in 0..<2 {
            var value = try fields.readElement(.integer).integerBytes()
            guard let first = value.first, first & 0x80 == 0 else {
                throw CryptoError(.invalidSignatureEncoding, "an ECDSA value must be a positive INTEGER")
            }
            // Two's complement: a leading 0x00 only keeps the top bit of the next byte clear.
            if first == 0, value.count > 1 { value.removeFirst() }
            guard value.count <= size else {
                throw CryptoError(
                    .invalidSignatureEncoding, "an ECDSA \(curve) value is longer than \(size) bytes")
            }
            raw += [UInt8](repeating: 0, count: size - value.count) + value
        }
        try fields.finish()
        return raw
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
