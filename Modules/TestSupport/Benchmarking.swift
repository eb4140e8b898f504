import COpenSSL
import Dispatch

/// The baseline the benchmarks compare Portvakt's verification with: OpenSSL alone, as raw as it
/// gets (EVP_DigestVerifyInit_ex + EVP_DigestVerify on a key parsed once).
public enum RawOpenSSLVerifier {
    /// A closure that verifies `signature` over `data` with the DER SubjectPublicKeyInfo `spki`
    /// using `digest` ("SHA256", or nil for Ed25519); true when it verifies.
    public static func make(spki: [UInt8], digest: String?, signature: [UInt8], data: [UInt8]) -> () -> Bool {
        // d2i_PUBKEY copies what it parses, so the buffer only has to live for the call.
        let parsed: OpaquePointer? = spki.withUnsafeBufferPointer { buffer in
            var pointer = buffer.baseAddress
            return d2i_PUBKEY(nil, &pointer, buffer.count)
        }
        guard let pkey = parsed else { fatalError("d2i_PUBKEY failed") }
        return {
            guard let context = EVP_MD_CTX_new() else { return false }
            defer { EVP_MD_CTX_free(context) }
            var keyContext: OpaquePointer? = nil
            let initialised =
                if let digest {
                    EVP_DigestVerifyInit_ex(context, &keyContext, digest, nil, nil, pkey, nil)
                } else {
                    EVP_DigestVerifyInit_ex(context, &keyContext, nil, nil, nil, pkey, nil)
                }
            guard initialised == 1 else { return false }
            return EVP_DigestVerify(context, signature, signature.count, data, data.count) == 1
        }
    }
}

/// Timing helpers shared by the benchmark executables.
public enum Benchmarking {
    /// Operations per second of `body`, run in batches of 64 for about `seconds`; traps when
    /// `body` returns false (a benchmark that stops verifying measures nothing).
    public static func rate(seconds: Double, _ body: () -> Bool) -> Double {
        var count = 0
        let start = DispatchTime.now().uptimeNanoseconds
        let deadline = start + UInt64(seconds * 1e9)
        var now = start
        while now < deadline {
            for _ in 0..<64 {
                guard body() else { fatalError("verification failed during the benchmark") }
            }
            count += 64
            now = DispatchTime.now().uptimeNanoseconds
        }
        return Double(count) / (Double(now - start) / 1e9)
    }
}
