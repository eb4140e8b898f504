import Kernel

/// Token buckets keyed by (route class, client), in a table that never holds more than
/// `maxTrackedClients` buckets however many distinct clients arrive.
///
/// The table is split into shards, each behind its own mutex, so threads limiting different
/// clients rarely wait for each other.
final class RateLimiter: Sendable {
    /// The answer for one request.
    enum Decision: Equatable {
        case allowed
        /// Refused; the client may retry after this many whole seconds.
        case limited(retryAfterSeconds: Int)
    }

    struct Key: Hashable {
        let routeClass: RateClass
        let client: IPAddress
    }

    struct Bucket {
        var tokens: Double
        var lastSeen: UInt64
        let limit: RateLimit
    }

    final class Shard: Sendable {
        let buckets: Locked<[Key: Bucket]>
        init(capacity: Int) { buckets = Locked(Dictionary(minimumCapacity: capacity)) }
    }

    private let limits: [RateClass: RateLimit]
    private let shards: [Shard]
    private let capacityPerShard: Int
    private let clock: any MonotonicClock

    /// - Parameters:
    ///   - limits: a bucket per route class; `.unlimited` (and only it) has none.
    ///   - maxTrackedClients: the most buckets kept in total.
    ///   - clock: the time source for refills.
    init(limits: [RateClass: RateLimit], maxTrackedClients: Int, clock: any MonotonicClock) {
        precondition(maxTrackedClients >= 1, "maxTrackedClients must be at least 1")
        self.limits = limits
        self.clock = clock
        let shardCount = min(16, maxTrackedClients)
        // Rounding down keeps the sum of the shards' capacities within the configured bound.
        capacityPerShard = maxTrackedClients / shardCount
        shards = (0..<shardCount).map { _ in Shard(capacity: min(maxTrackedClients / shardCount, 4096)) }
    }

    /// How many buckets are held now, for tests and metrics.
    var trackedCount: Int {
        shards.reduce(0) { total, shard in total + shard.buckets.withLock { $0.count } }
    }

    /// Takes a token for `client` in `routeClass`, or says how long to wait.
    func check(routeClass: RateClass, client: IPAddress) -> Decision {
        guard let limit = limits[routeClass] else { return .allowed }
        let key = Key(routeClass: routeClass, client: client)
        let shard = shards[Int(UInt(bitPattern: key.hashValue) % UInt(shards.count))]
        let now = clock.nanoseconds()
        return shard.buckets.withLock { buckets in
            // Found once and changed where it is: a lookup and a store hashed the key twice more.
            if let index = buckets.index(forKey: key) {
                return Self.take(&buckets.values[index], at: now, limit: limit)
            }
            if buckets.count >= capacityPerShard {
                Self.evict(&buckets, now: now, target: capacityPerShard)
            }
            buckets[key] = Bucket(tokens: Double(limit.burst) - 1, lastSeen: now, limit: limit)
            return .allowed
        }
    }

    /// Refills `bucket` up to `now` and takes a token from it, or says how long to wait.
    private static func take(_ bucket: inout Bucket, at now: UInt64, limit: RateLimit) -> Decision {
        bucket.tokens = refilled(bucket, at: now)
        bucket.lastSeen = now
        guard bucket.tokens >= 1 else {
            // Whole seconds until one token is back, at least 1 (Retry-After has no fractions).
            let wait = ((1 - bucket.tokens) / limit.perSecond).rounded(.up)
            return .limited(retryAfterSeconds: max(1, Int(min(wait, 86_400))))
        }
        bucket.tokens -= 1
        return .allowed
    }

    private static func refilled(_ bucket: Bucket, at now: UInt64) -> Double {
        let elapsed = now > bucket.lastSeen ? Double(now - bucket.lastSeen) / 1e9 : 0
        return min(Double(bucket.limit.burst), bucket.tokens + elapsed * bucket.limit.perSecond)
    }

    /// Makes room in a full shard. Buckets that have refilled completely are dropped first: a
    /// new bucket would be identical, so forgetting them changes no decision. If none are full
    /// (a flood of active clients), the least recently seen eighth goes in one pass, so the cost
    /// of sorting is shared by the next capacity/8 insertions instead of paid on each.
    private static func evict(_ buckets: inout [Key: Bucket], now: UInt64, target: Int) {
        buckets = buckets.filter { refilled($0.value, at: now) < Double($0.value.limit.burst) }
        guard buckets.count >= target else { return }
        let evictCount = max(1, target / 8)
        let cutoff = buckets.values.map(\.lastSeen).sorted()[evictCount - 1]
        // `<=` drops at least evictCount; with equal timestamps (a stopped test clock) it drops more.
        buckets = buckets.filter { $0.value.lastSeen > cutoff }
    }
}
