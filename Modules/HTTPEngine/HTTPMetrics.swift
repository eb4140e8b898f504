import FoundationEssentials
public import Kernel

/// Requests per route pattern and status, and a latency histogram per route, for one listener.
///
/// Recording is a dictionary lookup of the route pattern and a few relaxed atomic adds: no lock and
/// no allocation on the request path. The route table is fixed when the server starts, so every
/// counter exists up front.
public final class HTTPMetrics: Sendable {
    /// The listener's name in the `listener` label ("public", "admin").
    public let listener: String
    /// Route patterns in label order; the last slot is "(unmatched)" for requests no route took.
    let patterns: [String]
    private let index: [String: Int]
    private let counters: AtomicCounters
    private let latency: [LatencyHistogram]

    /// The statuses counted one by one; any other status counts as "other".
    static let statuses = [200, 201, 204, 304, 400, 401, 403, 404, 405, 409, 413, 415, 429, 500, 501, 503]

    /// Creates counters for every route pattern in `routes` (methods share a pattern's counters).
    public init(listener: String, routes: [RouteDescription]) {
        self.listener = listener
        var patterns: [String] = []
        for route in routes where !patterns.contains(route.pattern) { patterns.append(route.pattern) }
        patterns.append("(unmatched)")
        self.patterns = patterns
        index = Dictionary(uniqueKeysWithValues: patterns.enumerated().map { ($1, $0) })
        counters = AtomicCounters(count: patterns.count * (Self.statuses.count + 1))
        latency = patterns.map { _ in LatencyHistogram() }
    }

    /// Records one answered request. Called by the request pipeline on its worker thread.
    @inline(__always)
    func record(route: String?, status: Int, nanoseconds: UInt64) {
        let slot = route.flatMap { index[$0] } ?? patterns.count - 1
        counters.add(slot * (Self.statuses.count + 1) + Self.statusSlot(status))
        latency[slot].record(nanoseconds: nanoseconds)
    }

    @inline(__always)
    static func statusSlot(_ status: Int) -> Int {
        switch status {
        case 200: 0
        case 201: 1
        case 204: 2
        case 304: 3
        case 400: 4
        case 401: 5
        case 403: 6
        case 404: 7
        case 405: 8
        case 409: 9
        case 413: 10
        case 415: 11
        case 429: 12
        case 500: 13
        case 501: 14
        case 503: 15
        default: 16
        }
    }

    /// How many requests to `route` were answered with each status (only non-zero ones; "other"
    /// for statuses not counted one by one).
    public func counts(route: String) -> [String: UInt64] {
        guard let slot = index[route] else { return [:] }
        var result: [String: UInt64] = [:]
        for (offset, status) in (Self.statuses.map(String.init) + ["other"]).enumerated() {
            let value = counters.load(slot * (Self.statuses.count + 1) + offset)
            if value > 0 { result[status] = value }
        }
        return result
    }

    /// Appends this listener's request counters and latency histograms in Prometheus text format
    /// (without the HELP/TYPE lines, which `PrometheusText` writes once for all listeners).
    public func render(requests: inout String, durations: inout String) {
        for (slot, pattern) in patterns.enumerated() {
            let labels = "listener=\"\(listener)\",route=\"\(PrometheusText.escape(pattern))\""
            for (status, value) in counts(route: pattern).sorted(by: { $0.key < $1.key }) {
                requests += "portvakt_http_requests_total{\(labels),status=\"\(status)\"} \(value)\n"
            }
            PrometheusText.histogram(
                "portvakt_http_request_duration_seconds", labels: labels, latency[slot], into: &durations)
        }
    }
}

/// Prometheus text exposition format 0.0.4 helpers.
public enum PrometheusText {
    /// The media type of the format.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// A label value with `\`, `"` and newlines escaped.
    public static func escape(_ value: String) -> String {
        value.replacingEvery("\\", with: "\\\\").replacingEvery("\"", with: "\\\"")
            .replacingEvery("\n", with: "\\n")
    }

    /// Appends a histogram's cumulative buckets, sum and count; nothing when it is empty.
    public static func histogram(
        _ name: String, labels: String, _ histogram: LatencyHistogram, into text: inout String
    ) {
        let snapshot = histogram.snapshot()
        guard snapshot.count > 0 else { return }
        let prefix = labels.isEmpty ? "" : labels + ","
        var cumulative: UInt64 = 0
        for (index, bound) in histogram.bounds.enumerated() {
            cumulative += snapshot.buckets[index]
            text += "\(name)_bucket{\(prefix)le=\"\(bound)\"} \(cumulative)\n"
        }
        text += "\(name)_bucket{\(prefix)le=\"+Inf\"} \(snapshot.count)\n"
        let braces = labels.isEmpty ? "" : "{\(labels)}"
        text += "\(name)_sum\(braces) \(snapshot.sumSeconds)\n"
        text += "\(name)_count\(braces) \(snapshot.count)\n"
    }
}
