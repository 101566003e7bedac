import Foundation
import LedgerAccess
import Testing

/// Guessing is counted per address in a sliding window; the address a request comes from is the
/// connection's unless a trusted proxy says otherwise.
@Suite struct FailureThrottleTests {
    @Test func pastTheLimitAnAddressWaitsUntilItsOldestFailureLeavesTheWindow() {
        let throttle = FailureThrottle(limit: 3, window: .seconds(60))
        let start = ContinuousClock.now
        for second in 0..<3 {
            #expect(throttle.wait(for: "203.0.113.7", now: start + .seconds(second)) == nil)
            throttle.recordFailure(from: "203.0.113.7", now: start + .seconds(second))
        }
        #expect(throttle.wait(for: "203.0.113.7", now: start + .seconds(10)) == .seconds(50), "until the first failure is a minute old")
        #expect(throttle.wait(for: "198.51.100.1", now: start + .seconds(10)) == nil, "another address is not held back")
        #expect(throttle.wait(for: "203.0.113.7", now: start + .seconds(60)) == nil, "the window slid past the first failure")
        #expect(FailureThrottle.seconds(.milliseconds(1)) == 1 && FailureThrottle.seconds(.milliseconds(49_500)) == 50)
    }

    @Test func forwardedForIsBelievedOnlyFromTrustedProxies() {
        let proxies: Set<String> = ["10.0.0.2", "10.0.0.3"]
        #expect(
            ClientAddress.of(connection: "203.0.113.7", forwardedFor: "1.2.3.4", trustedProxies: proxies) == "203.0.113.7",
            "a client cannot name another address")
        #expect(
            ClientAddress.of(connection: "10.0.0.2", forwardedFor: "1.2.3.4, 198.51.100.9, 10.0.0.3", trustedProxies: proxies)
                == "198.51.100.9",
            "the last hop a trusted proxy did not add")
        #expect(ClientAddress.of(connection: "10.0.0.2", forwardedFor: nil, trustedProxies: proxies) == "10.0.0.2")
        #expect(ClientAddress.of(connection: nil, forwardedFor: nil, trustedProxies: []) == "unknown")
    }
}

/// A key with a limit makes a second's worth of requests at once, then its rate.
@Suite struct KeyRateLimiterTests {
    static func key(rate: Double?) -> APIKey {
        APIKey(id: UUID(), name: "k", prefix: "lk_0", scopes: [.read], bundleID: nil, createdAt: Date(), rateLimit: rate)
    }

    @Test func aLimitedKeyWaitsForItsNextTokenAndAnUnlimitedOneNever() {
        let limiter = KeyRateLimiter()
        let limited = Self.key(rate: 2), free = Self.key(rate: nil)
        let start = ContinuousClock.now
        #expect(limiter.take(limited, now: start) == nil && limiter.take(limited, now: start) == nil, "a second's worth at once")
        #expect(limiter.take(limited, now: start) == .milliseconds(500), "then one every half second")
        #expect(limiter.take(limited, now: start + .milliseconds(500)) == nil)
        #expect(limiter.take(limited, now: start + .milliseconds(600)) != nil)
        #expect((0..<1000).allSatisfy { _ in limiter.take(free, now: start) == nil })
    }
}
