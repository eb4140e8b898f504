import CSQLite
import Glibc

/// A VFS over SQLite's default one that hands a commit's WAL frames to the kernel in two writes
/// instead of two per frame.
///
/// SQLite writes each WAL frame as two `write`s (its 24-byte header, then the page), so a login's
/// commit of about twelve pages cost 24 `pwrite` calls, each taking the file's lock and dirtying
/// the page cache again (Docs/performance.md, "The WAL's writes in one call"). Here the WAL file's
/// writes wait in a buffer while they are provably not yet needed, and go to the file in one
/// write with the frame that commits them.
///
/// The one rule that keeps this exactly as safe as SQLite's own writes: **the buffer holds only
/// the WAL's header and frames whose header says they do not commit.** A reader (this process
/// or another) trusts a frame only once a later frame commits it and the WAL index publishes
/// that commit, and the commit frame's header is never buffered: its write goes to the file,
/// after everything the buffer holds, before `xWrite` returns, and so does its page (written
/// straight through). A write that is not a clean append of such a frame empties the buffer and
/// goes straight through too; every other call on the file (read, sync, size, truncate, lock,
/// file control, close) empties the buffer first. A crash meanwhile loses only frames no commit
/// had claimed, which SQLite would ignore on recovery anyway. A failed write surfaces as the
/// error of the call that flushed it, as SQLite's own would.
///
/// Only WAL files are wrapped; the database file, journals and temporary files are opened by the
/// default VFS directly into the same memory, so they run SQLite's own methods with no
/// indirection.
enum WALWriteBatching {
    /// The name connections pass to `sqlite3_open_v2`.
    static let vfsName = "portvakt-wal"

    /// The VFS, registered once per process (not as the default: only our connections use it).
    /// nil when SQLite has no default VFS to wrap, which a build of Debian's library always has.
    static let registered: String? = {
        guard let base = sqlite3_vfs_find(nil) else { return nil }
        let vfs = UnsafeMutablePointer<sqlite3_vfs>.allocate(capacity: 1)
        vfs.initialize(to: base.pointee)
        vfs.pointee.pNext = nil
        // Kept for the life of the process, as the registration is.
        vfs.pointee.zName = UnsafePointer(strdup(vfsName))
        vfs.pointee.szOsFile = Int32(BatchedFile.realOffset) + base.pointee.szOsFile
        // The wrapped VFS's own functions receive this struct instead of theirs; every field they
        // read (mxPathname, pAppData, …) is a copy of theirs. Only xOpen needs the original.
        vfs.pointee.xOpen = { _, name, file, flags, outFlags in
            BatchedFile.open(name: name, file: file!, flags: flags, outFlags: outFlags)
        }
        baseVFS = base
        guard sqlite3_vfs_register(vfs, 0) == SQLITE_OK else { return nil }
        return vfsName
    }()

    /// What the WAL of the connection `handle` has received and issued since it was opened,
    /// or nil when its WAL is not open or not batched (tests use it to prove frames are batched).
    static func counts(of handle: OpaquePointer) -> (received: Int, issued: Int)? {
        var pointer: UnsafeMutableRawPointer?
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_JOURNAL_POINTER, &pointer) == SQLITE_OK,
            let file = pointer?.assumingMemoryBound(to: sqlite3_file.self),
            file.pointee.pMethods == UnsafePointer(BatchedFile.methods)
        else { return nil }
        let buffer = BatchedFile.buffer(file)
        return (buffer.received, buffer.issued)
    }

    /// The VFS wrapped; set once, before registration publishes ours.
    nonisolated(unsafe) fileprivate static var baseVFS: UnsafeMutablePointer<sqlite3_vfs>!
}

/// The layout of a batched WAL file: SQLite's `sqlite3_file` (its methods pointer), the buffer,
/// then the wrapped VFS's own file structure.
private struct BatchedFile {
    var base: sqlite3_file
    var buffer: UnsafeMutableRawPointer?

    /// Where the wrapped file starts (pointer-aligned, as SQLite's own structures expect).
    static let realOffset = (MemoryLayout<BatchedFile>.size + 7) & ~7

