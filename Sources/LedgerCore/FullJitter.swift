/// The wait before a retry of a call to another party: a random duration in [0, min(cap, base · 2ⁿ)]
/// before retry n ("full jitter"), so that many clients failing together do not retry together.
/// Shared by every client of Apple's (verifyReceipt, the App Store Server API) and webhook deliveries.
package enum FullJitter {
    package static func delay(
        beforeRetry retry: Int, base: Duration, cap: Duration,
        random: (ClosedRange<Int>) -> Int = { Int.random(in: $0) }
    ) -> Duration {
        let ceiling = min(cap, base * (1 << min(retry, 20)))
        let ceilingMs = max(1, Int(ceiling.milliseconds))
        return .milliseconds(random(0...ceilingMs))
    }
}
