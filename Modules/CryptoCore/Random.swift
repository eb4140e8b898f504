public import Kernel

extension RandomSource {
    /// A random token of `byteCount` bytes, base64url-encoded without padding.
    public func token(byteCount: Int) throws -> String {
        Base64URL.encode(try bytes(byteCount))
    }
}