    /// The methods of every batched WAL file; allocated once, never freed (SQLite keeps pointers).
    nonisolated(unsafe) static let methods: UnsafeMutablePointer<sqlite3_io_methods> = {
        let methods = UnsafeMutablePointer<sqlite3_io_methods>.allocate(capacity: 1)
        methods.initialize(to: sqlite3_io_methods())
        // Version 1: no shared-memory or mapping methods, which SQLite calls on the database
        // file and never on its WAL.
        methods.pointee.iVersion = 1
        methods.pointee.xClose = { file in
            let rc = flushing(file!) { _ in SQLITE_OK }
            let closed = real(file!).pointee.pMethods.pointee.xClose(real(file!))
            Unmanaged.passUnretained(buffer(file!)).release()
            file!.pointee.pMethods = nil
            return rc == SQLITE_OK ? closed : rc
        }
        methods.pointee.xRead = { file, data, amount, offset in
            flushing(file!) { $0.pointee.pMethods.pointee.xRead($0, data, amount, offset) }
        }
        methods.pointee.xWrite = { file, data, amount, offset in
            buffer(file!).write(data!, Int(amount), at: offset, to: real(file!))
        }
        methods.pointee.xTruncate = { file, size in
            flushing(file!) { $0.pointee.pMethods.pointee.xTruncate($0, size) }
        }
        methods.pointee.xSync = { file, flags in
            flushing(file!) { $0.pointee.pMethods.pointee.xSync($0, flags) }
        }
        methods.pointee.xFileSize = { file, size in
            flushing(file!) { $0.pointee.pMethods.pointee.xFileSize($0, size) }
        }
        methods.pointee.xLock = { file, lock in
            flushing(file!) { $0.pointee.pMethods.pointee.xLock($0, lock) }
        }
        methods.pointee.xUnlock = { file, lock in
            flushing(file!) { $0.pointee.pMethods.pointee.xUnlock($0, lock) }
        }
        methods.pointee.xCheckReservedLock = { file, result in
            flushing(file!) { $0.pointee.pMethods.pointee.xCheckReservedLock($0, result) }
        }
        methods.pointee.xFileControl = { file, operation, argument in
            flushing(file!) { $0.pointee.pMethods.pointee.xFileControl($0, operation, argument) }
        }
        // Pure questions about the device: nothing written or read, so nothing to flush.
        methods.pointee.xSectorSize = { file in
            let real = real(file!)
            return real.pointee.pMethods.pointee.xSectorSize(real)
        }
        methods.pointee.xDeviceCharacteristics = { file in
            let real = real(file!)
            return real.pointee.pMethods.pointee.xDeviceCharacteristics(real)
        }
        return methods
    }()

    /// Opens a file for SQLite: a WAL through the buffer, anything else as the wrapped VFS would.
    static func open(
        name: sqlite3_filename?, file: UnsafeMutablePointer<sqlite3_file>, flags: Int32,
        outFlags: UnsafeMutablePointer<Int32>?
    ) -> Int32 {
        let base = WALWriteBatching.baseVFS!
        guard flags & SQLITE_OPEN_WAL != 0 else {
            // The wrapped VFS's structure fills ours from its start: its methods, called directly.
            return base.pointee.xOpen(base, name, file, flags, outFlags)
        }
        let real = real(file)
        real.pointee.pMethods = nil
        let rc = base.pointee.xOpen(base, name, real, flags, outFlags)
        // SQLite closes a file whose methods are set even when opening failed, and only then.
        guard real.pointee.pMethods != nil else {
            file.pointee.pMethods = nil
            return rc
        }
        file.withMemoryRebound(to: BatchedFile.self, capacity: 1) {
            $0.pointee.buffer = Unmanaged.passRetained(WALBuffer()).toOpaque()
        }
        file.pointee.pMethods = UnsafePointer(methods)
        return rc
    }

    /// The wrapped VFS's file inside ours.
    static func real(_ file: UnsafeMutablePointer<sqlite3_file>) -> UnsafeMutablePointer<sqlite3_file> {
        (UnsafeMutableRawPointer(file) + realOffset).assumingMemoryBound(to: sqlite3_file.self)
    }

    static func buffer(_ file: UnsafeMutablePointer<sqlite3_file>) -> WALBuffer {
        let raw = file.withMemoryRebound(to: BatchedFile.self, capacity: 1) { $0.pointee.buffer! }
        return Unmanaged<WALBuffer>.fromOpaque(raw).takeUnretainedValue()
    }

