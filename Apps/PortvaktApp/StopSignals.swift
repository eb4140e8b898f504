import Dispatch
import FoundationEssentials
import Glibc
import Kernel

/// SIGTERM and SIGINT, held from the moment a long-running command starts until it is ready to
/// stop: a signal that arrives while the command is still starting (even before it has printed
/// anything) waits, and the command stops as soon as it is up, exiting 0.
///
/// Create it first thing, before any other thread exists: it blocks both signals in the calling
/// thread, every thread started afterwards inherits that mask, so the kernel keeps a signal
/// pending for the process instead of delivering it, and one thread of its own takes it with
/// `sigwait`. Dispatch signal sources left a window: their handler is installed asynchronously
/// after `resume()`, and a signal that came first met `SIG_IGN` (lost) or the default action
/// (killed with 143).
final class StopSignals: Sendable {
    /// The signals that stop a command.
    static let stopping: [Int32] = [SIGTERM, SIGINT]

    private let received = Locked<Int32?>(nil)
    private let arrived = DispatchSemaphore(value: 0)

    /// Blocks SIGTERM and SIGINT for this process and starts the thread that waits for them.
    init() {
        var mask = sigset_t()
        sigemptyset(&mask)
        for signalNumber in Self.stopping { sigaddset(&mask, signalNumber) }
        pthread_sigmask(SIG_BLOCK, &mask, nil)
        let waited = mask
        // The thread keeps this object alive until a signal comes; the command holds it that long anyway.
        Threads.start { [self] in
            var mask = waited
            var signalNumber: Int32 = 0
            // sigwait returns an error number rather than setting errno; it only fails for a bad set.
            guard sigwait(&mask, &signalNumber) == 0 else { return }
            received.withLock { $0 = signalNumber }
            arrived.signal()
        }
    }

    /// Waits for SIGTERM or SIGINT (at once when one already came) and returns its name.
    func wait() -> String {
        arrived.wait()
        return received.withLock { $0 } == SIGINT ? "SIGINT" : "SIGTERM"
    }
}
