import Kernel
import Storage
import TestSupport
import Testing

@Suite("Latency histogram")
struct LatencyHistogramTests {
    @Test("observations land in the first bucket whose bound holds them; sum and count add up")
    func buckets() {
        let histogram = LatencyHistogram(bounds: [0.001, 0.01])
        histogram.record(nanoseconds: 500_000)
        histogram.record(nanoseconds: 1_000_000)
        histogram.record(nanoseconds: 5_000_000)
        histogram.record(nanoseconds: 2_000_000_000)
        let snapshot = histogram.snapshot()
        #expect(snapshot.buckets == [2, 1, 1])
        #expect(snapshot.count == 4)
        #expect(abs(snapshot.sumSeconds - 2.0065) < 1e-9)
    }

    @Test("counters add up under concurrent recording")
    func concurrent() async {
        let counters = AtomicCounters(count: 3)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { for index in 0..<3000 { counters.add(index % 3) } }
            }
        }
        #expect((0..<3).map(counters.load) == [8000, 8000, 8000])
    }
}
