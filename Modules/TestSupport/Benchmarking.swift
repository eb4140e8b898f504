import COpenSSL
import Dispatch
import Glibc

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
        let start = DispatchTime.now().uptimeNanoseconds
        let deadline = start + UInt64(seconds * 1e9)
        var now = start
        let count = batches(of: body) {
            now = DispatchTime.now().uptimeNanoseconds
            return now < deadline
        }
        return Double(count) / (Double(now - start) / 1e9)
    }

    /// Operations per second of this thread's CPU time: `body` in batches of 64 until the thread
    /// has run for about `seconds` (or four times that has passed on the clock, so a starved run
    /// still ends); traps when `body` returns false. Unlike `rate`, it does not fall when other
    /// processes take the core away, so it can divide another CPU-time figure measured later in
    /// the same run (the login benchmark's server CPU per login).
    public static func cpuRate(seconds: Double, _ body: () -> Bool) -> Double {
        func threadCPUNanoseconds() -> UInt64 {
            var time = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
            return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
        }
        let start = threadCPUNanoseconds()
        let budget = UInt64(seconds * 1e9)
        let wallDeadline = DispatchTime.now().uptimeNanoseconds + 4 * budget
        var used: UInt64 = 0
        let count = batches(of: body) {
            used = threadCPUNanoseconds() - start
            return used < budget && DispatchTime.now().uptimeNanoseconds < wallDeadline
        }
        return Double(count) / (Double(max(used, 1)) / 1e9)
    }

    /// Calls `body` in batches of 64 for as long as `goOn` (asked before each batch, its clock
    /// read there) says; returns the number of calls. Traps when `body` returns false (a
    /// benchmark that stops verifying measures nothing).
    private static func batches(of body: () -> Bool, while goOn: () -> Bool) -> Int {
        var count = 0
        while goOn() {
            for _ in 0..<64 {
                guard body() else { fatalError("verification failed during the benchmark") }
            }
            count += 64
        }
        return count
    }
}
