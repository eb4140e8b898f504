import Glibc

/// Standard input, output and error as bytes, without Foundation's `FileHandle`.
enum StandardIO {
    /// Everything left on standard input.
    static func readAll() -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count > 0 {
                out.append(contentsOf: buffer[0..<count])
            } else if count == 0 || errno != EINTR {
                return out
            }
        }
    }

    /// Writes `bytes` to standard output (after what `print` has buffered).
    static func writeOutput(_ bytes: some Sequence<UInt8>) {
        fflush(nil)
        write(STDOUT_FILENO, Array(bytes))
    }

    /// Writes `bytes` to standard error.
    static func writeError(_ bytes: some Sequence<UInt8>) { write(STDERR_FILENO, Array(bytes)) }

    private static func write(_ descriptor: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                Glibc.write(descriptor, $0.baseAddress, $0.count)
            }
            if written > 0 {
                offset += written
            } else if written < 0, errno == EINTR {
                continue
            } else {
                return
            }
        }
    }
}
