import Foundation
import LedgerCore
import Synchronization

/// Each limited key's requests, as a token bucket: a key with a limit of N a second may make N at
/// once and then N a second; past that it is told how long to wait. Counted in this process (as
/// the failure throttle is): behind a balancer, each server allows a key its limit.
package final class KeyRateLimiter: Sendable {
    private let buckets = Mutex<[UUID: (tokens: Double, at: ContinuousClock.Instant)]>([:])

    package init() {}

    /// Nil when `key` may make a request now (and it is counted); else how long until it may.
    package func take(_ key: APIKey, now: ContinuousClock.Instant = .now) -> Duration? {
        guard let rate = key.rateLimit else { return nil }
        let capacity = max(1, rate)
        return buckets.withLock { buckets in
            var (tokens, at) = buckets[key.id] ?? (capacity, now)
            tokens = min(capacity, tokens + rate * (now - at).seconds)
            guard tokens >= 1 else {
                buckets[key.id] = (tokens, now)
                return .seconds((1 - tokens) / rate)
            }
            buckets[key.id] = (tokens - 1, now)
            return nil
        }
    }
}
