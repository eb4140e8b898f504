import Glibc

/// A mutex with a condition variable over pthreads: what Foundation's `NSCondition` did for the
/// worker pools, without Foundation.
public final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    /// An unlocked lock.
    public init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(cond, nil)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        cond.deallocate()
        mutex.deallocate()
    }

    /// Takes the lock.
    public func lock() { pthread_mutex_lock(mutex) }
    /// Releases the lock.
    public func unlock() { pthread_mutex_unlock(mutex) }
    /// Releases the lock, waits for a signal, and takes the lock again.
    public func wait() { pthread_cond_wait(cond, mutex) }
    /// Wakes one waiter.
    public func signal() { pthread_cond_signal(cond) }
    /// Wakes every waiter.
    public func broadcast() { pthread_cond_broadcast(cond) }
}

/// Threads without Foundation's `Thread`.
public enum Threads {
    /// Starts a detached thread running `body`, named `name` (cut to the 15 bytes Linux keeps),
    /// with `stackSize` bytes of stack when given.
    public static func start(
        name: String? = nil, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void
    ) {
        final class Box {
            let body: @Sendable () -> Void; let name: String?
            init(_ body: @escaping @Sendable () -> Void, _ name: String?) {
                self.body = body; self.name = name
            }
        }
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        if let stackSize { pthread_attr_setstacksize(&attributes, stackSize) }
        let context = Unmanaged.passRetained(Box(body, name)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(
            &thread, &attributes,
            { context in
                let box = Unmanaged<Box>.fromOpaque(context!).takeRetainedValue()
                if let name = box.name { Threads.setCurrentName(name) }
                box.body()
                return nil
            }, context)
        precondition(status == 0, "pthread_create failed: \(status)")
    }

    /// Names the calling thread (as `pthread_setname_np` does, which Glibc's module map hides):
    /// Linux keeps the first 15 bytes in /proc/thread-self/comm.
    static func setCurrentName(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    /// The calling thread's name, as the kernel keeps it (for tests that check where code ran).
    public static var currentName: String {
        let fd = open("/proc/thread-self/comm", O_RDONLY)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 16)
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        return String(decoding: bytes.prefix(max(0, count)).filter { $0 != 10 }, as: UTF8.self)
    }

    /// Blocks the calling thread for `seconds`.
    public static func sleep(seconds: Double) {
        guard seconds > 0 else { return }
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) == -1, errno == EINTR { request = remaining }
    }

    /// Checks `done` every 10 ms until it holds or `seconds` have passed (on the monotonic
    /// clock): a shutdown waiting for threads to finish; whether it held.
    @discardableResult
    public static func wait(atMost seconds: Double, until done: () -> Bool) -> Bool {
        let deadline = LatencyHistogram.now() &+ UInt64(max(0, seconds) * 1e9)
        while !done() {
            if LatencyHistogram.now() >= deadline { return false }
            sleep(seconds: 0.01)
        }
        return true
    }
}