    /// Empties the buffer into the file, then runs `body` on the wrapped file; a failed flush is
    /// the call's result.
    static func flushing(
        _ file: UnsafeMutablePointer<sqlite3_file>, _ body: (UnsafeMutablePointer<sqlite3_file>) -> Int32
    ) -> Int32 {
        let real = real(file)
        let rc = buffer(file).flush(to: real)
        guard rc == SQLITE_OK else { return rc }
        return body(real)
    }
}

/// The WAL writes of one open WAL file not yet handed to the kernel: one contiguous range.
///
/// Used by one connection at a time (SQLite calls a file's methods under its connection, which
/// the pool hands to one thread at a time), so it needs no lock.
final class WALBuffer {
    /// The size of a WAL frame's header.
    private static let frameHeaderSize = 24
    /// The size of the WAL file's own header, written at offset 0 when the log (re)starts.
    private static let walHeaderSize = 32
    /// Frames of a transaction larger than this go out in pieces of about this size. Below 128 KiB
    /// because SQLite's unix VFS masks the length of one write to 17 bits (`seekAndWriteFd`), and
    /// above the largest frame (a 64 KiB page and its header); a login's commit is about 50 KB.
    private static let capacity = 120 << 10

    private let bytes = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
    private var count = 0
    /// The file offset of the buffer's first byte.
    private var start: Int64 = 0
    /// Whether the buffer ends with the header of a frame that does not commit, whose page is
    /// the one write that may follow it into the buffer.
    private var awaitingPage = false
    /// Writes SQLite asked for, and writes handed to the wrapped file.
    private(set) var received = 0
    private(set) var issued = 0

    deinit { bytes.deallocate() }

    /// Takes one of SQLite's writes to the WAL.
    func write(
        _ data: UnsafeRawPointer, _ amount: Int, at offset: Int64, to file: UnsafeMutablePointer<sqlite3_file>
    ) -> Int32 {
        received += 1
        let appends = count > 0 && offset == start + Int64(count)
        let deferrable: Bool
        if awaitingPage {
            // The page of the non-committing frame whose header the buffer ends with (pages are
            // 512 bytes to 64 KiB, so one always fits an emptied buffer).
            deferrable = appends && amount >= 512 && amount <= Self.capacity
        } else if amount == Self.frameHeaderSize {
            // Bytes 4–7 of a frame header: the database size after the commit, 0 on frames that
            // do not commit.
            // (A header that does not append starts the buffer afresh, below.)
            deferrable = data.loadUnaligned(fromByteOffset: 4, as: UInt32.self) == 0
        } else {
            deferrable = amount == Self.walHeaderSize && offset == 0
        }
        // What the buffer holds goes first when this write does not continue it or would not fit.
        if count > 0, !appends || count + amount > Self.capacity {
            let rc = flush(to: file)
            guard rc == SQLITE_OK else { return rc }
        }
        if deferrable {
            append(data, amount, at: offset)
            return SQLITE_OK
        }
        if count == 0 { return through(data, amount, at: offset, to: file) }
        // Joins what the buffer holds, and all of it goes out now.
        append(data, amount, at: offset)
        return flush(to: file)
    }

    /// Hands everything buffered to the wrapped file in one write.
    func flush(to file: UnsafeMutablePointer<sqlite3_file>) -> Int32 {
        guard count > 0 else { return SQLITE_OK }
        let amount = count
        count = 0
        awaitingPage = false
        return through(bytes, amount, at: start, to: file)
    }

    private func append(_ data: UnsafeRawPointer, _ amount: Int, at offset: Int64) {
        if count == 0 { start = offset }
        (bytes + count).copyMemory(from: data, byteCount: amount)
        count += amount
        // A header just buffered waits for its page; a page (or the WAL header) completes it.
        awaitingPage = amount == Self.frameHeaderSize
    }

    private func through(
        _ data: UnsafeRawPointer, _ amount: Int, at offset: Int64, to file: UnsafeMutablePointer<sqlite3_file>
    ) -> Int32 {
        issued += 1
        return file.pointee.pMethods.pointee.xWrite(file, data, Int32(amount), offset)
    }
}
