import Glibc

/// The process's mapped code (the binary's and every shared library's executable mappings) as
/// resident memory, and a way to let go of it once a server is up.
///
/// Starting touches code that never runs again (configuration, migrations, key generation, the
/// BankID simulator's certificates), and the kernel maps code in 64 KiB fault-around windows, so
/// most of an idle server's resident set is code it is done with (Docs/performance-memory.md).
/// `releaseResident()` unmaps those pages from this process only (`MADV_DONTNEED` on private,
/// read-only, executable file mappings): the page cache keeps them, and the next call of any
/// function maps its window again as a minor fault, without I/O. Nothing that was written is
/// dropped: a mapping with anonymous (copied) pages, as a debugger's breakpoints make, is skipped.
public enum CodePages {
    /// One executable file mapping of this process, from /proc/self/smaps.
    struct Mapping {
        var start: UInt
        var end: UInt
        var resident = 0
        var anonymous = 0
    }

    /// Kilobytes of the process's executable file mappings that are resident now.
    public static func residentKilobytes() -> Int {
        mappings().reduce(0) { $0 + $1.resident }
    }

    /// Unmaps the resident pages of every executable file mapping that holds no written page;
    /// returns the kilobytes that were resident in them.
    @discardableResult
    public static func releaseResident() -> Int {
        var released = 0
        for mapping in mappings() where mapping.anonymous == 0 && mapping.resident > 0 {
            let start = UnsafeMutableRawPointer(bitPattern: mapping.start)
            if madvise(start, Int(mapping.end - mapping.start), MADV_DONTNEED) == 0 {
                released += mapping.resident
            }
        }
        return released
    }

    /// The private executable file mappings ("r-xp" with a path) with their Rss and Anonymous.
    static func mappings() -> [Mapping] {
        guard let text = readProcFile("/proc/self/smaps") else { return [] }
        var result: [Mapping] = []
        var current: Mapping?
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            if first.contains("-"), fields.count >= 5, !first.hasSuffix(":") {
                if let current { result.append(current) }
                current = nil
                let bounds = first.split(separator: "-")
                guard fields[1] == "r-xp", fields.count >= 6, fields[5].hasPrefix("/"), bounds.count == 2,
                    let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16)
                else { continue }
                current = Mapping(start: start, end: end)
            } else if current != nil, fields.count >= 2, let kilobytes = Int(fields[1]) {
                if first == "Rss:" { current?.resident = kilobytes }
                if first == "Anonymous:" { current?.anonymous = kilobytes }
            }
        }
        if let current { result.append(current) }
        return result
    }

    /// A /proc file's whole text (their size is not known before reading: read until the end).
    private static func readProcFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
