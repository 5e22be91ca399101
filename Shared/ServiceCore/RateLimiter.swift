import Foundation
import Synchronization

/// Per-user limits on writes: a token bucket for each user, refilled at `perSecond`
/// up to `burst`.
public final class RateLimiter: Sendable {
    public struct Policy: Sendable, Equatable {
        public var perSecond: Double
        public var burst: Double

        public init(perSecond: Double, burst: Double) {
            self.perSecond = perSecond
            self.burst = burst
        }

        /// The protocol's default: 20 writes a second per user, bursts of 200.
        public static let standard = Policy(perSecond: 20, burst: 200)

        /// Reads `HEREABOUTS_RATE_LIMIT`: `N` (writes per second, bursts of 10 N),
        /// `N/B`, or `0` for no limit (nil).
        public static func parse(_ text: String) -> Policy?? {
            let parts = text.split(separator: "/", omittingEmptySubsequences: false)
            guard (1...2).contains(parts.count), let rate = Double(parts[0]), rate >= 0, rate.isFinite else { return nil }
            if rate == 0 { return .some(nil) }
            let burst = parts.count == 2 ? Double(parts[1]) : rate * 10
            guard let burst, burst >= 1, burst.isFinite else { return nil }
            return .some(Policy(perSecond: rate, burst: burst))
        }
    }

    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    public let policy: Policy
    private let buckets = Mutex<[String: Bucket]>([:])
    /// A bound on memory: idle, refilled buckets are dropped past it.
    private static let maxBuckets = 100_000

    public init(policy: Policy) {
        self.policy = policy
    }

    /// Takes one write from `key`'s bucket; returns nil when allowed, else how
    /// many seconds until one is available.
    public func take(_ key: String, now: Double = ProcessInfo.processInfo.systemUptime) -> Double? {
        buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: policy.burst, updated: now)
            bucket.tokens = min(policy.burst, bucket.tokens + (now - bucket.updated) * policy.perSecond)
            bucket.updated = now
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                return (1 - bucket.tokens) / policy.perSecond
            }
            bucket.tokens -= 1
            if buckets.count >= Self.maxBuckets && buckets[key] == nil {
                let policy = self.policy
                buckets = buckets.filter { $0.value.tokens + (now - $0.value.updated) * policy.perSecond < policy.burst }
            }
            buckets[key] = bucket
            return nil
        }
    }
}
