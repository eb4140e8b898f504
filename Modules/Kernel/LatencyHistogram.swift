import Glibc
import Synchronization

/// A fixed array of atomic counters, for metrics recorded on request threads without a lock.
///
/// `Atomic` cannot live in an `Array` (it is not copyable), so the counters sit in one allocation
/// owned here and freed in `deinit`.
public final class AtomicCounters: @unchecked Sendable {
    // @unchecked: the pointer is written once in init and only ever used through atomic operations.
    private let storage: UnsafeMutablePointer<Atomic<UInt64>>
    /// How many counters there are.
    public let count: Int

    /// Creates `count` counters, all zero.
    public init(count: Int) {
        self.count = count
        storage = .allocate(capacity: max(count, 1))
        for index in 0..<count { (storage + index).initialize(to: Atomic(0)) }
    }

    deinit {
        storage.deinitialize(count: count)
        storage.deallocate()
    }

    /// Adds `amount` to counter `index` (relaxed: counters need no ordering with other memory).
    @inline(__always)
    public func add(_ index: Int, _ amount: UInt64 = 1) {
        precondition(index >= 0 && index < count, "counter index out of range")
        storage[index].wrappingAdd(amount, ordering: .relaxed)
    }

    /// The current value of counter `index`.
    public func load(_ index: Int) -> UInt64 {
        precondition(index >= 0 && index < count, "counter index out of range")
        return storage[index].load(ordering: .relaxed)
    }
}

/// A latency histogram with fixed bucket bounds, recorded lock-free; rendered as a Prometheus
/// histogram (cumulative buckets, sum, count).
public final class LatencyHistogram: Sendable {
    /// Bucket upper bounds in seconds: 100 µs to 10 s, roughly ×2.5 apart.
    public static let defaultBounds: [Double] = [
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]

    /// Upper bounds of the finite buckets, in seconds.
    public let bounds: [Double]
    private let boundNanoseconds: [UInt64]
    /// One counter per finite bucket, one for +Inf, then the sum of nanoseconds.
    private let counters: AtomicCounters

    /// Creates an empty histogram.
    public init(bounds: [Double] = LatencyHistogram.defaultBounds) {
        self.bounds = bounds
        boundNanoseconds = bounds.map { UInt64($0 * 1e9) }
        counters = AtomicCounters(count: bounds.count + 2)
    }

    /// Records one observation.
    @inline(__always)
    public func record(nanoseconds: UInt64) {
        var bucket = boundNanoseconds.count
        for (index, bound) in boundNanoseconds.enumerated() where nanoseconds <= bound {
            bucket = index
            break
        }
        counters.add(bucket)
        counters.add(boundNanoseconds.count + 1, nanoseconds)
    }

    /// Non-cumulative counts per bucket (the last is +Inf), the total count and the sum in seconds.
    public func snapshot() -> (buckets: [UInt64], count: UInt64, sumSeconds: Double) {
        let buckets = (0...bounds.count).map { counters.load($0) }
        return (buckets, buckets.reduce(0, +), Double(counters.load(bounds.count + 1)) / 1e9)
    }

    /// Nanoseconds on the monotonic clock, for timing what is recorded here.
    @inline(__always)
    public static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }
}
